// A worker process of the bench's multi-process flow scenario (forked by bench/scenarios/procs.mjs).
//
// Protocol (IPC messages, JSON):
//   parent → { type: 'init', impl: 'seed' | 'native' | 'native-b' | 'floor', url, prefix, nativeModule?, env?, flowOpts }
//   worker → { type: 'ready' }                            (pool open and warmed up)
//   parent → { type: 'go', roots }                        (ids of every root run of the workload)
//   worker → { type: 'done', n }                          (n more roots completed by this worker)
//   parent → { type: 'stop' }                             (every root is done: finish the tick)
//   worker → { type: 'result', stats, cpuUs, mainCpuUs, elu, retries, internalRetries, ms }
//   parent → { type: 'close' }                            (close the pool and exit)
// Any failure: worker → { type: 'error', message } and exit code 1.
//
// Each worker has its own pool (the implementation's default: 10 connections) and runs ONE engine
// loop over the shared queue, like one engine process of a deployment.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';

import { driveFlow, makeRetry, retryingBackend } from './flows.mjs';

const require = createRequire(import.meta.url);

let sql;
let closeSql;
let backend;
let stopping = false;
const counter = { retries: 0 };

const send = (m) => process.send(m);

function mainThreadCpuUs() {
  try {
    const s = readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8');
    return Number(s.split(' ')[0]) / 1000;
  } catch {}
  return NaN;
}

const internalRetries = () => Number(typeof sql?.stats === 'function' ? (sql.stats()?.deadlockRetries ?? 0) : 0);

async function init(m) {
  if (m.impl === 'seed') {
    const { loadSeed } = await import('../__test__/helpers/seed.mjs');
    const { default: mysql } = await import('mysql2/promise');
    const seed = await loadSeed();
    const pool = mysql.createPool({ uri: m.url, connectionLimit: 10 });
    sql = seed.mysqlPool(pool);
    closeSql = () => pool.end();
    backend = seed.createMysqlBackend(sql, { prefix: m.prefix });
  } else if (m.impl === 'floor') {
    const { createFloorBackend } = await import('./floor/index.mjs');
    backend = createFloorBackend(m.url, { prefix: m.prefix });
    sql = backend.sql;
    closeSql = () => backend.close();
  } else {
    // native-b's settings (BENCH_NATIVE_B_ENV), before the addon is loaded and first used.
    Object.assign(process.env, m.env ?? {});
    const native = require(m.nativeModule);
    sql = native.mysqlPool(m.url);
    closeSql = () => sql.close();
    backend = native.createMysqlBackend(sql, { prefix: m.prefix });
  }
  // Open the pool's connections before anything is measured.
  await Promise.all(Array.from({ length: 32 }, () => backend.store.loadRunRow('warm-up')));
  await Promise.all(Array.from({ length: 16 }, () => backend.queue.claim({ limit: 1, leaseMs: 1, now: new Date(0) })));
  send({ type: 'ready' });
}

async function go(m, flowOpts) {
  const cpu0 = process.cpuUsage();
  const th0 = mainThreadCpuUs();
  const elu0 = performance.eventLoopUtilization();
  const internal0 = internalRetries();
  const t0 = performance.now();
  const stats = await driveFlow(retryingBackend(backend, makeRetry(counter)), {
    ...flowOpts,
    loops: 1,
    roots: m.roots,
    onDone: (n) => send({ type: 'done', n }),
    shouldStop: () => stopping,
  });
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  send({
    type: 'result',
    stats,
    ms,
    cpuUs: cpu.user + cpu.system,
    mainCpuUs: mainThreadCpuUs() - th0,
    elu: performance.eventLoopUtilization(elu0).utilization,
    retries: counter.retries,
    internalRetries: internalRetries() - internal0,
  });
}

let flowOpts = {};
process.on('message', (m) => {
  const fail = (e) => {
    send({ type: 'error', message: e?.stack ?? String(e) });
    process.exitCode = 1;
    setTimeout(() => process.exit(1), 100);
  };
  if (m.type === 'init') {
    flowOpts = m.flowOpts ?? {};
    init(m).catch(fail);
  } else if (m.type === 'go') {
    go(m, flowOpts).catch(fail);
  } else if (m.type === 'stop') {
    stopping = true;
  } else if (m.type === 'close') {
    Promise.resolve(closeSql?.())
      .catch(() => {})
      .finally(() => process.exit(0));
  }
});
process.on('disconnect', () => process.exit(0));
