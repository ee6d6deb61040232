#!/usr/bin/env node
// Copies a built addon (`iterativeflow-mysql-native.<triple>.node` at the repository root, as
// written by `npm run build`) into its platform package directory `npm/<triple>/`, ready for
// `npm publish` from there. Also checks that the platform packages and the root package agree.
//
//   node npm/copy-artifact.mjs                    # the host's triple (e.g. linux-x64-gnu)
//   node npm/copy-artifact.mjs linux-x64-gnu …    # these triples
//   node npm/copy-artifact.mjs --all              # every triple with a built binary at the root
//   node npm/copy-artifact.mjs linux-x64-gnu --out-dir /tmp/pkg
//                                                 # copy the whole platform package (manifest,
//                                                 # README, binary) to /tmp/pkg instead
//   node npm/copy-artifact.mjs --check            # only check names/versions, copy nothing
//
// Every run first checks that each npm/<triple>/package.json has the expected name, `main` and
// `files`, the root's version, and that the root lists it in `optionalDependencies` at exactly that
// version; any mismatch is an error (exit 1). Binaries built in CI for other platforms are
// collected by `napi artifacts` instead; this script is for local builds.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import platform from '../lib/platform.js';

const npmDir = path.dirname(fileURLToPath(import.meta.url));
const root = path.dirname(npmDir);
const BINARY = 'iterativeflow-mysql-native';

function readJson(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

/** The host's triple, as lib/platform.js (used by the loader) computes it. */
export function hostTriple() {
  return platform.triple;
}

/** The platform package directories under npm/ (each has a package.json). */
export function platformTriples() {
  return fs
    .readdirSync(npmDir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && fs.existsSync(path.join(npmDir, e.name, 'package.json')))
    .map((e) => e.name)
    .sort();
}

/** Problems with the platform manifests relative to the root package.json ([] when consistent). */
export function checkManifests() {
  const rootPkg = readJson(path.join(root, 'package.json'));
  const optional = rootPkg.optionalDependencies || {};
  const problems = [];
  const triples = platformTriples();
  for (const triple of triples) {
    const pkg = readJson(path.join(npmDir, triple, 'package.json'));
    const name = `${rootPkg.name}-${triple}`;
    const bin = `${BINARY}.${triple}.node`;
    if (pkg.name !== name) problems.push(`npm/${triple}: name is ${pkg.name}, expected ${name}`);
    if (pkg.version !== rootPkg.version) {
      problems.push(`npm/${triple}: version ${pkg.version} differs from the root's ${rootPkg.version}`);
    }
    if (pkg.main !== bin) problems.push(`npm/${triple}: main is ${pkg.main}, expected ${bin}`);
    if (JSON.stringify(pkg.files) !== JSON.stringify([bin])) {
      problems.push(`npm/${triple}: files should be exactly ["${bin}"]`);
    }
    if (!Array.isArray(pkg.os) || !Array.isArray(pkg.cpu)) problems.push(`npm/${triple}: os/cpu missing`);
    if (optional[name] !== rootPkg.version) {
      problems.push(`package.json optionalDependencies["${name}"] is ${optional[name]}, expected ${rootPkg.version}`);
    }
  }
  for (const dep of Object.keys(optional)) {
    if (!triples.some((t) => `${rootPkg.name}-${t}` === dep)) {
      problems.push(`package.json optionalDependencies lists ${dep}, which has no npm/ directory`);
    }
  }
  return problems;
}

/**
 * Copies the root's `<binary>.<triple>.node` into npm/<triple>/, or — with `outDir` — copies the
 * platform package (package.json, README.md) plus the binary into `outDir`. Returns the path of the
 * copied binary.
 */
export function copyArtifact(triple, { outDir } = {}) {
  const pkgDir = path.join(npmDir, triple);
  if (!fs.existsSync(path.join(pkgDir, 'package.json'))) {
    throw new Error(`no platform package npm/${triple}/ (known: ${platformTriples().join(', ')})`);
  }
  const file = `${BINARY}.${triple}.node`;
  const src = path.join(root, file);
  if (!fs.existsSync(src)) {
    throw new Error(`${file} not found at the repository root: run \`npm run build\` on a ${triple} machine first`);
  }
  let dest = pkgDir;
  if (outDir) {
    dest = path.resolve(outDir);
    fs.mkdirSync(dest, { recursive: true });
    for (const name of fs.readdirSync(pkgDir)) {
      if (name.endsWith('.node')) continue; // a stale copy; the fresh build is copied below
      fs.copyFileSync(path.join(pkgDir, name), path.join(dest, name));
    }
  }
  const out = path.join(dest, file);
  fs.copyFileSync(src, out);
  return out;
}

function main(argv) {
  const flags = new Set(argv.filter((a) => a.startsWith('--') && !a.startsWith('--out-dir')));
  let outDir;
  const triples = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--out-dir') outDir = argv[++i];
    else if (a.startsWith('--out-dir=')) outDir = a.slice('--out-dir='.length);
    else if (!a.startsWith('--')) triples.push(a);
  }
  for (const f of flags) {
    if (!['--all', '--check', '--help'].includes(f)) {
      console.error(`copy-artifact: unknown option ${f}`);
      return 2;
    }
  }
  if (flags.has('--help')) {
    console.log('usage: node npm/copy-artifact.mjs [triple … | --all] [--out-dir DIR] [--check]');
    return 0;
  }

  const problems = checkManifests();
  for (const p of problems) console.error(`copy-artifact: ${p}`);
  if (problems.length) return 1;
  if (flags.has('--check')) {
    console.log(`copy-artifact: ${platformTriples().length} platform packages consistent with package.json`);
    return 0;
  }

  let selected = triples;
  if (flags.has('--all')) {
    selected = platformTriples().filter((t) => fs.existsSync(path.join(root, `${BINARY}.${t}.node`)));
    if (selected.length === 0) {
      console.error('copy-artifact: no built binaries at the repository root (run `npm run build`)');
      return 1;
    }
  } else if (selected.length === 0) {
    selected = [hostTriple()];
  }
  if (outDir && selected.length !== 1) {
    console.error('copy-artifact: --out-dir takes exactly one triple');
    return 2;
  }
  try {
    for (const triple of selected) {
      const out = copyArtifact(triple, { outDir });
      console.log(`copy-artifact: ${path.relative(process.cwd(), out) || out}`);
    }
  } catch (e) {
    console.error(`copy-artifact: ${e.message}`);
    return 1;
  }
  return 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main(process.argv.slice(2));
}
