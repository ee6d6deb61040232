// queryTimeoutMs: a round trip that goes unanswered rejects within the bound, its connection is
// closed and its server session killed (so it stops working and releases its locks), and the
// pool carries on with fresh connections.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { mysqlPool, useDatabase, within } from './helpers.mjs';
import { processList } from '../helpers/server.mjs';

const ctx = useDatabase('sql_timeout', {
  init: ({ sql }) => sql.query('CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(32) NOT NULL) ENGINE=InnoDB'),
});

const BOUND_MS = 400;
const pool = () => mysqlPool(`${ctx.db.url}?queryTimeoutMs=${BOUND_MS}&connectionLimit=2`);

/** Server sessions currently running `SELECT SLEEP(…)` statements with `marker` in them. */
async function sleepers(marker) {
  const rows = await ctx.sql.query(
    `SELECT ID AS id FROM ${processList()} WHERE INFO LIKE CONCAT('%', ?, '%') AND ID <> CONNECTION_ID()`,
    [marker],
  );
  return rows.length;
}

async function eventually(check, ms, what) {
  const until = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > until) assert.fail(`${what} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test(
  'a slow query rejects after queryTimeoutMs, its session is killed, the pool recovers',
  { timeout: 30_000 },
  async () => {
    const sql = pool();
    try {
      const t0 = Date.now();
      const err = await within(sql.query("SELECT SLEEP(20) AS s, 'marker-q1' AS m"), 5000, 'slow query').then(
        () => assert.fail('resolved'),
        (e) => e,
      );
      const ms = Date.now() - t0;
      assert.match(err.message, /queryTimeoutMs/);
      assert.ok(ms >= BOUND_MS - 20 && ms < BOUND_MS + 2000, `rejected after ${ms} ms`);
      await eventually(async () => (await sleepers('marker-q1')) === 0, 5000, 'the server session was killed');
      assert.deepEqual(await sql.query('SELECT 1 AS one'), [{ one: 1 }]);
    } finally {
      await sql.close();
    }
  },
);

test(
  'a slow statement inside tx rejects in time; nothing commits and its locks are released',
  { timeout: 30_000 },
  async () => {
    const sql = pool();
    try {
      await ctx.sql.exec('DELETE FROM t');
      const t0 = Date.now();
      const out = await within(
        sql.tx(async (t) => {
          await t.exec("INSERT INTO t (id, v) VALUES (1, 'x')");
          await t.query("SELECT SLEEP(20), 'marker-tx'");
        }),
        5000,
        'tx',
      ).then(
        () => 'resolved',
        (e) => e,
      );
      assert.ok(out instanceof Error, 'tx rejected');
      assert.ok(Date.now() - t0 < BOUND_MS + 2000);
      await eventually(async () => (await sleepers('marker-tx')) === 0, 5000, 'the session was killed');
      // Row 1 was never committed and is not locked any more: another writer takes it at once.
      assert.equal((await ctx.sql.query('SELECT COUNT(*) AS n FROM t'))[0].n, 0);
      await within(ctx.sql.exec("INSERT INTO t (id, v) VALUES (1, 'other')"), 3000, 'insert of the same key');
    } finally {
      await sql.close();
    }
  },
);

test('queryTimeoutMs=0 means no bound; bad values are refused', { timeout: 30_000 }, async () => {
  const sql = mysqlPool(`${ctx.db.url}?queryTimeoutMs=0`);
  try {
    assert.deepEqual(await sql.query('SELECT SLEEP(0.6) AS s'), [{ s: 0 }]);
  } finally {
    await sql.close();
  }
  assert.throws(() => mysqlPool(`${ctx.db.url}?queryTimeoutMs=-1`), { name: 'TypeError', message: /queryTimeoutMs/ });
  assert.throws(() => mysqlPool({ url: ctx.db.url, queryTimeoutMs: 1.5 }), {
    name: 'TypeError',
    message: /queryTimeoutMs/,
  });
  // The options object form is honoured too.
  const fast = mysqlPool({ url: ctx.db.url, queryTimeoutMs: 200 });
  try {
    await assert.rejects(fast.query('SELECT SLEEP(5)'), /queryTimeoutMs/);
  } finally {
    await fast.close();
  }
});
