// mysqlClassify over real server errors: every error below is produced on a live server — through
// this package's Sql and through a plain mysql2 connection — and classified as is and wrapped in
// another error's `.cause` (the way a driver or an app wraps it).
//
// The read-only case needs `--read-only`, a global setting, so it runs on a private server of its
// own; everything else runs on the shared one, in this file's database.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import mysql from 'mysql2/promise';
import { adminQuery, closeAdmin, freshDatabase, uniqueName, urlWithDatabase } from '../helpers/db.mjs';
import { onMysql, startPrivateServer, processList } from '../helpers/server.mjs';
import { deferred } from '../sql/helpers.mjs';
import m from '../../index.js';
import v3 from '../../v3.js';
import { closedPort } from '../helpers/sockets.mjs';

const { mysqlClassify, mysqlPool } = m;

let db;
let native;
let direct;
const user = uniqueName('cls');
const PASSWORD = 'pw-cls';

/** `url` logged in as `name` / `password`, on database `database`. */
function asUser(url, name, password, database) {
  const u = new URL(urlWithDatabase(url, database));
  u.username = name;
  u.password = password;
  return u.toString();
}

before(async () => {
  db = await freshDatabase('push_classify');
  const t = (n) => `\`${db.database}\`.\`${n}\``;
  await adminQuery(
    `CREATE TABLE ${t('p')} (id INT PRIMARY KEY) ENGINE=InnoDB; ` +
      `CREATE TABLE ${t('t')} (id INT PRIMARY KEY, v VARCHAR(3) NOT NULL DEFAULT '', n INT NULL, d DATE NULL, ` +
      `c INT NULL CHECK (c > 0), parent_id INT NULL, FOREIGN KEY (parent_id) REFERENCES ${t('p')} (id)) ENGINE=InnoDB; ` +
      `INSERT INTO ${t('p')} VALUES (1); INSERT INTO ${t('t')} (id, parent_id) VALUES (1, 1), (2, NULL); ` +
      `CREATE USER '${user}'@'%' IDENTIFIED BY '${PASSWORD}'; GRANT SELECT ON ${t('t')} TO '${user}'@'%'`,
  );
  native = mysqlPool(db.url);
  direct = await mysql.createConnection({ uri: db.url });
});
after(async () => {
  await native?.close();
  await direct?.end().catch(() => {});
  await adminQuery(`DROP USER IF EXISTS '${user}'@'%'`).catch(() => {});
  await db?.drop();
  await closeAdmin();
});

/** The two ways to reach the server: `query(text)`, a pinned `session(fn)` in a transaction, `open(url)`. */
const drivers = {
  native: {
    query: (text) => native.query(text),
    session: (fn) => native.tx((h) => fn((text) => h.query(text))),
    async connect(url, text = 'SELECT 1') {
      const p = mysqlPool(url);
      try {
        return await p.query(text);
      } finally {
        await p.close();
      }
    },
  },
  mysql2: {
    query: (text) => direct.query(text),
    async session(fn) {
      const conn = await mysql.createConnection({ uri: db.url });
      try {
        await conn.query('BEGIN');
        return await fn((text) => conn.query(text));
      } finally {
        await conn.end().catch(() => {});
      }
    },
    async connect(url, text = 'SELECT 1') {
      const conn = await mysql.createConnection({ uri: url });
      try {
        return await conn.query(text);
      } finally {
        await conn.end().catch(() => {});
      }
    },
  },
};

/** The error `fn()` rejects with (fails the test if it resolves). */
async function errorOf(fn) {
  try {
    await fn();
  } catch (e) {
    return e;
  }
  assert.fail('expected the statement to fail');
}

/** Two sessions lock rows 1 and 2, then each asks for the other's: one of them is the victim. */
async function deadlock(d) {
  const locked = [deferred(), deferred()];
  const side = (i, first, second) =>
    d.session(async (q) => {
      await q(`UPDATE t SET n = ${i} WHERE id = ${first}`);
      locked[i].resolve();
      await Promise.all(locked.map((l) => l.promise));
      await q(`UPDATE t SET n = ${i} WHERE id = ${second}`);
    });
  const settled = await Promise.allSettled([side(0, 1, 2), side(1, 2, 1)]);
  const victim = settled.find((s) => s.status === 'rejected');
  assert.ok(victim, 'one side of the deadlock fails');
  return victim.reason;
}

/** A session holds row 1; a statement that waits for it at most 1 s gives up. */
async function lockWait(d) {
  const held = deferred();
  const release = deferred();
  const holder = d.session(async (q) => {
    await q('UPDATE t SET n = 7 WHERE id = 1');
    held.resolve();
    await release.promise;
  });
  await held.promise;
  try {
    const update = 'UPDATE t SET n = 8 WHERE id = 1';
    if (!onMysql()) return await errorOf(() => d.query(`SET STATEMENT innodb_lock_wait_timeout = 1 FOR ${update}`));
    // MySQL has no one-statement bound for this wait (SET_VAR does not take the variable): a
    // session of its own, which puts the server's default back.
    let e;
    await d
      .session(async (q) => {
        await q('SET SESSION innodb_lock_wait_timeout = 1');
        e = await errorOf(() => q(update));
        await q('SET SESSION innodb_lock_wait_timeout = DEFAULT');
      })
      .catch(() => {});
    return e;
  } finally {
    release.resolve();
    await holder;
  }
}

// [label, expected errno (undefined: not a server error), class, how to produce it]
const CASES = [
  ['syntax', 1064, 'permanent', (d) => errorOf(() => d.query('SELEC 1'))],
  ['unknown table', 1146, 'permanent', (d) => errorOf(() => d.query('SELECT * FROM nope'))],
  ['unknown column', 1054, 'permanent', (d) => errorOf(() => d.query('SELECT nope FROM t'))],
  [
    'table privilege',
    1142,
    'permanent',
    (d) => errorOf(() => d.connect(asUser(db.url, user, PASSWORD, db.database), 'INSERT INTO t (id) VALUES (9)')),
  ],
  ['database privilege', 1044, 'permanent', (d) => errorOf(() => d.connect(asUser(db.url, user, PASSWORD, 'mysql')))],
  ['wrong password', 1045, 'permanent', (d) => errorOf(() => d.connect(asUser(db.url, user, 'wrong', db.database)))],
  ['data too long', 1406, 'permanent', (d) => errorOf(() => d.query("INSERT INTO t (id, v) VALUES (10, 'abcdef')"))],
  ['incorrect integer', 1366, 'permanent', (d) => errorOf(() => d.query("INSERT INTO t (id, n) VALUES (11, 'abc')"))],
  [
    'incorrect date',
    1292,
    'permanent',
    (d) => errorOf(() => d.query("INSERT INTO t (id, d) VALUES (12, '2020-13-45')")),
  ],
  ['not null', 1048, 'permanent', (d) => errorOf(() => d.query('INSERT INTO t (id, v) VALUES (13, NULL)'))],
  // ER_CONSTRAINT_FAILED on MariaDB, ER_CHECK_CONSTRAINT_VIOLATED on MySQL.
  [
    'check constraint',
    onMysql() ? 3819 : 4025,
    'permanent',
    (d) => errorOf(() => d.query('INSERT INTO t (id, c) VALUES (14, -1)')),
  ],
  ['deadlock', 1213, 'transient', deadlock],
  ['lock wait timeout', 1205, 'transient', lockWait],
  ['duplicate key', 1062, 'transient', (d) => errorOf(() => d.query('INSERT INTO t (id) VALUES (1)'))],
  ['foreign key, parent row', 1451, 'transient', (d) => errorOf(() => d.query('DELETE FROM p WHERE id = 1'))],
  [
    'foreign key, child row',
    1452,
    'transient',
    (d) => errorOf(() => d.query('INSERT INTO t (id, parent_id) VALUES (15, 999)')),
  ],
  [
    'connection refused',
    undefined,
    'transient',
    async (d) => errorOf(async () => d.connect(`mysql://root@127.0.0.1:${await closedPort()}/x`)),
  ],
];

for (const [driver, d] of Object.entries(drivers)) {
  for (const [label, errno, expected, produce] of CASES) {
    test(`${driver}: ${label}${errno ? ` (${errno})` : ''} is ${expected}`, { timeout: 30_000 }, async () => {
      const e = await produce(d);
      if (errno !== undefined) assert.equal(e.errno, errno, `the server answered ${e.errno}: ${e.message}`);
      assert.equal(mysqlClassify(e), expected);
      assert.equal(mysqlClassify(new Error('wrapped', { cause: new Error('twice', { cause: e }) })), expected);
      assert.equal(v3.mysqlClassify(e), expected, 'the /v3 entry exports the same function');
    });
  }
}

test("native: a query timeout and a KILLed connection (kind 'connection') are transient", async () => {
  const slow = mysqlPool(`${db.url}?queryTimeoutMs=300`);
  try {
    const timedOut = await errorOf(() => slow.query('SELECT SLEEP(3)'));
    assert.equal(timedOut.kind, 'connection');
    assert.equal(timedOut.code, 'ETIMEDOUT');
    assert.equal(mysqlClassify(timedOut), 'transient');
  } finally {
    await slow.close();
  }
  const killed = await killedDuringSleep((text) => native.query(text));
  assert.equal(killed.kind, 'connection');
  assert.equal(mysqlClassify(killed), 'transient');
});

test('mysql2: a query timeout and a KILLed connection are transient', async () => {
  const conn = await mysql.createConnection({ uri: db.url });
  try {
    const timedOut = await errorOf(() => conn.query({ sql: 'SELECT SLEEP(3)', timeout: 300 }));
    assert.equal(timedOut.code, 'PROTOCOL_SEQUENCE_TIMEOUT');
    assert.equal(mysqlClassify(timedOut), 'transient');
  } finally {
    await conn.end().catch(() => {});
  }
  const other = await mysql.createConnection({ uri: db.url });
  const killed = await killedDuringSleep((text) => other.query(text));
  assert.equal(killed.fatal, true);
  assert.equal(mysqlClassify(killed), 'transient');
});

/** The error of a `SELECT SLEEP(20)` whose session an admin KILLs. */
async function killedDuringSleep(query) {
  const marker = uniqueName('sleep');
  const pending = errorOf(() => query(`SELECT SLEEP(20) AS ${marker}`));
  let id;
  for (const until = Date.now() + 10_000; id === undefined && Date.now() < until; ) {
    // Not the lookup itself, whose own text holds the marker too.
    const [rows] = await adminQuery(
      `SELECT ID AS id FROM ${processList()} WHERE INFO LIKE ? AND ID <> CONNECTION_ID()`,
      [`%AS ${marker}%`],
    );
    id = rows.find((r) => r.id)?.id;
    if (id === undefined) await new Promise((r) => setTimeout(r, 20));
  }
  assert.ok(id, 'the sleeping session shows in PROCESSLIST');
  await adminQuery(`KILL CONNECTION ${Number(id)}`);
  return pending;
}

test('a read-only server (failover; 1290) is transient, through both drivers', { timeout: 120_000 }, async () => {
  const server = await startPrivateServer({ extraArgs: ['--read-only'] });
  try {
    const root = await mysql.createConnection({ uri: server.url, multipleStatements: true });
    await root.query(
      "CREATE DATABASE ro; CREATE TABLE ro.t (id INT PRIMARY KEY); CREATE USER w@'%' IDENTIFIED BY 'w'; " +
        "GRANT SELECT, INSERT ON ro.* TO w@'%'",
    );
    await root.end();
    const url = asUser(server.url, 'w', 'w', 'ro');
    for (const d of Object.values(drivers)) {
      const e = await errorOf(() => d.connect(url, 'INSERT INTO t VALUES (1)'));
      assert.equal(e.errno, 1290, e.message);
      assert.equal(mysqlClassify(e), 'transient');
    }
  } finally {
    await server.stop();
  }
});

test('argument errors of this package are permanent; non-errors and odd objects are transient', async () => {
  const bad = await errorOf(() => native.query(42));
  assert.equal(bad.kind, 'argument');
  assert.equal(mysqlClassify(bad), 'permanent');
  for (const v of [undefined, null, 'ER_PARSE_ERROR', 1064, new Error('plain'), { errno: -104 }]) {
    assert.equal(mysqlClassify(v), 'transient', String(v));
  }
  // A `.cause` cycle ends; a getter that throws is not seen through.
  const loop = new Error('a');
  loop.cause = loop;
  assert.equal(mysqlClassify(loop), 'transient');
  const hostile = new Proxy({}, { get: () => assert.fail('no') });
  assert.equal(mysqlClassify(hostile), 'transient');
});
