#!/usr/bin/env node
// Smoke test of a built binary on its own platform, with no server, no dev dependencies and no
// Rust toolchain: the release workflow runs it on every target it can run (macOS, Windows, Linux
// arm64, musl in an Alpine container) after downloading that target's build to the repository
// root. Linux x64 glibc runs the whole suite instead (`.ci/run`).
//
//   node __test__/package/smoke.mjs [expected-triple]
//
// Checks that the loader picks the binary named for this platform (and the expected triple, when
// given), that calls which only Rust answers work (DDL for both contracts, argument errors built
// in Rust), and that the async runtime runs: a pool pointed at a closed port rejects with a
// connection error instead of hanging or crashing. Not a node:test file (run.mjs does not pick it
// up); prints one line per check and exits 1 on the first failure.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const platform = require(path.join(root, 'lib', 'platform.js'));

const expected = process.argv[2];
const checks = [];
const check = (name, fn) => checks.push([name, fn]);

check(`platform triple is ${expected ?? platform.triple}`, () => {
  if (expected) assert.equal(platform.triple, expected, `lib/platform.js computes ${platform.triple}`);
});

check(`loads ${platform.localBinary} from the repository root`, () => {
  require(path.join(root, 'index.js'));
  const native = Object.keys(require.cache).filter((k) => k.endsWith('.node'));
  assert.deepEqual(
    native.map((k) => path.basename(k)),
    [platform.localBinary],
  );
});

check('ddl() comes from Rust, for both contracts', () => {
  const main = require(path.join(root, 'index.js'));
  const v3 = require(path.join(root, 'v3.js'));
  const a = main.ddl();
  assert.equal(a.length, 6);
  for (const s of a) assert.match(s, /^CREATE TABLE IF NOT EXISTS /);
  const b = v3.ddl('smoke_');
  assert.ok(b.length > a.length, `3.0 DDL has ${b.length} statements`);
  assert.ok(
    b.some((s) => s.includes('`smoke_run`')),
    'the prefix reaches the statements',
  );
  assert.equal(main.tables('x_').run, '`x_run`');
});

check('bad arguments throw a TypeError with kind "argument", synchronously', () => {
  const { mysqlPool } = require(path.join(root, 'index.js'));
  assert.throws(
    () => mysqlPool('postgres://nope'),
    (e) => e instanceof TypeError && e.kind === 'argument',
  );
  assert.throws(
    () => mysqlPool({ connectionLimit: -1 }),
    (e) => e.kind === 'argument',
  );
});

check('a query to a closed port rejects with a connection error (async runtime)', async () => {
  const { mysqlPool } = require(path.join(root, 'index.js'));
  const sql = mysqlPool('mysql://smoke:secret@127.0.0.1:1/smoke?acquireTimeoutMs=8000');
  try {
    await assert.rejects(sql.query('SELECT 1'), (e) => {
      assert.equal(e.kind, 'connection', `${e.code}: ${e.message}`);
      assert.ok(!String(e.message).includes('secret'), 'the password is not in the message');
      return true;
    });
  } finally {
    await sql.close();
  }
  assert.equal(sql.closed, true);
});

let failed = 0;
for (const [name, fn] of checks) {
  try {
    await fn();
    console.log(`ok - ${name}`);
  } catch (e) {
    failed++;
    console.log(`not ok - ${name}\n  ${String(e && e.stack ? e.stack : e).replace(/\n/g, '\n  ')}`);
    break;
  }
}
console.log(
  failed
    ? `smoke: FAILED on ${process.platform}-${process.arch} (node ${process.version})`
    : `smoke: ${checks.length} checks passed on ${platform.triple} (node ${process.version})`,
);
process.exitCode = failed ? 1 : 0;
