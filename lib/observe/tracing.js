'use strict';
// The tracing channels (node:diagnostics_channel `TracingChannel`), the way undici and mysql2
// publish theirs: one per port call, one per statement sent, one per connection checkout and
// one per connection opened. Nothing is built, collected or sent across from Rust unless a
// channel has a subscriber: without one a call costs one `hasSubscribers` check.
//
// Port calls run in Rust, so their statements are published after the call settled, from the
// trace Rust kept for it (src/observe/trace.rs), with `startTime` / `endTime` (ms since the
// epoch) telling when each really ran; user statements (`sql.query` / `exec` / `tx`) and the
// statements of a wrapped `Sql` are published live around each one.
const dc = require('node:diagnostics_channel');
const { AsyncLocalStorage, AsyncResource } = require('node:async_hooks');
const binding = require('../binding');
const { askable, detectSystem, shouldAsk, systemOf } = require('./system');

/** The channel names; stable. */
const CHANNELS = Object.freeze({
  call: 'iterativeflow-mysql-native:call',
  query: 'iterativeflow-mysql-native:query',
  connect: 'iterativeflow-mysql-native:connect',
  acquire: 'iterativeflow-mysql-native:pool:acquire',
});

/** mysql2 ≥ 3.20's names, published on only with `mysqlPool(x, { tracing: { mysql2: true } })`. */
const MYSQL2_CHANNELS = Object.freeze({
  query: 'mysql2:query',
  execute: 'mysql2:execute',
  connect: 'mysql2:connect',
  poolConnect: 'mysql2:pool:connect',
});

const own = {
  call: dc.tracingChannel(CHANNELS.call),
  query: dc.tracingChannel(CHANNELS.query),
  connect: dc.tracingChannel(CHANNELS.connect),
  acquire: dc.tracingChannel(CHANNELS.acquire),
};
const mysql2 = {
  query: dc.tracingChannel(MYSQL2_CHANNELS.query),
  execute: dc.tracingChannel(MYSQL2_CHANNELS.execute),
  connect: dc.tracingChannel(MYSQL2_CHANNELS.connect),
  poolConnect: dc.tracingChannel(MYSQL2_CHANNELS.poolConnect),
};

/**
 * The statement a wrapped `Sql` is running for a port call, so that the statements that `Sql`
 * sends on our pool in turn name it as their parent. Made on first use (a subscriber and a
 * wrapped `Sql`), never otherwise.
 */
let bridged;

/** Whether `ch` has a subscriber (Node < 20.13 lacks the aggregated getter). */
function subscribed(ch) {
  return (
    ch.hasSubscribers ??
    (ch.start.hasSubscribers ||
      ch.end.hasSubscribers ||
      ch.asyncStart.hasSubscribers ||
      ch.asyncEnd.hasSubscribers ||
      ch.error.hasSubscribers)
  );
}

/** Whether one of our own channels is subscribed to (their contexts carry `system`). */
function ownWanted() {
  return subscribed(own.call) || subscribed(own.query) || subscribed(own.acquire) || subscribed(own.connect);
}

/**
 * Runs `publish()` now, or — the first time one of our channels publishes for a pool whose server
 * has not said yet what it is — once it has (system.js; at most a second), so that every context
 * carries `system`. The wait keeps the caller's async context.
 */
function withSystem(server, publish) {
  if (!shouldAsk(server) || !ownWanted()) return publish();
  return detectSystem(server).then(publish);
}

/** Whether anything the pool `server` may publish on is subscribed to. */
function wanted(server) {
  if (subscribed(own.call) || subscribed(own.query) || subscribed(own.acquire) || subscribed(own.connect)) return true;
  return (
    Boolean(server?.mysql2) &&
    (subscribed(mysql2.query) ||
      subscribed(mysql2.execute) ||
      subscribed(mysql2.poolConnect) ||
      subscribed(mysql2.connect))
  );
}

/** ms since the epoch, fractional (the clock Rust's trace times use). */
function now() {
  return performance.timeOrigin + performance.now();
}

/**
 * What a pool tells every event: `{ serverAddress, serverPort, database }` (a socket path is the
 * address, with no port, as mysql2 does), plus its tracing options (not published). `native`, the
 * pool, is what system.js asks which server it is.
 */
function serverOf(cfg, tracing, native) {
  const socket = cfg.socketPath;
  const server = Object.freeze({
    serverAddress: socket || cfg.host || 'localhost',
    serverPort: socket ? undefined : (cfg.port ?? 3306),
    database: cfg.database || '',
    mysql2: Boolean(tracing?.mysql2),
    values: Boolean(tracing?.values),
  });
  askable(server, native);
  return server;
}

const NO_SERVER = Object.freeze({
  serverAddress: undefined,
  serverPort: undefined,
  database: undefined,
  system: undefined,
});

/** Which encoded argument of a port method is the run it concerns. */
const RUN_ARG = {
  startRun: 0,
  loadRun: 0,
  loadRunRow: 0,
  arriveAtJoin: 0,
  postSignal: 1,
  markRunning: 0,
  suspendRun: 0,
  markTerminal: 0,
  childrenOf: 0,
  retryRun: 0,
  enqueue: 0,
  heartbeat: 0,
  ack: 0,
  schedule: 0,
  cancelTimer: 0,
};

/** `{ runId?, flow? }` of a port call, from its encoded arguments. */
function subjectOf(method, args) {
  const out = {};
  const i = RUN_ARG[method];
  if (i !== undefined && typeof args[i] === 'string') out.runId = args[i];
  if (method === 'checkpointStep' && args[0]) out.runId = args[0].runId;
  if (method === 'startRun' && args[1]) out.flow = args[1].name;
  return out;
}

/** Replays one finished step on `ch` as `tracePromise` would have published it. */
function replay(ch, ctx) {
  ch.start.runStores(ctx, () => {
    ch.end.publish(ctx);
    if (ctx.error !== undefined) ch.error.publish(ctx);
    ch.asyncStart.publish(ctx);
    ch.asyncEnd.publish(ctx);
  });
}

/** The error a failed step is published with: the call's own when it failed with that code. */
function stepError(code, callError) {
  if (code === undefined || code === null) return undefined;
  if (callError && callError.code === code) return callError;
  return Object.assign(new Error(`the statement failed (${code})`), { code });
}

/** The SQL keyword a statement starts with (`SELECT`, `INSERT`, …). */
function operationOf(text) {
  const m = /^\s*([A-Za-z]+)/.exec(text);
  return m ? m[1].toUpperCase() : undefined;
}

/** Publishes the events of a settled native call's trace as children of `parent`. */
function publishTrace(events, parent, server, callError) {
  const base = pick(server);
  const compat = mysql2Shape(base);
  const counts = { roundTrips: 0, statements: 0, retries: 0 };
  const trips = new Set();
  for (const e of events) {
    const error = stepError(e.error, callError);
    if (e.kind === 'query') {
      counts.statements++;
      trips.add(e.roundTrip);
      const ctx = {
        query: e.query,
        operation: operationOf(e.query),
        prepared: e.prepared,
        roundTrip: e.roundTrip,
        ...base,
        method: parent?.method,
        startTime: e.startTime,
        endTime: e.endTime,
        parent,
      };
      if (error !== undefined) ctx.error = error;
      if (subscribed(own.query)) replay(own.query, ctx);
      if (server.mysql2) {
        const ch = e.prepared ? mysql2.execute : mysql2.query;
        if (subscribed(ch)) replay(ch, withError({ query: e.query, values: undefined, ...compat }, error));
      }
    } else if (e.kind === 'acquire') {
      const ctx = {
        ...base,
        method: parent?.method,
        startTime: e.startTime,
        endTime: e.endTime,
        waitMs: e.endTime - e.startTime,
        parent,
      };
      if (error !== undefined) ctx.error = error;
      if (subscribed(own.acquire)) replay(own.acquire, ctx);
      if (e.opened && subscribed(own.connect)) replay(own.connect, { ...ctx, waitMs: undefined });
      if (server.mysql2) {
        if (subscribed(mysql2.poolConnect)) replay(mysql2.poolConnect, withError({ ...compat }, error));
        if (e.opened && subscribed(mysql2.connect)) replay(mysql2.connect, withError({ ...compat }, error));
      }
    } else if (e.kind === 'retry') {
      counts.retries++;
    }
  }
  counts.roundTrips = trips.size;
  return counts;
}

function withError(ctx, error) {
  if (error !== undefined) ctx.error = error;
  return ctx;
}

/**
 * Runs `start()` (a native call answering a promise) with a Rust trace armed, and publishes what
 * it did once it settled, inside the async context `start` ran in. Resolves to `{ value, events }`
 * or rejects with the call's error carrying `events` on the side (`onEvents`).
 */
function armed(start, onEvents) {
  const trace = binding.armTrace();
  let p;
  try {
    p = start();
  } finally {
    binding.disarmTrace();
  }
  return Promise.resolve(p).then(
    (v) => {
      onEvents(trace.take(), undefined);
      return v;
    },
    (e) => {
      onEvents(trace.take(), e);
      throw e;
    },
  );
}

/**
 * A port call on the `call` channel; `native`: the call runs in Rust (its statements come from
 * its trace), else on a wrapped `Sql` whose statements `bridgeTap` publishes live.
 */
function traceCall(server, info, native, run) {
  return withSystem(server, () => traceCallNow(server, info, native, run));
}

function traceCallNow(server, info, native, run) {
  const ctx = { ...info, ...NO_SERVER, ...pick(server) };
  if (native) {
    return own.call.tracePromise(
      () =>
        armed(run, (events, error) => {
          Object.assign(ctx, publishTrace(events, ctx, server, error));
        }),
      ctx,
    );
  }
  Object.assign(ctx, { roundTrips: 0, statements: 0, retries: 0 });
  return own.call.tracePromise(() => run(ctx), ctx);
}

/** mysql2's context fields of `base` (mysql2 publishes no `system`). */
function mysql2Shape(base) {
  const { system, ...rest } = base;
  return rest;
}

function pick(server) {
  if (!server) return {};
  return {
    serverAddress: server.serverAddress,
    serverPort: server.serverPort,
    database: server.database,
    system: systemOf(server),
  };
}

/**
 * A user statement (`sql.query` / `exec`, or one of a transaction's, `BEGIN` / `COMMIT` /
 * `ROLLBACK` included) published live on the query channel (and mysql2's, when asked), with the
 * connection checkout it waited for as a child.
 */
function traceStatement(server, text, params, run) {
  if (!wanted(server)) return run();
  return withSystem(server, () => traceStatementNow(server, text, params, run));
}

function traceStatementNow(server, text, params, run) {
  const values = server.values ? params : undefined;
  const ctx = { query: text, operation: operationOf(text), values, ...pick(server), startTime: now() };
  const outer = bridged?.getStore();
  if (outer !== undefined) ctx.parent = outer;
  const live = (ch, c, fn) => (ch && subscribed(ch) ? ch.tracePromise(fn, c) : fn());
  const compat = server.mysql2 ? mysql2.query : undefined;
  const mysql2Ctx = { query: text, values, ...mysql2Shape(pick(server)) };
  return live(compat, mysql2Ctx, () =>
    live(own.query, ctx, () =>
      armed(run, (events, error) => {
        ctx.endTime = now();
        publishTrace(
          events.filter((e) => e.kind === 'acquire'),
          ctx,
          server,
          error,
        );
      }),
    ),
  );
}

/**
 * For a wrapped `Sql`: wraps the bridge's statement runner so that each statement is published
 * live as a child of the call `ctx`, in the caller's async context (the bridge is called from
 * Rust, outside it).
 */
function bridgeTap(ctx) {
  const inCaller = AsyncResource.bind((fn) => fn());
  return (text, run) =>
    inCaller(() => {
      ctx.statements++;
      ctx.roundTrips++;
      const q = {
        query: text,
        operation: operationOf(text),
        ...NO_SERVER,
        method: ctx.method,
        startTime: now(),
        parent: ctx,
      };
      if (!subscribed(own.query)) return run();
      bridged ??= new AsyncLocalStorage();
      return own.query.tracePromise(
        () =>
          bridged.run(q, () =>
            Promise.resolve()
              .then(run)
              .finally(() => {
                q.endTime = now();
              }),
          ),
        q,
      );
    });
}

module.exports = {
  CHANNELS,
  MYSQL2_CHANNELS,
  serverOf,
  wanted,
  subjectOf,
  traceCall,
  traceStatement,
  bridgeTap,
};
