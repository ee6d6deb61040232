// Small tools the server harnesses (one server, a Galera cluster, a Group Replication group) use to
// find the server binaries, place datadirs, report failures and clean up after a killed test.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Where Debian and tarball installs keep `mariadbd` and friends, besides PATH. */
export const SBIN = ['/usr/sbin', '/usr/local/sbin', '/usr/local/mysql/bin', '/usr/local/bin', '/usr/bin'];

export function which(cmd, extraDirs = SBIN) {
  const dirs = [...(process.env.PATH || '').split(path.delimiter), ...extraDirs];
  for (const dir of dirs) {
    if (!dir) continue;
    const p = path.join(dir, cmd);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {}
  }
  return null;
}

/** `mariadbd` and `mariadb-install-db` (either may be null when not installed). */
export function serverBinaries() {
  return {
    mariadbd: process.env.MARIADBD || which('mariadbd') || which('mysqld'),
    installDb: process.env.MARIADB_INSTALL_DB || which('mariadb-install-db') || which('mysql_install_db'),
  };
}

/** Base directory for datadirs: tmpfs (/dev/shm) with `minGiB` free, else os.tmpdir(). */
export function tempBase(minGiB = 2) {
  if (process.env.MARIADB_TMPDIR) return process.env.MARIADB_TMPDIR;
  try {
    const st = fs.statfsSync('/dev/shm');
    fs.accessSync('/dev/shm', fs.constants.W_OK);
    if (st.bavail * st.bsize >= minGiB * 1024 ** 3) return '/dev/shm';
  } catch {}
  return os.tmpdir();
}

/** Resolves true when `promise` settles within `ms`, else false; leaves no timer behind. */
export function within(promise, ms) {
  let timer;
  const timeout = new Promise((r) => {
    timer = setTimeout(() => r(false), ms);
  });
  return Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    timeout,
  ]).finally(() => clearTimeout(timer));
}

export function readTail(file, max = 8000) {
  try {
    const s = fs.readFileSync(file, 'utf8');
    return s.length > max ? '…' + s.slice(-max) : s;
  } catch (e) {
    return `(could not read ${file}: ${e.message})`;
  }
}

export function isRoot() {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

// Detached watchdog: if the test process dies without cleaning up (SIGKILL, OOM…), SIGKILL every
// server whose pid is in <dir>/server.pid or <dir>/<member>/server.pid (its process group too: a
// Galera SST script and its rsync daemon; a SIGSTOPped server dies as well) and remove <dir>.
const WATCHDOG_SRC = `
const fs = require('fs');
const path = require('path');
const [parent, dir] = process.argv.slice(1);
function alive(pid) { try { process.kill(pid, 0); return true; } catch (e) { return e.code === 'EPERM'; } }
function kill(pidFile) {
  try {
    const pid = Number(fs.readFileSync(pidFile, 'utf8'));
    if (pid > 0) { try { process.kill(-pid, 'SIGKILL'); } catch {} try { process.kill(pid, 'SIGKILL'); } catch {} }
  } catch {}
}
setInterval(() => {
  if (!fs.existsSync(dir)) process.exit(0);
  if (alive(Number(parent))) return;
  kill(path.join(dir, 'server.pid'));
  let names = [];
  try { names = fs.readdirSync(dir); } catch {}
  for (const name of names) kill(path.join(dir, name, 'server.pid'));
  setTimeout(() => { try { fs.rmSync(dir, { recursive: true, force: true }); } catch {} process.exit(0); }, 500);
}, 500);
`;

/** Starts the watchdog over the directory `dir`; the caller SIGKILLs it on a clean stop. */
export function startWatchdog(dir) {
  const watchdog = spawn(process.execPath, ['-e', WATCHDOG_SRC, String(process.pid), dir], {
    detached: true,
    stdio: 'ignore',
  });
  watchdog.unref();
  return watchdog;
}
