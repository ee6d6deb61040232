// Reliability 5 — pool exhaustion.
//
// 1,000 concurrent queries on a pool of 4 all complete (and the server never sees more than 4
// connections from it); with acquireTimeoutMs 200 and all 4 connections held by open `tx` calls,
// a 5th call rejects with a clear timeout error instead of waiting forever; failing transactions
// give their connection back.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminQuery, closeAdmin, freshDatabase } from '../helpers/db.mjs';
import { applySchema, createMysqlBackend, mysqlPool, settle, sleep, within, withParams } from './helpers.mjs';
import { processList } from '../helpers/server.mjs';

after(closeAdmin);
let db;
before(async () => {
  db = await freshDatabase('rel_pool');
  const s = mysqlPool(db.url);
  await applySchema(s);
  await s.close();
});
after(async () => db && db.drop());

async function serverConnections() {
  const [rows] = await adminQuery(`SELECT COUNT(*) AS n FROM ${processList()} WHERE DB = ?`, [db.database]);
  return Number(rows[0].n);
}

test(
  '1,000 concurrent queries on connectionLimit 4 all complete, on at most 4 connections',
  { timeout: 60_000 },
  async (t) => {
    const sql = mysqlPool(withParams(db.url, { connectionLimit: 4 }));
    let sampling = true;
    let peak = 0;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, await serverConnections());
        await sleep(10);
      }
    })();
    try {
      const t0 = performance.now();
      const settled = await Promise.allSettled(
        Array.from({ length: 1000 }, (_, i) =>
          sql.query('SELECT SLEEP(0.001) AS s, ? AS i, CONNECTION_ID() AS c', [i]),
        ),
      );
      const ms = performance.now() - t0;
      sampling = false;
      await sampler;
      const failed = settled.filter((r) => r.status === 'rejected').map((r) => r.reason.message);
      assert.deepEqual([...new Set(failed)], [], `${failed.length} of 1000 calls failed after ${ms.toFixed(0)} ms`);
      const results = settled.map((r) => r.value);
      assert.ok(
        results.every((r, i) => r.length === 1 && Number(r[0].i) === i),
        'each call got its own answer',
      );
      const conns = new Set(results.map((r) => Number(r[0].c)));
      assert.ok(conns.size <= 4, `used ${conns.size} connections`);
      assert.ok(peak <= 4, `server saw at most 4 connections from the pool (peak ${peak})`);

      // the same through the backend: 300 concurrent port calls on the 4 connections
      const b = createMysqlBackend(sql);
      const started = await Promise.all(
        Array.from({ length: 300 }, (_, i) => b.store.startRun({ name: 'p', version: 1, input: i })),
      );
      assert.equal(new Set(started.map((s) => s.runId)).size, 300);
      const loaded = await Promise.all(started.map((s) => b.store.loadRun(s.runId)));
      assert.ok(loaded.every((s, i) => s.run.input === i));
      t.diagnostic(
        `pool: 1,000 concurrent SELECT SLEEP(0.001) on connectionLimit 4 in ${ms.toFixed(0)} ms over ${conns.size} connections (server peak ${peak}); 600 concurrent port calls OK`,
      );
    } finally {
      sampling = false;
      await sampler;
      await within(sql.close(), 15_000, 'close()');
    }
  },
);

test(
  'all 4 connections held by open tx calls: a 5th call rejects with a clear timeout after acquireTimeoutMs',
  { timeout: 60_000 },
  async (t) => {
    const sql = mysqlPool(withParams(db.url, { connectionLimit: 4, acquireTimeoutMs: 200 }));
    const b = createMysqlBackend(sql);
    let release;
    const gate = new Promise((r) => {
      release = r;
    });
    let holding = 0;
    const holders = Array.from({ length: 4 }, (_, i) =>
      sql.tx(async (tx) => {
        await tx.query('SELECT ? AS i', [i]);
        holding++;
        await gate;
        return (await tx.query('SELECT ? AS i', [i]))[0].i;
      }),
    );
    try {
      for (let i = 0; i < 200 && holding < 4; i++) await sleep(10);
      assert.equal(holding, 4, 'four transactions hold the four connections');
      const fifth = [
        ['query', () => sql.query('SELECT 1')],
        ['exec', () => sql.exec('DO 1')],
        ['tx', () => sql.tx(async () => 1)],
        ['store.runStats', () => b.store.runStats()],
        ['queue.claim', () => b.queue.claim({ limit: 1, leaseMs: 1000 })],
      ];
      const lines = [];
      let message = '';
      for (const [what, call] of fifth) {
        const r = await settle(call());
        assert.equal(r.ok, false, `${what}: must not get a connection`);
        assert.match(r.error.message, /timed out/i, `${what}: clear timeout error`);
        assert.match(r.error.message, /acquireTimeoutMs|200 ms/, `${what}: names the limit`);
        // Bounded by acquireTimeoutMs (200 ms), not waiting for a connection that never comes back.
        assert.ok(r.ms >= 150 && r.ms < 10_000, `${what}: rejected after ~200 ms, took ${r.ms.toFixed(0)} ms`);
        lines.push(`${what} ${r.ms.toFixed(0)} ms`);
        message = r.error.message;
      }
      release();
      assert.deepEqual((await Promise.all(holders)).map(Number), [0, 1, 2, 3], 'the holders commit normally');
      assert.deepEqual(await sql.query('SELECT 7 AS x'), [{ x: 7 }], 'the pool serves again after the release');
      t.diagnostic(
        `pool: 4/4 connections held by tx; 5th calls rejected after: ${lines.join(', ')}; message: "${message}"`,
      );
    } finally {
      release();
      await Promise.allSettled(holders);
      await sql.close();
    }
  },
);

test(
  'failing transactions and failing statements return their connections (pool of 1)',
  { timeout: 60_000 },
  async (t) => {
    const sql = mysqlPool(withParams(db.url, { connectionLimit: 1, acquireTimeoutMs: 2000 }));
    const b = createMysqlBackend(sql);
    try {
      for (let i = 0; i < 50; i++) {
        await assert.rejects(
          sql.tx(async (tx) => {
            await tx.query('SELECT 1');
            throw new Error(`boom ${i}`);
          }),
          /boom/,
        );
        await assert.rejects(sql.query('SELECT * FROM no_such_table'), /no_such_table/);
        await assert.rejects(
          sql.tx(async (tx) => tx.query('SELEC broken')),
          /syntax/i,
        );
        await assert.rejects(b.store.markRunning(`missing-${i}`), /not found/);
      }
      assert.deepEqual(await sql.query('SELECT 1 AS one'), [{ one: 1 }]);
      // a rolled-back transaction left nothing behind
      await assert.rejects(
        sql.tx(async (tx) => {
          await tx.exec(
            'INSERT INTO `cron` (name, schedule, flow_name, flow_version, next_run_at) VALUES (?, ?, ?, ?, ?)',
            ['rb', '* * * * *', 'f', 1, 0],
          );
          throw new Error('rollback me');
        }),
        /rollback me/,
      );
      assert.deepEqual(await sql.query('SELECT COUNT(*) AS n FROM `cron`'), [{ n: 0 }]);
      // a transaction handle used after its tx settled rejects clearly instead of grabbing a connection
      let leaked;
      assert.equal(
        await sql.tx(async (tx) => {
          leaked = tx;
          return 1;
        }),
        1,
      );
      await assert.rejects(leaked.query('SELECT 1'), /already finished/);
      assert.deepEqual(await sql.query('SELECT 2 AS two'), [{ two: 2 }]);
      t.diagnostic(
        'pool: 200 failing tx/statements/port calls on a pool of 1 leaked no connection; rollback left no row',
      );
    } finally {
      await sql.close();
    }
  },
);
