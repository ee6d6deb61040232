// A private, throwaway MariaDB server (helpers/private-server.mjs runs it): `mariadb-install-db`
// makes the datadir in a temp directory and `mariadbd` runs on a free 127.0.0.1 port.
//
//   const server = await startPrivateMariadb();   // see launchPrivateServer for the handle
//
// Tests start their server through helpers/server.mjs `startPrivateServer`, which starts the
// kind of server the run is for (MariaDB or MySQL).

import { spawnSync } from 'node:child_process';

import { launchPrivateServer, PASSWORD_USER } from './private-server.mjs';
import { isRoot, serverBinaries } from './server-tools.mjs';

export { PASSWORD_USER };

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

// Options shared by install-db (it passes unknown options to mariadbd) and the
// server, so InnoDB does not resize its redo log on first start.
const COMMON_OPTS = ['--innodb-log-file-size=64M', '--innodb-buffer-pool-size=256M'];

/** The MariaDB kind of private server. */
export function mariadbKind() {
  const bins = findBinaries();
  return {
    name: 'mariadb',
    command: () => [bins.mariadbd],
    init(s) {
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
    },
    args: (s) => [
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
      `--pid-file=${s.dir}/mariadbd.pid`,
      `--log-error=${s.errLog}`,
      `--tmpdir=${s.tmp}`,
    ],
  };
}

/** Starts a private MariaDB (`opts.extraArgs`: more `mariadbd` options). */
export function startPrivateMariadb(opts = {}) {
  return launchPrivateServer(mariadbKind(), opts);
}
