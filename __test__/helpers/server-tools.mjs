// Small tools both server harnesses (mariadb.mjs: one server, galera.mjs: a cluster) use to find
// the server binaries, place datadirs and report failures.
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
