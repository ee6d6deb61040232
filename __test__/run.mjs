#!/usr/bin/env node
// Test runner behind `npm test` (after `cargo test`).
//
//   node __test__/run.mjs                         # every __test__/**/*.test.mjs
//   node __test__/run.mjs __test__/sql.test.mjs   # just these files (or directories)
//   node __test__/run.mjs __test__/engine --test-name-pattern=retry
//
// Arguments starting with `--` are passed on to `node --test`.
//
// The suite runs once per server kind, MariaDB and MySQL, side by side: a private server of each
// kind is started (helpers/mariadb.mjs, helpers/mysql.mjs), and each run's test processes get
// MYSQL_URL pointing at theirs and IFW_TEST_SERVER naming its kind (helpers/server.mjs). Every
// file runs in both, except those for one server's cluster (galera/: MariaDB; group-replication/:
// MySQL) and those that talk to no server (once). Without the private MySQL (scripts/mysql-prefix.sh
// fetches it) its run is skipped with that reason — except under CI=true, where that fails. The
// servers are always stopped afterwards, also on Ctrl-C / SIGTERM. Each run's lines are prefixed
// with its kind, and each ends with its own summary.
//
// Environment:
//   MYSQL_URL          one run against this server instead (its kind read from VERSION())
//   TEST_SERVERS       the kinds to run, comma-separated (default: mariadb,mysql)
//   TEST_TIMEOUT       ms, default 600000. NB: in Node 20 `--test-timeout` bounds
//                      each test FILE as a whole, not only each test; give single
//                      tests their own `{ timeout }` in the test file.
//   TEST_CONCURRENCY   test files each run runs at once (node's default: cores - 1)

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import readline from 'node:readline';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import mysql from 'mysql2/promise';

const here = path.dirname(fileURLToPath(import.meta.url));

const DEFAULT_TIMEOUT_MS = 600_000;
const KILL_GRACE_MS = 10_000;

function findTests(dir, out = []) {
  let entries;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch (e) {
    throw new Error(`cannot read ${dir}: ${e.message}`);
  }
  for (const ent of entries) {
    if (ent.name === 'node_modules' || ent.name.startsWith('.')) continue;
    const p = path.join(dir, ent.name);
    if (ent.isDirectory()) findTests(p, out);
    else if (ent.isFile() && ent.name.endsWith('.test.mjs')) out.push(p);
  }
  return out;
}

function selectFiles(args) {
  if (args.length === 0) return findTests(here).sort();
  const files = [];
  for (const a of args) {
    const p = path.resolve(a);
    let st;
    try {
      st = fs.statSync(p);
    } catch {
      throw new Error(`no such test file or directory: ${a}`);
    }
    if (st.isDirectory()) files.push(...findTests(p).sort());
    else files.push(p);
  }
  return [...new Set(files)];
}

function log(msg) {
  process.stderr.write(`[run.mjs] ${msg}\n`);
}

/** The kinds of server `file` runs against: both, one (a cluster of that server's), or any one. */
function kindsFor(file) {
  const rel = path.relative(here, file).split(path.sep).join('/');
  if (rel.startsWith('galera/')) return ['mariadb'];
  if (rel.startsWith('group-replication/')) return ['mysql'];
  if (SERVERLESS.has(rel)) return ['any'];
  return ['mariadb', 'mysql'];
}

/** Files that talk to no server at all: they run once, in the first run. */
const SERVERLESS = new Set(['package/classify-table.test.mjs', 'package/readme.test.mjs', 'package/types.test.mjs']);

const CI = !['', '0', 'false'].includes((process.env.CI ?? '').toLowerCase());

/** `'mariadb'` or `'mysql'`, by the server's VERSION(). */
async function kindOf(url) {
  const conn = await mysql.createConnection({ uri: url, connectTimeout: 10_000 });
  try {
    const [[{ v }]] = await conn.query('SELECT VERSION() AS v');
    return { kind: /mariadb/i.test(v) ? 'mariadb' : 'mysql', version: v };
  } finally {
    await conn.end();
  }
}

/** Runs `node --test` on `files` for one server; resolves `{ code, signal, summary }`. */
function runPass(pass, files, passThrough, onChild) {
  const timeout = Number(process.env.TEST_TIMEOUT) || DEFAULT_TIMEOUT_MS;
  const nodeArgs = ['--test', '--test-reporter=spec', `--test-timeout=${timeout}`];
  if (process.env.TEST_CONCURRENCY) nodeArgs.push(`--test-concurrency=${process.env.TEST_CONCURRENCY}`);
  nodeArgs.push(...passThrough, ...files.map((f) => path.relative(process.cwd(), f) || f));
  const child = spawn(process.execPath, nodeArgs, {
    cwd: process.cwd(),
    env: { ...process.env, MYSQL_URL: pass.url, IFW_TEST_SERVER: pass.kind, FORCE_COLOR: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Own process group, so that the whole tree (node --test and its
    // per-file processes) can be signalled and nothing outlives us.
    detached: true,
  });
  onChild(child);
  const label = `[${pass.kind}] `;
  const summary = [];
  for (const stream of [child.stdout, child.stderr]) {
    const out = stream === child.stdout ? process.stdout : process.stderr;
    readline.createInterface({ input: stream }).on('line', (line) => {
      out.write(label + line + '\n');
      // The reporter's closing counts: "ℹ tests 12", "ℹ pass 12", …
      if (/^ℹ (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) /.test(line)) summary.push(line.slice(2));
    });
  }
  return new Promise((resolve) => {
    child.once('error', (e) => {
      log(`cannot start node --test: ${e.message}`);
      resolve({ code: 1, signal: null, summary });
    });
    child.once('close', (code, signal) => resolve({ code, signal, summary }));
  });
}

async function main() {
  const argv = process.argv.slice(2);
  const passThrough = argv.filter((a) => a.startsWith('--'));
  const selection = argv.filter((a) => !a.startsWith('--'));

  let files;
  try {
    files = selectFiles(selection);
  } catch (e) {
    log(e.message);
    return 2;
  }
  if (files.length === 0) {
    log(
      `no *.test.mjs files found${selection.length ? ` in ${selection.join(' ')}` : ` under ${path.relative(process.cwd(), here) || '.'}`}`,
    );
    return 1;
  }

  const servers = [];
  let stopping = null;
  const stopServers = () => {
    stopping ??= Promise.all(servers.map((s) => s.stop().catch((e) => log(`stopping ${s.kind}: ${e.message}`))));
    return stopping;
  };

  const children = new Set();
  let interrupted = null;
  const signalChildren = (sig) => {
    for (const child of children)
      try {
        process.kill(-child.pid, sig);
      } catch {}
  };
  const onSignal = (sig) => {
    if (interrupted) {
      signalChildren('SIGKILL'); // second signal: stop waiting
      return;
    }
    interrupted = sig;
    log(`${sig}: stopping tests`);
    signalChildren(sig);
    setTimeout(() => signalChildren('SIGKILL'), KILL_GRACE_MS).unref();
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, onSignal);

  try {
    const passes = [];
    if (process.env.MYSQL_URL) {
      const { kind, version } = await kindOf(process.env.MYSQL_URL);
      log(`using MYSQL_URL from the environment: ${kind} ${version}`);
      passes.push({ kind, url: process.env.MYSQL_URL, version });
    } else {
      const { startPrivateServer } = await import('./helpers/server.mjs');
      const { mysqlUnavailable } = await import('./helpers/mysql.mjs');
      const wanted = (process.env.TEST_SERVERS || 'mariadb,mysql').split(',').map((k) => k.trim());
      for (const kind of wanted) {
        if (kind !== 'mariadb' && kind !== 'mysql') {
          log(`TEST_SERVERS: unknown server kind ${JSON.stringify(kind)} (mariadb, mysql)`);
          return 2;
        }
        const missing = kind === 'mysql' ? mysqlUnavailable() : null;
        if (missing) {
          if (CI) {
            log(`CI=true and the MySQL run cannot start: ${missing}`);
            return 1;
          }
          log(`MySQL run SKIPPED: ${missing}`);
          continue;
        }
        const t0 = Date.now();
        const server = await startPrivateServer({ kind });
        servers.push(server);
        log(
          `private ${kind} ${server.version} ${server.url} (pid ${server.pid}, ${server.dir}) ready in ${Date.now() - t0} ms`,
        );
        passes.push({ kind, url: server.url, version: server.version });
        if (interrupted) return 128 + os.constants.signals[interrupted];
      }
    }
    if (passes.length === 0) {
      log('no server to run the tests against');
      return 1;
    }

    const plans = passes.map((pass, i) => ({
      pass,
      files: files.filter((f) => {
        const kinds = kindsFor(f);
        return kinds.includes(pass.kind) || (kinds.includes('any') && i === 0);
      }),
    }));
    for (const { pass, files: mine } of plans) log(`${pass.kind} ${pass.version}: ${mine.length} test file(s)`);
    const t0 = Date.now();
    const results = await Promise.all(
      plans.map(async (plan) => {
        if (plan.files.length === 0) return { code: 0, signal: null, summary: ['no files'], ms: 0 };
        let me;
        const r = await runPass(plan.pass, plan.files, passThrough, (child) => children.add((me = child)));
        // Leftovers in the group (a test's stray subprocess): end them.
        try {
          process.kill(-me.pid, 'SIGKILL');
        } catch {}
        children.delete(me);
        return { ...r, ms: Date.now() - t0 };
      }),
    );

    if (interrupted) return 128 + os.constants.signals[interrupted];
    let code = 0;
    for (const [i, { pass }] of plans.entries()) {
      const r = results[i];
      log(`${pass.kind} ${pass.version}: ${r.summary.join(', ')} (${Math.round(r.ms / 1000)} s)`);
      if (r.signal) {
        log(`${pass.kind}: node --test killed by ${r.signal}`);
        code ||= 128 + (os.constants.signals[r.signal] || 0);
      } else if (r.code !== 0) code ||= r.code ?? 1;
    }
    return code;
  } catch (e) {
    log(e && e.stack ? e.stack : String(e));
    return 1;
  } finally {
    await stopServers();
  }
}

const code = await main();
process.exit(code);
