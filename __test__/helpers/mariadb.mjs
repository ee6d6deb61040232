// Private, throwaway MariaDB server for the test suite.
//
//   const server = await startPrivateServer();
//   server.url      // 'mysql://root@127.0.0.1:PORT/'  (root, empty password)
//   await server.restart();          // graceful stop + start, same port & datadir
//   await server.restart({ hard: true, downtimeMs: 500 }); // SIGKILL ("crash"), wait, start
//   await server.stop();             // shut down and delete the temp dir
//
// No Docker, no system service: `mariadb-install-db` initialises a datadir in a
// temp directory and `mariadbd` runs on a free 127.0.0.1 port. The server is
// killed (and its directory removed) when this Node process exits, is
// interrupted, or even dies from SIGKILL (a detached watchdog notices that).
//
// Besides root (empty password) the server has a user `iterflow` with password
// `s3cret-pw` (see PASSWORD_USER) holding ALL PRIVILEGES on *.*, for tests of
// authentication errors.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

import mysql from 'mysql2/promise';
import { killOnExit } from './exit-hooks.mjs';
import { isRoot, readTail, serverBinaries, tempBase, within } from './server-tools.mjs';

export const PASSWORD_USER = Object.freeze({ user: 'iterflow', password: 's3cret-pw' });

const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;

/** Servers still running in this process (for the exit / signal hooks). */
const live = new Set();

function findBinaries() {
  const bins = serverBinaries();
  if (!bins.mariadbd || !bins.installDb) {
    throw new Error(
      'MariaDB server binaries not found (need `mariadbd` and `mariadb-install-db`). ' +
        'Install them with `apt-get install -y mariadb-server`, ' +
        'or point MYSQL_URL at an existing server.',
    );
  }
  return bins;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Options shared by install-db (it passes unknown options to mariadbd) and the
// server, so InnoDB does not resize its redo log on first start.
const COMMON_OPTS = ['--innodb-log-file-size=64M', '--innodb-buffer-pool-size=256M'];

function serverArgs(s) {
  return [
    '--no-defaults',
    `--datadir=${s.datadir}`,
    `--port=${s.port}`,
    `--socket=${s.socket}`,
    '--bind-address=127.0.0.1',
    ...(isRoot() ? ['--user=root'] : []),
    ...COMMON_OPTS,
    // Durability is irrelevant for a test server; speed is not. A process
    // kill (restart({hard:true})) still loses nothing: the writes are in the
    // OS page cache.
    '--innodb-flush-log-at-trx-commit=2',
    '--innodb-doublewrite=0',
    '--innodb-buffer-pool-dump-at-shutdown=0',
    '--innodb-buffer-pool-load-at-startup=0',
    '--skip-log-bin',
    '--max-connections=500',
    '--skip-name-resolve',
    // --no-defaults would give latin1; use what a packaged server uses.
    '--character-set-server=utf8mb4',
    '--collation-server=utf8mb4_general_ci',
    `--pid-file=${path.join(s.dir, 'mariadbd.pid')}`,
    `--log-error=${s.errLog}`,
    `--tmpdir=${s.tmp}`,
    ...(s.extraArgs || []),
  ];
}

// Detached watchdog: if the parent dies without cleaning up (SIGKILL, OOM…),
// kill the server whose pid is in <dir>/server.pid and remove <dir>.
const WATCHDOG_SRC = `
const fs = require('fs');
const [parent, dir] = process.argv.slice(1);
const pidFile = require('path').join(dir, 'server.pid');
function alive(pid) { try { process.kill(pid, 0); return true; } catch (e) { return e.code === 'EPERM'; } }
setInterval(() => {
  if (!fs.existsSync(dir)) process.exit(0);
  if (alive(Number(parent))) return;
  try { process.kill(Number(fs.readFileSync(pidFile, 'utf8')), 'SIGKILL'); } catch {}
  setTimeout(() => { try { fs.rmSync(dir, { recursive: true, force: true }); } catch {} process.exit(0); }, 300);
}, 500);
`;

function killSync(s) {
  live.delete(s);
  if (s.proc && s.proc.exitCode === null && s.proc.signalCode === null) {
    try {
      process.kill(s.proc.pid, 'SIGKILL');
    } catch {}
  }
  if (s.watchdog) {
    try {
      process.kill(s.watchdog.pid, 'SIGKILL');
    } catch {}
  }
  try {
    fs.rmSync(s.dir, { recursive: true, force: true });
  } catch {}
}

function initDatadir(s, bins) {
  const args = [
    '--no-defaults',
    '--auth-root-authentication-method=normal',
    `--datadir=${s.datadir}`,
    ...(isRoot() ? ['--user=root'] : []),
    '--skip-test-db',
    '--skip-name-resolve',
    ...COMMON_OPTS,
  ];
  const r = spawnSync(bins.installDb, args, { encoding: 'utf8', timeout: 120_000 });
  if (r.error || r.status !== 0) {
    throw new Error(
      `mariadb-install-db failed (${r.error ? r.error.message : `exit ${r.status}`}):\n` +
        `${bins.installDb} ${args.join(' ')}\n${r.stdout || ''}${r.stderr || ''}`,
    );
  }
}

async function connectRoot(s) {
  return mysql.createConnection({
    host: '127.0.0.1',
    port: s.port,
    user: 'root',
    password: '',
    connectTimeout: 2000,
  });
}

/** Spawn mariadbd and wait (≤ 60 s) until it accepts a root connection. */
async function launch(s, bins) {
  try {
    fs.rmSync(s.errLog, { force: true });
  } catch {}
  const proc = spawn(bins.mariadbd, serverArgs(s), {
    // Own process group: a Ctrl-C on the terminal must not reach the server
    // before we have shut it down ourselves.
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  proc.stderr.on('data', (d) => {
    stderr = (stderr + d).slice(-8000);
  });
  proc.unref();
  proc.stderr.unref?.();
  s.proc = proc;
  s.exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  const spawnError = new Promise((resolve) => proc.once('error', resolve));
  fs.writeFileSync(path.join(s.dir, 'server.pid'), String(proc.pid ?? ''));

  const deadline = Date.now() + READY_TIMEOUT_MS;
  let lastErr;
  let exitedEarly = null;
  s.exited.then((x) => {
    exitedEarly = x;
  });
  spawnError.then((e) => {
    exitedEarly = { error: e };
  });
  while (Date.now() < deadline) {
    if (exitedEarly) break;
    try {
      const conn = await connectRoot(s);
      await conn.end();
      return;
    } catch (e) {
      lastErr = e;
    }
    await sleep(50);
  }
  const why = exitedEarly
    ? `mariadbd exited early (${exitedEarly.error ? exitedEarly.error.message : `code ${exitedEarly.code}, signal ${exitedEarly.signal}`})`
    : `mariadbd did not accept connections within ${READY_TIMEOUT_MS / 1000}s (last error: ${lastErr && lastErr.message})`;
  if (!exitedEarly) {
    try {
      process.kill(proc.pid, 'SIGKILL');
    } catch {}
    await within(s.exited, 5000);
  }
  const err = new Error(
    `${why}\n--- ${s.errLog} ---\n${readTail(s.errLog)}` + (stderr ? `\n--- stderr ---\n${stderr}` : ''),
  );
  err.portInUse = /bind on tcp\/ip port|address already in use/i.test(readTail(s.errLog) + stderr);
  throw err;
}

/** Stop the server process (datadir kept). SIGTERM, bounded wait, then SIGKILL. */
async function halt(s, { hard = false } = {}) {
  const proc = s.proc;
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  try {
    process.kill(proc.pid, hard ? 'SIGKILL' : 'SIGTERM');
  } catch {}
  if (!(await within(s.exited, STOP_TIMEOUT_MS))) {
    try {
      process.kill(proc.pid, 'SIGKILL');
    } catch {}
    await within(s.exited, 5000);
  }
}

/**
 * Start a private MariaDB server.
 *
 * @param {object} [opts]
 * @param {string[]} [opts.extraArgs]  extra `mariadbd` options
 * @returns {Promise<{url: string, port: number, socket: string, datadir: string,
 *   dir: string, errLog: string, pid: number, user: {user: string, password: string},
 *   stop: () => Promise<void>, restart: (o?: {hard?: boolean, downtimeMs?: number}) => Promise<void>,
 *   halt: (o?: {hard?: boolean}) => Promise<void>, resume: () => Promise<void>}>}
 */
export async function startPrivateServer(opts = {}) {
  const bins = findBinaries();
  const t0 = Date.now();
  const dir = fs.mkdtempSync(path.join(tempBase(), 'iterflow-mariadb-'));
  const s = {
    dir,
    datadir: path.join(dir, 'data'),
    socket: path.join(dir, 'mysql.sock'),
    errLog: path.join(dir, 'err.log'),
    tmp: path.join(dir, 'tmp'),
    port: 0,
    extraArgs: opts.extraArgs,
    proc: null,
    exited: null,
    watchdog: null,
  };
  fs.mkdirSync(s.tmp);
  killOnExit(live, killSync);
  live.add(s);
  try {
    s.watchdog = spawn(process.execPath, ['-e', WATCHDOG_SRC, String(process.pid), dir], {
      detached: true,
      stdio: 'ignore',
    });
    s.watchdog.unref();

    initDatadir(s, bins);

    // The free port may be taken between probing and binding: retry.
    for (let attempt = 1; ; attempt++) {
      s.port = await freePort();
      try {
        await launch(s, bins);
        break;
      } catch (e) {
        if (!e.portInUse || attempt >= 5) throw e;
      }
    }

    const conn = await connectRoot(s);
    try {
      await conn.query(`CREATE USER IF NOT EXISTS ?@'%' IDENTIFIED BY ?`, [PASSWORD_USER.user, PASSWORD_USER.password]);
      await conn.query(`GRANT ALL PRIVILEGES ON *.* TO ?@'%' WITH GRANT OPTION`, [PASSWORD_USER.user]);
    } finally {
      await conn.end();
    }
  } catch (e) {
    killSync(s);
    throw e;
  }

  let stopped = false;
  const handle = {
    url: `mysql://root@127.0.0.1:${s.port}/`,
    port: s.port,
    socket: s.socket,
    datadir: s.datadir,
    dir: s.dir,
    errLog: s.errLog,
    user: PASSWORD_USER,
    startupMs: Date.now() - t0,
    get pid() {
      return s.proc && s.proc.pid;
    },

    /** Shut the server down and delete its directory. Idempotent. */
    async stop() {
      if (stopped) return;
      stopped = true;
      await halt(s);
      killSync(s);
    },

    /** Stop the process, keeping the datadir (hard: SIGKILL, i.e. a crash). */
    async halt({ hard = false } = {}) {
      if (stopped) throw new Error('server was stopped');
      await halt(s, { hard });
    },

    /** Start the process again on the same port with the same datadir. */
    async resume() {
      if (stopped) throw new Error('server was stopped');
      if (s.proc && s.proc.exitCode === null && s.proc.signalCode === null) return;
      // The port was ours a moment ago; another process could grab it, or a
      // killed server's socket may linger briefly. Retry for a few seconds.
      const until = Date.now() + 10_000;
      for (;;) {
        try {
          await launch(s, bins);
          return;
        } catch (e) {
          if (!e.portInUse || Date.now() > until) throw e;
          await sleep(250);
        }
      }
    },

    /** Simulate a server restart: halt (graceful or hard), wait, resume. */
    async restart({ hard = false, downtimeMs = 0 } = {}) {
      await handle.halt({ hard });
      if (downtimeMs > 0) await sleep(downtimeMs);
      await handle.resume();
    },
  };
  return handle;
}
