// mysqlPool(mysql2Pool): the native pool takes host, port, user, password and database from a
// mysql2 pool's configuration and reaches the same database.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import util from 'node:util';

import mysql from 'mysql2/promise';
import mysqlCallback from 'mysql2';

import { PASSWORD_USER, mysqlPool, server, useDatabase } from './helpers.mjs';

const ctx = useDatabase('sql_mysql2', {
  init: ({ sql }) => sql.query('CREATE TABLE shared (id INT PRIMARY KEY, v VARCHAR(64) NOT NULL) ENGINE=InnoDB'),
});

async function withMysql2(opts, fn) {
  const pool = mysql.createPool({ ...opts, connectionLimit: 2 });
  try {
    return await fn(pool);
  } finally {
    await pool.end();
  }
}

test('a pool built from a mysql2/promise Pool reaches the same database', async () => {
  const { host, port, user, password } = server();
  await withMysql2({ host, port, user, password, database: ctx.db.database }, async (pool) => {
    const sql = mysqlPool(pool);
    try {
      const [{ db }] = await sql.query('SELECT DATABASE() AS db');
      assert.equal(db, ctx.db.database);
      // mysql2 writes, native reads.
      await pool.query('INSERT INTO shared (id, v) VALUES (?, ?)', [1, 'from mysql2']);
      assert.deepEqual(await sql.query('SELECT v FROM shared WHERE id = ?', [1]), [{ v: 'from mysql2' }]);
      // native writes, mysql2 reads.
      await sql.exec('INSERT INTO shared (id, v) VALUES (?, ?)', [2, 'from native']);
      const [rows] = await pool.query('SELECT v FROM shared WHERE id = ?', [2]);
      assert.deepEqual(
        rows.map((r) => r.v),
        ['from native'],
      );
      // A native transaction commits where mysql2 can see it.
      await sql.tx((t) => t.exec('INSERT INTO shared (id, v) VALUES (3, ?)', ['from native tx']));
      const [[r3]] = await pool.query('SELECT v FROM shared WHERE id = 3');
      assert.equal(r3.v, 'from native tx');
      // Closing the native pool leaves the mysql2 pool working.
      await sql.close();
      const [[{ n }]] = await pool.query('SELECT COUNT(*) AS n FROM shared');
      assert.equal(n, 3);
    } finally {
      await sql.close();
    }
  });
});

test('the password is taken from the mysql2 config (user with a password)', async () => {
  const { host, port } = server();
  const { user, password } = PASSWORD_USER;
  await withMysql2({ host, port, user, password, database: ctx.db.database }, async (pool) => {
    const sql = mysqlPool(pool);
    try {
      const [{ me }] = await sql.query('SELECT CURRENT_USER() AS me');
      assert.match(me, /^iterflow@/);
      assert.deepEqual(await sql.query('SELECT DATABASE() AS db'), [{ db: ctx.db.database }]);
      await sql.exec('INSERT INTO shared (id, v) VALUES (10, ?)', ['by iterflow']);
      const [[row]] = await pool.query('SELECT v FROM shared WHERE id = 10');
      assert.equal(row.v, 'by iterflow');
      // The password does not show in the description.
      assert.ok(!util.inspect(sql).includes(password));
      assert.ok(!JSON.stringify(sql).includes(password));
    } finally {
      await sql.close();
    }
  });
  // Same user, wrong password in the mysql2 config: the native pool is refused too (so the
  // password really comes from that config, and is not defaulted).
  await withMysql2({ host, port, user, password: 'not-the-password', database: ctx.db.database }, async (pool) => {
    const sql = mysqlPool(pool);
    try {
      await assert.rejects(sql.query('SELECT 1'), (e) => {
        assert.match(e.message, /Access denied/i);
        assert.ok(!e.message.includes('not-the-password'));
        return true;
      });
    } finally {
      await sql.close();
    }
  });
});

test('a callback-style mysql2 Pool and connectionLimit from its config work too', async () => {
  const { host, port, user, password } = server();
  const pool = mysqlCallback.createPool({ host, port, user, password, database: ctx.db.database, connectionLimit: 1 });
  const sql = mysqlPool(pool);
  try {
    assert.deepEqual(await sql.query('SELECT DATABASE() AS db'), [{ db: ctx.db.database }]);
    // connectionLimit 1 is honoured: two concurrent transactions share one connection, one after the other.
    const ids = await Promise.all([1, 2].map(() => sql.tx((t) => t.query('SELECT CONNECTION_ID() AS id'))));
    assert.equal(ids[0][0].id, ids[1][0].id);
  } finally {
    await sql.close();
    await new Promise((resolve) => pool.end(resolve));
  }
});
