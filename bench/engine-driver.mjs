// The engine-shaped driver loop: what core's `tickOnce` does to a backend for flows made only of
// steps (docs/contract.md §11.1), without the engine itself.
//
//   [timer.dueBatch → enqueue each]   (optional, off by default)
//   queue.claim({ limit: batch })
//   for each lease, sequentially:
//     store.loadRun → (gone or terminal ⇒ ack)
//     store.markRunning
//     k × store.checkpointStep (cursor "s0".."s{k-1}", skipped when already memoized)
//     store.markTerminal(done)
//     queue.ack
//
// Several loops may run concurrently against one backend (like several workers); a loop stops at
// its first empty claim. Used by bench/scenarios/drains.mjs and usable from tests.

/**
 * Creates `n` pending runs through the backend (`startRun`) and enqueues each (`queue.enqueue`),
 * `concurrency` at a time. Returns their ids in creation order.
 */
export async function createRuns(
  backend,
  { n, name = 'bench', version = 1, input = (i) => ({ i }), concurrency = 16 } = {},
) {
  const ids = new Array(n);
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      const { runId } = await backend.store.startRun({ name, version, input: input(i) });
      await backend.queue.enqueue(runId);
      ids[i] = runId;
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, n)) }, worker));
  return ids;
}

const TERMINAL = new Set(['done', 'failed', 'canceled']);

/**
 * Drives every claimable run to `done` through the engine-shaped sequence.
 *
 * Options: `steps` (k, default 3), `loops` (concurrent claim loops, default 1), `batch` (claim limit,
 * default 20 = core's batchMax), `leaseMs` (default 30 000), `dueBatch` (also call
 * `timer.dueBatch` + enqueue at the start of every cycle, as core does; default false),
 * `result(runId, i)` (the step result; default a small object), `output(runId)` (the run output),
 * `maxRuns` (stop claiming once this many leases were handled), `retry(fn)` (wraps every backend
 * call, e.g. to re-run it after a deadlock; default: call once).
 *
 * Returns `{ runs, completed, skipped, claims, emptyClaims, checkpoints, ms }` where `runs` counts
 * handled leases, `completed` the runs this driver marked done, `skipped` gone/terminal ones.
 */
export async function drainRuns(backend, opts = {}) {
  const {
    steps = 3,
    loops = 1,
    batch = 20,
    leaseMs = 30_000,
    dueBatch = false,
    result = (runId, i) => ({ step: i, ok: true }),
    output = () => ({ done: true }),
    maxRuns = Infinity,
    retry = (fn) => fn(),
  } = opts;
  const { store, queue, timer } = backend;
  const stats = { runs: 0, completed: 0, skipped: 0, claims: 0, emptyClaims: 0, checkpoints: 0, ms: 0 };
  const t0 = performance.now();

  const tick = async (lease) => {
    const snap = await retry(() => store.loadRun(lease.runId));
    if (!snap || TERMINAL.has(snap.run.status)) {
      stats.skipped += 1;
      await retry(() => queue.ack(lease));
      return;
    }
    const attempt = await retry(() => store.markRunning(lease.runId));
    for (let i = 0; i < steps; i++) {
      const cursorKey = `s${i}`;
      if (snap.steps.has(cursorKey)) continue;
      const c = {
        runId: lease.runId,
        cursorKey,
        status: 'ok',
        result: result(lease.runId, i),
        attempts: attempt,
        shape: `step:s${i}`,
      };
      await retry(() => store.checkpointStep(c));
      stats.checkpoints += 1;
    }
    const outcome = { status: 'done', output: output(lease.runId) };
    await retry(() => store.markTerminal(lease.runId, outcome));
    stats.completed += 1;
    await retry(() => queue.ack(lease));
  };

  const loop = async () => {
    while (stats.runs < maxRuns) {
      if (dueBatch) {
        const due = await retry(() => timer.dueBatch({ limit: batch }));
        await Promise.all(due.map((id) => retry(() => queue.enqueue(id))));
      }
      const leases = await retry(() => queue.claim({ limit: batch, leaseMs }));
      stats.claims += 1;
      if (leases.length === 0) {
        stats.emptyClaims += 1;
        return;
      }
      for (const lease of leases) {
        stats.runs += 1;
        await tick(lease);
      }
    }
  };

  await Promise.all(Array.from({ length: Math.max(1, loops) }, loop));
  stats.ms = performance.now() - t0;
  return stats;
}

/** `createRuns` then `drainRuns`; returns the drain stats plus the created `ids`. */
export async function runEngineShaped(backend, { n, ...opts } = {}) {
  const ids = await createRuns(backend, { n, ...opts });
  const stats = await drainRuns(backend, opts);
  return { ...stats, ids };
}
