// A private, throwaway Oracle MySQL server (helpers/private-server.mjs runs it), from the prefix
// scripts/mysql-prefix.sh unpacks Debian's `mysql-server-core` into: the package needs a newer
// libc than the machine's, so `mysqld` runs through the prefix's own loader and libraries.
// `mysqld --initialize-insecure` makes the datadir (≈ 3-4 s); the server then runs like a stock
// one (binary log on, TLS offered, caching_sha2_password, utf8mb4_0900_ai_ci), tuned only for
// speed where durability does not matter in a test.
//
//   mysqlUnavailable()                  // null, or why no MySQL can start here
//   const server = await startPrivateMysql();

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { launchPrivateServer, PASSWORD_USER } from './private-server.mjs';
import { isRoot } from './server-tools.mjs';

/** Where scripts/mysql-prefix.sh puts the server (IFW_MYSQL_PREFIX overrides it). */
export function mysqlPrefixDir() {
  if (process.env.IFW_MYSQL_PREFIX) return process.env.IFW_MYSQL_PREFIX;
  const cache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(cache, 'iterativeflow-mysql-native', 'mysql');
}

/** `{ prefix, loader, libs, version }` of the unpacked server, or `{ missing: reason }`. */
export function mysqlPrefix() {
  const prefix = mysqlPrefixDir();
  let launch;
  let version;
  try {
    launch = Object.fromEntries(
      fs
        .readFileSync(path.join(prefix, '.launch'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split('=')),
    );
    version = fs.readFileSync(path.join(prefix, '.version'), 'utf8').trim();
  } catch {
    return { missing: `no private MySQL at ${prefix} (scripts/mysql-prefix.sh fetches it; .ci/run does)` };
  }
  return {
    prefix,
    loader: path.join(prefix, launch.loader),
    libs: launch.libs
      .split(':')
      .map((l) => path.join(prefix, l))
      .join(':'),
    version,
  };
}

/** Why a private MySQL cannot start here (one line), or null. */
export function mysqlUnavailable() {
  return mysqlPrefix().missing ?? null;
}

/** The MySQL kind of private server. */
export function mysqlKind() {
  const p = mysqlPrefix();
  if (p.missing) throw new Error(p.missing);
  const usr = path.join(p.prefix, 'usr');
  const command = () => [p.loader, '--library-path', p.libs, path.join(usr, 'sbin', 'mysqld')];
  const base = (s) => [
    '--no-defaults',
    ...(isRoot() ? ['--user=root'] : []),
    `--basedir=${usr}`,
    `--lc-messages-dir=${path.join(usr, 'share', 'mysql')}`,
    `--plugin-dir=${path.join(usr, 'lib', 'mysql', 'plugin')}`,
    '--secure-file-priv=NULL',
    `--datadir=${s.datadir}`,
    '--innodb-buffer-pool-size=256M',
    '--innodb-redo-log-capacity=128M',
  ];
  return {
    name: 'mysql',
    command,
    init(s) {
      // Root over TCP from loopback (the server resolves no names), as root@localhost has it.
      const initFile = path.join(s.dir, 'init.sql');
      fs.writeFileSync(
        initFile,
        [
          "CREATE USER 'root'@'127.0.0.1' IDENTIFIED BY ''",
          "GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION",
        ]
          .map((l) => `${l};\n`)
          .join(''),
      );
      const [bin, ...pre] = command();
      const args = [...pre, ...base(s), '--initialize-insecure', `--init-file=${initFile}`, `--log-error=${s.errLog}`];
      const r = spawnSync(bin, args, { encoding: 'utf8', timeout: 120_000 });
      if (r.error || r.status !== 0) {
        let log = '';
        try {
          log = fs.readFileSync(s.errLog, 'utf8').slice(-4000);
        } catch {}
        throw new Error(
          `mysqld --initialize-insecure failed (${r.error ? r.error.message : `exit ${r.status}`}):\n` +
            `${bin} ${args.join(' ')}\n${r.stdout || ''}${r.stderr || ''}${log}`,
        );
      }
    },
    args: (s) => [
      ...base(s),
      `--port=${s.port}`,
      `--socket=${s.socket}`,
      '--bind-address=127.0.0.1',
      '--mysqlx=OFF',
      '--skip-name-resolve',
      // Durability is irrelevant for a test server; speed is not (the binary log stays on, as
      // on a stock server; only its fsync goes).
      '--innodb-flush-log-at-trx-commit=2',
      '--innodb-doublewrite=OFF',
      '--sync-binlog=0',
      '--binlog-expire-logs-seconds=3600',
      '--max-connections=500',
      `--pid-file=${path.join(s.dir, 'mysqld.pid')}`,
      `--log-error=${s.errLog}`,
      `--tmpdir=${s.tmp}`,
    ],
  };
}

/** Starts a private MySQL (`opts.extraArgs`: more `mysqld` options). */
export function startPrivateMysql(opts = {}) {
  return launchPrivateServer(mysqlKind(), opts);
}

export { PASSWORD_USER };
