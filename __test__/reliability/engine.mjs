// A small engine-shaped driver over the ports (docs/contract.md §11.1, reduced): claim → loadRun →
// markRunning → N × checkpointStep → markTerminal → ack. Used in-process by lost-connections.test.mjs
// and in child processes by fixtures/worker.mjs.
//
// Every run's terminal output records the lease token that wrote it, so a test can tell which
// markTerminal call's write is the one stored.

export const TERMINAL = new Set(['done', 'failed', 'canceled']);
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Drives one leased run to `done`. `hooks.afterStep(runId, i)` may await (used to hold a worker
 * mid-run). Returns 'gone' | 'terminal' | 'done'; rejects if any backend call rejects.
 */
export async function driveLease(backend, lease, { steps = 3, hooks = {}, onCall } = {}) {
  const { store, queue } = backend;
  const call = onCall || ((name, p) => p);
  const runId = lease.runId;
  const snap = await call('loadRun', store.loadRun(runId));
  if (!snap) {
    await call('ack', queue.ack(lease));
    return 'gone';
  }
  if (TERMINAL.has(snap.run.status)) {
    await call('ack', queue.ack(lease));
    return 'terminal';
  }
  const attempt = await call('markRunning', store.markRunning(runId));
  for (let i = 0; i < steps; i++) {
    const key = `s${i}`;
    if (snap.steps.has(key)) continue; // memoized by an earlier attempt
    await call(
      'checkpointStep',
      store.checkpointStep({
        runId,
        cursorKey: key,
        status: 'ok',
        result: { i, token: lease.token },
        attempts: attempt,
        shape: `step:${key}`,
      }),
    );
    if (hooks.afterStep) await hooks.afterStep(runId, i);
  }
  await call('markTerminal', store.markTerminal(runId, { status: 'done', output: { token: lease.token, attempt } }));
  if (hooks.afterTerminal) await hooks.afterTerminal(runId, lease.token);
  await call('ack', queue.ack(lease));
  return 'done';
}

/**
 * A worker loop: claims up to `limit` leases and drives them one by one until `shouldStop()`.
 * Errors are counted through `onError(err, where)` and followed by a short back-off; the lease of a
 * run that failed mid-way is simply abandoned (it expires and is re-claimed, as in core).
 */
export async function workerLoop(
  backend,
  {
    limit = 5,
    leaseMs = 5000,
    steps = 3,
    idleMs = 20,
    errorBackoffMs = 30,
    shouldStop,
    onError = () => {},
    hooks,
    onCall,
    onDriven = () => {},
  },
) {
  while (!shouldStop()) {
    let leases;
    try {
      leases = await (onCall
        ? onCall('claim', backend.queue.claim({ limit, leaseMs }))
        : backend.queue.claim({ limit, leaseMs }));
    } catch (e) {
      onError(e, 'claim');
      await sleep(errorBackoffMs);
      continue;
    }
    if (leases.length === 0) {
      await sleep(idleMs);
      continue;
    }
    for (const lease of leases) {
      if (shouldStop()) break;
      try {
        onDriven(lease, await driveLease(backend, lease, { steps, hooks, onCall }));
      } catch (e) {
        onError(e, lease.runId);
        await sleep(errorBackoffMs);
      }
    }
  }
}

/** One reconcile pass (core's `reconcile`): enqueue every orphan. Returns how many. */
export async function reconcile(backend, limit = 500) {
  const ids = await backend.store.orphanedRuns(limit);
  for (const id of ids) await backend.queue.enqueue(id);
  return ids.length;
}
