// Sql.exec results (found-rows affectedRows, insertId) and what query() does with multi-statement
// text and DDL.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { useDatabase } from './helpers.mjs';

const ctx = useDatabase('sql_exec', {
  init: ({ sql }) =>
    sql.query(`CREATE TABLE w (
    id  BIGINT AUTO_INCREMENT PRIMARY KEY,
    k   VARCHAR(32) NOT NULL UNIQUE,
    v   INT NOT NULL DEFAULT 0
  ) ENGINE=InnoDB`),
});

async function reset() {
  await ctx.sql.query('TRUNCATE TABLE w'); // also resets AUTO_INCREMENT
}

test('affectedRows counts matched rows (found rows), like mysql2', async () => {
  await reset();
  await ctx.sql.exec("INSERT INTO w (k, v) VALUES ('a', 1), ('b', 1), ('c', 2)");
  // Matches one row, changes nothing: still 1 (0 without CLIENT_FOUND_ROWS).
  assert.equal((await ctx.sql.exec('UPDATE w SET v = ? WHERE k = ?', [1, 'a'])).affectedRows, 1);
  // Matches two, changes one.
  assert.equal((await ctx.sql.exec('UPDATE w SET v = 1 WHERE k IN (?)', [['b', 'c']])).affectedRows, 2);
  // Matches three, changes none.
  assert.equal((await ctx.sql.exec('UPDATE w SET v = 1')).affectedRows, 3);
  // Matches nothing.
  assert.equal((await ctx.sql.exec('UPDATE w SET v = 5 WHERE k = ?', ['zzz'])).affectedRows, 0);
  // The same inside a transaction.
  const inTx = await ctx.sql.tx((t) => t.exec('UPDATE w SET v = 1 WHERE k = ?', ['a']));
  assert.equal(inTx.affectedRows, 1);
  // DELETE counts deleted rows.
  assert.equal((await ctx.sql.exec('DELETE FROM w WHERE v = 1 AND k <> ?', ['a'])).affectedRows, 2);
  // INSERT IGNORE: 1 inserted, 0 ignored.
  assert.equal((await ctx.sql.exec("INSERT IGNORE INTO w (k) VALUES ('a')")).affectedRows, 0);
  assert.equal((await ctx.sql.exec("INSERT IGNORE INTO w (k) VALUES ('new')")).affectedRows, 1);
  // ON DUPLICATE KEY UPDATE: unchanged duplicate 1 (found rows), changed duplicate 2.
  assert.equal(
    (await ctx.sql.exec("INSERT INTO w (k, v) VALUES ('a', 1) ON DUPLICATE KEY UPDATE v = VALUES(v)")).affectedRows,
    1,
  );
  assert.equal(
    (await ctx.sql.exec("INSERT INTO w (k, v) VALUES ('a', 9) ON DUPLICATE KEY UPDATE v = VALUES(v)")).affectedRows,
    2,
  );
});

test('insertId is the AUTO_INCREMENT value of the insert (first one of a multi-row insert)', async () => {
  await reset();
  const r1 = await ctx.sql.exec('INSERT INTO w (k) VALUES (?)', ['one']);
  assert.deepEqual(r1, { affectedRows: 1, insertId: 1 });
  const r2 = await ctx.sql.exec('INSERT INTO w (k) VALUES (?)', ['two']);
  assert.deepEqual(r2, { affectedRows: 1, insertId: 2 });
  const multi = await ctx.sql.exec('INSERT INTO w (k) VALUES ?', [[['x'], ['y'], ['z']]]);
  assert.equal(multi.affectedRows, 3, 'multi-row insert counts every row');
  assert.equal(multi.insertId, 3, 'LAST_INSERT_ID() of a multi-row insert is its first id');
  const literal = await ctx.sql.exec("INSERT INTO w (k) VALUES ('p'), ('q')");
  assert.deepEqual(literal, { affectedRows: 2, insertId: 6 });
  // Within a tx as well.
  const inTx = await ctx.sql.tx((t) => t.exec('INSERT INTO w (k) VALUES (?)', ['tx']));
  assert.deepEqual(inTx, { affectedRows: 1, insertId: 8 });
  const rows = await ctx.sql.query('SELECT id, k FROM w ORDER BY id');
  assert.deepEqual(
    rows.map((r) => [r.id, r.k]),
    [
      [1, 'one'],
      [2, 'two'],
      [3, 'x'],
      [4, 'y'],
      [5, 'z'],
      [6, 'p'],
      [7, 'q'],
      [8, 'tx'],
    ],
  );
  // An explicit id beyond 2^32 is reported exactly.
  const big = await ctx.sql.exec("INSERT INTO w (id, k) VALUES (5000000000, 'big')");
  assert.equal(big.insertId, 5000000000);
  assert.equal((await ctx.sql.exec("INSERT INTO w (k) VALUES ('after big')")).insertId, 5000000001);
  // Statements that insert nothing report 0.
  assert.deepEqual(await ctx.sql.exec('UPDATE w SET v = v + 1 WHERE id = 1'), { affectedRows: 1, insertId: 0 });
});

test('exec resolves exactly to { affectedRows, insertId } numbers', async () => {
  const r = await ctx.sql.exec('DELETE FROM w WHERE 1 = 0');
  assert.deepEqual(Object.keys(r).sort(), ['affectedRows', 'insertId']);
  assert.equal(typeof r.affectedRows, 'number');
  assert.equal(typeof r.insertId, 'number');
});

test('multi-statement text without params runs every statement; query returns the first result set', async () => {
  await reset();
  const first = await ctx.sql.query("SELECT 1 AS a; SELECT 2 AS b; INSERT INTO w (k) VALUES ('ms')");
  assert.deepEqual(first, [{ a: 1 }]);
  assert.deepEqual(await ctx.sql.query('SELECT k FROM w'), [{ k: 'ms' }], 'the later INSERT ran');
  // Writes first: the first result is an OK packet, so no rows.
  const writes = await ctx.sql.query(
    "INSERT INTO w (k) VALUES ('m1'); INSERT INTO w (k) VALUES ('m2'); SELECT COUNT(*) AS n FROM w",
  );
  assert.deepEqual(writes, []);
  assert.equal((await ctx.sql.query('SELECT COUNT(*) AS n FROM w'))[0].n, 3);
  // exec of a multi-statement text reports its first statement.
  const r = await ctx.sql.exec("UPDATE w SET v = 1 WHERE k = 'm1'; UPDATE w SET v = 1");
  assert.equal(r.affectedRows, 1);
  assert.equal((await ctx.sql.query('SELECT SUM(v) AS s FROM w'))[0].s, '3');
  // In a tx too, and the tx can keep going afterwards.
  const inTx = await ctx.sql.tx(async (t) => {
    const rows = await t.query('SELECT 10 AS x; SELECT 20 AS y');
    const [{ z }] = await t.query('SELECT 30 AS z');
    return [rows, z];
  });
  assert.deepEqual(inTx, [[{ x: 10 }], 30]);
  // A failing first statement rejects.
  await assert.rejects(ctx.sql.query('SELECT * FROM no_such_table; SELECT 1'), /no_such_table/);
});

test('an error in a later statement of a multi-statement text rejects the call', async () => {
  await reset();
  // On the pool: the statement text fails, yet query() resolves and the error is lost.
  await assert.rejects(ctx.sql.query('SELECT 1 AS a; SELECT * FROM no_such_table'), /no_such_table/);
  await assert.rejects(
    ctx.sql.exec("INSERT INTO w (k) VALUES ('d'); INSERT INTO w (k) VALUES ('d'); INSERT INTO w (k) VALUES ('e')"),
    /Duplicate entry/,
  );
  // In a tx the error surfaces on the NEXT, unrelated statement instead.
  const next = await ctx.sql.tx(async (t) => {
    await t.query('SELECT 1 AS a; SELECT * FROM no_such_table').catch(() => undefined);
    return t.query('SELECT 2 AS b').then(
      () => 'ok',
      (e) => e.message,
    );
  });
  assert.equal(next, 'ok', 'an unrelated statement after a failed multi-statement must not fail');
});

test('DDL and other row-less statements through query return [] without throwing', async () => {
  assert.deepEqual(await ctx.sql.query('CREATE TABLE d1 (a INT)'), []);
  assert.deepEqual(await ctx.sql.query('CREATE TABLE IF NOT EXISTS d1 (a INT)'), []);
  assert.deepEqual(await ctx.sql.query('ALTER TABLE d1 ADD COLUMN b INT'), []);
  assert.deepEqual(await ctx.sql.query('CREATE INDEX d1_b ON d1 (b)'), []);
  assert.deepEqual(await ctx.sql.query('INSERT INTO d1 (a, b) VALUES (1, 2)'), []);
  assert.deepEqual(await ctx.sql.query('SET @x = 1'), []);
  assert.deepEqual(await ctx.sql.query('DO SLEEP(0)'), []);
  assert.deepEqual(await ctx.sql.query('TRUNCATE TABLE d1'), []);
  assert.deepEqual(await ctx.sql.query('DROP TABLE d1'), []);
  assert.deepEqual(await ctx.sql.query('DROP TABLE IF EXISTS d1'), []);
  // exec of DDL resolves too.
  assert.deepEqual(await ctx.sql.exec('CREATE TABLE d2 (a INT)'), { affectedRows: 0, insertId: 0 });
  // SHOW statements return rows.
  const tablesNow = await ctx.sql.query('SHOW TABLES');
  assert.ok(tablesNow.some((r) => Object.values(r).includes('d2')));
  const [create] = await ctx.sql.query('SHOW CREATE TABLE d2');
  assert.match(create['Create Table'], /CREATE TABLE `d2`/);
  assert.deepEqual(await ctx.sql.query('DROP TABLE d2'), []);
});

test('server errors carry the server message and code', async () => {
  await assert.rejects(ctx.sql.query('SELEC 1'), (e) => {
    assert.ok(e instanceof Error);
    assert.match(e.message, /SQL syntax/i);
    assert.match(e.message, /1064/);
    return true;
  });
  await reset();
  await ctx.sql.exec("INSERT INTO w (k) VALUES ('u')");
  await assert.rejects(ctx.sql.exec("INSERT INTO w (k) VALUES ('u')"), /Duplicate entry 'u'.*1062/);
  // The failed statement did not poison the pool.
  assert.deepEqual(await ctx.sql.query('SELECT k FROM w'), [{ k: 'u' }]);
});
