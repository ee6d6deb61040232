// Sql.tx: one connection, READ COMMITTED, commit on resolve, rollback on throw with the original
// error, flat nesting, and a handle that is dead once the transaction is over.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { deferred, mysqlPool, useDatabase, within } from './helpers.mjs';
import { onMysql } from '../helpers/server.mjs';

/** The isolation level's variable: MySQL 8 dropped `tx_isolation`; MariaDB 10.11 has only it. */
const ISOLATION = onMysql() ? '@@transaction_isolation' : '@@tx_isolation';

const ctx = useDatabase('sql_tx', {
  init: ({ sql }) => sql.query('CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(32) NOT NULL) ENGINE=InnoDB'),
});

async function reset() {
  await ctx.sql.exec('DELETE FROM t');
}
const count = async () => (await ctx.sql.query('SELECT COUNT(*) AS n FROM t'))[0].n;

test('a resolved fn commits: its writes persist and were invisible to others until then', async () => {
  await reset();
  const inside = deferred();
  const release = deferred();
  const done = ctx.sql.tx(async (t) => {
    await t.exec('INSERT INTO t (id, v) VALUES (?, ?)', [1, 'a']);
    await t.exec('INSERT INTO t (id, v) VALUES (?, ?)', [2, 'b']);
    assert.equal((await t.query('SELECT COUNT(*) AS n FROM t'))[0].n, 2, 'own writes visible inside');
    inside.resolve();
    await release.promise;
  });
  await within(inside.promise, 5000, 'tx body');
  assert.equal(await count(), 0, 'uncommitted rows are invisible to the pool');
  release.resolve();
  await done;
  assert.deepEqual(await ctx.sql.query('SELECT id, v FROM t ORDER BY id'), [
    { id: 1, v: 'a' },
    { id: 2, v: 'b' },
  ]);
});

test("fn's value is what tx resolves to (same object)", async () => {
  const value = { answer: 42, list: [1, 2] };
  assert.equal(await ctx.sql.tx(async () => value), value);
  assert.equal(await ctx.sql.tx(async (t) => (await t.query('SELECT 7 AS x'))[0].x), 7);
  assert.equal(await ctx.sql.tx(async () => undefined), undefined);
  // A synchronous fn returning a plain value works too.
  assert.equal(await ctx.sql.tx(() => 'sync'), 'sync');
});

test('a rejected fn rolls back and rejects with the original error', async () => {
  await reset();
  class Boom extends Error {}
  const boom = new Boom('boom');
  let caught;
  try {
    await ctx.sql.tx(async (t) => {
      await t.exec('INSERT INTO t (id, v) VALUES (?, ?)', [10, 'doomed']);
      assert.equal((await t.query('SELECT COUNT(*) AS n FROM t'))[0].n, 1);
      throw boom;
    });
  } catch (e) {
    caught = e;
  }
  assert.equal(caught, boom, 'the very same error object');
  assert.equal(await count(), 0, 'no row left behind');

  // Non-Error throw values are passed through unchanged too.
  await assert.rejects(
    ctx.sql.tx(async (t) => {
      await t.exec('INSERT INTO t (id, v) VALUES (11, ?)', ['x']);
      throw 'a string'; // eslint-disable-line no-throw-literal
    }),
    (e) => e === 'a string',
  );
  // A synchronous throw inside fn is a rejection, not a sync exception.
  const p = ctx.sql.tx(() => {
    throw new Error('sync throw');
  });
  await assert.rejects(p, /sync throw/);
  // A failing statement inside fn: the server error surfaces and earlier writes are undone.
  await assert.rejects(
    ctx.sql.tx(async (t) => {
      await t.exec('INSERT INTO t (id, v) VALUES (12, ?)', ['x']);
      await t.exec('INSERT INTO t (id, v) VALUES (12, ?)', ['dup']);
    }),
    /Duplicate entry/,
  );
  assert.equal(await count(), 0);
  // The pool is still healthy afterwards.
  await ctx.sql.tx((t) => t.exec('INSERT INTO t (id, v) VALUES (13, ?)', ['ok']));
  assert.equal(await count(), 1);
});

test('every statement of a tx runs on one connection; two concurrent txs use two', async () => {
  const bothIn = [deferred(), deferred()];
  const release = deferred();
  const run = (i) =>
    ctx.sql.tx(async (t) => {
      const ids = [];
      ids.push((await t.query('SELECT CONNECTION_ID() AS id'))[0].id);
      bothIn[i].resolve();
      // Both transactions are open at this point.
      await within(release.promise, 5000, `tx ${i} waiting for the other`);
      ids.push((await t.query('SELECT CONNECTION_ID() AS id'))[0].id);
      ids.push((await t.exec('DO 1'), (await t.query('SELECT CONNECTION_ID() AS id'))[0].id));
      return ids;
    });
  const a = run(0);
  const b = run(1);
  await within(Promise.all(bothIn.map((d) => d.promise)), 5000, 'both transactions to start');
  release.resolve();
  const [ia, ib] = await Promise.all([a, b]);
  assert.equal(new Set(ia).size, 1, `tx A stayed on one connection: ${ia}`);
  assert.equal(new Set(ib).size, 1, `tx B stayed on one connection: ${ib}`);
  assert.notEqual(ia[0], ib[0], 'the two open transactions hold different connections');
});

test('the isolation level inside tx is READ COMMITTED (reported and observed)', async () => {
  await reset();
  await ctx.sql.exec("INSERT INTO t (id, v) VALUES (1, 'before')");
  const read = deferred();
  const written = deferred();
  const seen = ctx.sql.tx(async (t) => {
    const [{ iso }] = await t.query(`SELECT ${ISOLATION} AS iso`);
    const first = (await t.query('SELECT v FROM t WHERE id = 1'))[0].v;
    read.resolve();
    await within(written.promise, 5000, 'the concurrent update');
    // Under REPEATABLE READ this re-read would still see 'before'.
    const second = (await t.query('SELECT v FROM t WHERE id = 1'))[0].v;
    return { iso, first, second };
  });
  await within(read.promise, 5000, 'the first read');
  await ctx.sql.exec("UPDATE t SET v = 'after' WHERE id = 1");
  written.resolve();
  assert.deepEqual(await seen, { iso: 'READ-COMMITTED', first: 'before', second: 'after' });
});

test('tx on the tx handle runs fn on the same handle, connection and transaction', async () => {
  await reset();
  const boom = new Error('outer fails after the nested tx');
  await assert.rejects(
    ctx.sql.tx(async (t) => {
      const outerId = (await t.query('SELECT CONNECTION_ID() AS id'))[0].id;
      const inner = await t.tx(async (u) => {
        assert.equal(u, t, 'the nested fn gets the very same handle');
        await u.exec("INSERT INTO t (id, v) VALUES (1, 'nested')");
        const deeper = await u.tx(async (w) => (await w.query('SELECT CONNECTION_ID() AS id'))[0].id);
        return { id: (await u.query('SELECT CONNECTION_ID() AS id'))[0].id, deeper };
      });
      assert.deepEqual(inner, { id: outerId, deeper: outerId });
      // The nested tx did not commit: the pool cannot see the row yet.
      assert.equal(await count(), 0);
      throw boom;
    }),
    (e) => e === boom,
  );
  assert.equal(await count(), 0, 'the nested write was rolled back with the outer tx');

  // A nested fn that throws propagates to (and rolls back) the outer tx.
  const inner = new Error('inner');
  await assert.rejects(
    ctx.sql.tx(async (t) => {
      await t.exec("INSERT INTO t (id, v) VALUES (2, 'x')");
      await t.tx(async () => {
        throw inner;
      });
    }),
    (e) => e === inner,
  );
  assert.equal(await count(), 0);

  // And the nested value is returned through both levels on success.
  const v = await ctx.sql.tx((t) =>
    t.tx(async (u) => {
      await u.exec("INSERT INTO t (id, v) VALUES (3, 'kept')");
      return 'nested value';
    }),
  );
  assert.equal(v, 'nested value');
  assert.equal(await count(), 1);
});

test('using a tx handle after commit or rollback rejects clearly', async () => {
  await reset();
  let committed;
  await ctx.sql.tx(async (t) => {
    committed = t;
    await t.exec("INSERT INTO t (id, v) VALUES (1, 'a')");
  });
  const DEAD = /finished|closed|committed|no longer|ended/i;
  await assert.rejects(committed.query('SELECT 1'), DEAD);
  await assert.rejects(committed.exec("INSERT INTO t (id, v) VALUES (2, 'late')"), DEAD);
  await assert.rejects(
    committed.tx((u) => u.query('SELECT 1')),
    DEAD,
  );

  let rolledBack;
  await assert.rejects(
    ctx.sql.tx(async (t) => {
      rolledBack = t;
      throw new Error('rollback please');
    }),
    /rollback please/,
  );
  await assert.rejects(rolledBack.exec("INSERT INTO t (id, v) VALUES (3, 'late')"), DEAD);
  assert.deepEqual(await ctx.sql.query('SELECT id FROM t'), [{ id: 1 }], 'late writes never landed');
});

test('a statement left running when fn returns does not escape the transaction', async () => {
  await reset();
  // fn resolves without awaiting its write: the write must still be inside this tx (committed with
  // it) or be rejected - never run later in autocommit on a pooled connection.
  let late;
  await ctx.sql.tx(async (t) => {
    late = t.exec("INSERT INTO t (id, v) VALUES (1, 'unawaited')");
    late.catch(() => undefined);
  });
  const outcome = await late.then(
    () => 'ran',
    () => 'rejected',
  );
  const n = await count();
  if (outcome === 'ran') assert.equal(n, 1, 'a write that ran was committed with the tx');
  else assert.equal(n, 0, 'a rejected write left nothing');
});

test('tx requires a function and refuses on a closed pool', async () => {
  await assert.rejects(ctx.sql.tx('not a function'), TypeError);
  const sql = mysqlPool(ctx.db.url);
  await sql.query('SELECT 1');
  await sql.close();
  let ran = false;
  await assert.rejects(
    sql.tx(async () => {
      ran = true;
    }),
    /closed/i,
  );
  assert.equal(ran, false, 'fn never ran');
});

test('a small pool serialises transactions instead of failing (connectionLimit=1)', async () => {
  await reset();
  const sql = mysqlPool(`${ctx.db.url}?connectionLimit=1`);
  try {
    const ids = await within(
      Promise.all(
        [1, 2, 3, 4].map((i) =>
          sql.tx(async (t) => {
            await t.exec('INSERT INTO t (id, v) VALUES (?, ?)', [i, `v${i}`]);
            return (await t.query('SELECT CONNECTION_ID() AS id'))[0].id;
          }),
        ),
      ),
      10_000,
      'four txs on one connection',
    );
    assert.equal(new Set(ids).size, 1);
    assert.equal(await count(), 4);
  } finally {
    await sql.close();
  }
});

test('a connection killed mid-tx rejects the tx (nothing committed) and the pool recovers', async () => {
  await reset();
  const sql = mysqlPool(`${ctx.db.url}?connectionLimit=2`);
  try {
    await assert.rejects(
      within(
        sql.tx(async (t) => {
          await t.exec("INSERT INTO t (id, v) VALUES (1, 'lost')");
          const [{ id }] = await t.query('SELECT CONNECTION_ID() AS id');
          await ctx.sql.query('KILL ?', [id]);
          await t.query('SELECT 1');
        }),
        10_000,
        'tx on a killed connection',
      ),
      (e) => e instanceof Error && e.message.length > 0,
    );
    assert.equal(await count(), 0, 'nothing of the killed tx committed');
    // Every connection of the pool still works (a dead one is not handed out again).
    const ids = await within(
      Promise.all([1, 2, 3, 4].map(() => sql.tx((t) => t.query('SELECT CONNECTION_ID() AS id')))),
      10_000,
      'later txs',
    );
    assert.equal(ids.length, 4);
    assert.deepEqual(await sql.query('SELECT 1 AS one'), [{ one: 1 }]);
  } finally {
    await sql.close();
  }
});
