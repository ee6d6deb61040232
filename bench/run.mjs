#!/usr/bin/env node
// npm run bench — this package (native) against the seed's JS backend over mysql2 (seed).
//
// One server (a private MariaDB unless MYSQL_URL is set), one database, one table prefix per
// implementation (seed: js_, native: rs_). Every scenario runs INTERLEAVED: repetition r runs both
// implementations back to back, the order alternating per repetition. Medians are reported.
//
// Usage: node bench/run.mjs [--only <substring>]... [--reps N] [--impl seed|native|both]
//                           [--json <file>] [--list] [--no-count] [--no-chart]
//                           [--chart <svg>] [--results <json>]
// Env:   BENCH_SCALE (default 1; 0.1 for a quick smoke run), BENCH_REPS (default 3),
//        BENCH_OPS (micro-op count at scale 1, default 1000), BENCH_DRAIN_RUNS (default 2000),
//        BENCH_CLAIM_JOBS (default 1000), BENCH_CONCURRENCY (default 16),
//        BENCH_FLOW_RUNS (root runs per flow scenario at scale 1, default 800),
//        BENCH_FLOW_REPS (repetitions of the flow scenarios, default 5; --reps sets both),
//        BENCH_PROCS (worker processes of the multi-process flow, default 4),
//        BENCH_PROC_FLOW (its flow: steps3 | sleep | invoke, default steps3),
//        BENCH_SLEEP_MS (the sleep flow's sleep, default 100), BENCH_IDLE_MS (an engine loop's
//        pause after an empty tick, default 10), BENCH_DIGESTS_TOP (digests shown per flow, 8),
//        BENCH_COUNT_FRACTION (size of the round-trip counting pass, default 0.25),
//        BENCH_NATIVE_URL_SUFFIX (appended to the native pool URL, e.g. "?connectionLimit=10"),
//        BENCH_SOCKET (timed pools of both implementations over a Unix socket instead of TCP:
//        "1" = the private server's socket, or a socket path; counting passes stay on TCP),
//        BENCH_NATIVE_MODULE (load the native package from this path instead of ../index.js),
//        MYSQL_URL (use this server instead of starting one), ITERATIVEFLOW_SEED (seed text path).
// Without the seed text (../shared/seeds/ beside the repository, or ITERATIVEFLOW_SEED),
// --impl both measures native alone.

import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve as resolvePath } from 'node:path';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';

import mysql from 'mysql2/promise';

import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { loadSeed, seedAvailability } from '../__test__/helpers/seed.mjs';
import { renderChart } from './chart.mjs';
import { drainRuns } from './engine-driver.mjs';
import { FLOWS, driveFlow, retryingBackend } from './flows.mjs';
import { startCountingProxy } from './wire-counter.mjs';

const here = dirname(fileURLToPath(import.meta.url));

const require = createRequire(import.meta.url);

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------

const { values: argv } = parseArgs({
  options: {
    only: { type: 'string', multiple: true },
    reps: { type: 'string' },
    impl: { type: 'string', default: 'both' },
    json: { type: 'string' },
    list: { type: 'boolean', default: false },
    'no-count': { type: 'boolean', default: false },
    'no-chart': { type: 'boolean', default: false },
    chart: { type: 'string', default: join(here, 'results.svg') },
    results: { type: 'string', default: join(here, 'results.json') },
  },
  allowPositionals: false,
});

const num = (name, dflt) => {
  const v = process.env[name];
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${v}`);
  return n;
};
const SCALE = num('BENCH_SCALE', 1);
const REPS = Math.max(1, Math.round(argv.reps ? Number(argv.reps) : num('BENCH_REPS', 3)));
// Flows are short and noisy (a 1-loop flow is latency-bound): more repetitions by default.
const FLOW_REPS = Math.max(1, Math.round(argv.reps ? Number(argv.reps) : num('BENCH_FLOW_REPS', 5)));
const OPS = Math.max(16, Math.round(num('BENCH_OPS', 1000) * SCALE));
const DRAIN_RUNS = Math.max(20, Math.round(num('BENCH_DRAIN_RUNS', 2000) * SCALE));
const CLAIM_JOBS = Math.round(num('BENCH_CLAIM_JOBS', 1000));
const CONC = Math.round(num('BENCH_CONCURRENCY', 16));
const COUNT_FRACTION = num('BENCH_COUNT_FRACTION', 0.25);
const CLAIM_OPS = Math.max(16, Math.round(OPS / 4));
const DUE_BATCHES = Math.max(8, Math.round(OPS / 10));
const STEPS = 3;
const FLOW_RUNS = Math.max(20, Math.round(num('BENCH_FLOW_RUNS', 800) * SCALE));
const PROCS = Math.max(1, Math.round(num('BENCH_PROCS', 4)));
const PROC_FLOW = process.env.BENCH_PROC_FLOW || 'steps3';
if (!FLOWS[PROC_FLOW]) throw new Error(`BENCH_PROC_FLOW must be one of ${Object.keys(FLOWS).join(', ')}`);
const SLEEP_MS = num('BENCH_SLEEP_MS', 100);
const IDLE_MS = num('BENCH_IDLE_MS', 10);
const DIGESTS_TOP = Math.round(num('BENCH_DIGESTS_TOP', 8));
const FLOW_BATCH = 20;
const FLOW_LEASE_MS = 30_000;

// ---------------------------------------------------------------------------------------------
// Small utilities
// ---------------------------------------------------------------------------------------------

const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** Deadlocks (1213) and lock-wait timeouts (1205) are transient: the bench retries the operation. */
const isTransient = (e) =>
  e?.errno === 1213 || e?.errno === 1205 || /deadlock|lock wait timeout/i.test(String(e?.message ?? ''));
let transientRetries = 0;

/**
 * Re-runs `fn` after a deadlock or lock-wait timeout, up to `attempts` times, after a short random
 * pause (0 … a ms at attempt a) so that the same racers do not collide again at once: 16
 * concurrent seed dueBatch calls met 10 deadlocks in a row on one call in one run.
 */
async function withRetry(fn, attempts = 30) {
  for (let a = 1; ; a++) {
    try {
      return await fn();
    } catch (e) {
      if (!isTransient(e) || a >= attempts) throw e;
      transientRetries += 1;
      await new Promise((r) => setTimeout(r, Math.random() * a));
    }
  }
}

/** Runs op(i) for i in [0, n) with `conc` in flight (each op retried on deadlock). */
async function runOps(n, conc, op) {
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      await withRetry(() => op(i));
    }
  };
  await Promise.all(Array.from({ length: Math.min(conc, n) }, worker));
}

/** CPU time of the main (JS) thread in µs: /proc schedstat (ns) or stat (ticks), else NaN. */
function mainThreadCpuUs() {
  try {
    const s = readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8');
    return Number(s.split(' ')[0]) / 1000;
  } catch {}
  try {
    const s = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1e6) / 100;
  } catch {}
  return NaN;
}

/** CPU time (user + system) of the private server process in µs, NaN when the server is not ours. */
function serverCpuUs() {
  try {
    if (!server?.pid) return NaN;
    const s = readFileSync(`/proc/${server.pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1e6) / 100;
  } catch {}
  return NaN;
}

const tableNames = (prefix) =>
  Object.fromEntries(['run', 'step', 'job', 'timer', 'signal', 'cron'].map((t) => [t, `\`${prefix}${t}\``]));

/**
 * Fixture rows, inserted directly. ANALYZE afterwards: right after a bulk insert the optimizer's
 * statistics can be stale enough to pick a full scan + filesort for the claim / dueBatch queries,
 * which locks every row and starves concurrent SKIP LOCKED callers - a set-up artefact, not
 * something either implementation controls.
 */
async function bulkInsert(conn, table, columns, rows, chunk = 1000) {
  for (let i = 0; i < rows.length; i += chunk) {
    await conn.query(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ?`, [rows.slice(i, i + chunk)]);
  }
  await conn.query(`ANALYZE TABLE ${table}`);
}

// ---------------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------------
//
// setup(impl, size) runs untimed and returns a context; run(impl, ctx) is timed and returns the
// number of operations it did (runs, for drains).

const spec = (i, extra = {}) => ({
  name: 'bench',
  version: 1,
  input: { i, note: 'benchmark input' },
  tags: ['bench'],
  ...extra,
});

function microScenarios() {
  const list = [];
  const both = (base, def) => {
    for (const conc of [1, CONC]) {
      list.push({
        name: `${base} ${conc === 1 ? 'seq' : `x${conc}`}`,
        kind: 'micro',
        unit: 'ops/s',
        conc,
        ...def,
      });
    }
  };

  both('startRun no key', {
    size: OPS,
    setup: async () => ({}),
    run: async (impl, ctx, n, conc) => {
      await runOps(n, conc, (i) => impl.backend.store.startRun(spec(i)));
      return n;
    },
  });
  both('startRun new key', {
    size: OPS,
    setup: async () => ({ tag: randomUUID().slice(0, 8) }),
    run: async (impl, ctx, n, conc) => {
      await runOps(n, conc, (i) => impl.backend.store.startRun(spec(i, { idempotencyKey: `k-${ctx.tag}-${i}` })));
      return n;
    },
  });
  both('startRun key hit', {
    size: OPS,
    setup: async (impl) => {
      const r = await impl.backend.store.startRun(spec(0, { idempotencyKey: 'hit' }));
      return { runId: r.runId };
    },
    run: async (impl, ctx, n, conc) => {
      await runOps(n, conc, async (i) => {
        const r = await impl.backend.store.startRun(spec(i, { idempotencyKey: 'hit' }));
        if (r.created || r.runId !== ctx.runId) throw new Error('startRun key hit: expected the existing run');
      });
      return n;
    },
  });
  both('loadRun 5 steps 2 signals', {
    size: OPS,
    setup: async (impl) => {
      const { store } = impl.backend;
      const { runId } = await store.startRun(spec(0));
      for (let s = 0; s < 5; s++) {
        await store.checkpointStep({
          runId,
          cursorKey: `s${s}`,
          status: 'ok',
          result: { s, value: 'x'.repeat(40) },
          attempts: 1,
          shape: `step:s${s}`,
        });
      }
      await store.postSignal(runId, 'a', { n: 1 });
      await store.postSignal(runId, 'b', { n: 2 }, { idempotencyKey: 'sig-b' });
      return { runId };
    },
    run: async (impl, ctx, n, conc) => {
      await runOps(n, conc, async () => {
        const snap = await impl.backend.store.loadRun(ctx.runId);
        if (snap.steps.size !== 5 || snap.signals.length !== 2) throw new Error('loadRun: unexpected snapshot');
      });
      return n;
    },
  });
  const manyRuns = async (impl, k = 64) => {
    const ids = [];
    for (let i = 0; i < k; i++) ids.push((await impl.backend.store.startRun(spec(i))).runId);
    return ids;
  };
  both('checkpointStep', {
    size: OPS,
    setup: async (impl) => ({ runs: await manyRuns(impl) }),
    run: async (impl, ctx, n, conc) => {
      await runOps(n, conc, (i) =>
        impl.backend.store.checkpointStep({
          runId: ctx.runs[i % ctx.runs.length],
          cursorKey: `s${i}`,
          status: 'ok',
          result: { i, value: 'step result' },
          attempts: 1,
          shape: 'step:bench',
        }),
      );
      return n;
    },
  });
  both('checkpointStep +outbox(spawn,enqueue,timer)', {
    size: OPS,
    setup: async (impl) => ({ runs: await manyRuns(impl), tag: randomUUID().slice(0, 8) }),
    run: async (impl, ctx, n, conc) => {
      const fireAt = new Date(Date.now() + 3_600_000);
      await runOps(n, conc, (i) => {
        const parent = ctx.runs[i % ctx.runs.length];
        return impl.backend.store.checkpointStep(
          {
            runId: parent,
            cursorKey: `s${i}`,
            status: 'ok',
            result: `child-${ctx.tag}-${i}`,
            attempts: 1,
            shape: 'invoke:child',
          },
          {
            spawn: [
              {
                runId: `child-${ctx.tag}-${i}`,
                spec: {
                  name: 'child',
                  version: 1,
                  input: { i },
                  parentRunId: parent,
                  parentCursorKey: `s${i}`,
                  depth: 1,
                },
              },
            ],
            enqueue: [{ runId: parent }],
            timers: [{ runId: parent, fireAt }],
          },
        );
      });
      return n;
    },
  });
  both(`claim 32 of ${CLAIM_JOBS}`, {
    size: CLAIM_OPS,
    setup: async (impl) => {
      const rows = Array.from({ length: CLAIM_JOBS }, (_, i) => [`job-${i}`, 0, 0, 1]);
      await bulkInsert(admin, impl.t.job, ['run_id', 'run_at', 'priority', 'version'], rows);
      return { now: new Date() };
    },
    // Leases of 0 ms at a fixed clock expire as they are taken: every claim sees all the jobs that
    // no concurrent claim holds locked, so the queue stays at its full size.
    run: async (impl, ctx, n, conc) => {
      let short = 0;
      await runOps(n, conc, async () => {
        const leases = await impl.backend.queue.claim({ limit: 32, leaseMs: 0, now: ctx.now });
        if (leases.length !== 32) short += 1;
      });
      if (short) console.error(`  note: ${short}/${n} claims returned fewer than 32 leases (${impl.name})`);
      ctx.info = { shortClaims: short };
      return n;
    },
  });
  both('ack', {
    size: OPS,
    setup: async (impl, n) => {
      const rows = Array.from({ length: n }, (_, i) => [`ack-${i}`, 0, 0, 1]);
      await bulkInsert(admin, impl.t.job, ['run_id', 'run_at', 'priority', 'version'], rows);
      const leases = [];
      for (;;) {
        const got = await impl.backend.queue.claim({ limit: 500, leaseMs: 3_600_000 });
        if (got.length === 0) break;
        leases.push(...got);
      }
      if (leases.length !== n) throw new Error(`ack setup: claimed ${leases.length} of ${n}`);
      return { leases };
    },
    run: async (impl, ctx, n, conc) => {
      await runOps(n, conc, (i) => impl.backend.queue.ack(ctx.leases[i]));
      const [[{ c }]] = await admin.query(`SELECT COUNT(*) AS c FROM ${impl.t.job}`);
      if (Number(c) !== 0) throw new Error(`ack: ${c} jobs left`);
      return n;
    },
  });
  both('timer.dueBatch 100', {
    size: DUE_BATCHES,
    setup: async (impl, n) => {
      const rows = Array.from({ length: n * 100 }, (_, i) => [`tm-${i}`, 1_000 + i]);
      await bulkInsert(admin, impl.t.timer, ['run_id', 'fire_at'], rows);
      return {};
    },
    run: async (impl, ctx, n, conc) => {
      let short = 0;
      await runOps(n, conc, async () => {
        const ids = await impl.backend.timer.dueBatch({ limit: 100, now: new Date() });
        if (ids.length !== 100) short += 1;
      });
      if (short) console.error(`  note: ${short}/${n} dueBatch calls returned fewer than 100 ids (${impl.name})`);
      ctx.info = { shortBatches: short };
      return n;
    },
  });
  return list;
}

function drainScenarios() {
  return [1, 4].map((loops) => ({
    name: `drain ${STEPS}-step runs x${loops} loop${loops > 1 ? 's' : ''}`,
    kind: 'drain',
    unit: 'runs/s',
    conc: loops,
    size: DRAIN_RUNS,
    setup: async (impl, n) => {
      const now = Date.now();
      const ids = Array.from({ length: n }, () => randomUUID());
      await bulkInsert(
        admin,
        impl.t.run,
        ['id', 'name', 'version', 'status', 'input', 'tags', 'created_at'],
        ids.map((id, i) => [id, 'bench', 1, 'pending', JSON.stringify({ i }), '["bench"]', now]),
      );
      await bulkInsert(
        admin,
        impl.t.job,
        ['run_id', 'run_at', 'priority', 'version'],
        ids.map((id) => [id, 0, 0, 1]),
      );
      return { ids };
    },
    run: async (impl, ctx, n, loops) => {
      const stats = await drainRuns(impl.backend, {
        steps: STEPS,
        loops,
        batch: 20,
        leaseMs: 30_000,
        retry: withRetry,
      });
      ctx.info = { claims: stats.claims, emptyClaims: stats.emptyClaims };
      ctx.completed = stats.completed;
      return n;
    },
    // Untimed, after the counters were read.
    verify: async (impl, ctx, n) => {
      const [[{ c }]] = await admin.query(`SELECT COUNT(*) AS c FROM ${impl.t.run} WHERE status = 'done'`);
      if (ctx.completed !== n || Number(c) !== n) {
        throw new Error(`drain (${impl.name}): completed ${ctx.completed}, done rows ${c}, expected ${n}`);
      }
    },
    digests: true,
  }));
}

// ---------------------------------------------------------------------------------------------
// Engine-driven flows (bench/flows.mjs: the mini engine of __test__/engine ticking real flows)
// ---------------------------------------------------------------------------------------------

/** Inserts `n` pending, enqueued root runs of `flowName` (untimed set-up, as the drains do). */
async function insertRoots(impl, flowName, n) {
  const now = Date.now();
  const ids = Array.from({ length: n }, () => randomUUID());
  await bulkInsert(
    admin,
    impl.t.run,
    ['id', 'name', 'version', 'status', 'input', 'tags', 'depth', 'created_at'],
    ids.map((id, i) => [id, flowName, 1, 'pending', JSON.stringify({ i }), '["bench"]', 0, now]),
  );
  await bulkInsert(
    admin,
    impl.t.job,
    ['run_id', 'run_at', 'priority', 'version'],
    ids.map((id) => [id, 0, 0, 1]),
  );
  return ids;
}

const flowOpts = () => ({ batch: FLOW_BATCH, leaseMs: FLOW_LEASE_MS, idleMs: IDLE_MS, sleepMs: SLEEP_MS });

/** Every run of the workload ended `done`; no job or timer row is left behind. */
async function verifyFlow(impl, flowKey, n) {
  const want = n * FLOWS[flowKey].runsPerRoot;
  const [rows] = await admin.query(`SELECT status, COUNT(*) AS c FROM ${impl.t.run} GROUP BY status`);
  const by = Object.fromEntries(rows.map((r) => [r.status, Number(r.c)]));
  if (by.done !== want || rows.length !== 1) {
    throw new Error(`flow ${flowKey} (${impl.name}): expected ${want} runs done, found ${JSON.stringify(by)}`);
  }
  const [[{ jobs }]] = await admin.query(`SELECT COUNT(*) AS jobs FROM ${impl.t.job}`);
  const [[{ timers }]] = await admin.query(`SELECT COUNT(*) AS timers FROM ${impl.t.timer}`);
  if (Number(jobs) !== 0 || Number(timers) !== 0) {
    throw new Error(`flow ${flowKey} (${impl.name}): ${jobs} job and ${timers} timer rows left`);
  }
}

const WORKER = join(here, 'flow-worker.mjs');

/** Sends an IPC message unless the worker is gone (its exit is reported separately). */
function tell(w, m) {
  if (w.exited || !w.child.connected) return;
  try {
    w.child.send(m, (e) => {
      if (e) w.error ??= e;
    });
  } catch (e) {
    w.error ??= e;
  }
}

/** Forks `count` flow workers for `impl` (its URL, its prefix), each with its own pool; resolves once all are warm. */
async function spawnWorkers(impl, count) {
  const workers = [];
  try {
    for (let k = 0; k < count; k++) {
      const child = fork(WORKER, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      const w = { child, handler: undefined, exited: false, error: undefined };
      child.on('error', (e) => {
        w.error ??= e;
      });
      child.on('message', (m) => {
        if (m?.type === 'error') w.error = new Error(`flow worker ${k} (${impl.name}): ${m.message}`);
        w.handler?.(m);
      });
      child.on('exit', (code) => {
        w.exited = true;
        if (code) w.error ??= new Error(`flow worker ${k} (${impl.name}) exited with code ${code}`);
        w.handler?.({ type: 'exit', code });
      });
      workers.push(w);
    }
    await Promise.all(
      workers.map(
        (w) =>
          new Promise((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error('flow worker not ready after 60 s')), 60_000);
            w.handler = (m) => {
              if (m.type === 'ready') {
                clearTimeout(timer);
                resolve();
              } else if (m.type === 'error' || m.type === 'exit') {
                clearTimeout(timer);
                reject(w.error ?? new Error('flow worker exited'));
              }
            };
            tell(w, {
              type: 'init',
              impl: impl.name,
              url: impl.url,
              prefix: impl.prefix,
              nativeModule: impl.nativeModule,
              flowOpts: flowOpts(),
            });
          }),
      ),
    );
  } catch (e) {
    await closeWorkers(workers);
    throw e;
  }
  return workers;
}

async function closeWorkers(workers) {
  await Promise.all(
    workers.map(
      (w) =>
        new Promise((resolve) => {
          if (w.exited) return resolve();
          const timer = setTimeout(() => {
            w.child.kill('SIGKILL');
            resolve();
          }, 10_000);
          w.child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          tell(w, { type: 'close' });
        }),
    ),
  );
}

/**
 * The timed part of the multi-process flow: 'go' to every worker; once their 'done' reports add
 * up to `n` roots, 'stop'; the workers answer with their CPU and stats. Times go → last root done.
 */
async function runWorkers(workers, ids, n) {
  let done = 0;
  let t0;
  let tEnd;
  const results = await new Promise((resolve, reject) => {
    const out = new Array(workers.length);
    let pending = workers.length;
    const stopAll = () => {
      for (const w of workers) tell(w, { type: 'stop' });
    };
    workers.forEach((w, k) => {
      w.handler = (m) => {
        if (m.type === 'done') {
          done += m.n;
          if (done >= n && tEnd === undefined) {
            tEnd = performance.now();
            stopAll();
          }
        } else if (m.type === 'result') {
          out[k] = m;
          if (--pending === 0) resolve(out);
        } else if (m.type === 'error' || m.type === 'exit') {
          stopAll();
          reject(w.error ?? new Error('flow worker exited early'));
        }
      };
    });
    t0 = performance.now();
    for (const w of workers) tell(w, { type: 'go', roots: ids });
  });
  const sum = (k) => results.reduce((a, r) => a + r[k], 0);
  return {
    ops: n,
    ms: tEnd - t0,
    cpuUs: sum('cpuUs'),
    mainCpuUs: sum('mainCpuUs'),
    elu: sum('elu') / results.length,
    retries: sum('retries') + sum('internalRetries'),
    perWorker: results.map((r) => ({ roots: r.stats.done, ticks: r.stats.ticks, emptyTicks: r.stats.emptyTicks })),
    stats: results.reduce(
      (a, r) => {
        for (const k of ['ticks', 'emptyTicks', 'due', 'claimed']) a[k] += r.stats[k];
        for (const [k, v] of Object.entries(r.stats.results)) a.results[k] = (a.results[k] ?? 0) + v;
        return a;
      },
      { ticks: 0, emptyTicks: 0, due: 0, claimed: 0, results: {} },
    ),
  };
}

function flowScenarios() {
  const defs = [
    { flow: 'steps3', loops: 1 },
    { flow: 'steps3', loops: 4 },
    { flow: 'sleep', loops: 4 },
    { flow: 'invoke', loops: 4 },
    { flow: PROC_FLOW, procs: PROCS },
  ];
  const label = (flow) => (flow === 'sleep' ? `step, sleep ${SLEEP_MS} ms, step` : FLOWS[flow].label);
  const short = { steps3: '3 steps', sleep: `step, ${SLEEP_MS} ms sleep, step`, invoke: 'invoke a child' };
  return defs.map((d) => {
    const where = d.procs ? `x${d.procs} procs` : `x${d.loops} loop${d.loops > 1 ? 's' : ''}`;
    return {
      name: `flow ${label(d.flow)} ${where}`,
      chartLabel: `${short[d.flow]}\n${d.procs ? `${d.procs} processes × 1 loop` : `${d.loops} loop${d.loops > 1 ? 's' : ''}`}`,
      kind: 'flow',
      unit: 'runs/s',
      conc: d.procs ?? d.loops,
      size: FLOW_RUNS,
      flow: d.flow,
      digests: true,
      setup: async (impl, n) => {
        const ids = await insertRoots(impl, FLOWS[d.flow].root, n);
        const workers = d.procs ? await spawnWorkers(impl, d.procs) : undefined;
        return { ids, workers };
      },
      run: async (impl, ctx, n, loops) => {
        if (ctx.workers) {
          const r = await runWorkers(ctx.workers, ctx.ids, n);
          const { ticks, emptyTicks, due, claimed, results } = r.stats;
          ctx.info = { ticks, emptyTicks, due, claimed, results, perWorker: r.perWorker };
          return r;
        }
        const stats = await driveFlow(retryingBackend(impl.backend, withRetry), {
          ...flowOpts(),
          loops,
          roots: ctx.ids,
        });
        const { ticks, emptyTicks, due, claimed, results } = stats;
        ctx.info = { ticks, emptyTicks, due, claimed, results };
        return n;
      },
      verify: async (impl, ctx, n) => {
        await verifyFlow(impl, d.flow, n);
        // Every sleep parked on the durable timer and was woken by dueBatch, once.
        if (d.flow === 'sleep' && ctx.info.due !== n) {
          throw new Error(`flow sleep (${impl.name}): dueBatch fired ${ctx.info.due} timers for ${n} runs`);
        }
      },
      teardown: async (impl, ctx) => {
        if (ctx?.workers) await closeWorkers(ctx.workers);
      },
    };
  });
}

// ---------------------------------------------------------------------------------------------
// Server, database, implementations
// ---------------------------------------------------------------------------------------------

let server;
let serverUrl = process.env.MYSQL_URL;
const dbName = `ifbench_${process.pid}_${Date.now().toString(36)}`;
let dbUrl;
/** Where the timed pools connect: `dbUrl`, over the Unix socket with BENCH_SOCKET. */
let timedUrl;
const SOCKET = process.env.BENCH_SOCKET;

/** `url` with `query` ("?a=1&b=2", or "") appended to its own query string. */
function withQuery(url, query) {
  if (!query) return url;
  const u = new URL(url);
  for (const [k, v] of new URLSearchParams(query.replace(/^[?&]/, ''))) u.searchParams.set(k, v);
  return u.toString();
}

let admin; // one mysql2 connection (on the bench database) for setup, truncation and checks
let probe; // one mysql2 connection without a default database, for status and digest probes
let proxy;
const impls = [];
const cleanups = [];

async function cleanup() {
  for (const fn of cleanups.reverse()) {
    try {
      await fn();
    } catch (e) {
      console.error(`cleanup: ${e.message}`);
    }
  }
  cleanups.length = 0;
}

/**
 * The seed module, or null when it is not measured: `--impl native`, or `--impl both` without the
 * seed text (a clone without ../shared beside it), which then measures native alone.
 */
async function seedFor(impl) {
  if (!['seed', 'native', 'both'].includes(impl)) throw new Error(`--impl must be seed, native or both`);
  if (impl === 'native') return null;
  if (impl === 'both') {
    const status = seedAvailability();
    if (!status.available) {
      console.error(`${status.reason}; benchmarking native alone`);
      return null;
    }
  }
  return loadSeed();
}

async function createImpls(seed) {
  const wanted = argv.impl === 'both' ? (seed ? ['seed', 'native'] : ['native']) : [argv.impl];

  if (wanted.includes('seed')) {
    const make = (url) => {
      const pool = mysql.createPool({ uri: url, connectionLimit: 10 });
      cleanups.push(() => pool.end());
      return { sql: seed.mysqlPool(pool) };
    };
    const direct = make(timedUrl);
    const impl = {
      name: 'seed',
      prefix: 'js_',
      url: timedUrl,
      module: seed,
      sql: direct.sql,
      backend: seed.createMysqlBackend(direct.sql, { prefix: 'js_' }),
      t: tableNames('js_'),
    };
    if (proxy) {
      const counted = make(proxy.url(dbUrl));
      impl.countedUrl = proxy.url(dbUrl);
      impl.countedSql = counted.sql;
      impl.counted = seed.createMysqlBackend(counted.sql, { prefix: 'js_' });
    }
    impls.push(impl);
  }
  if (wanted.includes('native')) {
    let native;
    try {
      native = require(process.env.BENCH_NATIVE_MODULE ? resolvePath(process.env.BENCH_NATIVE_MODULE) : '../index.js');
    } catch (e) {
      if (argv.impl === 'native' || !seed) throw e;
      console.error(`native: cannot load ../index.js (${e.message.split('\n')[0]}); benchmarking the seed only`);
    }
    if (native) {
      nativeInfo = describeBinary(
        process.env.BENCH_NATIVE_MODULE ? resolvePath(process.env.BENCH_NATIVE_MODULE) : require.resolve('../index.js'),
      );
      const suffix = process.env.BENCH_NATIVE_URL_SUFFIX ?? '';
      const make = (url) => {
        const sql = native.mysqlPool(withQuery(url, suffix));
        cleanups.push(async () => {
          for (const m of ['close', 'end', 'disconnect']) {
            if (typeof sql?.[m] === 'function') return sql[m]();
          }
        });
        return sql;
      };
      const sql = make(timedUrl);
      const impl = {
        name: 'native',
        prefix: 'rs_',
        url: withQuery(timedUrl, suffix),
        nativeModule: process.env.BENCH_NATIVE_MODULE
          ? resolvePath(process.env.BENCH_NATIVE_MODULE)
          : require.resolve('../index.js'),
        module: native,
        sql,
        backend: native.createMysqlBackend(sql, { prefix: 'rs_' }),
        t: tableNames('rs_'),
      };
      if (proxy) {
        impl.countedUrl = withQuery(proxy.url(dbUrl), suffix);
        impl.countedSql = make(proxy.url(dbUrl));
        impl.counted = native.createMysqlBackend(impl.countedSql, { prefix: 'rs_' });
      }
      impls.push(impl);
    }
  }
}

let nativeInfo = '';

/** Which addon binary sits beside the native entry point (a debug build is far slower). */
function describeBinary(entry) {
  try {
    let dir = statSync(entry).isDirectory() ? entry : dirname(entry);
    const nodes = readdirSync(dir).filter((f) => f.endsWith('.node'));
    if (nodes.length === 0) return `native entry ${entry}`;
    const f = join(dir, nodes[0]);
    const st = statSync(f);
    const mb = st.size / 2 ** 20;
    const debug = mb > 40 ? ' - LOOKS LIKE A DEBUG BUILD, numbers are not representative (npm run build)' : '';
    return `native binary ${f} (${mb.toFixed(1)} MB, built ${st.mtime.toISOString()})${debug}`;
  } catch {
    return `native entry ${entry}`;
  }
}

/**
 * Server counters: status variables, plus InnoDB's transaction-commit metrics when they could be
 * enabled (`innodbMetrics`). Read on `probe`, a connection without a default database, so its
 * statements stay out of the bench database's performance_schema digests.
 */
async function statusCounters() {
  const [rows] = await probe.query(
    "SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Com_stmt_prepare', 'Com_commit', 'Com_rollback', 'Handler_commit')",
  );
  const out = Object.fromEntries(rows.map((r) => [r.Variable_name, Number(r.Value)]));
  if (innodbMetrics) {
    const [m] = await probe.query(
      `SELECT NAME, COUNT FROM information_schema.INNODB_METRICS WHERE NAME IN (${INNODB_COMMIT_METRICS.map((x) => `'${x}'`).join(', ')})`,
    );
    for (const r of m) out[r.NAME] = Number(r.COUNT);
  }
  return out;
}

// trx_rw_commits: read-write transactions InnoDB committed (an autocommit write statement, or an
// explicit transaction that wrote or took row locks). trx_ro_commits / trx_nl_ro_commits:
// read-only ones (explicit / autocommit SELECTs). Off by default; enabled at start.
const INNODB_COMMIT_METRICS = ['trx_rw_commits', 'trx_ro_commits', 'trx_nl_ro_commits'];
let innodbMetrics = false;

async function enableInnodbMetrics() {
  try {
    for (const m of INNODB_COMMIT_METRICS) await probe.query(`SET GLOBAL innodb_monitor_enable = '${m}'`);
    const [m] = await probe.query(
      `SELECT COUNT(*) AS c FROM information_schema.INNODB_METRICS WHERE NAME = 'trx_rw_commits'`,
    );
    innodbMetrics = Number(m[0].c) === 1;
  } catch (e) {
    console.error(`note: cannot enable InnoDB commit metrics (${e.message}); commits/op falls back to Com_commit`);
  }
}

/** performance_schema statement digests: available (and which optional columns exist)? */
let digestInfo = { enabled: false, cpu: false, reason: 'not checked' };

async function checkDigests() {
  try {
    const [[{ ps }]] = await probe.query('SELECT @@performance_schema AS ps');
    if (!Number(ps)) return (digestInfo = { enabled: false, reason: 'performance_schema is OFF on this server' });
    const [c] = await probe.query(
      "SELECT ENABLED FROM performance_schema.setup_consumers WHERE NAME = 'statements_digest'",
    );
    if (c[0]?.ENABLED !== 'YES')
      return (digestInfo = { enabled: false, reason: 'the statements_digest consumer is off' });
    const [cols] = await probe.query('SHOW COLUMNS FROM performance_schema.events_statements_summary_by_digest');
    const names = new Set(cols.map((x) => x.Field));
    await probe.query('TRUNCATE TABLE performance_schema.events_statements_summary_by_digest');
    const [h] = await probe.query(
      "SELECT COUNT(*) AS c FROM performance_schema.setup_consumers WHERE NAME IN ('events_statements_current', 'events_statements_history_long')",
    );
    digestInfo = { enabled: true, cpu: names.has('SUM_CPU_TIME'), samples: Number(h[0].c) === 2 };
  } catch (e) {
    digestInfo = { enabled: false, reason: e.message };
  }
  return digestInfo;
}

// Statement texts by digest. MariaDB (10.11) gives every statement after the first of a
// multi-statement packet the first one's DIGEST_TEXT (with a digest of its own), so the table
// would show e.g. the three reads of native's loadRun under one text. The real text is taken from
// events_statements_history_long - enabled only during the untimed counting passes, where its
// cost does not matter - whose SQL_TEXT for such a statement starts with that statement.
const digestSamples = new Map();
const SAMPLE_CONSUMERS = "('events_statements_current', 'events_statements_history_long')";

async function startSampling() {
  await probe.query(`UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' WHERE NAME IN ${SAMPLE_CONSUMERS}`);
  await probe.query('TRUNCATE TABLE performance_schema.events_statements_history_long');
  // Prepared executions have no digest; their own table counts them only while the
  // events_statements_current consumer is on, i.e. in this untimed pass.
  // A server without the table (or without the right to truncate it) just has no such table.
  preparedSampled = await probe
    .query('TRUNCATE TABLE performance_schema.prepared_statements_instances')
    .then(() => true)
    .catch(() => false);
}

let preparedSampled = false;

/**
 * Executions of prepared statements since `startSampling`, by statement text, on sessions whose
 * default schema is the bench database: `[{ text, n, timerPs, examined, affected }]`.
 */
async function readPrepared() {
  const [rows] = await probe.query(
    `SELECT p.SQL_TEXT AS text, SUM(p.COUNT_EXECUTE) AS n, SUM(p.SUM_TIMER_EXECUTE) AS timer,
            SUM(p.SUM_ROWS_EXAMINED) AS examined, SUM(p.SUM_ROWS_AFFECTED) AS affected
       FROM performance_schema.prepared_statements_instances p
       JOIN performance_schema.threads t ON t.THREAD_ID = p.OWNER_THREAD_ID
      WHERE t.PROCESSLIST_DB = ? AND p.COUNT_EXECUTE > 0
      GROUP BY p.SQL_TEXT`,
    [dbName],
  );
  return rows.map((r) => ({
    text: normalizeSql(String(r.text)),
    n: Number(r.n),
    timerPs: Number(r.timer),
    examined: Number(r.examined),
    affected: Number(r.affected),
  }));
}

/** Reads the sampled statement texts (and returns the prepared executions), then stops sampling. */
async function collectSamples() {
  try {
    const prepared = preparedSampled ? await readPrepared().catch(() => undefined) : undefined;
    const [rows] = await probe.query(
      `SELECT DIGEST AS digest, SQL_TEXT AS text FROM performance_schema.events_statements_history_long
        WHERE CURRENT_SCHEMA = ? AND DIGEST IS NOT NULL AND SQL_TEXT IS NOT NULL`,
      [dbName],
    );
    for (const r of rows) {
      if (digestSamples.has(r.digest)) continue;
      const first = firstStatement(r.text);
      digestSamples.set(r.digest, { text: normalizeSql(first), rest: r.text.trim().length > first.length + 1 });
    }
    return prepared;
  } finally {
    await probe.query(`UPDATE performance_schema.setup_consumers SET ENABLED = 'NO' WHERE NAME IN ${SAMPLE_CONSUMERS}`);
  }
}

/** The first statement of a (multi-statement) SQL text: up to the first `;` outside quotes. */
function firstStatement(sql) {
  let q = null;
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i];
    if (q) {
      if (c === '\\' && q !== '`') i++;
      else if (c === q) q = null;
    } else if (c === "'" || c === '"' || c === '`') q = c;
    else if (c === ';') return sql.slice(0, i).trim();
  }
  return sql.trim();
}

/** Literals → `?`, value lists → `(...)`, back-quotes and runs of white space dropped. */
function normalizeSql(stmt) {
  return stmt
    .replace(/'(?:[^'\\]|\\.|'')*'/g, '?')
    .replace(/"(?:[^"\\]|\\.|"")*"/g, '?')
    .replace(/\b0x[0-9a-f]+\b/gi, '?')
    .replace(/(?<![\w`.])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\w`])/gi, '?')
    .replace(/\bNULL\b/g, '?')
    .replace(/\(\s*\?(?:\s*,\s*\?)+\s*\)/g, '(...)')
    .replace(/(\((?:\.\.\.|\?)\))(?:\s*,\s*\((?:\.\.\.|\?)\))+/g, '$1, ...')
    .replace(/'[^']*$/, '? …') // SQL_TEXT is cut at performance_schema_max_sql_text_length
    .replace(/`/g, '')
    .replace(/\s+/g, ' ')
    .replace(/(WHEN \? THEN \? )(?:WHEN \? THEN \? )+/g, '$1… ')
    .trim();
}

/** Prepared executions per run (`runs` of the counting pass), largest server time per run first. */
function perRunPrepared(rows, runs) {
  if (!runs) return undefined;
  const out = rows.map((d) => ({
    text: d.text,
    perRun: d.n / runs,
    usPerExec: d.n ? d.timerPs / d.n / 1e6 : NaN,
    usPerRun: d.timerPs / runs / 1e6,
    rowsExaminedPerExec: d.n ? d.examined / d.n : NaN,
  }));
  const n = rows.reduce((a, d) => a + d.n, 0);
  const timerPs = rows.reduce((a, d) => a + d.timerPs, 0);
  return {
    runs,
    total: {
      text: `all ${rows.length} prepared statements`,
      perRun: n / runs,
      usPerExec: n ? timerPs / n / 1e6 : NaN,
      usPerRun: timerPs / runs / 1e6,
    },
    rows: out.sort((a, b) => b.usPerRun - a.usPerRun),
  };
}

const resetDigests = () => probe.query('TRUNCATE TABLE performance_schema.events_statements_summary_by_digest');

/** The digests of statements run with the bench database as default schema (the implementations' pools). */
async function readDigests() {
  const [rows] = await probe.query(
    `SELECT DIGEST AS digest, DIGEST_TEXT AS text, COUNT_STAR AS n, SUM_TIMER_WAIT AS timer, SUM_LOCK_TIME AS lockTime,
            SUM_ROWS_EXAMINED AS examined, SUM_ROWS_AFFECTED AS affected, SUM_ROWS_SENT AS sent, SUM_ERRORS AS errors
            ${digestInfo.cpu ? ', SUM_CPU_TIME AS cpu' : ''}
       FROM performance_schema.events_statements_summary_by_digest WHERE SCHEMA_NAME = ?`,
    [dbName],
  );
  const key = (t) =>
    String(t)
      .toLowerCase()
      .replace(/[^a-z0-9]/g, '')
      .slice(0, 40);
  return rows.map((r) => {
    const sample = digestSamples.get(r.digest);
    // Where the statement sat: a DIGEST_TEXT that is not its own text means "after the first
    // statement of a packet"; a sample with text after the statement means "not last".
    const own = sample && key(sample.text) === key(r.text);
    const position = !sample
      ? undefined
      : sample.rest
        ? own
          ? 'packet-first'
          : 'packet-inner'
        : own
          ? 'alone'
          : 'packet-last';
    return {
      digest: r.digest,
      text: sample?.text ?? r.text,
      textSource: sample ? 'sample' : 'digest_text',
      position,
      n: Number(r.n),
      timerPs: Number(r.timer),
      lockPs: Number(r.lockTime),
      cpuPs: r.cpu === undefined ? undefined : Number(r.cpu),
      examined: Number(r.examined),
      affected: Number(r.affected),
      sent: Number(r.sent),
      errors: Number(r.errors),
    };
  });
}

/**
 * Digests summed over repetitions, per run: `{ runs, total: {…}, rows: [{ text, perRun, usPerStmt,
 * usPerRun, cpuUsPerRun?, … }] }`, sorted by server time per run, largest first.
 */
function mergeDigests(reps) {
  const by = new Map();
  let runs = 0;
  for (const r of reps) {
    if (!r.digests) continue;
    runs += r.ops;
    for (const d of r.digests) {
      const key = d.digest ?? d.text;
      const acc = by.get(key) ?? {
        digest: d.digest,
        text: d.text,
        textSource: d.textSource,
        position: d.position,
        n: 0,
        timerPs: 0,
        lockPs: 0,
        cpuPs: d.cpuPs === undefined ? undefined : 0,
        examined: 0,
        affected: 0,
        sent: 0,
        errors: 0,
      };
      for (const k of ['n', 'timerPs', 'lockPs', 'examined', 'affected', 'sent', 'errors']) acc[k] += d[k];
      if (acc.cpuPs !== undefined) acc.cpuPs += d.cpuPs ?? 0;
      by.set(key, acc);
    }
  }
  if (runs === 0) return undefined;
  const shape = (d) => ({
    digest: d.digest,
    text: d.text,
    textSource: d.textSource,
    position: d.position,
    perRun: d.n / runs,
    usPerStmt: d.n ? d.timerPs / d.n / 1e6 : NaN,
    usPerRun: d.timerPs / runs / 1e6,
    cpuUsPerRun: d.cpuPs === undefined ? undefined : d.cpuPs / runs / 1e6,
    lockUsPerRun: d.lockPs / runs / 1e6,
    rowsExaminedPerStmt: d.n ? d.examined / d.n : NaN,
    rowsAffectedPerStmt: d.n ? d.affected / d.n : NaN,
    errors: d.errors,
  });
  const all = [...by.values()];
  const total = all.reduce(
    (a, d) => {
      for (const k of ['n', 'timerPs', 'lockPs', 'examined', 'affected', 'sent', 'errors']) a[k] += d[k];
      if (a.cpuPs !== undefined) a.cpuPs += d.cpuPs ?? 0;
      return a;
    },
    {
      text: `all ${all.length} statement shapes`,
      n: 0,
      timerPs: 0,
      lockPs: 0,
      cpuPs: digestInfo.cpu ? 0 : undefined,
      examined: 0,
      affected: 0,
      sent: 0,
      errors: 0,
    },
  );
  return {
    runs,
    shapes: all.length,
    total: shape(total),
    rows: all.map(shape).sort((a, b) => b.usPerRun - a.usPerRun),
  };
}

async function truncateAll(impl) {
  for (const t of Object.values(impl.t)) await admin.query(`TRUNCATE TABLE ${t}`);
}

/** Opens the pools' connections before anything is measured. */
async function warm(backend) {
  await Promise.all(Array.from({ length: 32 }, () => backend.store.loadRunRow('warm-up')));
  await Promise.all(Array.from({ length: 16 }, () => backend.queue.claim({ limit: 1, leaseMs: 1, now: new Date(0) })));
}

let probeCost = {};
const failures = [];

/** Counter deltas over a measured region, the bench's own probe statements subtracted. */
const delta = (s0, s1, k) => (s1[k] === undefined || s0[k] === undefined ? NaN : s1[k] - s0[k] - (probeCost[k] ?? 0));

/**
 * One timed (or counted) execution of a scenario for one implementation.
 *
 * A scenario's `run` returns the number of operations, or `{ ops, ms?, cpuUs?, mainCpuUs?, elu?,
 * retries? }` when the work ran elsewhere (the multi-process flow: CPU of the worker processes).
 * `verify` (untimed) runs after the counters were read; `teardown` always.
 */
async function execute(sc, impl, { counted = false, size = sc.size } = {}) {
  await truncateAll(impl);
  const target = counted ? { ...impl, backend: impl.counted, sql: impl.countedSql, url: impl.countedUrl } : impl;
  // Transactions the implementation re-ran by itself after a deadlock, when it tells (native: sql.stats()).
  const internalRetries = () => {
    const st = typeof target.sql?.stats === 'function' ? target.sql.stats() : undefined;
    return Number(st?.deadlockRetries ?? 0);
  };
  const ctx = await sc.setup(target, size);
  try {
    const digests = !counted && sc.digests && digestInfo.enabled;
    const sampling = counted && sc.digests && digestInfo.enabled && digestInfo.samples;
    if (digests) await resetDigests();
    if (sampling) await startSampling();
    if (counted) proxy.take();
    const s0 = await statusCounters();
    const cpu0 = process.cpuUsage();
    const th0 = mainThreadCpuUs();
    const srv0 = serverCpuUs();
    const elu0 = performance.eventLoopUtilization();
    const retries0 = transientRetries;
    const internal0 = internalRetries();
    const t0 = performance.now();
    const got = await sc.run(target, ctx, size, sc.conc);
    let ms = performance.now() - t0;
    const elu = performance.eventLoopUtilization(elu0);
    const th = mainThreadCpuUs() - th0;
    const srv = serverCpuUs() - srv0;
    const cpu = process.cpuUsage(cpu0);
    const s1 = await statusCounters();
    const wire = counted ? proxy.take() : undefined;
    const prepared = sampling ? await collectSamples() : undefined;
    const dg = digests ? await readDigests() : undefined;
    if (sc.verify) await sc.verify(target, ctx, size);
    const ext = typeof got === 'object' ? got : { ops: got };
    const ops = ext.ops;
    if (Number.isFinite(ext.ms)) ms = ext.ms;
    const commits = innodbMetrics ? delta(s0, s1, 'trx_rw_commits') : delta(s0, s1, 'Com_commit');
    return {
      ops,
      ms,
      rate: (ops * 1000) / ms,
      stmtsPerOp: delta(s0, s1, 'Questions') / ops,
      preparesPerOp: delta(s0, s1, 'Com_stmt_prepare') / ops,
      commitsPerOp: commits / ops,
      commitStmtsPerOp: delta(s0, s1, 'Com_commit') / ops,
      rollbacksPerOp: delta(s0, s1, 'Com_rollback') / ops,
      handlerCommitsPerOp: delta(s0, s1, 'Handler_commit') / ops,
      roCommitsPerOp: (delta(s0, s1, 'trx_ro_commits') + delta(s0, s1, 'trx_nl_ro_commits')) / ops,
      retries: (ext.retries ?? 0) + transientRetries - retries0 + (internalRetries() - internal0),
      info: ctx.info,
      rtPerOp: wire ? wire.roundTrips / ops : undefined,
      wire,
      cpuUsPerOp: (ext.cpuUs ?? cpu.user + cpu.system) / ops,
      mainCpuUsPerOp: (ext.mainCpuUs ?? th) / ops,
      serverCpuUsPerOp: srv / ops,
      elu: ext.elu ?? elu.utilization,
      digests: dg,
      prepared: prepared && perRunPrepared(prepared, ops),
    };
  } finally {
    await sc.teardown?.(target, ctx);
  }
}

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

const fmt = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
const fmtRate = (x) => (Number.isFinite(x) ? (x >= 100 ? x.toFixed(0) : x.toFixed(1)) : 'n/a');

async function main() {
  const benchT0 = performance.now();
  const all = [...microScenarios(), ...drainScenarios(), ...flowScenarios()];
  const scenarios = argv.only?.length ? all.filter((s) => argv.only.some((o) => s.name.includes(o))) : all;
  if (argv.list) {
    for (const s of all) console.log(`${s.name}  (${s.size} ${s.kind === 'micro' ? 'ops' : 'runs'})`);
    return;
  }
  if (scenarios.length === 0) throw new Error(`--only ${argv.only.join(', ')} matches no scenario (see --list)`);

  const seed = await seedFor(argv.impl);
  if (!serverUrl) {
    const { startPrivateServer } = await import('../__test__/helpers/mariadb.mjs');
    // performance_schema with the statement-digest consumer, for the per-statement server time.
    server = await startPrivateServer({
      extraArgs: ['--performance-schema=ON', '--performance-schema-consumer-statements-digest=ON'],
    });
    serverUrl = server.url;
  }
  dbUrl = (() => {
    const u = new URL(serverUrl);
    u.pathname = `/${dbName}`;
    return u.toString();
  })();
  if (SOCKET) {
    const path = SOCKET === '1' ? server?.socket : SOCKET;
    if (!path) throw new Error('BENCH_SOCKET=1 needs the private server; with MYSQL_URL give the socket path');
    timedUrl = withQuery(dbUrl, `socketPath=${encodeURIComponent(path)}`);
  } else timedUrl = dbUrl;
  {
    const root = await mysql.createConnection({ uri: serverUrl });
    await root.query(`CREATE DATABASE \`${dbName}\` CHARACTER SET utf8mb4`);
    await root.end();
  }
  cleanups.push(async () => {
    const root = await mysql.createConnection({ uri: serverUrl });
    await root.query(`DROP DATABASE IF EXISTS \`${dbName}\``);
    await root.end();
  });
  admin = await mysql.createConnection({ uri: dbUrl });
  cleanups.push(() => admin.end());
  probe = await mysql.createConnection({ uri: serverUrl });
  cleanups.push(() => probe.end());
  await enableInnodbMetrics();
  await checkDigests();
  {
    const [[{ v }]] = await probe.query('SELECT VERSION() AS v');
    serverVersion = /mariadb/i.test(v) ? `MariaDB ${v.split('-')[0]}` : `MySQL ${v}`;
  }
  if (!digestInfo.enabled) console.error(`note: no statement digests (${digestInfo.reason})`);

  if (!argv['no-count']) {
    const u = new URL(serverUrl);
    proxy = await startCountingProxy({ host: u.hostname || '127.0.0.1', port: Number(u.port || 3306) });
    cleanups.push(() => proxy.close());
  }

  await createImpls(seed);
  if (impls.length === 0) throw new Error('no implementation to benchmark');
  for (const impl of impls) {
    await impl.module.applySchema(impl.sql, impl.prefix);
    await warm(impl.backend);
    if (impl.counted) await warm(impl.counted);
  }
  {
    const a = await statusCounters();
    const b = await statusCounters();
    probeCost = Object.fromEntries(Object.keys(b).map((k) => [k, b[k] - a[k]]));
  }

  const [{ model }] = cpus();
  console.log(`# iterativeflow MySQL backend: native vs seed (JS over mysql2)\n`);
  console.log(
    `server ${server ? 'private MariaDB (started for this run)' : serverUrl.replace(/\/\/[^@]*@/, '//…@')}, ` +
      `${cpus().length} CPU (${model.trim()}), node ${process.version}, scale ${SCALE}, reps ${REPS} (flows ${FLOW_REPS}), ` +
      `implementations: ${impls.map((i) => i.name).join(', ')}, timed pools over ${SOCKET ? 'a Unix socket' : 'TCP'}`,
  );
  if (nativeInfo) console.log(nativeInfo);
  if (!server) console.log('note: MYSQL_URL server - statement counts assume no other clients are active');
  console.log('');

  const results = [];
  for (const sc of scenarios) {
    const res = { name: sc.name, kind: sc.kind, unit: sc.unit, conc: sc.conc, size: sc.size, reps: {}, counted: {} };
    res.errors = {};
    for (const impl of impls) res.reps[impl.name] = [];
    // A failing implementation is reported and skipped for the rest of this scenario.
    const guarded = async (impl, fn) => {
      if (res.errors[impl.name]) return undefined;
      try {
        return await fn();
      } catch (e) {
        res.errors[impl.name] = e?.message ?? String(e);
        failures.push({ scenario: sc.name, impl: impl.name, error: e });
        console.error(`  ${sc.name}: ${impl.name} FAILED: ${res.errors[impl.name]}`);
        return undefined;
      }
    };
    // Counting pass (through the wire counter) doubles as warm-up.
    if (proxy) {
      const size = Math.max(sc.kind === 'micro' ? 16 : 20, Math.round(sc.size * COUNT_FRACTION));
      for (const impl of impls) {
        res.counted[impl.name] = await guarded(impl, () => execute(sc, impl, { counted: true, size }));
      }
    }
    const nReps = sc.kind === 'flow' ? FLOW_REPS : REPS;
    res.repetitions = nReps;
    for (let rep = 0; rep < nReps; rep++) {
      const order = rep % 2 === 0 ? impls : [...impls].reverse();
      for (const impl of order) {
        const r = await guarded(impl, () => execute(sc, impl));
        if (r) res.reps[impl.name].push(r);
      }
    }
    const summary = {};
    for (const impl of impls) {
      const reps = res.reps[impl.name];
      const counted = res.counted[impl.name];
      if (res.errors[impl.name]) {
        summary[impl.name] = { error: res.errors[impl.name] };
        continue;
      }
      summary[impl.name] = {
        rate: median(reps.map((r) => r.rate)),
        stmtsPerOp: median(reps.map((r) => r.stmtsPerOp)),
        preparesPerOp: median(reps.map((r) => r.preparesPerOp)),
        commitsPerOp: median(reps.map((r) => r.commitsPerOp)),
        commitStmtsPerOp: median(reps.map((r) => r.commitStmtsPerOp)),
        rollbacksPerOp: median(reps.map((r) => r.rollbacksPerOp)),
        handlerCommitsPerOp: median(reps.map((r) => r.handlerCommitsPerOp)),
        roCommitsPerOp: median(reps.map((r) => r.roCommitsPerOp)),
        rtPerOp: counted?.rtPerOp,
        wire: counted?.wire,
        cpuUsPerOp: median(reps.map((r) => r.cpuUsPerOp)),
        mainCpuUsPerOp: median(reps.map((r) => r.mainCpuUsPerOp)),
        serverCpuUsPerOp: median(reps.map((r) => r.serverCpuUsPerOp)),
        elu: median(reps.map((r) => r.elu)),
        retries: reps.reduce((a, r) => a + r.retries, 0),
        info: reps.at(-1)?.info,
        digests: sc.digests ? mergeDigests(reps) : undefined,
        prepared: counted?.prepared,
      };
    }
    res.summary = summary;
    if (sc.chartLabel) res.chartLabel = sc.chartLabel;
    results.push(res);
    const line = impls
      .map((i) =>
        summary[i.name].error
          ? `${i.name} FAILED`
          : `${i.name} ${fmtRate(summary[i.name].rate)} ${sc.unit}, ${fmt(summary[i.name].rtPerOp, 2)} RT/op`,
      )
      .join(' | ');
    console.error(`  ${sc.name}: ${line}`);
  }

  // Main table.
  const S = (r, impl, k) => r.summary[impl]?.[k];
  const rateCell = (r, impl) => (r.errors[impl] ? 'FAILED' : fmtRate(S(r, impl, 'rate')));
  console.log('| scenario | seed | native | ratio | seed RT/op | native RT/op |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const r of results) {
    const ratio = S(r, 'native', 'rate') / S(r, 'seed', 'rate');
    console.log(
      `| ${r.name} | ${rateCell(r, 'seed')} | ${rateCell(r, 'native')} | ` +
        `${Number.isFinite(ratio) ? `${ratio.toFixed(2)}×` : 'n/a'} | ` +
        `${fmt(S(r, 'seed', 'rtPerOp'), 2)} | ${fmt(S(r, 'native', 'rtPerOp'), 2)} |`,
    );
  }
  console.log(
    `\nRates are medians over ${REPS} interleaved repetitions (${FLOW_REPS} for flows; ops/s; runs/s for drains and flows). ` +
      `ratio = native / seed throughput (> 1: native faster). RT/op = client commands awaiting a server reply, ` +
      `counted on the wire in a separate pass (${COUNT_FRACTION} of the size).\n`,
  );

  // Detail table.
  console.log(
    '| scenario | impl | stmts/op | commits/op | prepares/op | CPU µs/op (process) | CPU µs/op (main thread) | CPU µs/op (server) | ELU | retries |',
  );
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of results) {
    for (const impl of impls) {
      const s = r.summary[impl.name];
      if (s.error) {
        console.log(
          `| ${r.name} | ${impl.name} | FAILED: ${s.error.replace(/\|/g, '/').replace(/\s+/g, ' ').slice(0, 120)} | | | | | | | |`,
        );
        continue;
      }
      console.log(
        `| ${r.name} | ${impl.name} | ${fmt(s.stmtsPerOp, 2)} | ${fmt(s.commitsPerOp, 2)} | ${fmt(s.preparesPerOp, 2)} | ${fmt(s.cpuUsPerOp, 0)} | ` +
          `${fmt(s.mainCpuUsPerOp, 0)} | ${fmt(s.serverCpuUsPerOp, 0)} | ${fmt(s.elu, 2)} | ${s.retries} |`,
      );
    }
  }
  console.log(
    "\nstmts/op from the server's Questions counter (each statement of a multi-statement query counts, and so does each execution of a prepared statement; " +
      `prepares do not). commits/op = ${commitsLabel()}. ` +
      'Process CPU includes native worker threads; main-thread CPU is the JS thread alone; server CPU is the private server process (n/a with MYSQL_URL). ' +
      'retries = operations re-run after a deadlock or lock-wait timeout, by the bench or (native, from sql.stats()) ' +
      'inside the implementation; sum over the timed repetitions.',
  );

  // Flows: one line per flow, both implementations side by side ("seed / native").
  const flows = results.filter((r) => r.kind === 'flow');
  if (flows.length) {
    const pair = (r, k, d = 0) =>
      impls.map((i) => (r.summary[i.name]?.error ? 'FAILED' : fmt(r.summary[i.name]?.[k], d))).join(' / ');
    console.log(`\n## Engine-driven flows (per run: ${impls.map((i) => i.name).join(' / ')})\n`);
    console.log(
      '| flow | seed runs/s | native runs/s | ratio | statements | commits | round trips | Node CPU µs | main-thread CPU µs | server CPU µs | retries |',
    );
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const r of flows) {
      const ratio = S(r, 'native', 'rate') / S(r, 'seed', 'rate');
      console.log(
        `| ${r.name} | ${rateCell(r, 'seed')} | ${rateCell(r, 'native')} | ${Number.isFinite(ratio) ? `${ratio.toFixed(2)}×` : 'n/a'} | ` +
          `${pair(r, 'stmtsPerOp', 1)} | ${pair(r, 'commitsPerOp', 1)} | ${pair(r, 'rtPerOp', 1)} | ${pair(r, 'cpuUsPerOp')} | ` +
          `${pair(r, 'mainCpuUsPerOp')} | ${pair(r, 'serverCpuUsPerOp')} | ${pair(r, 'retries')} |`,
      );
    }
    console.log('\n| flow | impl | ticks/run | empty ticks | timers fired/run | leases/run | lease outcomes |');
    console.log('|---|---|---:|---:|---:|---:|---|');
    for (const r of flows) {
      for (const impl of impls) {
        const info = r.summary[impl.name]?.info;
        if (!info) continue;
        const outcomes = Object.entries(info.results ?? {})
          .map(([k, v]) => `${k} ${v}`)
          .join(', ');
        console.log(
          `| ${r.name} | ${impl.name} | ${fmt(info.ticks / r.size, 3)} | ${info.emptyTicks} | ${fmt(info.due / r.size, 2)} | ${fmt(info.claimed / r.size, 2)} | ${outcomes} |`,
        );
      }
    }
    console.log(
      '\nEngine ticks of the last timed repetition: ticks and leases per root run, empty ticks (claimed and fired nothing; ' +
        `each followed by a ${IDLE_MS} ms pause) in total, timers fired by dueBatch per run, runTick outcomes by kind.`,
    );
    console.log(
      `\n${FLOW_RUNS} root runs per flow (${Math.max(20, Math.round(FLOW_RUNS * COUNT_FRACTION))} in the counting pass); ` +
        'a run is one root run (for "invoke", the parent and its child together). ' +
        `commits = ${commitsLabel()}. Node CPU of the multi-process flow = the worker processes' sum.`,
    );
  }

  // Server time per statement shape.
  const withDigests = results.filter((r) => impls.some((i) => r.summary[i.name]?.digests));
  if (withDigests.length) {
    console.log(
      `\n## Server time per statement shape (performance_schema digests, top ${DIGESTS_TOP} by server time per run)\n`,
    );
    console.log(
      'events_statements_summary_by_digest, truncated before each timed repetition and summed over them. ' +
        'per run = COUNT_STAR / runs; µs/stmt = SUM_TIMER_WAIT / COUNT_STAR (server-side latency: execution, lock waits ' +
        `and waiting for a CPU; not CPU time${digestInfo.cpu ? '; SUM_CPU_TIME is in the cpu column' : ', which MariaDB does not report'}); µs/run = SUM_TIMER_WAIT / runs.`,
    );
    for (const r of withDigests) {
      for (const impl of impls) {
        const d = r.summary[impl.name]?.digests;
        if (!d) continue;
        console.log(`\n### ${r.name} — ${impl.name} (${d.shapes} shapes over ${d.runs} runs)\n`);
        console.log(
          `| statement | per run | µs/stmt | µs/run |${digestInfo.cpu ? ' cpu µs/run |' : ''} rows examined/stmt |`,
        );
        console.log(`|---|---:|---:|---:|${digestInfo.cpu ? '---:|' : ''}---:|`);
        for (const row of [...d.rows.slice(0, DIGESTS_TOP), d.total]) {
          const where =
            {
              'packet-first': ' (1st of a packet)',
              'packet-inner': ' (in a packet)',
              'packet-last': ' (last of a packet)',
            }[row.position] ?? (row.textSource === 'digest_text' ? " (server's digest text)" : '');
          const text = row === d.total ? `**${row.text}**` : `\`${shortDigest(row.text)}\`${where}`;
          console.log(
            `| ${text} | ${fmt(row.perRun, 2)} | ${fmt(row.usPerStmt, 0)} | ${fmt(row.usPerRun, 0)} |` +
              `${digestInfo.cpu ? ` ${fmt(row.cpuUsPerRun, 0)} |` : ''} ${fmt(row.rowsExaminedPerStmt, 1)} |`,
          );
        }
        const p = r.summary[impl.name]?.prepared;
        if (p?.rows.length) {
          console.log(
            `\nPrepared-statement executions (not in the digests above), from the counting pass (${p.runs} runs):\n`,
          );
          console.log('| prepared statement | per run | µs/exec | µs/run | rows examined/exec |');
          console.log('|---|---:|---:|---:|---:|');
          for (const row of [...p.rows.slice(0, DIGESTS_TOP), p.total]) {
            const text = row === p.total ? `**${row.text}**` : `\`${shortDigest(row.text)}\``;
            console.log(
              `| ${text} | ${fmt(row.perRun, 2)} | ${fmt(row.usPerExec, 0)} | ${fmt(row.usPerRun, 0)} | ${fmt(row.rowsExaminedPerExec, 1)} |`,
            );
          }
        }
      }
    }
  } else if (scenarios.some((s) => s.digests)) {
    console.log(`\n(no statement digests: ${digestInfo.reason})`);
  }

  if (failures.length) {
    console.log(`\n${failures.length} scenario/implementation pair(s) FAILED:`);
    for (const f of failures) console.log(`- ${f.scenario} (${f.impl}): ${f.error?.message ?? f.error}`);
    process.exitCode = 1;
  }

  const stamp = new Date().toISOString();
  const machine = { cpus: cpus().length, model: model.trim(), node: process.version, server: serverVersion };
  if (argv.json) {
    const raw = results.map((r) => ({ ...r, reps: r.reps, counted: r.counted }));
    writeFileSync(
      argv.json,
      JSON.stringify(
        {
          generatedAt: stamp,
          scale: SCALE,
          reps: REPS,
          flowReps: FLOW_REPS,
          machine,
          commits: commitsLabel(),
          digests: digestInfo,
          results: raw,
        },
        null,
        2,
      ),
    );
    console.log(`\nraw results: ${argv.json}`);
  }
  if (!argv['no-chart'] && flows.length === 0) {
    console.log(`\nchart not rewritten (${argv.chart}): no flow scenario in this run`);
  } else if (!argv['no-chart']) {
    const pick = (s, top) => {
      if (!s) return undefined;
      if (s.error) return { error: s.error };
      const { wire, digests, info, prepared, ...rest } = s;
      return {
        ...rest,
        info,
        prepared: prepared && {
          runs: prepared.runs,
          total: prepared.total,
          top: top ? prepared.rows.slice(0, DIGESTS_TOP) : undefined,
        },
        digests: digests && {
          runs: digests.runs,
          shapes: digests.shapes,
          total: digests.total,
          top: top ? digests.rows.slice(0, DIGESTS_TOP) : undefined,
        },
      };
    };
    const entry = (r, top = true) => ({
      name: r.name,
      kind: r.kind,
      chartLabel: r.chartLabel,
      size: r.size,
      conc: r.conc,
      unit: r.unit,
      ratio: S(r, 'native', 'rate') / S(r, 'seed', 'rate'),
      seed: pick(r.summary.seed, top),
      native: pick(r.summary.native, top),
    });
    const summary = {
      title: 'iterativeflow MySQL backend: engine-driven flows, JavaScript 2.0.0-alpha.2 vs native',
      subtitle:
        `${machine.cpus} CPU (${machine.model}) shared with ${serverVersion ?? 'the server'}; node ${process.version}; ` +
        `scale ${SCALE}, ${FLOW_RUNS} runs per flow, medians of ${FLOW_REPS} interleaved reps; ${stamp.slice(0, 10)}`,
      generatedAt: stamp,
      scale: SCALE,
      reps: REPS,
      flowReps: FLOW_REPS,
      flowRuns: FLOW_RUNS,
      machine,
      nativeBinary: nativeInfo || undefined,
      commits: commitsLabel(),
      only: argv.only,
      flows: flows.map((r) => entry(r)),
      // The other scenarios' medians (their digests as totals only; --json has everything).
      scenarios: results.filter((r) => r.kind !== 'flow').map((r) => entry(r, false)),
    };
    // Four significant digits are plenty for a chart's numbers.
    const round = (k, v) =>
      typeof v === 'number' && Number.isFinite(v) && !Number.isInteger(v) ? Number(v.toPrecision(4)) : v;
    const text = JSON.stringify(summary, round, 1);
    writeFileSync(argv.results, text + '\n');
    // Drawn from exactly what results.json holds (bench/chart.test.mjs checks that they match).
    writeFileSync(argv.chart, renderChart(JSON.parse(text)));
    console.log(`\nchart: ${argv.chart} (numbers: ${argv.results})`);
  }
  console.log(`\nbench wall time: ${((performance.now() - benchT0) / 60_000).toFixed(1)} min`);
}

let serverVersion;
const commitsLabel = () =>
  innodbMetrics
    ? "InnoDB's trx_rw_commits (read-write transactions committed: autocommit writes and explicit COMMITs of transactions that wrote or locked rows)"
    : 'Com_commit (explicit COMMIT statements only: autocommit writes are not counted)';

/** A digest text on one line, shortened for the table (the JSON keeps it whole). */
function shortDigest(text, max = 120) {
  const t = String(text ?? '')
    .replace(/\s+/g, ' ')
    .replace(/\|/g, '\\|')
    .replace(/`/g, '')
    .trim();
  if (t.length <= max) return t;
  // Keep the head (the verb and target) and the tail (FROM / WHERE), which tell similar shapes apart.
  const head = Math.round(max * 0.45);
  return `${t.slice(0, head)} … ${t.slice(t.length - (max - head - 3))}`;
}

try {
  await main();
} catch (e) {
  process.exitCode = 1;
  console.error(e);
} finally {
  await cleanup();
  if (server) await server.stop();
}
