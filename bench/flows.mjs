// Engine-driven flows for the bench: the mini engine of the engine tests
// (`__test__/engine/mini-engine.mjs`, written from docs/contract.md §11) ticking real flow bodies
// against a backend, on the wall clock.
//
//   one worker tick (engine.tickOnce, batch 20, lease 30 s):
//     timer.dueBatch → queue.enqueue each due id → queue.claim
//     per lease, one after the other: loadRun → (child: loadRunRow(parent)) → markRunning
//       → the body's checkpoints → suspendRun + ack | markTerminal (+ arriveAtJoin + enqueue
//       parent) + wakeup.signal + ack
//
// A loop ticks again at once after a tick that claimed or fired anything, and waits `idleMs`
// after an empty one (the resident engine's 200 ms / back-off policy would measure its polling
// rather than the backend). Used by bench/scenarios/flows.mjs (loops in the bench process) and by
// bench/flow-worker.mjs (one loop per child process).

import { builder, createEngine } from '../__test__/engine/mini-engine.mjs';

/** The flows, by key: the root flow's name, what one run is, and how many runs (root + children) it makes. */
export const FLOWS = {
  steps3: { root: 'bench_steps3', label: '3 steps', runsPerRoot: 1 },
  sleep: { root: 'bench_sleep', label: 'step, sleep, step', runsPerRoot: 1 },
  invoke: { root: 'bench_parent', label: 'parent invokes a child', runsPerRoot: 2 },
};

const value = (name) => (input) => ({ step: name, i: input?.i ?? 0, ok: true });

/** Registers every bench flow on `engine`. */
export function registerFlows(engine, { sleepMs = 100 } = {}) {
  engine.register(
    'bench_steps3',
    1,
    builder().step('a', value('a')).step('b', value('b')).step('c', value('c')).build(),
  );
  engine.register('bench_sleep', 1, builder().step('a', value('a')).sleep(sleepMs).step('b', value('b')).build());
  engine.register('bench_parent', 1, async (ctx, input) => ({ child: await ctx.invoke('bench_child', 1, input) }));
  engine.register('bench_child', 1, builder().step('work', value('work')).build());
  return engine;
}

const isTransient = (e) =>
  e?.errno === 1213 || e?.errno === 1205 || /deadlock|lock wait timeout/i.test(String(e?.message ?? ''));

/**
 * A retry helper like the bench's: re-runs `fn` after a deadlock or lock-wait timeout (both roll
 * the unit back), counting into `counter.retries`. Used by the worker processes.
 */
export function makeRetry(counter = { retries: 0 }, attempts = 30) {
  return async (fn) => {
    for (let a = 1; ; a++) {
      try {
        return await fn();
      } catch (e) {
        if (!isTransient(e) || a >= attempts) throw e;
        counter.retries += 1;
        // A short random pause (0 … a ms), so that the same racers do not collide again at once.
        await new Promise((r) => setTimeout(r, Math.random() * a));
      }
    }
  };
}

/**
 * The backend with every store / queue / timer method wrapped in `retry`. The mini engine, like
 * core, does not retry a failed call: a deadlock would leave the lease to expire (30 s) and the
 * bench would measure the stall.
 */
export function retryingBackend(backend, retry) {
  const wrap = (port) =>
    new Proxy(port, {
      get(target, prop) {
        const v = target[prop];
        return typeof v === 'function' ? (...args) => retry(() => v.apply(target, args)) : v;
      },
    });
  return { ...backend, store: wrap(backend.store), queue: wrap(backend.queue), timer: wrap(backend.timer) };
}

/** Outcomes of runTick that a healthy bench flow produces. */
const EXPECTED = new Set(['done', 'sleep', 'child', 'terminal', 'gone']);

const pause = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs `loops` engine loops (one engine each, all over `backend`) until `shouldStop()` holds —
 * by default, until every id of `roots` has been completed (`done`) by one of them.
 *
 * Options: `loops` (1), `roots` (ids of the root runs), `batch` (20), `leaseMs` (30 000), `idleMs`
 * (10), `sleepMs` (the sleep flow's sleep, 100), `stallMs` (give up after this long without a
 * root completing, 60 000), `onDone(k)` (called when k more roots completed), `shouldStop`.
 *
 * Returns `{ ticks, emptyTicks, claimed, due, done, results }` (`results`: runTick outcomes by
 * kind). Rejects on the first lease whose tick threw, or when some run ended otherwise than
 * expected (failed, retrying, drift, …).
 */
export async function driveFlow(backend, opts = {}) {
  const {
    loops = 1,
    roots = [],
    batch = 20,
    leaseMs = 30_000,
    idleMs = 10,
    sleepMs = 100,
    stallMs = 60_000,
    onDone,
    shouldStop,
  } = opts;
  const rootSet = roots instanceof Set ? roots : new Set(roots);
  const stats = { ticks: 0, emptyTicks: 0, claimed: 0, due: 0, done: 0, results: {} };
  const stop = shouldStop ?? (() => stats.done >= rootSet.size);
  let lastProgress = performance.now();
  let failure;

  const engines = Array.from({ length: Math.max(1, loops) }, (_, k) =>
    registerFlows(createEngine(backend, { batchMax: batch, leaseMs, name: `loop${k}` }), { sleepMs }),
  );

  const loop = async (engine) => {
    while (!failure && !stop()) {
      const r = await engine.tickOnce();
      stats.ticks += 1;
      stats.claimed += r.claimed;
      stats.due += r.due;
      let finished = 0;
      for (const x of r.results) {
        stats.results[x.result] = (stats.results[x.result] ?? 0) + 1;
        if (x.result === 'error') failure ??= x.error;
        else if (!EXPECTED.has(x.result)) failure ??= new Error(`run ${x.runId} ended ${x.result}`);
        else if (x.result === 'done' && rootSet.has(x.runId)) finished += 1;
      }
      if (finished) {
        stats.done += finished;
        lastProgress = performance.now();
        onDone?.(finished);
      }
      if (r.claimed === 0 && r.due === 0) {
        stats.emptyTicks += 1;
        if (performance.now() - lastProgress > stallMs) {
          failure ??= new Error(`no run completed for ${stallMs} ms (${stats.done}/${rootSet.size} done)`);
          break;
        }
        await pause(idleMs);
      }
    }
  };

  await Promise.all(engines.map(loop));
  // Engine-recorded errors (a lease whose tick threw) are in the results as 'error' too.
  if (failure) {
    const e = failure instanceof Error ? failure : new Error(String(failure));
    e.flowStats = stats;
    throw e;
  }
  return stats;
}
