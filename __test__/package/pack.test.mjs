// The package as users get it: the platform packages and the two states of package.json (in the
// repository no platform package is an optional dependency, so that `npm ci` on a clean clone needs
// nothing the registry lacks; `npm run release:prepare` — napi pre-publish — adds them all at
// publish time), the registry metadata, what `npm pack` puts in the tarball, and an install of the
// root tarball as published plus the host's platform package into an empty project, with no
// registry access and no Rust toolchain, that then talks to the database.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { checkManifests, copyArtifact, hostTriple, napiTriple, platformTriples } from '../../npm/copy-artifact.mjs';
import { closeAdmin, freshDatabase } from '../helpers/db.mjs';

after(closeAdmin);

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const rootPkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const triple = hostTriple();
const binaryName = `iterativeflow-mysql-native.${triple}.node`;
const builtBinary = path.join(root, binaryName);

// Rust target of each platform package (napi-rs naming): the targets with prebuilt binaries.
const RUST_TARGETS = {
  'linux-x64-gnu': 'x86_64-unknown-linux-gnu',
  'linux-arm64-gnu': 'aarch64-unknown-linux-gnu',
  'linux-x64-musl': 'x86_64-unknown-linux-musl',
  'linux-arm64-musl': 'aarch64-unknown-linux-musl',
  'darwin-x64': 'x86_64-apple-darwin',
  'darwin-arm64': 'aarch64-apple-darwin',
  'win32-x64-msvc': 'x86_64-pc-windows-msvc',
};
const REPOSITORY = 'https://github.com/iterativeflow/iterativeflow-mysql-native';

/** Entries of an optionalDependencies-like map that name one of our platform packages. */
const platformDeps = (deps) => Object.keys(deps || {}).filter((d) => d.startsWith(`${rootPkg.name}-`));

// ---- helpers --------------------------------------------------------------------------------

function isExecutable(p) {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

function which(cmd, pathValue = process.env.PATH || '') {
  for (const dir of pathValue.split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, cmd))) return path.join(dir, cmd);
  }
  return null;
}

/** npm's CLI script, run with this node (so the PATH below need not contain npm). */
function npmCli() {
  const npm = which('npm');
  if (!npm) throw new Error('npm is not on PATH');
  return fs.realpathSync(npm);
}

/**
 * A PATH without any directory holding cargo/rustc (so scripts/install.js cannot build), plus a
 * directory with `node` (npm runs lifecycle scripts as `node …` through the shell).
 */
function pathWithoutRust(shimDir) {
  const dirs = (process.env.PATH || '')
    .split(path.delimiter)
    .filter((d) => d && !isExecutable(path.join(d, 'cargo')) && !isExecutable(path.join(d, 'rustc')));
  fs.mkdirSync(shimDir, { recursive: true });
  fs.symlinkSync(process.execPath, path.join(shimDir, 'node'));
  return [shimDir, ...dirs].join(path.delimiter);
}

/** The environment for child npm/node processes: no npm_* settings inherited from a parent npm. */
function childEnv(extra) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^npm_/i.test(k) || k === 'ITERATIVEFLOW_BUILD_FROM_SOURCE' || k === 'NODE_PATH' || k === 'NODE_OPTIONS')
      continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

function run(cmd, args, opts) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 60_000, maxBuffer: 64 * 1024 * 1024, ...opts });
  if (r.error) throw r.error;
  return r;
}

function runOk(cmd, args, opts, what) {
  const r = run(cmd, args, opts);
  assert.equal(r.status, 0, `${what} failed (exit ${r.status}, signal ${r.signal}):\n${r.stdout}\n${r.stderr}`);
  return r;
}

/** `npm pack --json [--dry-run]` of `dir`: the parsed report of the one package. */
function npmPack(dir, { dryRun = false, dest, env } = {}) {
  const args = [npmCli(), 'pack', '--json', '--ignore-scripts'];
  if (dryRun) args.push('--dry-run');
  if (dest) args.push('--pack-destination', dest);
  const r = runOk(process.execPath, args, { cwd: dir, env: env ?? childEnv() }, `npm pack in ${dir}`);
  const report = JSON.parse(r.stdout);
  assert.equal(report.length, 1);
  return report[0];
}

/** The relative `require('./…')` targets of a CommonJS file, as package paths. */
function relativeRequires(file, pkgRoot) {
  const text = fs.readFileSync(path.join(pkgRoot, file), 'utf8');
  const out = [];
  for (const m of text.matchAll(/require\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g)) {
    let target = path.posix.normalize(path.posix.join(path.posix.dirname(file), m[1]));
    // As require resolves it: `x` is x.js, or x/index.js when x is a directory (lib/doctor).
    if (!path.posix.extname(target)) {
      const isDir = fs.statSync(path.join(pkgRoot, target), { throwIfNoEntry: false })?.isDirectory();
      target += isDir ? '/index.js' : '.js';
    }
    out.push(target);
  }
  return out;
}

/** The @napi-rs/cli entry (a devDependency), run with this node. */
function napiCli() {
  const req = createRequire(path.join(root, 'package.json'));
  const pkgJson = req.resolve('@napi-rs/cli/package.json');
  const pkg = JSON.parse(fs.readFileSync(pkgJson, 'utf8'));
  return path.resolve(path.dirname(pkgJson), typeof pkg.bin === 'string' ? pkg.bin : pkg.bin.napi);
}

/**
 * A copy of the package source at `dir` as the release job has it before publishing: the packed
 * files, package.json, package-lock.json and npm/ (manifests, READMEs, copy-artifact.mjs), with a
 * binary in every npm/<triple>/ as `napi artifacts` leaves them — a placeholder, or for the host
 * the real release build when `realBinary`.
 */
function releaseCopy(dir, { realBinary = false } = {}) {
  const files = npmPack(root, { dryRun: true }).files.map((f) => f.path);
  for (const f of [...files, 'package-lock.json']) {
    fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    fs.copyFileSync(path.join(root, f), path.join(dir, f));
  }
  fs.cpSync(path.join(root, 'npm'), path.join(dir, 'npm'), {
    recursive: true,
    filter: (src) => !src.endsWith('.node'),
  });
  for (const t of platformTriples()) {
    const bin = path.join(dir, 'npm', t, `${rootPkg.napi.binaryName}.${t}.node`);
    if (realBinary && t === triple) copyArtifact(t, { outDir: path.dirname(bin) });
    else fs.writeFileSync(bin, `placeholder for the ${t} build\n`);
  }
  return dir;
}

/**
 * Runs package.json's `release:prepare` script (`napi pre-publish …`) in `dir`, as the release
 * job does, but with this node and no registry: it must not publish anything.
 */
function releasePrepare(dir) {
  const script = rootPkg.scripts['release:prepare'];
  const words = script.split(/\s+/);
  assert.equal(words[0], 'napi', `release:prepare runs napi: ${script}`);
  const env = childEnv({ npm_config_registry: 'http://127.0.0.1:9/', npm_config_update_notifier: 'false' });
  delete env.GITHUB_TOKEN;
  delete env.GITHUB_REPOSITORY;
  return runOk(
    process.execPath,
    [napiCli(), ...words.slice(1)],
    { cwd: dir, env },
    `npm run release:prepare in ${dir}`,
  );
}

// ---- tests ----------------------------------------------------------------------------------

test('the platform packages under npm/ match package.json (names, versions, targets)', () => {
  assert.deepEqual(checkManifests(), []);
  const triples = platformTriples();
  assert.deepEqual(triples, Object.keys(RUST_TARGETS).sort());
  assert.deepEqual([...rootPkg.napi.targets].sort(), Object.values(RUST_TARGETS).sort());
  for (const [t, rust] of Object.entries(RUST_TARGETS)) assert.equal(napiTriple(rust), t);
  assert.equal(rootPkg.napi.binaryName, 'iterativeflow-mysql-native');

  for (const t of triples) {
    const pkg = JSON.parse(fs.readFileSync(path.join(root, 'npm', t, 'package.json'), 'utf8'));
    const [osName, cpu, abi] = t.split('-');
    assert.equal(pkg.name, `${rootPkg.name}-${t}`);
    assert.equal(pkg.version, rootPkg.version, `${t}: version`);
    assert.deepEqual(pkg.os, [osName], `${t}: os`);
    assert.deepEqual(pkg.cpu, [cpu], `${t}: cpu`);
    if (osName === 'linux') assert.deepEqual(pkg.libc, [abi === 'gnu' ? 'glibc' : 'musl'], `${t}: libc`);
    else assert.equal(pkg.libc, undefined, `${t}: libc only on linux`);
    assert.equal(pkg.license, rootPkg.license, `${t}: license`);
    assert.deepEqual(pkg.engines, rootPkg.engines, `${t}: engines`);
    // npm publish --provenance requires repository.url to name the repository that built it.
    assert.equal(pkg.repository.url, `git+${REPOSITORY}.git`, `${t}: repository`);
    assert.equal(pkg.repository.directory, `npm/${t}`, `${t}: repository.directory`);
    assert.equal(pkg.homepage, rootPkg.homepage, `${t}: homepage`);
    assert.deepEqual(pkg.bugs, rootPkg.bugs, `${t}: bugs`);
    const readme = fs.readFileSync(path.join(root, 'npm', t, 'README.md'), 'utf8');
    assert.match(readme, new RegExp(`^# ${pkg.name}\\n`), `${t}: README.md title`);
    assert.ok(readme.includes(`\`${RUST_TARGETS[t]}\``), `${t}: README.md names the Rust target`);
  }
  // The root tarball has no runtime dependencies (mysql2 is only a devDependency of the repo).
  assert.equal(rootPkg.dependencies, undefined);
  assert.equal(rootPkg.peerDependencies, undefined);
});

test('in the repository no platform package is an optional dependency, nor in package-lock.json', () => {
  // They are on the registry only after a release: listed here, `npm ci` on a clean clone fails
  // ("Missing: …-darwin-arm64@ from lock file") or needs a package the registry does not have.
  assert.deepEqual(platformDeps(rootPkg.optionalDependencies), []);
  const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8'));
  assert.equal(lock.name, rootPkg.name);
  assert.equal(lock.version, rootPkg.version);
  assert.equal(lock.lockfileVersion, 3);
  const named = new Set();
  for (const [key, entry] of Object.entries(lock.packages)) {
    if (key !== '' && key.split('node_modules/').pop().startsWith(`${rootPkg.name}-`)) named.add(key);
    for (const f of ['dependencies', 'optionalDependencies', 'devDependencies', 'peerDependencies']) {
      for (const d of platformDeps(entry[f])) named.add(`${key || '(root)'} → ${d}`);
    }
  }
  assert.deepEqual([...named], [], 'package-lock.json names a platform package');
  // The lock file's root entry is package.json's own dependencies (so `npm ci` accepts it).
  assert.deepEqual(lock.packages[''].devDependencies, rootPkg.devDependencies);
  assert.equal(lock.packages[''].optionalDependencies, undefined);
  // The publish step is wired: release:prepare adds them, prepublishOnly refuses a root without.
  assert.match(rootPkg.scripts['release:prepare'], /^napi pre-publish -t npm( |$)/);
  assert.match(rootPkg.scripts['release:prepare'], / --skip-optional-publish( |$)/, "publishing is the workflow's job");
  assert.match(rootPkg.scripts['release:prepare'], / --no-gh-release( |$)/);
  assert.equal(rootPkg.scripts.prepublishOnly, 'node npm/copy-artifact.mjs --check-release');
  assert.equal(rootPkg.scripts.version, 'napi version');
});

test('package.json carries the metadata a registry user expects', () => {
  assert.equal(rootPkg.repository.type, 'git');
  assert.equal(rootPkg.repository.url, `git+${REPOSITORY}.git`);
  assert.equal(rootPkg.homepage, `${REPOSITORY}#readme`);
  assert.deepEqual(rootPkg.bugs, { url: `${REPOSITORY}/issues` });
  assert.equal(rootPkg.license, 'MIT');
  assert.equal(typeof rootPkg.author, 'string');
  assert.ok(Array.isArray(rootPkg.keywords) && rootPkg.keywords.length >= 5, 'keywords');
  for (const k of ['iterativeflow', 'mysql', 'mariadb', 'napi-rs'])
    assert.ok(rootPkg.keywords.includes(k), `keyword ${k}`);
  assert.match(rootPkg.engines.node, /^>= ?\d+/);
  assert.deepEqual(rootPkg.exports, {
    '.': { types: './index.d.ts', default: './index.js' },
    './v3': { types: './v3.d.ts', default: './v3.js' },
    './package.json': './package.json',
  });
  assert.equal(rootPkg.main, 'index.js');
  assert.equal(rootPkg.types, 'index.d.ts');
  // README's install section says which platforms have prebuilt binaries.
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  for (const t of Object.keys(RUST_TARGETS)) assert.ok(readme.includes(`\`${t}\``), `README lists ${t}`);
});

test('npm run release:prepare (napi pre-publish -t npm) adds every platform package at exactly this version', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'iterflow-prepare-'));
  try {
    const dir = releaseCopy(path.join(tmp, 'pkg'));
    const manifest = () => JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    const platformManifests = () =>
      platformTriples({ root: dir }).map((t) => fs.readFileSync(path.join(dir, 'npm', t, 'package.json'), 'utf8'));
    const before = manifest();
    const platformBefore = platformManifests();
    const prepublishOnly = () => run('sh', ['-c', before.scripts.prepublishOnly], { cwd: dir, env: childEnv() });

    // Before: the repository state; publishing the root is refused.
    assert.deepEqual(checkManifests({ root: dir }), []);
    const refused = prepublishOnly();
    assert.equal(
      refused.status,
      1,
      `prepublishOnly let an unprepared root through:\n${refused.stdout}${refused.stderr}`,
    );
    assert.match(refused.stderr, /optionalDependencies\["iterativeflow-mysql-native-linux-x64-gnu"\] is undefined/);
    assert.match(refused.stderr, /not ready to publish/);

    releasePrepare(dir);

    // After: exactly one entry per platform package, at the root's version; nothing else changed.
    const after = manifest();
    const expected = Object.fromEntries(platformTriples().map((t) => [`${rootPkg.name}-${t}`, rootPkg.version]));
    assert.deepEqual(after.optionalDependencies, expected);
    assert.deepEqual({ ...after, optionalDependencies: undefined }, { ...before, optionalDependencies: undefined });
    assert.deepEqual(platformManifests(), platformBefore, 'the platform manifests are untouched');
    assert.deepEqual(checkManifests({ root: dir, release: true }), []);
    const ok = prepublishOnly();
    assert.equal(ok.status, 0, `prepublishOnly refused the prepared root:\n${ok.stdout}${ok.stderr}`);
    assert.match(ok.stdout, /7 platform packages with their binaries, all in optionalDependencies: ready to publish/);
    // …and the repository check now sees them (the prepared manifest is never committed).
    assert.ok(checkManifests({ root: dir }).some((p) => /optionalDependencies lists/.test(p)));

    // A missing binary (a target that failed to build) stops the release.
    fs.rmSync(path.join(dir, 'npm', 'darwin-x64', `${rootPkg.napi.binaryName}.darwin-x64.node`));
    assert.match(checkManifests({ root: dir, release: true }).join('\n'), /darwin-x64\.node is missing/);
    const failed = run(process.execPath, [napiCli(), ...rootPkg.scripts['release:prepare'].split(/\s+/).slice(1)], {
      cwd: dir,
      env: childEnv({ npm_config_registry: 'http://127.0.0.1:9/' }),
    });
    assert.notEqual(failed.status, 0, 'napi pre-publish accepted a missing binary');
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('npm pack of the root lists only what users need', () => {
  const report = npmPack(root, { dryRun: true });
  const files = report.files.map((f) => f.path).sort();

  const libJs = fs
    .readdirSync(path.join(root, 'lib'), { recursive: true })
    .filter((f) => f.endsWith('.js'))
    .map((f) => `lib/${f.split(path.sep).join('/')}`);
  const bins = Object.values(rootPkg.bin || {}).map((b) => path.posix.normalize(b));
  const required = [
    'index.js',
    'index.d.ts',
    'v3.js',
    'v3.d.ts',
    'package.json',
    'scripts/install.js',
    ...libJs,
    ...bins,
  ];
  // docs/ goes along: README links to its pages.
  const docs = fs
    .readdirSync(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`);
  const optional = ['README.md', 'CHANGELOG.md', 'LICENSE', 'LICENSE.md', 'LICENSE.txt', ...docs];
  for (const f of required) assert.ok(files.includes(f), `${f} is missing from the tarball`);
  for (const f of optional) {
    if (fs.existsSync(path.join(root, f))) assert.ok(files.includes(f), `${f} exists but is not packed`);
  }
  const extra = files.filter((f) => !required.includes(f) && !optional.includes(f));
  assert.deepEqual(extra, [], 'unexpected files in the tarball');
  for (const f of files) {
    assert.doesNotMatch(f, /^(src|__test__|target|npm|bench|examples|node_modules|\.ci)\//, f);
    assert.doesNotMatch(f, /\.node$|^Cargo\.|^build\.rs$/, f);
  }

  // Every relative require of the packed code is packed too.
  for (const f of files.filter((x) => x.endsWith('.js'))) {
    for (const target of relativeRequires(f, root)) {
      assert.ok(files.includes(target), `${f} requires ${target}, which is not packed`);
    }
  }
  // The types entry is packed, and the tarball is small (no binaries).
  assert.ok(files.includes(rootPkg.types), `types entry ${rootPkg.types} is packed`);
  assert.ok(files.includes(rootPkg.main), `main entry ${rootPkg.main} is packed`);
  assert.ok(report.unpackedSize < 1024 * 1024, `unpacked size ${report.unpackedSize} B`);
});

test(
  'installs from the two tarballs (no registry, no cargo) and works against the database',
  {
    timeout: 120_000,
    skip: !fs.existsSync(builtBinary)
      ? `no release binary ${binaryName} at the repository root (run \`npm run build\` first)`
      : !fs.existsSync(path.join(root, 'npm', triple, 'package.json'))
        ? `no platform package npm/${triple}/ for this host`
        : false,
  },
  async () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'iterflow-pack-'));
    const db = await freshDatabase('pack');
    try {
      const tarballs = path.join(tmp, 'tarballs');
      fs.mkdirSync(tarballs);

      // 1. The two tarballs as the release job publishes them, from a temporary copy (the repo is
      //    untouched): the root after `npm run release:prepare`, so it lists every platform package
      //    as an optional dependency like the published one, and npm/<triple>/ with the current
      //    release binary.
      const release = releaseCopy(path.join(tmp, 'release'), { realBinary: true });
      releasePrepare(release);
      const rootReport = npmPack(release, { dest: tarballs });
      const platformDir = path.join(release, 'npm', triple);
      const platformReport = npmPack(platformDir, { dest: tarballs });
      assert.deepEqual(
        platformReport.files.map((f) => f.path).sort(),
        [binaryName, 'README.md', 'package.json'].sort(),
      );
      assert.equal(platformReport.name, `${rootPkg.name}-${triple}`);
      assert.equal(platformReport.version, rootPkg.version);

      // 2. An empty project; install both tarballs with an empty cache, --offline and an
      //    unreachable registry (nothing can be fetched), and without cargo on PATH.
      const project = path.join(tmp, 'project');
      fs.mkdirSync(project);
      fs.writeFileSync(
        path.join(project, 'package.json'),
        JSON.stringify({ name: 'pack-consumer', version: '1.0.0', private: true }, null, 2),
      );
      const PATH = pathWithoutRust(path.join(tmp, 'bin'));
      assert.equal(which('cargo', PATH), null, 'cargo is still on PATH');
      const env = childEnv({
        PATH,
        npm_config_cache: path.join(tmp, 'npm-cache'),
        npm_config_registry: 'http://127.0.0.1:9/',
        npm_config_update_notifier: 'false',
      });
      const install = runOk(
        process.execPath,
        [
          npmCli(),
          'install',
          '--offline',
          '--no-audit',
          '--no-fund',
          '--foreground-scripts',
          '--loglevel=warn',
          path.join(tarballs, rootReport.filename),
          path.join(tarballs, platformReport.filename),
        ],
        { cwd: project, env },
        'npm install of the tarballs',
      );
      const installLog = install.stdout + install.stderr;
      // scripts/install.js ran (npm 11 still runs dependency install scripts by default; it
      // warns that allowScripts does not cover them), found the prebuilt binary, built nothing.
      if (!/install-scripts.*(skipped|not run|blocked)/i.test(installLog)) {
        assert.match(installLog, /native binding loads/, installLog);
      }
      assert.doesNotMatch(installLog, /napi build|cargo|building from source/i, installLog);

      const installed = path.join(project, 'node_modules', rootPkg.name);
      const installedPlatform = path.join(project, 'node_modules', `${rootPkg.name}-${triple}`);
      assert.ok(fs.existsSync(path.join(installedPlatform, binaryName)), 'platform binary installed');
      // The installed root is the published shape: every platform package an optional dependency
      // at exactly its version; only the host's one is installed (the others cannot be fetched
      // here, and would not match os/cpu/libc anyway).
      const installedPkg = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8'));
      assert.deepEqual(
        installedPkg.optionalDependencies,
        Object.fromEntries(platformTriples().map((t) => [`${rootPkg.name}-${t}`, rootPkg.version])),
      );
      assert.deepEqual(
        fs.readdirSync(path.join(project, 'node_modules')).filter((d) => d.startsWith(`${rootPkg.name}-`)),
        [`${rootPkg.name}-${triple}`],
      );
      assert.deepEqual(
        fs.readdirSync(installed).filter((f) => f.endsWith('.node') || f === 'src' || f === 'target'),
        [],
        'the root package holds no binary or sources',
      );

      // 3. A consumer script (ESM, named imports, as users of @iterativeflow/mysql write them).
      fs.writeFileSync(
        path.join(project, 'consumer.mjs'),
        `
import { createRequire } from 'node:module';
import { mysqlPool, applySchema, createMysqlBackend, ddl, tables } from ${JSON.stringify(rootPkg.name)};

const require = createRequire(import.meta.url);
const sql = mysqlPool(process.env.DB_URL);
const [row] = await sql.query('SELECT 1 + 1 AS two, DATABASE() AS db');
await applySchema(sql);
const { store } = createMysqlBackend(sql);
const spec = { name: 'greet', version: 1, input: { who: 'pack' }, idempotencyKey: 'k-1', tags: ['t'] };
const started = await store.startRun(spec);
const again = await store.startRun(spec);
const snap = await store.loadRun(started.runId);
const [count] = await sql.query('SELECT COUNT(*) AS n FROM ' + tables('').run);
await sql.close();
console.log(JSON.stringify({
  two: Number(row.two),
  db: row.db,
  ddl: ddl().length,
  created: started.created,
  deduped: again.runId === started.runId && again.created === false,
  run: { id: snap.run.id === started.runId, status: snap.run.status, input: snap.run.input, tags: snap.run.tags },
  steps: snap.steps.size,
  runs: Number(count.n),
  closed: sql.closed,
  native: Object.keys(require.cache).filter((k) => k.endsWith('.node')),
}));
`,
      );
      const r = runOk(
        process.execPath,
        ['consumer.mjs'],
        { cwd: project, env: { ...env, DB_URL: db.url } },
        'the consumer script',
      );
      const out = JSON.parse(r.stdout.trim().split('\n').pop());
      assert.deepEqual(
        { ...out, native: undefined },
        {
          two: 2,
          db: db.database,
          ddl: 6,
          created: true,
          deduped: true,
          run: { id: true, status: 'pending', input: { who: 'pack' }, tags: ['t'] },
          steps: 0,
          runs: 1,
          closed: true,
          native: undefined,
        },
      );
      // The binding came from the installed platform package, not from the repository.
      assert.deepEqual(out.native, [fs.realpathSync(path.join(installedPlatform, binaryName))]);
    } finally {
      await db.drop();
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  },
);
