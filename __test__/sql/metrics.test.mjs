// sql.stats(): per port method calls, errors by kind and latency percentiles, statements and
// round trips, pool gauges — and the same in the Prometheus text format (families: docs/metrics.md,
// checked by __test__/observability/metrics.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { applySchema, createMysqlBackend, mysqlPool, useDatabase } from './helpers.mjs';

const ctx = useDatabase('sql_metrics');

test(
  'backend calls are counted per method, with errors by kind and latency percentiles',
  { timeout: 30_000 },
  async () => {
    const sql = mysqlPool(`${ctx.db.url}?connectionLimit=3`);
    try {
      await applySchema(sql);
      const b = createMysqlBackend(sql);
      const before = sql.stats();
      assert.deepEqual(before.methods, {}, 'nothing called yet');
      const runs = await Promise.all(
        Array.from({ length: 5 }, (_, i) => b.store.startRun({ name: 'm', version: 1, input: i })),
      );
      for (const r of runs) await b.queue.enqueue(r.runId);
      const leases = await b.queue.claim({ limit: 10, leaseMs: 60_000 });
      assert.equal(leases.length, 5);
      await assert.rejects(b.queue.heartbeat({ ...leases[0], token: 'not-mine' }, { leaseMs: 1000 }), {
        kind: 'contract',
      });
      await assert.rejects(b.store.markRunning('no-such-run'), { kind: 'contract' });

      const s = sql.stats();
      assert.equal(s.methods.startRun.calls, 5);
      assert.equal(s.methods.enqueue.calls, 5);
      assert.equal(s.methods.claim.calls, 1);
      assert.deepEqual(s.methods.heartbeat.errors, { argument: 0, server: 0, connection: 0, contract: 1 });
      assert.equal(s.methods.markRunning.errors.contract, 1);
      for (const m of Object.values(s.methods)) {
        assert.ok(m.p50Ms > 0 && m.p50Ms <= m.p90Ms && m.p90Ms <= m.p99Ms, JSON.stringify(m));
        assert.ok(m.p99Ms < 10_000);
      }
      assert.ok(s.statements >= 5 + 5 + 2, `statements counted: ${s.statements}`);
      assert.ok(s.roundTrips > before.roundTrips);
      assert.ok(s.pool.open >= 1 && s.pool.open <= 3, JSON.stringify(s.pool));
      assert.equal(s.pool.inUse, 0, 'every connection back in the pool');
      assert.equal(s.pool.waiters, 0);
    } finally {
      await sql.close();
    }
  },
);

test('pool gauges show connections in use and calls waiting for one', { timeout: 30_000 }, async () => {
  const sql = mysqlPool(`${ctx.db.url}?connectionLimit=1&acquireTimeoutMs=5000`);
  try {
    await sql.query('SELECT 1');
    const slow = sql.query('SELECT SLEEP(0.5)');
    const queued = sql.query('SELECT 2');
    await new Promise((r) => setTimeout(r, 200));
    const s = sql.stats();
    assert.equal(s.pool.inUse, 1, JSON.stringify(s.pool));
    assert.equal(s.pool.waiters, 1, JSON.stringify(s.pool));
    await Promise.all([slow, queued]);
  } finally {
    await sql.close();
  }
});

test('prometheus() renders the same counters as text', { timeout: 30_000 }, async () => {
  const sql = mysqlPool(ctx.db.url);
  try {
    await applySchema(sql, 'p_');
    const b = createMysqlBackend(sql, { prefix: 'p_' });
    await b.store.startRun({ name: 'm', version: 1, input: null });
    const text = sql.prometheus({ prefix: 'app', pool: 'orders' });
    assert.match(text, /^# TYPE app_call_duration_seconds histogram$/m);
    assert.match(text, /^app_call_duration_seconds_count\{pool="orders",method="startRun"\} 1$/m);
    assert.match(text, /^app_errors_total\{pool="orders",method="startRun",kind="contract"\} 0$/m);
    assert.match(text, /^app_connections\{pool="orders",state="idle"\} [1-9]/m);
    assert.match(text, /^app_connections_open\{pool="orders"\} [1-9]/m);
    assert.match(text, /^app_round_trips_total\{pool="orders"\} [1-9]/m);
    assert.doesNotMatch(
      text,
      /quantile|_latency_ms|state="open"/,
      'no percentiles in ms beside the histogram, no total among parts',
    );
    for (const line of text.trim().split('\n')) {
      assert.match(line, /^(# (HELP|TYPE) .+|[a-z_]+(\{[^}]*\})? -?[0-9.e+]+)$/, `a valid exposition line: ${line}`);
    }
  } finally {
    await sql.close();
  }
});
