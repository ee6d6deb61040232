// The push scenario: latency across real processes, push on against polling, and the idle server
// CPU that push costs (issue #22's targets; docs/push.md, "Measured").
//
// Latency: per variant (native with a listener, native without, the seed = the JavaScript
// package, which has no push), PUSH_WORKERS idle worker processes run core's resident engine loop
// and one waiter process runs core's result() loop (bench/push-process.mjs); the bench process is
// the submitter. One sample: startRun (pending), a random pause long enough for the workers to
// back off fully (1.4 s) plus one idle wait (1.6 s) of phase, enqueue, then the waiter starts
// result(runId). dispatch = enqueue called → the first step began in a worker; completion = the worker's
// markTerminal resolved → result() returned in the waiter. The variants sample concurrently, each
// on its own tables and processes, so the run takes one variant's time.
//
// Idle cost: server CPU (/proc of the private server, as bench/sampling.mjs reads it) while 1 and
// then 10 idle worker processes with push on wait for work, and 10 without push, minus the
// server's own idle CPU over the same time; per process per second, and ×100 from the 10-process
// figure. Connections: the server's Threads_connected above the baseline, per process.
import { fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

import { bench } from '../context.mjs';
import { failures } from '../execute.mjs';
import { PUSH_IDLE_MS, PUSH_INTERVAL_MS, PUSH_SAMPLES, PUSH_TICK_MS, PUSH_WORKERS } from '../options.mjs';
import { serverCpuUs } from '../sampling.mjs';

const PROCESS = fileURLToPath(new URL('../push-process.mjs', import.meta.url));
/** Fully backed off: 200 + 400 + 800 ms after the last run, then idle waits of 8 × tickMs. */
const settleMs = () => PUSH_TICK_MS * 7;
const maxIdleMs = () => PUSH_TICK_MS * 8;
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Forks one push process; `next(type, pred?, ms?)` resolves its next such message. */
async function spawn(init) {
  const child = fork(PROCESS, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const inbox = [];
  const wanted = [];
  let failure;
  const deliver = () => {
    for (let i = 0; i < wanted.length; i++) {
      const w = wanted[i];
      const k = inbox.findIndex((m) => m.type === w.type && w.pred(m));
      if (k < 0 && !failure) continue;
      wanted.splice(i--, 1);
      clearTimeout(w.timer);
      if (k >= 0) w.resolve(inbox.splice(k, 1)[0]);
      else w.reject(failure);
    }
  };
  child.on('message', (m) => {
    if (m?.type === 'error') failure = new Error(`push ${init.role} (${init.impl}): ${m.message}`);
    inbox.push(m);
    deliver();
  });
  child.on('exit', (code) => {
    failure ??= new Error(`push ${init.role} (${init.impl}) exited with code ${code}`);
    deliver();
  });
  const h = {
    next: (type, pred = () => true, ms = 30_000) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`push ${init.role}: no '${type}' within ${ms} ms`)), ms);
        wanted.push({ type, pred, resolve, reject, timer });
        deliver();
      }),
    /** Drops what arrived and nobody waited for (reports of other workers). */
    drain: (type) => {
      for (let k = inbox.length - 1; k >= 0; k--) if (inbox[k].type === type) inbox.splice(k, 1);
    },
    send: (m) => child.connected && child.send(m),
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((r) => child.once('exit', r));
      h.send({ type: 'close' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await gone;
      clearTimeout(timer);
    },
  };
  h.send({ type: 'init', ...init });
  await h.next('ready', () => true, 60_000);
  return h;
}

async function closeAll(procs) {
  await Promise.all(procs.map((p) => p.close()));
}

/** The variants of this run: native with and without a listener, the seed (polling only); not the floor. */
function variants() {
  const out = [];
  for (const impl of bench.impls) {
    if (impl.name === 'native') {
      out.push({ key: 'native, push on', impl, push: true, prefix: 'pon_' });
      out.push({ key: 'native, push off', impl, push: false, prefix: 'poff_' });
    } else if (impl.name === 'seed') out.push({ key: 'JS package (polling)', impl, push: false, prefix: 'pjs_' });
  }
  return out;
}

const initOf = (v, role) => ({
  role,
  impl: v.impl.name,
  url: v.impl.url,
  prefix: v.prefix,
  nativeModule: v.impl.nativeModule,
  push: v.push,
  intervalMs: PUSH_INTERVAL_MS,
  tickMs: PUSH_TICK_MS,
});

/** Nearest-rank percentiles of `xs` (ms): `{ n, p50, p99, max }`. */
export function percentiles(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
  return { n: s.length, p50: at(0.5), p99: at(0.99), max: s.at(-1) };
}

/** PUSH_SAMPLES runs through one variant's processes; `{ dispatch, completion }` in ms. */
async function sampleVariant(v) {
  // The submitter: this process, on the implementation's bench pool, on the variant's tables.
  // With push on it has a listener too (never started: it only rings the workers' doorbells).
  const listener = v.push ? v.impl.module.createMysqlListener(v.impl.sql, { prefix: v.prefix }) : undefined;
  const backend = v.impl.module.createMysqlBackend(v.impl.sql, { prefix: v.prefix, ...(listener ? { listener } : {}) });
  const workers = [];
  let waiter;
  try {
    for (let k = 0; k < PUSH_WORKERS; k++) workers.push(await spawn(initOf(v, 'worker')));
    waiter = await spawn(initOf(v, 'waiter'));
    const dispatch = [];
    const completion = [];
    await sleep(settleMs());
    for (let i = 0; i < PUSH_SAMPLES; i++) {
      const { runId } = await backend.store.startRun({ name: 'push', version: 1, input: i });
      const mine = (m) => m.runId === runId;
      await sleep(settleMs() + Math.random() * maxIdleMs());
      const settled = waiter.next('settled', mine);
      settled.catch(() => {}); // awaited below; a failure meanwhile is not an unhandled rejection
      const t0 = now();
      await backend.queue.enqueue(runId);
      // As a caller does (submit, then result()): its re-reads are in phase with the submit, not
      // with the previous run's end, as the workers' back-off is.
      waiter.send({ type: 'result', runId });
      const started = await Promise.any(workers.map((w) => w.next('started', mine)));
      const ended = await Promise.any(workers.map((w) => w.next('ended', mine)));
      const heard = await settled;
      for (const w of workers) {
        w.drain('started');
        w.drain('ended');
      }
      dispatch.push(started.at - t0);
      completion.push(heard.at - ended.at);
    }
    return { dispatch: percentiles(dispatch), completion: percentiles(completion), raw: { dispatch, completion } };
  } finally {
    await closeAll([...workers, ...(waiter ? [waiter] : [])]);
  }
}

const threadsConnected = async () => {
  const [[row]] = await bench.probe.query("SHOW GLOBAL STATUS LIKE 'Threads_connected'");
  return Number(row.Value);
};

/** Server CPU (µs) and Threads_connected over PUSH_IDLE_MS of whatever is connected now. */
async function idleWindow() {
  const c0 = serverCpuUs();
  const t0 = performance.now();
  await sleep(PUSH_IDLE_MS);
  const threads = await threadsConnected();
  return { cpuUs: serverCpuUs() - c0, ms: performance.now() - t0, threads };
}

/** Idle server CPU per process: 1 and 10 with push on, 10 without; `rows` in ms of CPU per s. */
async function idleCost() {
  const native = bench.impls.find((i) => i.name === 'native');
  if (!native) return undefined;
  const on = { key: 'idle', impl: native, push: true, prefix: 'pon_' };
  const off = { key: 'idle', impl: native, push: false, prefix: 'poff_' };
  const base = await idleWindow();
  const baseRate = base.cpuUs / base.ms; // µs per ms = ms per s
  const rows = [];
  const row = async (label, push, procs) => {
    const w = await idleWindow();
    const extra = w.cpuUs / w.ms - baseRate;
    rows.push({
      label,
      push,
      procs,
      serverMsPerS: extra,
      perProcMsPerS: extra / procs,
      connectionsPerProc: (w.threads - base.threads) / procs,
    });
  };
  const procs = [];
  try {
    procs.push(await spawn(initOf(on, 'worker')));
    await sleep(settleMs());
    await row('push on', true, 1);
    for (let k = 1; k < 10; k++) procs.push(await spawn(initOf(on, 'worker')));
    await sleep(settleMs());
    await row('push on', true, 10);
    await closeAll(procs.splice(0));
    for (let k = 0; k < 10; k++) procs.push(await spawn(initOf(off, 'worker')));
    await sleep(settleMs());
    await row('push off', false, 10);
  } finally {
    await closeAll(procs);
  }
  const ten = rows.find((r) => r.push && r.procs === 10);
  return {
    windowMs: PUSH_IDLE_MS,
    baselineMsPerS: baseRate,
    baselineThreads: base.threads,
    rows,
    hundredMsPerS: ten ? ten.perProcMsPerS * 100 : NaN,
  };
}

/** Measures the push scenario; the result has `kind: 'push'` and its figures under `push`. */
async function measurePush(sc) {
  const res = { name: sc.name, kind: 'push', unit: 'ms', size: sc.size, conc: sc.conc, summary: {}, errors: {} };
  const vs = variants();
  for (const v of vs) {
    await v.impl.module.applySchema(v.impl.sql, v.prefix);
  }
  const t0 = performance.now();
  const got = await Promise.allSettled(vs.map((v) => sampleVariant(v)));
  const latencyMs = performance.now() - t0;
  const rows = vs.map((v, k) => {
    const g = got[k];
    if (g.status === 'fulfilled') return { variant: v.key, impl: v.impl.name, push: v.push, ...g.value };
    const error = g.reason?.message ?? String(g.reason);
    res.errors[v.key] = error;
    failures.push({ scenario: sc.name, impl: v.key, error: g.reason });
    console.error(`  ${sc.name}: ${v.key} FAILED: ${error}`);
    return { variant: v.key, impl: v.impl.name, push: v.push, error };
  });
  let idle;
  try {
    idle = await idleCost();
  } catch (e) {
    res.errors.idle = e.message;
    failures.push({ scenario: sc.name, impl: 'idle', error: e });
    console.error(`  ${sc.name}: idle cost FAILED: ${e.message}`);
  }
  res.push = {
    samples: PUSH_SAMPLES,
    workers: PUSH_WORKERS,
    tickMs: PUSH_TICK_MS,
    intervalMs: PUSH_INTERVAL_MS ?? 'default',
    latencyWallS: latencyMs / 1000,
    variants: rows,
    idle,
  };
  const f = (x) => (Number.isFinite(x) ? x.toFixed(0) : 'n/a');
  const line = rows
    .map((r) =>
      r.error
        ? `${r.variant} FAILED`
        : `${r.variant} dispatch p50 ${f(r.dispatch.p50)} ms, completion p50 ${f(r.completion.p50)} ms`,
    )
    .join(' | ');
  console.error(`  ${sc.name}: ${line}`);
  return res;
}

export function pushScenarios() {
  return [
    {
      name: 'push',
      kind: 'push',
      unit: 'ms',
      conc: PUSH_WORKERS,
      size: PUSH_SAMPLES,
      measure: measurePush,
    },
  ];
}
