#!/usr/bin/env node
// The platform packages under npm/<triple>/ and their relation to the root package.json.
//
// Copies a built addon (`iterativeflow-mysql-native.<triple>.node` at the repository root, as
// written by `npm run build`) into its platform package directory `npm/<triple>/`, ready for
// `npm publish` from there, and checks that the platform packages and the root package agree.
//
//   node npm/copy-artifact.mjs                    # the host's triple (e.g. linux-x64-gnu)
//   node npm/copy-artifact.mjs linux-x64-gnu …    # these triples
//   node npm/copy-artifact.mjs --all              # every triple with a built binary at the root
//   node npm/copy-artifact.mjs linux-x64-gnu --out-dir /tmp/pkg
//                                                 # copy the whole platform package (manifest,
//                                                 # README, binary) to /tmp/pkg instead
//   node npm/copy-artifact.mjs --check            # check the repository state, copy nothing
//   node npm/copy-artifact.mjs --check-release    # check the state to publish (prepublishOnly)
//
// The two states of package.json:
//
// - In the repository (`--check`) the root lists NO platform package in `optionalDependencies`:
//   they are not on the registry before the first release, and `npm ci` on a clean clone must never
//   need a package the registry does not have. package-lock.json names none either.
// - At publish time (`--check-release`) `napi pre-publish` (`npm run release:prepare`) has added
//   every platform package to `optionalDependencies` at exactly the root's version, and each
//   npm/<triple>/ holds its binary (put there by `napi artifacts`). The root's `prepublishOnly`
//   runs this check, so a root package without its platform packages cannot be published.
//
// Either way each npm/<triple>/package.json must have the expected name, `main`, `files`, `os`,
// `cpu`, `libc`, the root's version, license and repository, and the directories must be exactly
// the targets of package.json `napi.targets`; any mismatch is an error (exit 1).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import platform from '../lib/platform.js';

const npmDir = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.dirname(npmDir);

function readJson(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

/** The host's triple, as lib/platform.js (used by the loader) computes it. */
export function hostTriple() {
  return platform.triple;
}

const ARCH = { x86_64: 'x64', aarch64: 'arm64', i686: 'ia32', armv7: 'arm' };

/**
 * The napi-rs platform triple (`<platform>-<arch>[-<abi>]`, the suffix of the binary and of the
 * platform package) of a Rust target from `napi.targets`, e.g. `x86_64-unknown-linux-gnu` →
 * `linux-x64-gnu`, `aarch64-apple-darwin` → `darwin-arm64`, `x86_64-pc-windows-msvc` →
 * `win32-x64-msvc`.
 */
export function napiTriple(rustTarget) {
  const [cpu, vendor, sys, abi] = rustTarget.split('-');
  const arch = ARCH[cpu];
  if (!arch) throw new Error(`unsupported target ${rustTarget}`);
  if (vendor === 'apple' && sys === 'darwin') return `darwin-${arch}`;
  if (vendor === 'pc' && sys === 'windows' && abi === 'msvc') return `win32-${arch}-msvc`;
  if (sys === 'linux' && (abi === 'gnu' || abi === 'musl')) return `linux-${arch}-${abi}`;
  throw new Error(`unsupported target ${rustTarget}`);
}

/** The platform package directories under <root>/npm/ (each has a package.json). */
export function platformTriples({ root = repoRoot } = {}) {
  const dir = path.join(root, 'npm');
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && fs.existsSync(path.join(dir, e.name, 'package.json')))
    .map((e) => e.name)
    .sort();
}

/** `<binaryName>.<triple>.node` */
export function binaryName(triple, { root = repoRoot } = {}) {
  const rootPkg = readJson(path.join(root, 'package.json'));
  return `${rootPkg.napi.binaryName}.${triple}.node`;
}

/** Entries of `deps` that name one of the root package's platform packages (`<name>-<…>`). */
function platformEntries(deps, rootName) {
  return Object.keys(deps || {}).filter((d) => d.startsWith(`${rootName}-`));
}

/**
 * Problems with the platform package manifests relative to the root package.json, the same in
 * both states ([] when consistent). `root` is the package root (default: this repository).
 */
export function checkPackages({ root = repoRoot } = {}) {
  const rootPkg = readJson(path.join(root, 'package.json'));
  const problems = [];
  const triples = platformTriples({ root });

  const targets = (rootPkg.napi && rootPkg.napi.targets) || [];
  const expected = [];
  for (const t of targets) {
    try {
      expected.push(napiTriple(t));
    } catch (e) {
      problems.push(`package.json napi.targets: ${e.message}`);
    }
  }
  for (const t of expected) {
    if (!triples.includes(t)) problems.push(`package.json napi.targets names ${t}, which has no npm/${t}/ directory`);
  }
  for (const t of triples) {
    if (!expected.includes(t)) problems.push(`npm/${t}/ is not one of package.json napi.targets`);
  }

  for (const triple of triples) {
    const pkg = readJson(path.join(root, 'npm', triple, 'package.json'));
    const name = `${rootPkg.name}-${triple}`;
    const bin = `${rootPkg.napi.binaryName}.${triple}.node`;
    const [osName, cpu, abi] = triple.split('-');
    const where = `npm/${triple}`;
    if (pkg.name !== name) problems.push(`${where}: name is ${pkg.name}, expected ${name}`);
    if (pkg.version !== rootPkg.version) {
      problems.push(`${where}: version ${pkg.version} differs from the root's ${rootPkg.version}`);
    }
    if (pkg.main !== bin) problems.push(`${where}: main is ${pkg.main}, expected ${bin}`);
    if (JSON.stringify(pkg.files) !== JSON.stringify([bin]))
      problems.push(`${where}: files should be exactly ["${bin}"]`);
    if (JSON.stringify(pkg.os) !== JSON.stringify([osName])) problems.push(`${where}: os should be ["${osName}"]`);
    if (JSON.stringify(pkg.cpu) !== JSON.stringify([cpu])) problems.push(`${where}: cpu should be ["${cpu}"]`);
    if (osName === 'linux') {
      const libc = abi === 'musl' ? 'musl' : 'glibc';
      if (JSON.stringify(pkg.libc) !== JSON.stringify([libc])) problems.push(`${where}: libc should be ["${libc}"]`);
    } else if (pkg.libc !== undefined) {
      problems.push(`${where}: libc only applies to linux packages`);
    }
    if (pkg.license !== rootPkg.license)
      problems.push(`${where}: license ${pkg.license}, the root's is ${rootPkg.license}`);
    // npm publish --provenance checks that repository.url names the repository that built it.
    if (!pkg.repository || !rootPkg.repository || pkg.repository.url !== rootPkg.repository.url) {
      problems.push(`${where}: repository.url should be the root's (${rootPkg.repository && rootPkg.repository.url})`);
    }
    if (JSON.stringify(pkg.engines) !== JSON.stringify(rootPkg.engines))
      problems.push(`${where}: engines differ from the root's`);
    if (!fs.existsSync(path.join(root, 'npm', triple, 'README.md'))) problems.push(`${where}: README.md is missing`);
    for (const f of ['dependencies', 'optionalDependencies', 'scripts']) {
      if (pkg[f] !== undefined) problems.push(`${where}: a platform package has no ${f}`);
    }
  }

  return problems;
}

/**
 * checkPackages plus the state of package.json: `release: false` (the default) checks the
 * repository state, `release: true` the state to publish (see the top of this file).
 */
export function checkManifests({ root = repoRoot, release = false } = {}) {
  const rootPkg = readJson(path.join(root, 'package.json'));
  const problems = checkPackages({ root });
  const triples = platformTriples({ root });
  const optional = rootPkg.optionalDependencies || {};
  const listed = platformEntries(optional, rootPkg.name);
  if (!release) {
    for (const dep of listed) {
      problems.push(
        `package.json optionalDependencies lists ${dep}: platform packages are added only at publish time ` +
          '(npm run release:prepare), never in the repository',
      );
    }
    const lockFile = path.join(root, 'package-lock.json');
    if (fs.existsSync(lockFile)) {
      const lock = readJson(lockFile);
      const named = new Set();
      for (const [key, entry] of Object.entries(lock.packages || {})) {
        const nm = key.split('node_modules/').pop();
        if (key !== '' && nm.startsWith(`${rootPkg.name}-`)) named.add(nm);
        for (const f of ['dependencies', 'optionalDependencies', 'devDependencies', 'peerDependencies']) {
          for (const d of platformEntries(entry[f], rootPkg.name)) named.add(d);
        }
      }
      for (const dep of [...named].sort()) {
        problems.push(`package-lock.json names ${dep}, which is published only by a release`);
      }
    }
  } else {
    for (const triple of triples) {
      const name = `${rootPkg.name}-${triple}`;
      if (optional[name] !== rootPkg.version) {
        problems.push(
          `package.json optionalDependencies["${name}"] is ${optional[name]}, expected exactly ${rootPkg.version} ` +
            '(run `npm run release:prepare`)',
        );
      }
      const bin = path.join(root, 'npm', triple, `${rootPkg.napi.binaryName}.${triple}.node`);
      let size = 0;
      try {
        size = fs.statSync(bin).size;
      } catch {}
      if (size === 0) problems.push(`npm/${triple}/${path.basename(bin)} is missing or empty (run \`napi artifacts\`)`);
    }
    for (const dep of listed) {
      if (!triples.some((t) => `${rootPkg.name}-${t}` === dep)) {
        problems.push(`package.json optionalDependencies lists ${dep}, which has no npm/ directory`);
      }
    }
  }
  return problems;
}

/**
 * Copies the root's `<binary>.<triple>.node` into npm/<triple>/, or — with `outDir` — copies the
 * platform package (package.json, README.md) plus the binary into `outDir`. Returns the path of the
 * copied binary.
 */
export function copyArtifact(triple, { outDir, root = repoRoot } = {}) {
  const pkgDir = path.join(root, 'npm', triple);
  if (!fs.existsSync(path.join(pkgDir, 'package.json'))) {
    throw new Error(`no platform package npm/${triple}/ (known: ${platformTriples({ root }).join(', ')})`);
  }
  const file = binaryName(triple, { root });
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

const OPTIONS = ['--all', '--check', '--check-release', '--help'];

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
    if (!OPTIONS.includes(f)) {
      console.error(`copy-artifact: unknown option ${f}`);
      return 2;
    }
  }
  if (flags.has('--help')) {
    console.log('usage: node npm/copy-artifact.mjs [triple … | --all] [--out-dir DIR] [--check | --check-release]');
    return 0;
  }
  if (flags.has('--check') && flags.has('--check-release')) {
    console.error('copy-artifact: --check and --check-release are exclusive');
    return 2;
  }

  if (flags.has('--check') || flags.has('--check-release')) {
    const release = flags.has('--check-release');
    const problems = checkManifests({ release });
    for (const p of problems) console.error(`copy-artifact: ${p}`);
    if (problems.length) {
      if (release) console.error('copy-artifact: not ready to publish (see CONTRIBUTING.md, "Releasing")');
      return 1;
    }
    const n = platformTriples().length;
    console.log(
      release
        ? `copy-artifact: ${n} platform packages with their binaries, all in optionalDependencies: ready to publish`
        : `copy-artifact: ${n} platform packages consistent with package.json (none in optionalDependencies)`,
    );
    return 0;
  }

  // Copying is the same in both states: only the manifests themselves must agree.
  const problems = checkPackages();
  for (const p of problems) console.error(`copy-artifact: ${p}`);
  if (problems.length) return 1;

  let selected = triples;
  if (flags.has('--all')) {
    selected = platformTriples().filter((t) => fs.existsSync(path.join(repoRoot, binaryName(t))));
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
