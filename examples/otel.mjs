#!/usr/bin/env node
// OpenTelemetry spans and metrics for iterativeflow-mysql-native, with the SDK an application
// already runs (here: sdk-trace-base with a console exporter, sdk-metrics with a console reader).
// The package publishes on node:diagnostics_channel tracing channels; `traceOpenTelemetry` turns
// them into spans, `sql.observeOpenTelemetry` reads `sql.stats()` into instruments.
//
//   MYSQL_URL=mysql://user:pw@127.0.0.1:3306/db node examples/otel.mjs
//
// Needs @opentelemetry/api, @opentelemetry/context-async-hooks, @opentelemetry/sdk-trace-base and
// @opentelemetry/sdk-metrics installed (the package itself depends on none of them).
import * as api from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, ConsoleSpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ConsoleMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';

import { applySchema, createMysqlBackend, mysqlPool, traceOpenTelemetry } from '../index.js';

const url = process.env.MYSQL_URL;
if (!url) {
  console.error('set MYSQL_URL=mysql://user:pw@host:port/database');
  process.exit(2);
}

// The application's usual OpenTelemetry setup.
api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
api.trace.setGlobalTracerProvider(
  new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new ConsoleSpanExporter())] }),
);
const meters = new MeterProvider({
  readers: [new PeriodicExportingMetricReader({ exporter: new ConsoleMetricExporter(), exportIntervalMillis: 60_000 })],
});

// The two lines this package needs.
const sql = mysqlPool(url);
const stopTracing = traceOpenTelemetry(api); // db.system.name: mariadb or mysql, as the server says
const stopMetrics = sql.observeOpenTelemetry(meters.getMeter('app'));

await applySchema(sql);
const backend = createMysqlBackend(sql);
await api.trace.getTracer('app').startActiveSpan('submit-order', async (span) => {
  // Each call is an INTERNAL span under `submit-order`, its statements CLIENT spans under it.
  const { runId } = await backend.store.startRun({ name: 'order', version: 1, input: { id: 42 } });
  await backend.queue.enqueue(runId);
  span.end();
});

stopTracing();
await meters.forceFlush();
stopMetrics();
await meters.shutdown();
await sql.close();
