// Metrics in the user's registry: sql.stats() as collectors in a real prom-client Registry (the
// pool's counters, gauges and a latency histogram), and as observable instruments read by a real
// OpenTelemetry MeterProvider.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import client from 'prom-client';
import { MeterProvider, MetricReader, AggregationTemporality } from '@opentelemetry/sdk-metrics';

import { applySchema, createMysqlBackend, mysqlPool, useDatabase } from '../sql/helpers.mjs';

const ctx = useDatabase('obs_metrics', { init: ({ sql }) => applySchema(sql) });

async function someCalls(sql) {
  const b = createMysqlBackend(sql);
  const runs = await Promise.all([1, 2, 3].map((i) => b.store.startRun({ name: 'met', version: 1, input: i })));
  for (const r of runs) await b.queue.enqueue(r.runId);
  await assert.rejects(b.store.markRunning('no-such-run'));
  return runs;
}

test('prom-client: the pool registers as collectors, read at each scrape', async () => {
  const sql = mysqlPool(ctx.db.url);
  const registry = new client.Registry();
  try {
    const unregister = sql.registerPromClient(registry, { prefix: 'app' });
    await someCalls(sql);
    const text = await registry.metrics();
    assert.match(text, /^# TYPE app_calls_total counter$/m);
    assert.match(text, /^app_calls_total\{method="startRun"\} 3$/m);
    assert.match(text, /^app_errors_total\{method="markRunning",kind="contract"\} 1$/m);
    assert.match(text, /^# TYPE app_call_duration_seconds histogram$/m);
    assert.match(text, /^app_call_duration_seconds_bucket\{method="startRun",le="\+Inf"\} 3$/m);
    assert.match(text, /^app_call_duration_seconds_count\{method="startRun"\} 3$/m);
    const sum = Number(/^app_call_duration_seconds_sum\{method="startRun"\} (\S+)$/m.exec(text)[1]);
    assert.ok(sum > 0 && sum < 60, `sum ${sum}`);
    // Buckets are cumulative and end at the count.
    const buckets = [...text.matchAll(/^app_call_duration_seconds_bucket\{method="enqueue",le="([^"]+)"\} (\d+)$/gm)];
    for (let i = 1; i < buckets.length; i++) assert.ok(Number(buckets[i][2]) >= Number(buckets[i - 1][2]));
    assert.equal(buckets.at(-1)[2], '3');
    // Later calls show at the next scrape; the text is what prometheus() renders.
    await createMysqlBackend(sql).store.startRun({ name: 'met', version: 1 });
    assert.match(await registry.metrics(), /^app_calls_total\{method="startRun"\} 4$/m);
    const json = await registry.getMetricsAsJSON();
    assert.ok(json.some((f) => f.name === 'app_connections' && f.type === 'gauge'));
    // A name clash is prom-client's error, and unregistering frees the names.
    assert.throws(() => sql.registerPromClient(registry, { prefix: 'app' }), /already been registered/);
    unregister();
    assert.equal(await registry.metrics(), '\n');
    assert.throws(() => sql.registerPromClient({}, {}), { name: 'TypeError', message: /registry/ });
    assert.throws(() => sql.registerPromClient(registry, { prefix: 'bad prefix' }), { name: 'TypeError' });
  } finally {
    await sql.close();
  }
});

/** A reader the test pulls from (an application would use a periodic exporting one). */
class PullReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  async onForceFlush() {}
  async onShutdown() {}
}

test('OpenTelemetry metrics: observable instruments over stats()', async () => {
  const sql = mysqlPool(ctx.db.url);
  const reader = new PullReader();
  const provider = new MeterProvider({ readers: [reader] });
  try {
    const stop = sql.observeOpenTelemetry(provider.getMeter('app'), { system: 'mariadb' });
    await someCalls(sql);
    const { resourceMetrics } = await reader.collect();
    const metrics = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics);
    const byName = (n) => metrics.find((x) => x.descriptor.name === n);
    const calls = byName('iterativeflow.mysql.calls').dataPoints;
    const startRun = calls.find((p) => p.attributes['db.operation.name'] === 'startRun');
    assert.equal(startRun.value, 3);
    assert.equal(startRun.attributes['db.system.name'], 'mariadb');
    const conns = byName('db.client.connection.count').dataPoints;
    assert.ok(conns.some((p) => p.attributes['db.client.connection.state'] === 'idle' && p.value >= 1));
    const errs = byName('iterativeflow.mysql.errors').dataPoints;
    assert.ok(
      errs.some(
        (p) =>
          p.attributes['db.operation.name'] === 'markRunning' &&
          p.attributes['error.kind'] === 'contract' &&
          p.value === 1,
      ),
    );
    assert.ok(byName('iterativeflow.mysql.statements').dataPoints[0].value >= 6);
    stop();
    await createMysqlBackend(sql).store.startRun({ name: 'met', version: 1 });
    const again = await reader.collect();
    const later = again.resourceMetrics.scopeMetrics
      .flatMap((s) => s.metrics)
      .find((x) => x.descriptor.name === 'iterativeflow.mysql.calls')
      ?.dataPoints.find((p) => p.attributes['db.operation.name'] === 'startRun');
    assert.notEqual(later?.value, 4, 'stats() no longer read after stop()');
    assert.throws(() => sql.observeOpenTelemetry({}), { name: 'TypeError', message: /meter/ });
  } finally {
    await provider.shutdown();
    await sql.close();
  }
});
