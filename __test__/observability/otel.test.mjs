// OpenTelemetry through the channels: the real @opentelemetry/api + sdk-trace-base (in-memory
// exporter) + the AsyncLocalStorage context manager, as an application sets them up. A port call
// is an INTERNAL span (it wraps several database calls), each statement a CLIENT span under it
// with its real times, the semantic-convention attributes — db.system.name as this run's server
// says it is (mariadb / mysql), errors with `error.type` and `db.response.status_code` — and the
// caller's active span as the parent across Rust.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';

import * as api from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

import { serverKind } from '../helpers/server.mjs';
import { m, applySchema, createMysqlBackend, mysqlPool, server, useDatabase } from '../sql/helpers.mjs';
import { wrapSql } from './helpers.mjs';

const ctx = useDatabase('obs_otel', { init: ({ sql }) => applySchema(sql) });
const SYSTEM = serverKind(); // what db.system.name must say: asked of the server, not configured

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
let stop;

before(() => {
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  api.trace.setGlobalTracerProvider(provider);
  stop = m.traceOpenTelemetry(api);
});
after(() => {
  stop?.();
  api.trace.disable();
  api.context.disable();
});

const tracer = () => api.trace.getTracer('app');
const hex = (s) => s.spanContext().spanId;

/** Runs `fn` inside an application span; answers the finished spans of that trace. */
async function inRootSpan(fn) {
  exporter.reset();
  let traceId;
  await tracer().startActiveSpan('request', async (root) => {
    traceId = root.spanContext().traceId;
    try {
      await fn();
    } finally {
      root.end();
    }
  });
  return exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
}

const parentId = (s) => s.parentSpanContext?.spanId ?? s.parentSpanId;

test('a port call is an INTERNAL span under the caller span, its statements CLIENT children with real times', async () => {
  const b = createMysqlBackend(ctx.sql);
  const spans = await inRootSpan(() => b.store.startRun({ name: 'otel-flow', version: 1, input: 'secret-value' }));
  const root = spans.find((s) => s.name === 'request');
  const call = spans.find((s) => s.attributes['db.operation.name'] === 'startRun');
  assert.ok(call, spans.map((s) => s.name).join(', '));
  assert.equal(parentId(call), hex(root), 'the caller span is the parent, across the Rust boundary');
  assert.equal(call.kind, api.SpanKind.INTERNAL, 'a wrapper of database calls, not one');
  assert.equal(call.name, `startRun ${ctx.db.database}`);
  assert.equal(call.attributes['db.system.name'], SYSTEM);
  assert.equal(call.attributes['db.namespace'], ctx.db.database);
  assert.equal(call.attributes['server.address'], server().host);
  assert.equal(call.attributes['server.port'], server().port);
  assert.equal(call.attributes['iterativeflow.flow'], 'otel-flow');
  assert.ok(call.attributes['iterativeflow.run_id']);
  const statements = spans.filter((s) => parentId(s) === hex(call) && s.attributes['db.query.text']);
  assert.equal(statements.length, call.attributes['iterativeflow.statements']);
  assert.ok(statements.length >= 1);
  const t = (hr) => hr[0] * 1e3 + hr[1] / 1e6;
  for (const s of statements) {
    assert.equal(s.kind, api.SpanKind.CLIENT, 'a statement is the database call');
    assert.equal(s.attributes['db.system.name'], SYSTEM);
    assert.ok(!s.attributes['db.query.text'].includes('secret-value'));
    assert.match(s.attributes['db.operation.name'], /^[A-Z]+$/);
    assert.ok(t(s.startTime) >= t(call.startTime) - 1 && t(s.endTime) <= t(call.endTime) + 1, 'inside the call');
  }
  const acquire = spans.find((s) => s.name === 'pool.acquire');
  assert.equal(parentId(acquire), hex(call));
  assert.equal(acquire.kind, api.SpanKind.INTERNAL);
});

test(`db.system.name is ${SYSTEM} from the first span of a new pool on, for calls and user statements alike`, async () => {
  const sql = mysqlPool(ctx.db.url);
  try {
    const b = createMysqlBackend(sql);
    const spans = await inRootSpan(async () => {
      await b.store.loadRun('nope');
      await sql.query('SELECT 1');
    });
    const mine = spans.filter((s) => s.name !== 'request');
    assert.ok(mine.length >= 3, mine.map((s) => s.name).join(', '));
    for (const s of mine) assert.equal(s.attributes['db.system.name'], SYSTEM, s.name);
    // Asking the server is not a span, a call or a statement of the trace.
    assert.ok(!mine.some((s) => /VERSION\(\)/.test(s.attributes['db.query.text'] ?? '')));
  } finally {
    await sql.close();
  }
});

test('a failing call records the error with error.type; a failing statement also with db.response.status_code', async () => {
  const b = createMysqlBackend(ctx.sql);
  let err;
  const spans = await inRootSpan(async () => {
    await assert.rejects(b.store.markRunning('no-such-run'));
    err = await ctx.sql.query('SELECT * FROM no_such_table').catch((e) => e);
  });
  const call = spans.find((s) => s.attributes['db.operation.name'] === 'markRunning');
  assert.equal(call.status.code, api.SpanStatusCode.ERROR);
  assert.ok(call.attributes['error.type'], JSON.stringify(call.attributes));
  assert.equal(call.events[0]?.name, 'exception');
  const q = spans.find((s) => s.attributes['db.query.text'] === 'SELECT * FROM no_such_table');
  assert.equal(q.status.code, api.SpanStatusCode.ERROR);
  assert.equal(q.attributes['error.type'], 'ER_NO_SUCH_TABLE');
  assert.equal(q.attributes['db.response.status_code'], String(err.errno), 'the MySQL error number, as a string');
  assert.equal(call.attributes['db.response.status_code'], undefined, 'a contract error has no server status');
  assert.equal(parentId(q), hex(spans.find((s) => s.name === 'request')));
});

test('a wrapped Sql: the statements the bridge runs are children of the call span', async () => {
  const b = createMysqlBackend(wrapSql(ctx.sql));
  const spans = await inRootSpan(() => b.store.loadRun('nope'));
  const call = spans.find((s) => s.attributes['db.operation.name'] === 'loadRun');
  const children = spans.filter((s) => parentId(s) === hex(call) && s.attributes['db.query.text']);
  assert.ok(children.length >= 1, spans.map((s) => `${s.name}<-${parentId(s)}`).join(', '));
  // The wrapped Sql is our pool: its own statement spans hang under the bridged statement.
  const nested = spans.filter((s) => children.some((ch) => parentId(s) === hex(ch)));
  assert.ok(nested.length >= 1, 'the user Sql statements nest under the bridged ones');
});
