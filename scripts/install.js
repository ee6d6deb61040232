#!/usr/bin/env node
// npm `install` lifecycle script.
//
// 1. If the native binding already loads (index.js, a *.node file next to
//    package.json, or the platform package), there is nothing to do.
// 2. Else, if cargo and @napi-rs/cli are available, build from source with
//    the arguments of package.json's `build` script (`napi build --platform
//    --release …`; exit code passed through).
// 3. Else warn that there is no prebuilt binary and no Rust toolchain; exit 0
//    so that the install itself still succeeds.
//
// In a source checkout (Cargo.toml next to package.json) only a local build
// counts: the platform package from the registry is never trusted there, so
// a clean clone always builds (and tests) its own code.
//
// Set ITERATIVEFLOW_BUILD_FROM_SOURCE=1 (or `npm install --build-from-source`)
// to build even when a binary already loads (e.g. a stale local build).
'use strict';

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const { localBinary, platformPackage: PLATFORM_PACKAGE } = require('../lib/platform.js');
const SOURCE_CHECKOUT = fs.existsSync(path.join(root, 'Cargo.toml'));
const TAG = '[iterativeflow-mysql-native]';

function loadsInChild(code) {
  // A child process, so that a crashing or throwing module can't take this
  // script down with it.
  const r = spawnSync(process.execPath, ['-e', code], {
    cwd: root,
    stdio: 'ignore',
    timeout: 60_000,
  });
  return r.status === 0;
}

function candidates() {
  if (SOURCE_CHECKOUT) return [[localBinary, path.join(root, localBinary)]];
  const list = [];
  if (fs.existsSync(path.join(root, 'index.js'))) list.push(['index.js', path.join(root, 'index.js')]);
  let entries = [];
  try {
    entries = fs.readdirSync(root);
  } catch {}
  for (const name of entries.sort()) {
    if (name.endsWith('.node')) list.push([name, path.join(root, name)]);
  }
  list.push([PLATFORM_PACKAGE, PLATFORM_PACKAGE]);
  return list;
}

// Loads, and actually pulled in a native (*.node) module: an index.js that
// loads the binding lazily must not count as "built".
function alreadyLoadable() {
  for (const [label, spec] of candidates()) {
    const code =
      `require(${JSON.stringify(spec)});` +
      `process.exit(Object.keys(require.cache).some((k) => k.endsWith('.node')) ? 0 : 3);`;
    if (loadsInChild(code)) return label;
  }
  return null;
}

function which(cmd) {
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    if (!dir) continue;
    const p = path.join(dir, cmd);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      if (fs.statSync(p).isFile()) return p;
    } catch {}
  }
  return null;
}

function napiCli() {
  try {
    const pkgJson = require.resolve('@napi-rs/cli/package.json', { paths: [root] });
    const pkg = JSON.parse(fs.readFileSync(pkgJson, 'utf8'));
    const bin = typeof pkg.bin === 'string' ? pkg.bin : pkg.bin && pkg.bin.napi;
    if (!bin) return null;
    const p = path.resolve(path.dirname(pkgJson), bin);
    return fs.existsSync(p) ? p : null;
  } catch {
    return null;
  }
}

// The arguments of package.json's `build` script when it is a plain
// `napi build …` (so that e.g. its --no-js keeps the hand-written index.js),
// else `build --platform --release --no-js`.
function napiBuildArgs() {
  const fallback = ['build', '--platform', '--release', '--no-js'];
  try {
    const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
    const script = ((pkg.scripts && pkg.scripts.build) || '').trim();
    if (/^napi\s+build(\s|$)/.test(script) && !/[;&|<>$`'"\\]/.test(script)) {
      const words = script.split(/\s+/).slice(1);
      if (!words.includes('--release') && !words.includes('-r')) words.push('--release');
      return words;
    }
  } catch {}
  return fallback;
}

function main() {
  const force =
    /^(1|true|yes)$/i.test(process.env.ITERATIVEFLOW_BUILD_FROM_SOURCE || '') ||
    /^(1|true|yes)$/i.test(process.env.npm_config_build_from_source || '');

  if (!force) {
    const found = alreadyLoadable();
    if (found) {
      console.log(`${TAG} native binding loads (${found}); no build needed.`);
      return 0;
    }
  }

  const cargo = which('cargo');
  const cli = napiCli();
  if (cargo && cli) {
    const buildArgs = napiBuildArgs();
    const args = [cli, ...buildArgs];
    console.log(`${TAG} ${force ? 'building from source' : 'no prebuilt binary loads'}: napi ${buildArgs.join(' ')}`);
    const r = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
    if (r.error) {
      console.error(`${TAG} could not run napi: ${r.error.message}`);
      return 1;
    }
    if (r.signal) {
      console.error(`${TAG} napi build killed by ${r.signal}`);
      return 1;
    }
    return r.status;
  }

  const why = [];
  if (!cargo) why.push('no Rust toolchain (`cargo`) on PATH');
  if (!cli) why.push('@napi-rs/cli is not installed');
  console.warn(
    `${TAG} WARNING: no prebuilt native binary for ${process.platform}-${process.arch} ` +
      `could be loaded, and it cannot be built here: ${why.join('; ')}.\n` +
      `${TAG} Install Rust (https://rustup.rs) and run \`npm run build\` in this package, ` +
      `or use a platform with a prebuilt package (${PLATFORM_PACKAGE}).`,
  );
  return 0;
}

process.exitCode = main();
