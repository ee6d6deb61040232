// index.d.ts as TypeScript users see it: the consumer programs in ./types/ are type-checked with
// `tsc --noEmit --strict` (they import the whole surface, use it the way the engine does, assign
// the backend to a `Backend` interface written from docs/contract.md §2, and keep a list of wrong
// usages that must not compile — see types/engine-usage.mts).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const typesDir = path.join(root, '__test__', 'package', 'types');
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');

function typecheck(project) {
  assert.ok(fs.existsSync(tsc), 'typescript is not installed (it is a devDependency: run `npm install`)');
  assert.ok(
    fs.existsSync(path.join(root, 'node_modules', '@types', 'node', 'package.json')),
    '@types/node is not installed (index.d.ts references the node types)',
  );
  const r = spawnSync(process.execPath, [tsc, '-p', project, '--noEmit', '--strict', '--pretty', 'false'], {
    cwd: root,
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (r.error) throw r.error;
  return r;
}

test('package.json "types" names index.d.ts, which the consumer programs import', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  assert.equal(pkg.types, 'index.d.ts');
  assert.ok(fs.existsSync(path.join(root, pkg.types)));
  const tsconfig = fs.readFileSync(path.join(typesDir, 'tsconfig.json'), 'utf8');
  assert.match(tsconfig, /"iterativeflow-mysql-native": \["\.\.\/\.\.\/\.\.\/index\.d\.ts"\]/);
});

test('the engine-style TypeScript consumers (ESM and CommonJS) compile with --strict', { timeout: 120_000 }, () => {
  const r = typecheck(typesDir);
  assert.equal(r.status, 0, `tsc reported errors:\n${r.stdout}${r.stderr}`);
});

test('mysqlPool accepts a mysql2/promise Pool (docs/contract.md §1.1) at the type level', { timeout: 120_000 }, () => {
  const r = typecheck(path.join(typesDir, 'tsconfig.mysql2.json'));
  assert.equal(r.status, 0, `tsc reported errors:\n${r.stdout}${r.stderr}`);
});
