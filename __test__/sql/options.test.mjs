// mysqlPool's options as a mysql2 user passes them: every name mysql2 knows (read from mysql2's
// own source) is in docs/configuration.md's table and behaves as its row says — honoured,
// accepted only with the value this package has anyway, or refused with a TypeError naming it;
// unknown names are refused by name; `uri`, `connectTimeout`, `?ssl={…}`, `idleTimeout` and
// `compress` really take effect.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import mysql from 'mysql2/promise';

import { onMysql } from '../helpers/server.mjs';
import { PASSWORD_USER, mysqlPool, server, useDatabase, within } from './helpers.mjs';
import { blackhole } from '../helpers/sockets.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ctx = useDatabase('sql_options');

/** The option names mysql2 itself accepts: the keys of `validOptions` in its connection config. */
function mysql2OptionNames() {
  const file = path.join(path.dirname(createRequire(import.meta.url).resolve('mysql2')), 'lib/connection_config.js');
  const src = fs.readFileSync(file, 'utf8');
  const body = /const validOptions = \{([\s\S]*?)\n\};/.exec(src);
  assert.ok(body, `validOptions found in ${file}`);
  return [...body[1].matchAll(/^\s*(\w+):/gm)].map((m) => m[1]);
}

/** docs/configuration.md's mysql2 table: name → its "here" cell. */
function docsRows() {
  const text = fs.readFileSync(path.join(root, 'docs/configuration.md'), 'utf8');
  const start = text.indexOf("### mysql2's option names");
  assert.ok(start >= 0, "docs/configuration.md has a mysql2's option names section");
  const rows = new Map();
  for (const line of text.slice(start).split('\n')) {
    if (!line.startsWith('| `')) continue;
    const [names, here] = line
      .slice(1, -1)
      .split('|')
      .map((c) => c.trim());
    for (const m of names.matchAll(/`(\w+)`/g)) rows.set(m[1], here);
    if (rows.size > 0 && line.trim() === '') break;
  }
  return rows;
}

/** A value each mysql2 option could be given that is not what this package does anyway. */
const OTHER_VALUE = {
  waitForConnections: false,
  queueLimit: 5,
  charset: 'latin1',
  timezone: 'local',
  dateStrings: true,
  supportBigNumbers: false,
  bigNumberStrings: true,
  decimalNumbers: true,
  jsonStrings: true,
  multipleStatements: false,
  namedPlaceholders: true,
  rowsAsArray: true,
  nestTables: true,
  typeCast: () => undefined,
  stringifyObjects: true,
  insecureAuth: true,
  gracefulEnd: false,
  disableEval: 'yes',
  trace: 'yes',
  debug: true,
  flags: '-FOUND_ROWS',
};

/** A valid value for each honoured mysql2 option. */
const HONOURED_VALUE = {
  uri: 'mysql://u@127.0.0.1:1/x',
  host: '127.0.0.1',
  port: 1,
  user: 'u',
  password: 'p',
  database: 'x',
  socketPath: '/tmp/none.sock',
  connectionLimit: 3,
  idleTimeout: 5000,
  maxIdle: 1,
  enableKeepAlive: false,
  keepAliveInitialDelay: 1000,
  compress: true,
  connectAttributes: { app: 'x' },
  enableCleartextPlugin: true,
  resetOnRelease: true,
  connectTimeout: 2000,
  ssl: { rejectUnauthorized: false },
};

/** Whether `fn` throws a TypeError naming `name`. */
function refusedByName(fn, name) {
  try {
    fn()?.close?.();
  } catch (e) {
    assert.ok(e instanceof TypeError, `${name}: a TypeError, got ${e}`);
    assert.match(e.message, new RegExp(`\\b${name}\\b`), `${name}: the message names it: ${e.message}`);
    return true;
  }
  return false;
}

test("every mysql2 option is in docs/configuration.md's table and does what its row says", () => {
  const rows = docsRows();
  const names = mysql2OptionNames();
  assert.ok(names.length >= 50, `mysql2 knows ${names.length} options`);
  const missing = names.filter((n) => !rows.has(n));
  assert.deepEqual(missing, [], 'every mysql2 option has a row');
  const seen = { honoured: 0, accepted: 0, refused: 0 };
  for (const name of names) {
    const here = rows.get(name);
    const open = (v) => mysqlPool({ [name]: v });
    if (here.startsWith('honoured')) {
      seen.honoured++;
      assert.ok(name in HONOURED_VALUE, `a sample value for ${name}`);
      assert.equal(
        refusedByName(() => open(HONOURED_VALUE[name]), name),
        false,
        `${name} is honoured`,
      );
    } else if (here.startsWith('accepted as')) {
      seen.accepted++;
      assert.ok(name in OTHER_VALUE, `another value for ${name}`);
      assert.ok(
        refusedByName(() => open(OTHER_VALUE[name]), name),
        `${name}: ${OTHER_VALUE[name]} is refused`,
      );
      const accepted = /^accepted as `([^`]*)`/.exec(here)[1];
      const literal = { true: true, false: false, "''": '' };
      const value = accepted in literal ? literal[accepted] : /^\d+$/.test(accepted) ? Number(accepted) : accepted;
      assert.equal(
        refusedByName(() => open(value), name),
        false,
        `${name}: ${JSON.stringify(value)} is accepted`,
      );
    } else {
      assert.match(here, /^refused/, `${name}: honoured, accepted as or refused`);
      seen.refused++;
      assert.ok(
        refusedByName(() => open('x'), name),
        `${name} is refused`,
      );
    }
  }
  assert.ok(seen.honoured > 10 && seen.accepted > 10 && seen.refused > 10, JSON.stringify(seen));
});

test('unknown options, URL parameters and opts keys are refused by name', () => {
  assert.throws(
    () => mysqlPool({ host: '127.0.0.1', conectionLimit: 5 }),
    (e) =>
      e instanceof TypeError && /"conectionLimit"/.test(e.message) && /did you mean connectionLimit/.test(e.message),
  );
  assert.throws(() => mysqlPool('mysql://u@127.0.0.1/db?conectionLimit=5'), /"conectionLimit".*connectionLimit/);
  assert.throws(() => mysqlPool('mysql://u@127.0.0.1/db?user=root'), /URL parameter user/);
  assert.throws(() => mysqlPool('mysql://u@127.0.0.1/db?connectionLimit=2&connectionLimit=3'), /given twice/);
  assert.throws(() => mysqlPool('mysql://u@127.0.0.1/db', { setIsolaton: false }), /opts\.setIsolaton/);
  assert.throws(() => mysqlPool({ ssl: { ca: 'x', minVersion: 'TLSv1.3' } }), /ssl\.minVersion/);
  assert.throws(() => mysqlPool({ uri: 'mysql://u@h/db', url: 'mysql://u@h/db' }), /url or uri/);
  assert.throws(() => mysqlPool({ connectTimeout: 1000, acquireTimeoutMs: 2000 }), /connectTimeout.*acquireTimeoutMs/);
});

test('uri is read as the URL: its host, port, user, password and database', async () => {
  const { host, port } = server();
  const { user, password } = PASSWORD_USER;
  const uri = `mysql://${user}:${encodeURIComponent(password)}@${host}:${port}/${ctx.db.database}`;
  for (const opts of [{ uri }, { uri, connectionLimit: 2 }, { url: uri }]) {
    const sql = mysqlPool(opts);
    try {
      const [row] = await within(sql.query('SELECT CURRENT_USER() AS me, DATABASE() AS db'), 10_000, 'query');
      assert.deepEqual(row, { me: `${user}@%`, db: ctx.db.database });
    } finally {
      await sql.close();
    }
  }
  // The object's own names win over the URL's, as in mysql2.
  const other = mysqlPool({
    uri: `mysql://nobody:x@${host}:${port}/nowhere`,
    user: 'root',
    password: '',
    database: ctx.db.database,
  });
  try {
    const [row] = await other.query('SELECT DATABASE() AS db');
    assert.equal(row.db, ctx.db.database);
  } finally {
    await other.close();
  }
});

test('connectTimeout bounds connecting, as acquireTimeoutMs', async () => {
  const hole = await blackhole();
  const pools = [
    mysqlPool({ host: '127.0.0.1', port: hole.port, user: 'x', connectTimeout: 300 }),
    mysqlPool(`mysql://x@127.0.0.1:${hole.port}/db?connectTimeout=300`),
  ];
  try {
    for (const sql of pools) {
      const t0 = Date.now();
      await assert.rejects(within(sql.query('SELECT 1'), 5000, 'a call against the blackhole'), (e) => {
        assert.equal(e.code, 'ETIMEDOUT');
        assert.match(e.message, new RegExp(`127\\.0\\.0\\.1:${hole.port}`));
        return true;
      });
      assert.ok(Date.now() - t0 < 3000, `rejected after ${Date.now() - t0} ms`);
    }
  } finally {
    for (const sql of pools) await sql.close();
    await hole.close();
  }
});

test('?ssl={…} in a URL asks for TLS: encrypted where the server offers it, refused where not', async () => {
  const url = `${ctx.db.url}?ssl=${encodeURIComponent('{"rejectUnauthorized":false}')}`;
  const sql = mysqlPool(url);
  try {
    if (onMysql()) {
      // The private MySQL offers TLS (it makes its own certificates).
      const [{ Value: cipher }] = await sql.query("SHOW SESSION STATUS LIKE 'Ssl_cipher'");
      assert.ok(cipher, 'the session is encrypted');
    } else {
      // The private MariaDB has no certificates: it offers no TLS.
      await assert.rejects(sql.query('SELECT 1'), (e) => e.code === 'HANDSHAKE_NO_SSL_SUPPORT');
    }
  } finally {
    await sql.close();
  }
});

test('compress and idleTimeout take effect', { timeout: 30_000 }, async () => {
  const sql = mysqlPool({ ...server(), database: ctx.db.database, compress: true, idleTimeout: 1000 });
  try {
    const [{ Value: compression }] = await sql.query("SHOW SESSION STATUS LIKE 'Compression'");
    const [{ id }] = await sql.query('SELECT CONNECTION_ID() AS id');
    assert.equal(compression, 'ON', 'the protocol is compressed');
    // Idle for idleTimeout (1 s; checked every second): the connection is closed.
    const deadline = Date.now() + 10_000;
    for (;;) {
      const rows = await ctx.sql.query('SELECT ID FROM information_schema.PROCESSLIST WHERE ID = ?', [id]);
      if (rows.length === 0) break;
      assert.ok(Date.now() < deadline, `connection ${id} still open 10 s after idling past idleTimeout`);
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(sql.stats().pool.open, 0);
  } finally {
    await sql.close();
  }
});

test('a mysql2 pool: read for where to connect; a stream or localAddress is refused', async () => {
  const { host, port, user, password } = server();
  const good = mysql.createPool({
    host,
    port,
    user,
    password,
    database: ctx.db.database,
    connectionLimit: 2,
    dateStrings: true,
  });
  const tunnel = mysql.createPool({ host, port, user, stream: () => net.connect(port, host) });
  const local = mysql.createPool({ host, port, user, localAddress: '127.0.0.1' });
  try {
    // Result-shaping options of the mysql2 pool are its own: the native pool works, as documented.
    const sql = mysqlPool(good);
    try {
      assert.deepEqual(await sql.query('SELECT DATABASE() AS db'), [{ db: ctx.db.database }]);
    } finally {
      await sql.close();
    }
    assert.throws(
      () => mysqlPool(tunnel),
      (e) => e instanceof TypeError && /stream/.test(e.message),
    );
    assert.throws(
      () => mysqlPool(local),
      (e) => e instanceof TypeError && /localAddress/.test(e.message),
    );
  } finally {
    await Promise.all([good.end(), tunnel.end(), local.end()]);
  }
});
