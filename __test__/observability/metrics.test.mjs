// Metrics in the user's own tools: sql.stats() rendered as Prometheus text (it parses, and holds
// the families docs/metrics.md lists), registered in a real prom-client Registry — two pools in
// one registry, each under its `pool` label — and observed by a real OpenTelemetry MeterProvider
// with an in-memory reader: the semantic conventions' operation-duration histogram and connection
// metrics, db.system.name as this run's server says it (mariadb / mysql).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';

import client from 'prom-client';
import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';

import { serverKind } from '../helpers/server.mjs';
import { applySchema, createMysqlBackend, mysqlPool, server, useDatabase } from '../sql/helpers.mjs';
import { parsePrometheus } from './prom-text.mjs';

const require = createRequire(import.meta.url);
const binding = require('../../lib/binding.js');
const DOC = fs.readFileSync(new URL('../../docs/metrics.md', import.meta.url), 'utf8');
const SYSTEM = serverKind(); // 'mariadb' | 'mysql': what db.system.name must say

const ctx = useDatabase('obs_metrics', { init: ({ sql }) => applySchema(sql) });
const pools = [];
const pool = (suffix = '') => {
  const sql = mysqlPool(`${ctx.db.url}${suffix}`);
  pools.push(sql);
  return sql;
};
after(() => Promise.all(pools.map((s) => s.close())));

async function someCalls(sql, n = 3) {
  const b = createMysqlBackend(sql);
  const runs = await Promise.all(
    Array.from({ length: n }, (_, i) => b.store.startRun({ name: 'met', version: 1, input: i })),
  );
  for (const r of runs) await b.queue.enqueue(r.runId);
  await assert.rejects(b.store.markRunning('no-such-run'));
  return runs;
}

/** The rows of the Markdown table between `<!-- metrics:<name>:start -->` and its end. */
function docTable(name) {
  const m = new RegExp(`<!-- metrics:${name}:start -->\\n([\\s\\S]*?)<!-- metrics:${name}:end -->`).exec(DOC);
  assert.ok(m, `docs/metrics.md has a ${name} block`);
  return m[1]
    .split('\n')
    .filter((l) => l.startsWith('| ') && !/^\| (family|instrument) /.test(l))
    .map((l) => l.slice(2, -2).split(' | '));
}

const families = (text, prefix) =>
  new Map([...parsePrometheus(text)].map(([name, f]) => [name.slice(prefix.length), f]));

test("prometheus(): the text parses, every family is docs/metrics.md's, with its type and labels", async () => {
  const sql = pool();
  await someCalls(sql);
  const fams = families(sql.prometheus({ prefix: 'app' }), 'app');
  const doc = docTable('families');
  assert.deepEqual(
    [...fams.keys()].sort(),
    doc.map(([name]) => name.replace(/`/g, '')).sort(),
    'the documented families are the rendered ones',
  );
  for (const [name, type, labels] of doc) {
    const f = fams.get(name.replace(/`/g, ''));
    assert.equal(f.type, type, name);
    const want = [...labels.matchAll(/`(\w+)`/g)]
      .map((x) => x[1])
      .filter((l) => !['idle', 'in_use', 'argument'].includes(l));
    for (const s of f.samples) {
      assert.deepEqual(
        Object.keys(s.labels).sort(),
        want.filter((l) => s.name.endsWith('_bucket') || l !== 'le').sort(),
        `${name} ${s.name}`,
      );
      assert.equal(s.labels.pool, `${server().host}:${server().port}/${ctx.db.database}`, 'the default pool name');
    }
  }
  // Parts and totals live in different families; one unit per family.
  assert.deepEqual(new Set(fams.get('_connections').samples.map((s) => s.labels.state)), new Set(['idle', 'in_use']));
  // The histogram: seconds, the documented bounds, cumulative buckets ending at the count.
  const h = fams.get('_call_duration_seconds').samples.filter((s) => s.labels.method === 'startRun');
  const les = h.filter((s) => s.name.endsWith('_bucket')).map((s) => s.labels.le);
  const bounds = binding.latencyBucketsMs().map((ms) => (ms === Infinity ? '+Inf' : String(ms / 1000)));
  assert.deepEqual(les, bounds);
  for (const le of les) assert.match(le, /^(\+Inf|0|[1-9]\d*|0?\.\d+|\d+\.\d+)$/, 'a plain decimal');
  const counts = h.filter((s) => s.name.endsWith('_bucket')).map((s) => s.value);
  for (let i = 1; i < counts.length; i++) assert.ok(counts[i] >= counts[i - 1]);
  assert.equal(counts.at(-1), h.find((s) => s.name.endsWith('_count')).value);
  assert.equal(h.find((s) => s.name.endsWith('_count')).value, sql.stats().methods.startRun.calls);
  // The documented bucket bounds are the binding's.
  const sentence = /upper bounds are (.*?) and \+Inf/.exec(DOC.replace(/\n/g, ' '))[1];
  const inMs = [];
  let unit = 'ms';
  for (const part of sentence
    .split(',')
    .map((x) => x.trim())
    .reverse()) {
    const mm = /^([\d.]+)(?: (ms|s))?$/.exec(part);
    if (mm[2]) unit = mm[2];
    inMs.unshift(Number(mm[1]) * (unit === 's' ? 1000 : 1));
  }
  assert.deepEqual(inMs, binding.latencyBucketsMs().slice(0, -1));
  assert.doesNotMatch(sql.prometheus(), /quantile|latency_ms/);
});

test('stats() has exactly the keys docs/metrics.md shows', async () => {
  const sql = pool();
  await someCalls(sql, 1);
  const s = sql.stats();
  const block = /<!-- metrics:stats:start -->\n```js\n([\s\S]*?)```/.exec(DOC)[1].replace(/\/\/[^\n]*/g, '');
  const keys = [...block.matchAll(/\b([a-zA-Z][a-zA-Z0-9]*)(\?)?(?=\s*[,:}\]])/g)];
  const documented = new Set(keys.map((m) => m[1]));
  const optional = new Set(keys.filter((m) => m[2]).map((m) => m[1])); // `x?`: present only sometimes
  const actual = new Set();
  const walk = (v, depth) => {
    if (Array.isArray(v)) return v.forEach((x) => walk(x, depth));
    if (!v || typeof v !== 'object') return;
    for (const [k, x] of Object.entries(v)) {
      if (depth === 1 && k === 'startRun') {
        walk(x, depth + 1);
        continue;
      }
      if (!(depth === 1 && s.methods[k] === x)) actual.add(k);
      walk(x, k === 'methods' ? 1 : depth + 1);
    }
  };
  walk(s, 0);
  documented.delete('claim'); // the example method name
  for (const k of actual) assert.ok(documented.has(k), `stats().${k} is documented`);
  for (const k of documented) assert.ok(actual.has(k) || optional.has(k), `documented ${k} is in stats()`);
});

test('prom-client: two pools in one registry, each under its pool label; the text parses; unregistering frees the names', async () => {
  const a = pool();
  const b = pool('?connectionLimit=2');
  const registry = new client.Registry();
  const offA = a.registerPromClient(registry, { prefix: 'app' });
  assert.throws(() => b.registerPromClient(registry, { prefix: 'app' }), {
    name: 'TypeError',
    message: /already registered .* pass \{ pool: '<name>' \}/,
  });
  const offB = b.registerPromClient(registry, { prefix: 'app', pool: 'billing' });
  await someCalls(a, 3);
  await someCalls(b, 2);
  const fams = families(await registry.metrics(), 'app');
  const count = (name) =>
    Object.fromEntries(
      fams
        .get('_call_duration_seconds')
        .samples.filter((s) => s.name.endsWith('_count') && s.labels.method === name)
        .map((s) => [s.labels.pool, s.value]),
    );
  const aName = `${server().host}:${server().port}/${ctx.db.database}`;
  assert.deepEqual(count('startRun'), {
    [aName]: a.stats().methods.startRun.calls,
    billing: b.stats().methods.startRun.calls,
  });
  assert.deepEqual(
    fams
      .get('_errors_total')
      .samples.filter((s) => s.labels.method === 'markRunning' && s.labels.kind === 'contract')
      .map((s) => s.labels.pool)
      .sort(),
    [aName, 'billing'].sort(),
  );
  // A second registry is independent; the default registry of prom-client works the same way.
  const other = new client.Registry();
  const offOther = a.registerPromClient(other);
  assert.ok(parsePrometheus(await other.metrics()).has('iterativeflow_mysql_round_trips_total'));
  offOther();
  // One pool unregistered: the other's samples stay; both: the registry is empty again.
  offA();
  const left = families(await registry.metrics(), 'app');
  assert.deepEqual([...new Set(left.get('_round_trips_total').samples.map((s) => s.labels.pool))], ['billing']);
  offB();
  assert.equal(await registry.metrics(), '\n');
  // A registry cleared behind our back takes a pool again.
  const offAgain = a.registerPromClient(registry, { prefix: 'app' });
  registry.clear();
  const offNew = a.registerPromClient(registry, { prefix: 'app', pool: 'again' });
  const cleared = families(await registry.metrics(), 'app');
  assert.deepEqual([...new Set(cleared.get('_round_trips_total').samples.map((s) => s.labels.pool))], ['again']);
  offAgain();
  offNew();
  assert.throws(() => a.registerPromClient({}, {}), { name: 'TypeError', message: /registry/ });
  assert.throws(() => a.registerPromClient(registry, { prefix: 'bad prefix' }), { name: 'TypeError' });
  assert.throws(() => a.registerPromClient(registry, { pool: '' }), { name: 'TypeError' });
});

/** A MeterProvider with an in-memory exporter behind a reader the test flushes. */
function meterProvider() {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({ readers: [reader] });
  return {
    meter: provider.getMeter('app'),
    async metrics() {
      exporter.reset();
      await reader.forceFlush();
      const last = exporter.getMetrics().at(-1);
      return new Map(last.scopeMetrics.flatMap((s) => s.metrics).map((m) => [m.descriptor.name, m]));
    },
    shutdown: () => provider.shutdown(),
  };
}

test(`OpenTelemetry metrics: db.client.operation.duration per call (advised buckets, seconds), connection metrics with the pool name, db.system.name ${SYSTEM}`, async () => {
  const sql = pool();
  const p = meterProvider();
  try {
    const stop = sql.observeOpenTelemetry(p.meter, { pool: 'orders' });
    await someCalls(sql, 3);
    let ms = await p.metrics();
    assert.deepEqual(
      [...ms.keys()].sort(),
      docTable('otel')
        .map(([name]) => name.replace(/`/g, ''))
        .sort(),
      "the instruments are docs/metrics.md's",
    );
    const d = ms.get('db.client.operation.duration');
    assert.equal(d.dataPointType, DataPointType.HISTOGRAM);
    assert.equal(d.descriptor.unit, 's');
    const startRun = d.dataPoints.filter((x) => x.attributes['db.operation.name'] === 'startRun');
    assert.equal(startRun.length, 1);
    assert.deepEqual(startRun[0].value.buckets.boundaries, [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10]);
    assert.equal(startRun[0].value.count, sql.stats().methods.startRun.calls);
    assert.ok(startRun[0].value.sum > 0 && startRun[0].value.max < 60, 'seconds');
    assert.deepEqual(startRun[0].attributes, {
      'db.system.name': SYSTEM,
      'db.namespace': ctx.db.database,
      'db.operation.name': 'startRun',
      'server.address': server().host,
      'server.port': server().port,
    });
    const failed = d.dataPoints.find((x) => x.attributes['db.operation.name'] === 'markRunning');
    assert.equal(failed.attributes['error.type'], 'ERR_CONTRACT');
    assert.equal(failed.attributes['db.response.status_code'], undefined, 'not a server error');

    const conns = ms.get('db.client.connection.count').dataPoints;
    assert.deepEqual(conns.map((x) => x.attributes['db.client.connection.state']).sort(), ['idle', 'used']);
    for (const x of conns) {
      assert.equal(x.attributes['db.client.connection.pool.name'], 'orders');
      assert.equal(x.attributes['db.system.name'], SYSTEM);
    }
    assert.ok(conns.find((x) => x.attributes['db.client.connection.state'] === 'idle').value >= 1);
    assert.equal(
      ms.get('db.client.connection.pending_requests').dataPoints[0].attributes['db.client.connection.pool.name'],
      'orders',
    );
    assert.equal(ms.get('iterativeflow.mysql.statements').dataPoints[0].value, sql.stats().statements);

    // A server error: db.response.status_code is its MySQL error number, as a string.
    const b = createMysqlBackend(sql, { prefix: 'nosuch_' });
    const err = await b.store.loadRun('x').catch((e) => e);
    ms = await p.metrics();
    const dup = ms
      .get('db.client.operation.duration')
      .dataPoints.find((x) => x.attributes['db.operation.name'] === 'loadRun');
    assert.equal(dup.attributes['error.type'], err.code);
    assert.equal(dup.attributes['db.response.status_code'], String(err.errno));

    stop();
    await createMysqlBackend(sql).store.startRun({ name: 'met', version: 1 });
    ms = await p.metrics();
    const after = ms
      .get('db.client.operation.duration')
      ?.dataPoints.find((x) => x.attributes['db.operation.name'] === 'startRun' && !x.attributes['error.type']);
    assert.equal(after.value.count, startRun[0].value.count, 'calls after stop() are not recorded');
    assert.throws(() => sql.observeOpenTelemetry({}), { name: 'TypeError', message: /meter/ });
  } finally {
    await p.shutdown();
  }
});

test('OpenTelemetry metrics: a port call inside inTx counts too; a second pool gets its own pool name', async () => {
  const sql = pool();
  const other = pool('?connectionLimit=2');
  const p = meterProvider();
  try {
    sql.observeOpenTelemetry(p.meter);
    other.observeOpenTelemetry(p.meter, { pool: 'second' });
    const { inTx } = require('../../index.js');
    await inTx(sql, (b) => b.store.startRun({ name: 'met', version: 1 }));
    await someCalls(other, 1);
    const ms = await p.metrics();
    const names = new Set(
      ms.get('db.client.connection.count').dataPoints.map((x) => x.attributes['db.client.connection.pool.name']),
    );
    assert.deepEqual(names, new Set([`${server().host}:${server().port}/${ctx.db.database}`, 'second']));
    assert.ok(
      ms.get('db.client.operation.duration').dataPoints.some((x) => x.attributes['db.operation.name'] === 'startRun'),
    );
  } finally {
    await p.shutdown();
  }
});
