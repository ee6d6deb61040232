// Which server a test run is for, and a private server of that kind.
//
// `npm test` (__test__/run.mjs) runs the suite once per server kind — MariaDB and MySQL, side by
// side — and tells each run's processes which one it is in IFW_TEST_SERVER ('mariadb' unless
// set). A test that starts servers of its own starts them of that kind:
//
//   const server = await startPrivateServer();   // MariaDB or MySQL, as the run says
//   serverKind()                                  // 'mariadb' | 'mysql'

import { startPrivateMariadb } from './mariadb.mjs';
import { startPrivateMysql } from './mysql.mjs';

export { PASSWORD_USER } from './private-server.mjs';

/** The server kind this run is for. */
export function serverKind() {
  const kind = process.env.IFW_TEST_SERVER || 'mariadb';
  if (kind !== 'mariadb' && kind !== 'mysql') throw new Error(`IFW_TEST_SERVER must be mariadb or mysql, got ${kind}`);
  return kind;
}

export const onMysql = () => serverKind() === 'mysql';

/**
 * The table listing the server's running statements: on MySQL `performance_schema.processlist`
 * (the older `information_schema.PROCESSLIST` is deprecated there, and fails for every row while
 * any statement's text holds a 4-byte character); on MariaDB `information_schema.PROCESSLIST`.
 */
export const processList = () => (onMysql() ? 'performance_schema.processlist' : 'information_schema.PROCESSLIST');
export const onMariadb = () => serverKind() === 'mariadb';

/** Starts a private server of this run's kind (`opts.kind` to choose; `opts.extraArgs`: server options). */
export function startPrivateServer(opts = {}) {
  const kind = opts.kind ?? serverKind();
  return kind === 'mysql' ? startPrivateMysql(opts) : startPrivateMariadb(opts);
}

/**
 * A server of this run's kind that offers no TLS, for tests of what requiring TLS does there:
 * the run's own MariaDB (its private servers have no certificates), or on MySQL — which offers
 * TLS by default — a private MySQL started with `--tls-version=` (TLS off). `{ url, host, port,
 * why, stop() }`; `url` has no database.
 */
export async function serverWithoutTls() {
  if (serverKind() === 'mariadb') {
    const u = new URL(process.env.MYSQL_URL);
    u.pathname = '/';
    return {
      url: u.toString(),
      host: u.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1',
      port: Number(u.port || 3306),
      why: 'the private MariaDB has no certificates: it offers no TLS',
      stop: async () => undefined,
    };
  }
  const s = await startPrivateMysql({ extraArgs: ['--tls-version='] });
  return {
    url: s.url,
    host: '127.0.0.1',
    port: s.port,
    why: 'MySQL offers TLS by default: a private MySQL started with --tls-version= (TLS off)',
    stop: () => s.stop(),
  };
}
