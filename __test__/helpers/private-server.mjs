// The life of one private, throwaway server process, whichever server it is (helpers/mariadb.mjs
// and helpers/mysql.mjs say how theirs is initialised and started):
//
//   const server = await launchPrivateServer(kind, opts);
//   server.url      // 'mysql://root@127.0.0.1:PORT/'  (root, empty password)
//   await server.restart();          // graceful stop + start, same port & datadir
//   await server.restart({ hard: true, downtimeMs: 500 }); // SIGKILL ("crash"), wait, start
//   await server.halt() / resume()   // the two halves of a restart
//   await server.stop();             // shut down and delete the temp dir
//
// No Docker, no system service: the datadir lives in a temp directory and the server runs on a
// free 127.0.0.1 port. It is killed (and its directory removed) when this Node process exits, is
// interrupted, or even dies from SIGKILL (a detached watchdog notices that).
//
// A kind is `{ name, command(), init(s), args(s), afterStart?(conn, s) }`: `command()` the argv
// prefix that runs the server binary, `init(s)` makes the datadir (synchronously), `args(s)` the
// server's options for the paths and port in `s`.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

import mysql from 'mysql2/promise';
import { killOnExit } from './exit-hooks.mjs';
import { readTail, startWatchdog, tempBase, within } from './server-tools.mjs';

/** The user with a password every private server has (ALL PRIVILEGES on *.*), for auth tests. */
export const PASSWORD_USER = Object.freeze({ user: 'iterflow', password: 's3cret-pw' });

const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;

/** Servers still running in this process (for the exit / signal hooks). */
const live = new Set();

export function freePort() {
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

export async function connectRoot(port) {
  return mysql.createConnection({ host: '127.0.0.1', port, user: 'root', password: '', connectTimeout: 2000 });
}

/** Spawn the server and wait (≤ 60 s) until it accepts a root connection. */
async function launch(s, kind) {
  try {
    fs.rmSync(s.errLog, { force: true });
  } catch {}
  const [bin, ...pre] = kind.command();
  const proc = spawn(bin, [...pre, ...kind.args(s), ...(s.extraArgs || [])], {
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
      const conn = await connectRoot(s.port);
      await conn.end();
      return;
    } catch (e) {
      lastErr = e;
    }
    await sleep(50);
  }
  const why = exitedEarly
    ? `${kind.name} exited early (${exitedEarly.error ? exitedEarly.error.message : `code ${exitedEarly.code}, signal ${exitedEarly.signal}`})`
    : `${kind.name} did not accept connections within ${READY_TIMEOUT_MS / 1000}s (last error: ${lastErr && lastErr.message})`;
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
 * Starts a private server of `kind` (see the module comment).
 *
 * @param {object} kind
 * @param {object} [opts]
 * @param {string[]} [opts.extraArgs]  extra server options
 * @param {string} [opts.prefix]  the temp directory's name prefix
 */
export async function launchPrivateServer(kind, opts = {}) {
  const t0 = Date.now();
  const dir = fs.mkdtempSync(path.join(tempBase(), opts.prefix ?? `iterflow-${kind.name}-`));
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
  let version;
  killOnExit(live, killSync);
  live.add(s);
  try {
    s.watchdog = startWatchdog(dir);

    kind.init(s);

    // The free port may be taken between probing and binding: retry.
    for (let attempt = 1; ; attempt++) {
      s.port = await freePort();
      try {
        await launch(s, kind);
        break;
      } catch (e) {
        if (!e.portInUse || attempt >= 5) throw e;
      }
    }

    const conn = await connectRoot(s.port);
    try {
      await conn.query(`CREATE USER IF NOT EXISTS ?@'%' IDENTIFIED BY ?`, [PASSWORD_USER.user, PASSWORD_USER.password]);
      await conn.query(`GRANT ALL PRIVILEGES ON *.* TO ?@'%' WITH GRANT OPTION`, [PASSWORD_USER.user]);
      [[{ v: version }]] = await conn.query('SELECT VERSION() AS v');
    } finally {
      await conn.end();
    }
  } catch (e) {
    killSync(s);
    throw e;
  }

  let stopped = false;
  const handle = {
    kind: kind.name,
    version,
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
          await launch(s, kind);
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
