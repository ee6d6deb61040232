// inTx(poolOrSql, fn(backend, tx), opts?) (/work/shared/CONTRACT-3.0.md §1): the caller's own
// writes and every backend call made through `backend` share ONE transaction — they commit
// together when fn resolves and vanish together when it throws, when the transaction is the
// victim of a deadlock, or when its connection is killed. A unit failing with an ordinary error
// leaves nothing of itself and the transaction may still commit the rest.
//
// Run for both entries (the main one, default 2.0.0-alpha.2, on the alpha.2 layout; `v3.js`,
// default 3.0.0, on the 3.0 layout) over both executors (our native pool, and a plain JS `Sql`
// wrapped around it). Plus `mysqlPool(x, { setIsolation })`.
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

import mysql from 'mysql2/promise';

import { freshDatabase } from '../helpers/db.mjs';
import { deferred, m, server, settle, within } from './helpers.mjs';
import { onMysql } from '../helpers/server.mjs';

/** The isolation level's variable: MySQL 8 dropped `tx_isolation`; MariaDB 10.11 has only it. */
const ISOLATION = onMysql() ? '@@transaction_isolation' : '@@tx_isolation';

const require = createRequire(import.meta.url);
const v3 = require('../../v3.js');
const TO = { timeout: 30_000 };
const T = Date.parse('2030-01-01T00:00:00Z');
const at = (n = 0) => new Date(T + n);
const BASES = ['run', 'step', 'job', 'timer', 'signal', 'cron'];

/** A plain JS `Sql` over another one (as the conformance fixture's wrapSql). */
function wrapSql(inner) {
  const make = (target) => ({
    query: (text, params) => target.query(text, params),
    exec: (text, params) => target.exec(text, params),
    tx: (fn) => target.tx((handle) => fn(make(handle))),
  });
  return make(inner);
}

/** A barrier for `n` parties: each `await wait()` resolves once all n have called it. */
function barrier(n) {
  let arrived = 0;
  const all = deferred();
  return async () => {
    if (++arrived >= n) all.resolve();
    await all.promise;
  };
}

const ENTRIES = [
  { label: 'main entry (2.0.0-alpha.2)', lib: m, contract: '2.0.0-alpha.2' },
  { label: 'v3 entry (3.0.0)', lib: v3, contract: '3.0.0' },
];

function suite(entry, executor) {
  const ctx = { db: undefined, sql: undefined };
  const target = () => (executor === 'native' ? ctx.sql : wrapSql(ctx.sql));
  const inTx = (fn, opts) => entry.lib.inTx(target(), fn, opts);
  const count = async (table, where = '1=1', params = []) =>
    Number((await ctx.sql.query(`SELECT COUNT(*) AS n FROM \`${table}\` WHERE ${where}`, params))[0].n);
  const orders = async () => (await ctx.sql.query('SELECT id, run_id FROM orders ORDER BY id')).map((r) => ({ ...r }));
  const runs = async () => (await ctx.sql.query('SELECT id, name, input FROM run ORDER BY seq')).map((r) => ({ ...r }));
  const jobs = async () => (await ctx.sql.query('SELECT run_id FROM job ORDER BY run_id')).map((r) => r.run_id);
  /** A backend outside any inTx, for setting things up and reading them back. */
  const outside = () => entry.lib.createMysqlBackend(ctx.sql);

  /** Nothing of a placed order is anywhere. */
  async function assertEmpty(label) {
    assert.deepEqual(await orders(), [], `${label}: no order`);
    for (const b of BASES) assert.equal(await count(b), 0, `${label}: no ${b} row`);
  }

  before(async () => {
    ctx.db = await freshDatabase(`intx_${entry.contract === '3.0.0' ? 'v3' : 'a2'}_${executor}`);
    ctx.sql = m.mysqlPool(ctx.db.url);
    await entry.lib.applySchema(ctx.sql);
    await ctx.sql.query(
      'CREATE TABLE orders (id VARCHAR(64) PRIMARY KEY, run_id VARCHAR(191) NULL, amount INT NOT NULL DEFAULT 0) ENGINE=InnoDB',
    );
    await ctx.sql.query('CREATE TABLE locks (id VARCHAR(8) PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB');
  });
  beforeEach(async () => {
    for (const t of [...BASES, 'orders', 'locks']) await ctx.sql.query(`TRUNCATE TABLE \`${t}\``);
    await ctx.sql.exec("INSERT INTO locks (id, n) VALUES ('x', 0), ('y', 0)");
  });
  after(async () => {
    try {
      if (ctx.sql) await ctx.sql.close();
    } finally {
      if (ctx.db) await ctx.db.drop();
    }
  });

  /** The unit of work the tests place: an order row, a run for it and its job. */
  async function placeOrder(b, tx, id, amount = 1) {
    await tx.exec('INSERT INTO orders (id, amount) VALUES (?, ?)', [id, amount]);
    const r = await b.store.startRun({ name: 'order', version: 1, input: id });
    await tx.exec('UPDATE orders SET run_id = ? WHERE id = ?', [r.runId, id]);
    await b.queue.enqueue(r.runId);
    return r.runId;
  }

  test('commit: the order row, the run and its job land together, invisible to others until then', TO, async () => {
    const runId = await inTx(async (b, tx) => {
      assert.equal(
        typeof b.queue.enqueueMany,
        entry.contract === '3.0.0' ? 'function' : 'undefined',
        'the entry default contract',
      );
      const id = await placeOrder(b, tx, 'o1', 10);
      // units that are transactions of their own elsewhere join this one
      await b.store.checkpointStep(
        { runId: id, cursorKey: 's0', status: 'ok', result: 'kid', attempts: 1 },
        {
          spawn: [{ runId: `${id}-kid`, spec: { name: 'child', version: 1, input: null } }],
          timers: [{ runId: id, fireAt: at(100) }],
        },
      );
      await b.store.postSignal(id, 'paid', { amount: 10 });
      await b.store.upsertCron({
        name: 'nightly',
        schedule: '0 0 * * *',
        flowName: 'order',
        flowVersion: 1,
        input: null,
        nextRunAt: at(0),
      });
      // the transaction sees its own writes, through the backend and through tx
      assert.equal((await b.store.loadRunRow(id)).status, 'pending');
      assert.equal((await b.store.loadRun(id)).signals.length, 1);
      assert.equal(Number((await tx.query('SELECT COUNT(*) AS n FROM orders'))[0].n), 1);
      // nobody else does
      assert.deepEqual(await orders(), []);
      for (const t of BASES) assert.equal(await count(t), 0, `${t} invisible outside before the commit`);
      return id;
    });
    assert.deepEqual(await orders(), [{ id: 'o1', run_id: runId }]);
    assert.deepEqual(
      (await runs()).map((r) => r.id),
      [runId, `${runId}-kid`],
    );
    assert.deepEqual(await jobs(), [runId, `${runId}-kid`].sort());
    assert.equal(await count('step'), 1);
    assert.equal(await count('timer'), 1);
    assert.equal(await count('signal'), 1);
    assert.equal(await count('cron'), 1);
    const leases = await outside().queue.claim({ limit: 10, leaseMs: 1000, now: at(0) });
    assert.equal(leases.length, 2);
  });

  test('throw: neither the order nor the run nor the job; inTx rejects with that very error', TO, async () => {
    const boom = new Error('payment declined');
    let seen;
    await assert.rejects(
      inTx(async (b, tx) => {
        seen = await placeOrder(b, tx, 'o1');
        await b.store.checkpointStep(
          { runId: seen, cursorKey: 's0', status: 'ok', result: 1, attempts: 1 },
          { timers: [{ runId: seen, fireAt: at(1) }] },
        );
        await b.store.postSignal(seen, 'x', 1);
        throw boom;
      }),
      (e) => e === boom,
    );
    assert.ok(seen, 'fn ran');
    await assertEmpty('after the throw');
    // the pool is fine afterwards
    await inTx((b, tx) => placeOrder(b, tx, 'o2'));
    assert.deepEqual(
      (await orders()).map((o) => o.id),
      ['o2'],
    );
  });

  test(
    'a unit failing with an ordinary error (checkpointStep on an unknown run) leaves nothing; the rest commits',
    TO,
    async () => {
      let failure;
      const runId = await inTx(async (b, tx) => {
        const id = await placeOrder(b, tx, 'o1');
        failure = await settle(() =>
          b.store.checkpointStep(
            { runId: 'no-such-run', cursorKey: 's0', status: 'ok', result: 1, attempts: 1 },
            {
              enqueue: [{ runId: 'stray' }],
              timers: [{ runId: 'stray', fireAt: at(1) }],
            },
          ),
        );
        // the transaction carries on
        await b.store.checkpointStep({ runId: id, cursorKey: 's0', status: 'ok', result: 'fine', attempts: 1 });
        await tx.exec('UPDATE orders SET amount = 5 WHERE id = ?', ['o1']);
        return id;
      });
      assert.equal(failure.ok, false, 'the checkpoint on an unknown run rejects');
      assert.ok(failure.error instanceof Error);
      assert.deepEqual(await orders(), [{ id: 'o1', run_id: runId }]);
      assert.equal(Number((await ctx.sql.query('SELECT amount FROM orders'))[0].amount), 5);
      assert.deepEqual(await jobs(), [runId]);
      assert.equal(await count('step'), 1);
      assert.equal(await count('step', 'run_id = ?', ['no-such-run']), 0);
      assert.equal(await count('timer'), 0);
    },
  );

  test(
    'a unit failing halfway (startManyRuns hitting a duplicate id) leaves none of its rows; the rest commits',
    TO,
    async () => {
      // opts.id hands out the same id twice: the batch's second insert fails with ER_DUP_ENTRY
      // after its first one succeeded.
      let n = 0;
      const id = () => (++n <= 2 ? 'dup-id' : `run-${n}`);
      let failure;
      await inTx(
        async (b, tx) => {
          await tx.exec("INSERT INTO orders (id) VALUES ('o1')");
          failure = await settle(() =>
            b.store.startManyRuns([
              { name: 'order', version: 1, input: 'first' },
              { name: 'order', version: 1, input: 'second' },
            ]),
          );
          const r = await b.store.startRun({ name: 'order', version: 1, input: 'after' });
          await b.queue.enqueue(r.runId);
        },
        { id },
      );
      assert.equal(failure.ok, false, 'startManyRuns rejects');
      assert.equal(failure.error.errno, 1062, `a duplicate key: ${failure.error.message}`);
      assert.deepEqual(
        (await runs()).map((r) => [r.id, r.input]),
        [['run-3', '"after"']],
        'the failed batch left no run behind',
      );
      assert.deepEqual(await jobs(), ['run-3']);
      assert.deepEqual(
        (await orders()).map((o) => o.id),
        ['o1'],
      );
    },
  );

  test(
    'deadlock between two inTx calls: the victim leaves nothing; a caller-side retry yields one order and one run each',
    TO,
    async () => {
      const place = (name, first, second, sync) =>
        inTx(async (b, tx) => {
          const id = await placeOrder(b, tx, name);
          await tx.exec('UPDATE locks SET n = n + 1 WHERE id = ?', [first]);
          if (sync) await sync();
          await tx.exec('UPDATE locks SET n = n + 1 WHERE id = ?', [second]);
          return id;
        });
      const sync = barrier(2);
      const [a, b] = await within(
        Promise.allSettled([place('A', 'x', 'y', sync), place('B', 'y', 'x', sync)]),
        20_000,
        'the two transactions',
      );
      const outcomes = { A: a, B: b };
      const victims = Object.keys(outcomes).filter((k) => outcomes[k].status === 'rejected');
      assert.equal(victims.length, 1, `exactly one victim: ${JSON.stringify([a.status, b.status])}`);
      const [victim] = victims;
      const winner = victim === 'A' ? 'B' : 'A';
      assert.equal(outcomes[victim].reason.errno, 1213, `the victim's error: ${outcomes[victim].reason.message}`);
      assert.deepEqual(
        (await orders()).map((o) => o.id),
        [winner],
        "the victim's order is gone",
      );
      assert.deepEqual(
        (await runs()).map((r) => r.input),
        [JSON.stringify(winner)],
        "the victim's run is gone",
      );
      assert.deepEqual(await jobs(), [outcomes[winner].value]);
      // the caller retries the victim until it commits
      let attempts = 0;
      for (;;) {
        attempts++;
        try {
          await place(victim, victim === 'A' ? 'x' : 'y', victim === 'A' ? 'y' : 'x');
          break;
        } catch (e) {
          if (e.errno !== 1213 || attempts >= 5) throw e;
        }
      }
      const placed = await orders();
      assert.deepEqual(
        placed.map((o) => o.id),
        ['A', 'B'],
      );
      const allRuns = await runs();
      assert.deepEqual(allRuns.map((r) => r.input).sort(), ['"A"', '"B"'], 'one run per order');
      for (const o of placed)
        assert.ok(
          allRuns.some((r) => r.id === o.run_id),
          `order ${o.id} points at its run`,
        );
      assert.deepEqual(await jobs(), allRuns.map((r) => r.id).sort());
      assert.deepEqual(
        (await ctx.sql.query('SELECT n FROM locks ORDER BY id')).map((r) => Number(r.n)),
        [2, 2],
      );
    },
  );

  test(
    'deadlock inside a backend unit: later calls and the commit reject with errno 1213, nothing is stored',
    TO,
    async () => {
      await outside().queue.enqueue('jx');
      await outside().queue.enqueue('jy');
      const sync = barrier(2);
      const trace = {};
      const place = (name, first, second) =>
        inTx(async (b, tx) => {
          await placeOrder(b, tx, name);
          await b.queue.enqueue(first, { priority: 1 });
          await sync();
          const r = await settle(() => b.queue.enqueue(second, { priority: 1 }));
          trace[name] = { unit: r.ok ? 'ok' : r.error.errno };
          if (!r.ok) {
            // carry on as if it did not matter: nothing may be committed
            const later = await settle(() => b.store.startRun({ name: 'late', version: 1, input: null }));
            const own = await settle(() => tx.exec("INSERT INTO orders (id) VALUES (CONCAT(?, '-late'))", [name]));
            trace[name].later = later.ok ? 'ok' : later.error.errno;
            trace[name].own = own.ok ? 'ok' : own.error.errno;
          }
        });
      const [a, b] = await within(
        Promise.allSettled([place('A', 'jx', 'jy'), place('B', 'jy', 'jx')]),
        20_000,
        'the two transactions',
      );
      const outcomes = { A: a, B: b };
      const victim = trace.A?.unit === 1213 ? 'A' : 'B';
      const winner = victim === 'A' ? 'B' : 'A';
      assert.deepEqual(trace[victim], { unit: 1213, later: 1213, own: 1213 }, JSON.stringify(trace));
      assert.deepEqual(trace[winner], { unit: 'ok' });
      assert.equal(outcomes[victim].status, 'rejected', 'the commit of the victim is refused');
      assert.equal(outcomes[victim].reason.errno, 1213);
      assert.equal(outcomes[winner].status, 'fulfilled');
      assert.deepEqual(
        (await orders()).map((o) => o.id),
        [winner],
      );
      assert.deepEqual(
        (await runs()).map((r) => r.input),
        [JSON.stringify(winner)],
      );
      assert.equal(await count('run', "name = 'late'"), 0);
    },
  );

  test(
    'a killed connection mid-transaction: later calls and the commit reject alike, nothing is stored',
    TO,
    async () => {
      const how = (r) => (r.ok ? 'ok' : { errno: r.error.errno, code: r.error.code, kind: r.error.kind });
      const trace = {};
      const outcome = await settle(() =>
        inTx(async (b, tx) => {
          await placeOrder(b, tx, 'o1');
          const [{ id }] = await tx.query('SELECT CONNECTION_ID() AS id');
          await ctx.sql.query(`KILL ${Number(id)}`);
          trace.unit = how(await settle(() => b.store.postSignal('whatever', 's', 1)));
          trace.own = how(await settle(() => tx.exec("INSERT INTO orders (id) VALUES ('o2')")));
          trace.again = how(await settle(() => b.queue.enqueue('other')));
          // fn resolves: the commit must not happen
        }),
      );
      assert.notEqual(trace.unit, 'ok', 'a backend call after the kill rejects');
      assert.equal(trace.unit.kind, 'connection', JSON.stringify(trace));
      assert.ok(trace.unit.errno !== undefined || trace.unit.code !== undefined, 'an errno or a code');
      assert.deepEqual(trace.own, trace.unit, `the same errno/code for later statements: ${JSON.stringify(trace)}`);
      assert.deepEqual(trace.again, trace.unit);
      assert.equal(outcome.ok, false, 'the commit rejects');
      assert.deepEqual(how(outcome), trace.unit, `inTx: ${outcome.error.message}`);
      await assertEmpty('after the kill');
      // the pool recovers
      await inTx((b, tx) => placeOrder(b, tx, 'o3'));
      assert.deepEqual(
        (await orders()).map((o) => o.id),
        ['o3'],
      );
    },
  );

  test('inTx with opts: prefix and id reach the backend; a non-function fn rejects with a TypeError', TO, async () => {
    await entry.lib.applySchema(ctx.sql, 'px_');
    try {
      await inTx(
        async (b) => {
          const r = await b.store.startRun({ name: 'f', version: 1, input: null });
          assert.equal(r.runId, 'fixed-1');
        },
        { prefix: 'px_', id: () => 'fixed-1' },
      );
      assert.deepEqual(
        (await ctx.sql.query('SELECT id FROM px_run')).map((r) => r.id),
        ['fixed-1'],
      );
      assert.equal(await count('run'), 0);
    } finally {
      for (const b of BASES) await ctx.sql.query(`DROP TABLE IF EXISTS \`px_${b}\``);
      await ctx.sql.query('DROP FUNCTION IF EXISTS px_pending_work');
    }
    await assert.rejects(entry.lib.inTx(target(), 'not a function'), TypeError);
    await assert.rejects(
      entry.lib.inTx(42, async () => {}),
      TypeError,
    );
  });
}

for (const entry of ENTRIES) {
  for (const executor of ['native', 'wrapped'])
    describe(`${entry.label} over ${executor === 'native' ? 'our pool' : 'a wrapped Sql'}`, () =>
      suite(entry, executor));
}

// ---------------------------------------------------------------------------------------------
// mysqlPool(x, { setIsolation })
// ---------------------------------------------------------------------------------------------

describe('mysqlPool(x, { setIsolation })', () => {
  let db;
  const pools = [];
  const pool = (opts) => {
    const p =
      opts === undefined
        ? m.mysqlPool(`${db.url}?connectionLimit=1`)
        : m.mysqlPool(`${db.url}?connectionLimit=1`, opts);
    pools.push(p);
    return p;
  };
  const setCount = async (sql) => Number((await sql.query("SHOW SESSION STATUS LIKE 'Com_set_option'"))[0].Value);
  const txIsolation = (sql) => sql.tx(async (t) => (await t.query(`SELECT ${ISOLATION} AS i`))[0].i);

  before(async () => {
    db = await freshDatabase('intx_isolation');
    const setup = m.mysqlPool(db.url);
    await v3.applySchema(setup);
    await setup.query('CREATE TABLE kv (k INT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB');
    await setup.exec('INSERT INTO kv VALUES (1, 0)');
    await setup.close();
  });
  after(async () => {
    await Promise.all(pools.map((p) => p.close()));
    if (db) await db.drop();
  });

  /** Reads kv twice in one transaction with a committed write from elsewhere in between. */
  async function rereads(sql, writer) {
    return sql.tx(async (t) => {
      const first = Number((await t.query('SELECT v FROM kv WHERE k = 1'))[0].v);
      await writer.exec('UPDATE kv SET v = v + 1 WHERE k = 1');
      const second = Number((await t.query('SELECT v FROM kv WHERE k = 1'))[0].v);
      return second - first;
    });
  }

  test('the server default here is REPEATABLE-READ (what the checks below rely on)', TO, async () => {
    const sql = pool({ setIsolation: false });
    assert.equal((await sql.query(`SELECT @@GLOBAL.${ISOLATION.slice(2)} AS i`))[0].i, 'REPEATABLE-READ');
  });

  test('setIsolation: false sends no SET at all: the session keeps the server default', TO, async () => {
    const sql = pool({ setIsolation: false });
    const writer = pool();
    assert.equal(await txIsolation(sql), 'REPEATABLE-READ');
    assert.equal((await sql.query(`SELECT @@SESSION.${ISOLATION.slice(2)} AS i`))[0].i, 'REPEATABLE-READ');
    assert.equal(await rereads(sql, writer), 0, 'a repeatable-read snapshot');
    // backend units and inTx on it send none either
    const b = v3.createMysqlBackend(sql);
    const r = await b.store.startRun({ name: 'f', version: 1, input: null });
    await b.store.checkpointStep(
      { runId: r.runId, cursorKey: 's0', status: 'ok', result: 1, attempts: 1 },
      { enqueue: [{ runId: r.runId }] },
    );
    await b.queue.claim({ limit: 5, leaseMs: 1000, now: at(0) });
    const inside = await v3.inTx(sql, async (_b, tx) => (await tx.query(`SELECT ${ISOLATION} AS i`))[0].i);
    assert.equal(inside, 'REPEATABLE-READ', 'inTx over it runs at the server default');
    assert.equal(await setCount(sql), 0, 'Com_set_option of the (only) session');
  });

  test('the default (and setIsolation: true) runs transactions at READ-COMMITTED', TO, async () => {
    const writer = pool({ setIsolation: false });
    for (const opts of [undefined, { setIsolation: true }, {}]) {
      const sql = pool(opts);
      assert.equal(await txIsolation(sql), 'READ-COMMITTED', JSON.stringify(opts));
      assert.equal(await rereads(sql, writer), 1, 'read committed sees the other commit');
      assert.ok((await setCount(sql)) >= 1, 'it did send a SET');
      const inside = await m.inTx(sql, async (_b, tx) => (await tx.query(`SELECT ${ISOLATION} AS i`))[0].i);
      assert.equal(inside, 'READ-COMMITTED');
    }
  });

  test('a bad setIsolation is refused synchronously with a TypeError', TO, () => {
    assert.throws(() => m.mysqlPool(db.url, { setIsolation: 'no' }), TypeError);
    assert.throws(() => m.mysqlPool(db.url, { setIsolation: 1 }), TypeError);
    assert.throws(() => v3.mysqlPool(db.url, 'x'), TypeError);
  });

  test('inTx takes a mysql2 pool too (as the JavaScript package does) and commits on it', TO, async () => {
    const { host, port, user, password } = server();
    const my = mysql.createPool({ host, port, user, password, database: db.database, connectionLimit: 2 });
    try {
      const id = await v3.inTx(my, async (b, tx) => {
        await tx.exec('UPDATE kv SET v = 100 WHERE k = 1');
        return (await b.store.startRun({ name: 'via-mysql2', version: 1, input: null })).runId;
      });
      const check = pool({ setIsolation: false });
      assert.equal(Number((await check.query('SELECT v FROM kv WHERE k = 1'))[0].v), 100);
      assert.deepEqual(
        (await check.query('SELECT id FROM run WHERE name = ?', ['via-mysql2'])).map((r) => r.id),
        [id],
      );
    } finally {
      await my.end();
    }
  });
});
