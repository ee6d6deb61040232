// One server process of a private cluster on loopback (a Galera node in galera.mjs, a Group
// Replication member in group-replication.mjs): its start and wait for readiness, its cached admin
// connection and its kill. A member is a plain object the cluster harness owns; this module reads
// and sets `proc`, `conn`, `stderr`, `exited`, `frozen` and `dir` on it.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { within } from './server-tools.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function running(m) {
  return m.proc && m.proc.exitCode === null && m.proc.signalCode === null;
}

/** Forget (and destroy) the member's cached admin connection, before the member goes away. */
export function dropConn(m) {
  const conn = m.conn;
  m.conn = null;
  if (conn)
    try {
      conn.destroy();
    } catch {}
}

/** SIGKILL the member's process group (the server and anything it started) and the server. */
export function killMember(m) {
  if (!m.proc) return;
  try {
    process.kill(-m.proc.pid, 'SIGKILL');
  } catch {}
  try {
    process.kill(m.proc.pid, 'SIGKILL');
  } catch {}
}

/**
 * Spawns `bin args` as member `m` in its own process group (a Ctrl-C must not reach the server
 * first) and resolves once `connect(m)` succeeds; rejects with `failure(m, why)` when the server
 * exits first or does not answer within `readyTimeoutMs` (then it is killed).
 */
export async function launchMember(m, { bin, args, env, connect, failure, what, readyTimeoutMs, pollMs = 50 }) {
  const proc = spawn(bin, args, { detached: true, stdio: ['ignore', 'ignore', 'pipe'], ...(env ? { env } : {}) });
  m.stderr = '';
  proc.stderr.on('data', (d) => {
    m.stderr = (m.stderr + d).slice(-4000);
  });
  proc.unref();
  proc.stderr.unref?.();
  m.proc = proc;
  m.frozen = false;
  m.exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  let exitedEarly = null;
  m.exited.then((x) => {
    exitedEarly = x;
  });
  proc.once('error', (e) => {
    exitedEarly = { error: e };
  });
  fs.writeFileSync(path.join(m.dir, 'server.pid'), String(proc.pid ?? ''));

  const deadline = Date.now() + readyTimeoutMs;
  let lastErr;
  while (Date.now() < deadline && !exitedEarly) {
    try {
      const conn = await connect(m);
      await conn.end();
      return;
    } catch (e) {
      lastErr = e;
    }
    await sleep(pollMs);
  }
  if (!exitedEarly) {
    killMember(m);
    await within(m.exited, 5000);
  }
  throw failure(
    m,
    exitedEarly
      ? `${what} exited early (${exitedEarly.error ? exitedEarly.error.message : `code ${exitedEarly.code}, signal ${exitedEarly.signal}`})`
      : `${what} did not accept connections within ${readyTimeoutMs / 1000}s (last error: ${lastErr && lastErr.message})`,
  );
}

/**
 * Runs `sql` on the member's cached admin connection (opened by `connect(m, 5000)` on first use).
 * The connection keeps the test process alive only while a query is in flight, and is forgotten
 * after a fatal error.
 */
export async function adminQuery(m, connect, sql, params) {
  if (!m.conn) {
    const conn = await connect(m, 5000);
    conn.connection.stream?.unref?.();
    conn.on('error', () => {
      if (m.conn === conn) m.conn = null;
    });
    m.conn = conn;
  }
  const conn = m.conn;
  conn.inFlight = (conn.inFlight || 0) + 1;
  conn.connection.stream?.ref?.();
  try {
    const [rows] = await conn.query(sql, params);
    return rows;
  } catch (e) {
    if (e && e.fatal) m.conn = null;
    throw e;
  } finally {
    if (--conn.inFlight === 0) conn.connection.stream?.unref?.();
  }
}
