// A process of the bench's push scenario (forked by bench/scenarios/push.mjs): an idle engine
// worker or a result() waiter, for one implementation, with or without a listener.
//
// Protocol (IPC messages, JSON; times `at` are epoch ms with µs resolution, comparable across
// processes of one machine):
//   parent → { type: 'init', role: 'worker' | 'waiter', impl: 'seed' | 'native', url, prefix,
//              nativeModule?, push, intervalMs?, tickMs }
//   child  → { type: 'ready', state }          (pool open; with push, the listener is listening)
//   worker → { type: 'started', runId, at }    (the flow's first step began)
//   worker → { type: 'ended', runId, at }      (markTerminal of the run resolved)
//   parent → { type: 'result', runId }         (waiter: the mini engine's result(), 500 ms re-read)
//   waiter → { type: 'settled', runId, at }
//   parent → { type: 'close' }
// Any failure: child → { type: 'error', message } and exit code 1.
//
// A worker runs core's resident loop (__test__/push/fixtures/loop.mjs: 200 ms after a partial
// batch, doubling to 1.6 s when idle, `queue.waitForWork` when the backend has one) over the mini
// engine of the engine tests, with one flow `push` of one step.
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';

import { createEngine } from '../__test__/engine/mini-engine.mjs';
import { residentLoop } from '../__test__/push/fixtures/loop.mjs';

const require = createRequire(import.meta.url);

const send = (m) => process.send(m);
const now = () => performance.timeOrigin + performance.now();

let sql;
let closeSql;
let listener;
let stopLoop;

/** The backend of `m.impl` on its own pool (10 connections), with a listener when `m.push`. */
async function open(m) {
  if (m.impl === 'seed') {
    const { loadSeed } = await import('../__test__/helpers/seed.mjs');
    const { default: mysql } = await import('mysql2/promise');
    const seed = await loadSeed();
    const pool = mysql.createPool({ uri: m.url, connectionLimit: 10 });
    sql = seed.mysqlPool(pool);
    closeSql = () => pool.end();
    return seed.createMysqlBackend(sql, { prefix: m.prefix });
  }
  const native = require(m.nativeModule);
  sql = native.mysqlPool(m.url);
  closeSql = () => sql.close();
  if (!m.push) return native.createMysqlBackend(sql, { prefix: m.prefix });
  listener = native.createMysqlListener(sql, { prefix: m.prefix, intervalMs: m.intervalMs });
  listener.start();
  for (const until = Date.now() + 10_000; listener.state() !== 'listening'; ) {
    if (Date.now() > until) throw new Error(`listener not listening after 10 s (state ${listener.state()})`);
    await new Promise((r) => setTimeout(r, 5));
  }
  return native.createMysqlBackend(sql, { prefix: m.prefix, listener });
}

/** `backend` whose store reports the moment each markTerminal resolved. */
function reportingEnds(backend) {
  const store = new Proxy(backend.store, {
    get(target, prop) {
      const v = target[prop];
      if (typeof v !== 'function') return v;
      if (prop !== 'markTerminal') return v.bind(target);
      return async (runId, ...rest) => {
        const r = await v.call(target, runId, ...rest);
        send({ type: 'ended', runId, at: now() });
        return r;
      };
    },
  });
  return { ...backend, store };
}

let engine;

async function init(m) {
  const backend = await open(m);
  if (m.role === 'worker') {
    const b = reportingEnds(backend);
    engine = createEngine(b, { batchMax: 20, leaseMs: 30_000 });
    engine.register('push', 1, async (ctx, input) => {
      await ctx.step('first', () => {
        send({ type: 'started', runId: ctx.runId, at: now() });
        return input;
      });
      return input;
    });
    stopLoop = residentLoop(engine, b, { tickMs: m.tickMs });
  } else {
    engine = createEngine(backend, {});
  }
  send({ type: 'ready', state: listener?.state() ?? 'off' });
}

async function settle(runId) {
  await engine.result(runId, { timeoutMs: 30_000, pollMs: 500 });
  send({ type: 'settled', runId, at: now() });
}

const fail = (e) => {
  send({ type: 'error', message: e?.stack ?? String(e) });
  process.exitCode = 1;
  setTimeout(() => process.exit(1), 100);
};

process.on('message', (m) => {
  if (m.type === 'init') init(m).catch(fail);
  else if (m.type === 'result') settle(m.runId).catch(fail);
  else if (m.type === 'close') {
    Promise.resolve()
      .then(() => stopLoop?.())
      .then(() => listener?.close())
      .then(() => closeSql?.())
      .catch(() => {})
      .finally(() => process.exit(0));
  }
});
process.on('disconnect', () => process.exit(0));
