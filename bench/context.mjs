// The run's shared state: the server, the bench database, the bench's own connections (admin on
// the database for set-up and checks, probe without a default database for the counters and
// digests), the counting proxy and the implementations - set up once by run.mjs, in this order -
// and the clean-ups that undo it, newest first.
import mysql from 'mysql2/promise';

import { SOCKET } from './options.mjs';
import { startCountingProxy } from './wire-counter.mjs';

export const bench = {
  /** The private server (startPrivateServer), undefined with MYSQL_URL. */
  server: undefined,
  serverUrl: process.env.MYSQL_URL,
  dbName: `ifbench_${process.pid}_${Date.now().toString(36)}`,
  dbUrl: undefined,
  /** Where the timed pools connect: `dbUrl`, over the Unix socket with BENCH_SOCKET. */
  timedUrl: undefined,
  admin: undefined, // one mysql2 connection (on the bench database) for setup, truncation and checks
  probe: undefined, // one mysql2 connection without a default database, for status and digest probes
  proxy: undefined,
  /** `MariaDB 10.11.x` / `MySQL …`, for the header of results.json and the chart. */
  serverVersion: undefined,
  /** Which addon binary native loaded (impls.mjs), for the header and results.json. */
  nativeInfo: '',
  impls: [],
};
export const cleanups = [];

/** `url` with `query` ("?a=1&b=2", or "") appended to its own query string. */
export function withQuery(url, query) {
  if (!query) return url;
  const u = new URL(url);
  for (const [k, v] of new URLSearchParams(query.replace(/^[?&]/, ''))) u.searchParams.set(k, v);
  return u.toString();
}

export async function cleanup() {
  for (const fn of cleanups.reverse()) {
    try {
      await fn();
    } catch (e) {
      console.error(`cleanup: ${e.message}`);
    }
  }
  cleanups.length = 0;
}

/** Starts the private server (unless MYSQL_URL), creates the bench database, opens admin and probe. */
export async function openServer() {
  if (!bench.serverUrl) {
    const { startPrivateServer } = await import('../__test__/helpers/server.mjs');
    // performance_schema with the statement-digest consumer, for the per-statement server time.
    // BENCH_SERVER=mysql: a private MySQL instead (the scale scenario reads both kinds).
    bench.server = await startPrivateServer({
      kind: process.env.BENCH_SERVER || 'mariadb',
      extraArgs: ['--performance-schema=ON', '--performance-schema-consumer-statements-digest=ON'],
    });
    bench.serverUrl = bench.server.url;
  }
  bench.dbUrl = (() => {
    const u = new URL(bench.serverUrl);
    u.pathname = `/${bench.dbName}`;
    return u.toString();
  })();
  if (SOCKET) {
    const path = SOCKET === '1' ? bench.server?.socket : SOCKET;
    if (!path) throw new Error('BENCH_SOCKET=1 needs the private server; with MYSQL_URL give the socket path');
    bench.timedUrl = withQuery(bench.dbUrl, `socketPath=${encodeURIComponent(path)}`);
  } else bench.timedUrl = bench.dbUrl;
  {
    const root = await mysql.createConnection({ uri: bench.serverUrl });
    await root.query(`CREATE DATABASE \`${bench.dbName}\` CHARACTER SET utf8mb4`);
    await root.end();
  }
  cleanups.push(async () => {
    const root = await mysql.createConnection({ uri: bench.serverUrl });
    await root.query(`DROP DATABASE IF EXISTS \`${bench.dbName}\``);
    await root.end();
  });
  bench.admin = await mysql.createConnection({ uri: bench.dbUrl });
  cleanups.push(() => bench.admin.end());
  bench.probe = await mysql.createConnection({ uri: bench.serverUrl });
  cleanups.push(() => bench.probe.end());
}

/** The server's name and version, as the chart's subtitle gives it. */
export async function readServerVersion() {
  const [[{ v }]] = await bench.probe.query('SELECT VERSION() AS v');
  bench.serverVersion = /mariadb/i.test(v) ? `MariaDB ${v.split('-')[0]}` : `MySQL ${v}`;
}

/** The wire counter (bench/wire-counter.mjs) in front of the server, for the counting passes. */
export async function openCountingProxy() {
  const u = new URL(bench.serverUrl);
  bench.proxy = await startCountingProxy({ host: u.hostname || '127.0.0.1', port: Number(u.port || 3306) });
  cleanups.push(() => bench.proxy.close());
}
