// Shared bits of the doctor suite (__test__/doctor): fresh databases, accounts with chosen
// grants, the CLI as a child process, ports that refuse or never answer — and what each stock
// server is, so that a test says what the doctor must report on MariaDB and on MySQL. Not a test
// file itself.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

import { adminQuery, freshDatabase, uniqueName } from '../helpers/db.mjs';
import { serverKind } from '../helpers/server.mjs';

const require = createRequire(import.meta.url);
export const m = require('../../index.js');
export const v3 = require('../../v3.js');
export const doctor = require('../../lib/doctor/index.js');

export const BIN = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'bin',
  'iterativeflow-mysql-native.js',
);
export const BASES = ['run', 'step', 'job', 'timer', 'signal', 'cron'];
export const V3 = { contract: '3.0.0' };
export const TO = { timeout: 30_000 };

/**
 * What a stock server of this run's kind is, as the doctor must report it. Both default to
 * REPEATABLE READ. MySQL 9.7 logs binary by default (ROW), so creating a stored function without
 * SUPER fails there (1419) unless log_bin_trust_function_creators is ON; MariaDB 10.11 has the
 * binary log off. Galera is MariaDB's cluster.
 */
export const STOCK = {
  mariadb: {
    server: /^MariaDB \d+\.\d+\.\d+.*: tested with this package$/,
    kind: 'mariadb',
    defaultIsolation: 'REPEATABLE-READ',
    binlog: /^binary log off/,
    binlogOn: false,
    cluster: /^not a cluster node \(Galera: wsrep_on (OFF|absent); Group Replication is a MySQL cluster\)$/,
    push: /^doorbell: a listener parks one statement; a ring ends it with KILL QUERY ID$/,
  },
  mysql: {
    server: /^MySQL \d+\.\d+\.\d+.*: tested with this package$/,
    kind: 'mysql',
    defaultIsolation: 'REPEATABLE-READ',
    binlog: /^binary log on, binlog_format ROW$/,
    binlogOn: true,
    cluster: /^not a cluster node \(Galera is a MariaDB cluster; Group Replication: not configured\)$/,
    push: /^doorbell: a listener parks on a connection of its own; a ring ends it with KILL QUERY \(performance_schema/,
  },
}[serverKind()];

/** The reason a MariaDB-only test gives in the MySQL run (a skip that says why), else false. */
export const mariadbOnly = (why) => (serverKind() === 'mysql' ? `MariaDB only: ${why}` : false);

/** A fresh database; `sql` a native pool on it; `done()` closes the pool and drops the database. */
export async function database(label) {
  const db = await freshDatabase(`doctor_${label}`);
  const sql = m.mysqlPool(db.url);
  return {
    db,
    sql,
    async done() {
      try {
        await sql.close();
      } finally {
        await db.drop();
      }
    },
  };
}

/** `url` with this user and password instead of the one MYSQL_URL names. */
export function withUser(url, user, password) {
  const u = new URL(url);
  u.username = encodeURIComponent(user);
  u.password = encodeURIComponent(password);
  return u.toString();
}

export const byName = (result) => Object.fromEntries(result.checks.map((c) => [c.name, c]));
export const failures = (result) => result.checks.filter((c) => c.verdict === 'fail');

/** Every check ok, the verdict ok, every line well-formed. */
export function assertHealthy(result) {
  const notOk = result.checks.filter((c) => c.verdict !== 'ok');
  assert.deepEqual(notOk, [], 'every check ok on a healthy database of a stock server');
  assert.equal(result.verdict, 'ok');
  for (const c of result.checks) {
    assert.equal(typeof c.name, 'string');
    assert.equal(typeof c.detail, 'string');
    assert.ok(c.detail.length > 0, c.name);
  }
}

/** Runs the CLI; resolves to { code, stdout, stderr, ms }. `env` is added to a clean MYSQL_URL. */
export function cli(args, { env = {}, input } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, MYSQL_URL: '', NO_COLOR: '', FORCE_COLOR: '', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr, ms: Date.now() - t0 }));
    child.stdin.end(input);
  });
}

// A closed port and a server that never answers, for the checks that must fail within a bound.
export { blackhole as silentServer, closedPort } from '../helpers/sockets.mjs';

/** An account with exactly `grants` on `database` (none when null); `drop()` removes it. */
export async function user(database, grants) {
  const name = uniqueName('dru').slice(0, 32);
  const password = `pw-${uniqueName('x')}`;
  await adminQuery("CREATE USER ?@'%' IDENTIFIED BY ?", [name, password]);
  if (grants) await adminQuery(`GRANT ${grants} ON \`${database}\`.* TO ?@'%'`, [name]);
  return { name, password, drop: () => adminQuery("DROP USER IF EXISTS ?@'%'", [name]) };
}

/** The server's default isolation, as its variables spell it. */
export async function serverDefaultIsolation() {
  const [rows] = await adminQuery(
    "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('transaction_isolation', 'tx_isolation')",
  );
  return String(rows[0].Value).toUpperCase();
}
