'use strict';
// OpenTelemetry spans from the tracing channels (lib/observe/tracing.js) and nothing else: a span per
// port call, a child per statement (with the times it really ran) and per connection checkout,
// attributes per the database client semantic conventions. `@opentelemetry/api` is the
// caller's, passed in; the package requires none of it.
//
// Span kinds: a statement is the database call on the wire — CLIENT, as the conventions ask of a
// database client span. A port call wraps several of them (the conventions' higher-level API over
// generic queries); giving it CLIENT as well would count each round trip twice in tools that treat
// CLIENT spans as outgoing calls, and a span should serve one purpose, so it is INTERNAL, the
// statements its children. `db.system.name` is what the server said it is (system.js).
const dc = require('node:diagnostics_channel');
const c = require('../check');
const { CHANNELS } = require('./tracing');
const { version } = require('../../package.json');

const { errorAttributes } = require('./meter');

/** `error.type`: the error's code (ER_DUP_ENTRY, ECONNRESET, …), else its class name. */
const errorType = (e) => errorAttributes(e)['error.type'];

/** Attributes every span carries; `fallback` names the system when the server could not say. */
function common(fallback, ctx) {
  const a = { 'db.system.name': ctx.system ?? fallback };
  if (ctx.database) a['db.namespace'] = ctx.database;
  if (ctx.serverAddress !== undefined) a['server.address'] = ctx.serverAddress;
  if (ctx.serverPort !== undefined) a['server.port'] = ctx.serverPort;
  return a;
}

/** `{db.operation.name} {db.namespace}` (or the operation alone), as the conventions name spans. */
function spanName(operation, ctx, fallback) {
  const op = operation || fallback;
  return ctx.database ? `${op} ${ctx.database}` : op;
}

/**
 * Subscribes to the channels and turns their events into spans of `api` (the caller's
 * `@opentelemetry/api`). Options: `tracerProvider` (default: the global one), `system` (the
 * `db.system.name` of spans whose server cannot be asked — a wrapped `Sql`; default 'mysql'),
 * `acquire` (spans for connection checkouts; default true). Answers a function that unsubscribes.
 */
function traceOpenTelemetry(api, opts = {}) {
  if (!api || !api.trace || !api.context || !api.SpanKind || !api.SpanStatusCode) {
    throw c.typeError("traceOpenTelemetry: api must be the '@opentelemetry/api' module");
  }
  if (opts === null || typeof opts !== 'object') throw c.typeError('traceOpenTelemetry: opts must be an object');
  const system = opts.system ?? 'mysql';
  if (typeof system !== 'string' || !system) throw c.typeError('traceOpenTelemetry: opts.system must be a string');
  const tracer = (opts.tracerProvider ?? api.trace).getTracer('iterativeflow-mysql-native', version);
  const spans = new WeakMap();

  /** The context a child of `ctx.parent`'s span (or of the active span) starts in. */
  const parentOf = (ctx) => {
    const parent = ctx.parent && spans.get(ctx.parent);
    return parent ? api.trace.setSpan(api.context.active(), parent) : api.context.active();
  };
  const failed = (ctx) => {
    const span = spans.get(ctx);
    if (!span) return;
    const e = ctx.error;
    span.setAttributes(errorAttributes(e));
    if (e instanceof Error) span.recordException(e);
    span.setStatus({ code: api.SpanStatusCode.ERROR, message: e?.message });
  };
  const ended = (ctx, extra) => {
    const span = spans.get(ctx);
    if (!span) return;
    if (extra) span.setAttributes(extra(ctx));
    span.end(ctx.endTime);
    spans.delete(ctx);
  };
  const start = (ctx, name, attributes, kind = api.SpanKind.CLIENT) => {
    const options = { kind, attributes };
    if (ctx.startTime !== undefined) options.startTime = ctx.startTime;
    spans.set(ctx, tracer.startSpan(name, options, parentOf(ctx)));
  };

  const handlers = {
    [CHANNELS.call]: {
      start(ctx) {
        const a = { ...common(system, ctx), 'db.operation.name': ctx.method, 'iterativeflow.contract': ctx.contract };
        if (ctx.runId !== undefined) a['iterativeflow.run_id'] = ctx.runId;
        if (ctx.flow !== undefined) a['iterativeflow.flow'] = ctx.flow;
        start(ctx, spanName(ctx.method, ctx, 'call'), a, api.SpanKind.INTERNAL);
      },
      error: failed,
      asyncEnd: (ctx) =>
        ended(ctx, (x) => ({
          'iterativeflow.round_trips': x.roundTrips ?? 0,
          'iterativeflow.statements': x.statements ?? 0,
          'iterativeflow.retries': x.retries ?? 0,
        })),
    },
    [CHANNELS.query]: {
      start(ctx) {
        const a = { ...common(system, ctx), 'db.query.text': ctx.query };
        if (ctx.operation) a['db.operation.name'] = ctx.operation;
        start(ctx, spanName(ctx.operation, ctx, system), a);
      },
      error: failed,
      asyncEnd: (ctx) => ended(ctx),
    },
  };
  if (opts.acquire !== false) {
    handlers[CHANNELS.acquire] = {
      start: (ctx) => start(ctx, 'pool.acquire', common(system, ctx), api.SpanKind.INTERNAL),
      error: failed,
      asyncEnd: (ctx) => ended(ctx),
    };
  }
  for (const [name, h] of Object.entries(handlers)) dc.tracingChannel(name).subscribe(h);
  return () => {
    for (const [name, h] of Object.entries(handlers)) dc.tracingChannel(name).unsubscribe(h);
  };
}

module.exports = { traceOpenTelemetry, errorType };
