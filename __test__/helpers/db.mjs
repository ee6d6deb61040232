// Per-test databases on the server named by MYSQL_URL (set by __test__/run.mjs,
// which starts a private MariaDB when it is unset).
//
//   const db = await freshDatabase('runs');   // db.url = 'mysql://root@127.0.0.1:PORT/runs_k3j9x2…'
//   ...
//   await db.drop();
//
// Every database is new and uniquely named, so test files may run in parallel.

import crypto from 'node:crypto';

import mysql from 'mysql2/promise';

/** The server URL (no database, or with whatever path MYSQL_URL carries). */
export function serverUrl() {
  const url = process.env.MYSQL_URL;
  if (!url) {
    throw new Error(
      'MYSQL_URL is not set. Run the tests through `npm test` / `node __test__/run.mjs` ' +
        '(it starts a private MariaDB), or set MYSQL_URL=mysql://user:pass@host:port/ ' +
        'to a server where this user may create and drop databases.',
    );
  }
  return url;
}

/** `url` with its database path replaced by `database` ('' for none). */
export function urlWithDatabase(url, database) {
  const u = new URL(url);
  u.pathname = '/' + (database ? encodeURIComponent(database) : '');
  return u.toString();
}

function connectionOptions(url) {
  const u = new URL(url);
  if (u.protocol !== 'mysql:' && u.protocol !== 'mariadb:') {
    throw new Error(`MYSQL_URL must be a mysql:// URL, got ${u.protocol}//…`);
  }
  return {
    host: u.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1',
    port: u.port ? Number(u.port) : 3306,
    user: decodeURIComponent(u.username || 'root'),
    password: decodeURIComponent(u.password || ''),
    multipleStatements: true,
    supportBigNumbers: true,
    bigNumberStrings: false,
    dateStrings: false,
  };
}

let adminConn = null; // Promise<Connection>
let inFlight = 0;

// The cached connection must not keep a test process alive once its tests are
// done, yet must hold the event loop while a query is pending. So its socket
// is ref'd only while queries are in flight.
function setRef(conn, on) {
  const stream = conn && conn.connection && conn.connection.stream;
  if (!stream) return;
  if (on) stream.ref?.();
  else stream.unref?.();
}

function admin() {
  if (!adminConn) {
    const p = mysql.createConnection(connectionOptions(serverUrl())).then(
      (conn) => {
        // Forget it if the server drops it (e.g. a restart test).
        const forget = () => {
          if (adminConn === p) adminConn = null;
        };
        conn.on('error', forget);
        conn.connection.stream?.once?.('close', forget);
        return conn;
      },
      (err) => {
        if (adminConn === p) adminConn = null;
        throw err;
      },
    );
    adminConn = p;
  }
  return adminConn;
}

async function runAdmin(sql, params) {
  inFlight++;
  let conn;
  try {
    conn = await admin();
    setRef(conn, true);
    return await conn.query(sql, params);
  } finally {
    if (--inFlight === 0) setRef(conn, false);
  }
}

/**
 * Run SQL on the server as the MYSQL_URL user, on a cached connection (no
 * database selected: qualify names; multiple statements allowed). Returns
 * mysql2's `[rows, fields]`.
 */
export async function adminQuery(sql, params) {
  try {
    return await runAdmin(sql, params);
  } catch (e) {
    // One retry on a dead connection (the server may have been restarted).
    if (e && (e.fatal || /closed state/i.test(e.message || ''))) {
      adminConn = null;
      return runAdmin(sql, params);
    }
    throw e;
  }
}

/** Close the cached admin connection. Optional: an idle one never keeps the process alive. */
export async function closeAdmin() {
  const p = adminConn;
  adminConn = null;
  if (!p) return;
  try {
    const conn = await p;
    await conn.end();
  } catch {
    // already gone
  }
}

/** A fresh database name: `${label}_${random}` with only [a-z0-9_]. */
export function uniqueName(label = 't') {
  const clean =
    String(label)
      .toLowerCase()
      .replace(/[^a-z0-9_]+/g, '_')
      .slice(0, 40) || 't';
  const rnd = crypto.randomBytes(8).toString('hex').slice(0, 12);
  return `${clean}_${rnd}`;
}

/**
 * Create a new, empty, uniquely named database on the MYSQL_URL server.
 *
 * @param {string} [label='t']  name prefix, e.g. the test file's topic
 * @returns {Promise<{url: string, database: string, drop: () => Promise<void>}>}
 *   `url` is the server URL with `/database` as its path; `drop()` drops the
 *   database (idempotent, ignores a missing database).
 */
export async function freshDatabase(label = 't') {
  const database = uniqueName(label);
  await adminQuery(`CREATE DATABASE \`${database}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci`);
  let dropped = false;
  return {
    url: urlWithDatabase(serverUrl(), database),
    database,
    async drop() {
      if (dropped) return;
      dropped = true;
      await adminQuery(`DROP DATABASE IF EXISTS \`${database}\``);
    },
  };
}
