#!/usr/bin/env node
// Test runner behind `npm test` (after `cargo test`).
//
//   node __test__/run.mjs                         # every __test__/**/*.test.mjs
//   node __test__/run.mjs __test__/sql.test.mjs   # just these files (or directories)
//   node __test__/run.mjs __test__/engine --test-name-pattern=retry
//
// Arguments starting with `--` are passed on to `node --test`.
// Unless MYSQL_URL is set, a private MariaDB is started for the run (see
// helpers/mariadb.mjs) and MYSQL_URL points the test processes at it; it is
// always stopped afterwards, also on Ctrl-C / SIGTERM.
//
// Environment:
//   MYSQL_URL          use this server instead of starting one
//   TEST_TIMEOUT       ms, default 600000. NB: in Node 20 `--test-timeout` bounds
//                      each test FILE as a whole, not only each test; give single
//                      tests their own `{ timeout }` in the test file.
//   TEST_CONCURRENCY   test files run at once (node's default: cores - 1)

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

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

  let server = null;
  let stopping = null;
  const stopServer = () => {
    if (!server) return Promise.resolve();
    stopping ??= server.stop().catch((e) => log(`stopping MariaDB: ${e.message}`));
    return stopping;
  };

  let child = null;
  let interrupted = null;
  const onSignal = (sig) => {
    if (interrupted) {
      // Second signal: stop waiting.
      if (child)
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {}
      return;
    }
    interrupted = sig;
    log(`${sig}: stopping tests`);
    if (child) {
      try {
        process.kill(-child.pid, sig);
      } catch {}
      setTimeout(() => {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {}
      }, KILL_GRACE_MS).unref();
    }
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, onSignal);

  try {
    const env = { ...process.env };
    if (!env.MYSQL_URL) {
      const { startPrivateServer } = await import('./helpers/mariadb.mjs');
      const t0 = Date.now();
      server = await startPrivateServer();
      log(`private MariaDB ${server.url} (pid ${server.pid}, ${server.dir}) ready in ${Date.now() - t0} ms`);
      env.MYSQL_URL = server.url;
      if (interrupted) return 128 + os.constants.signals[interrupted];
    } else {
      log(`using MYSQL_URL from the environment`);
    }

    const timeout = Number(process.env.TEST_TIMEOUT) || DEFAULT_TIMEOUT_MS;
    const nodeArgs = ['--test', '--test-reporter=spec', `--test-timeout=${timeout}`];
    if (process.env.TEST_CONCURRENCY) nodeArgs.push(`--test-concurrency=${process.env.TEST_CONCURRENCY}`);
    nodeArgs.push(...passThrough, ...files.map((f) => path.relative(process.cwd(), f) || f));

    log(`${files.length} test file(s)`);
    child = spawn(process.execPath, nodeArgs, {
      cwd: process.cwd(),
      env,
      stdio: 'inherit',
      // Own process group, so that the whole tree (node --test and its
      // per-file processes) can be signalled and nothing outlives us.
      detached: true,
    });
    const { code, signal } = await new Promise((resolve) => {
      child.once('error', (e) => {
        log(`cannot start node --test: ${e.message}`);
        resolve({ code: 1, signal: null });
      });
      child.once('exit', (code, signal) => resolve({ code, signal }));
    });
    // Leftovers in the group (a test's stray subprocess): end them.
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {}

    if (interrupted) return 128 + os.constants.signals[interrupted];
    if (signal) {
      log(`node --test killed by ${signal}`);
      return 128 + (os.constants.signals[signal] || 0);
    }
    return code ?? 1;
  } catch (e) {
    log(e && e.stack ? e.stack : String(e));
    return 1;
  } finally {
    await stopServer();
  }
}

const code = await main();
process.exit(code);
