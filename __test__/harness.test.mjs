// The test harness's own test: MYSQL_URL points at a usable server and
// freshDatabase() hands out isolated databases.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';

import mysql from 'mysql2/promise';

import { adminQuery, closeAdmin, freshDatabase, serverUrl } from './helpers/db.mjs';

after(closeAdmin);

test('MYSQL_URL names a reachable MySQL/MariaDB server', async () => {
  const url = serverUrl();
  assert.match(url, /^mysql:\/\//);
  const [rows] = await adminQuery('SELECT VERSION() AS v');
  assert.ok(rows[0].v, 'server reports a version');
});

test('freshDatabase() gives distinct, isolated, droppable databases', async () => {
  const a = await freshDatabase('harness');
  const b = await freshDatabase('harness');
  try {
    assert.notEqual(a.database, b.database);
    for (const db of [a, b]) {
      assert.match(db.database, /^harness_[a-z0-9_]+$/);
      assert.equal(new URL(db.url).pathname, `/${db.database}`);
    }

    const ca = await mysql.createConnection(a.url);
    const cb = await mysql.createConnection(b.url);
    try {
      const [[{ d }]] = await ca.query('SELECT DATABASE() AS d');
      assert.equal(d, a.database, 'url selects the database');

      await ca.query('CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(50) NOT NULL)');
      await ca.query('INSERT INTO items VALUES (?, ?), (?, ?)', [1, 'one', 2, 'zwei ✓']);
      const [rows] = await ca.query('SELECT id, name FROM items ORDER BY id');
      assert.deepEqual(
        rows.map((r) => ({ ...r })),
        [
          { id: 1, name: 'one' },
          { id: 2, name: 'zwei ✓' },
        ],
      );

      // Not visible from the other database.
      const [tables] = await cb.query('SHOW TABLES');
      assert.equal(tables.length, 0);
      await assert.rejects(cb.query('SELECT * FROM items'), { code: 'ER_NO_SUCH_TABLE' });
    } finally {
      await ca.end();
      await cb.end();
    }
  } finally {
    await a.drop();
    await b.drop();
  }
  const [left] = await adminQuery('SHOW DATABASES LIKE ?', [`${a.database}`]);
  assert.equal(left.length, 0, 'drop() removed the database');
  await a.drop(); // idempotent
});
