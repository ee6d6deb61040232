#!/usr/bin/env node
// Push, part 1 of 2: an idle worker that starts a run the moment another process submits it.
// Run it, then examples/push-submitter.mjs in a second terminal (docs/push.md; examples/README.md):
//
//   MYSQL_URL=mysql://user:pw@host:3306/db node examples/push-worker.mjs
//
// The worker loop follows core's engine.run(): after a tick that claimed nothing it waits, doubling
// the wait from TICK_MS up to 8 × TICK_MS; with a listener that wait is
// `backend.queue.waitForWork(ms)`, which returns as soon as work appears in any process.
//
// Environment: MYSQL_URL (required; the tables are created if missing), TICK_MS (core's 200),
// EXIT_AFTER (exit 0 after this many runs; default: until Ctrl-C), PUSH=0 (no listener: the
// engine's plain polling, to compare).
import { PUSH, TERMINAL, intFromEnv, logAs, openBackend } from './push-common.mjs';

const FLOW = 'greet'; // the flow of examples/push-submitter.mjs

const TICK_MS = intFromEnv('TICK_MS', 200);
const EXIT_AFTER = intFromEnv('EXIT_AFTER', Infinity);

const log = logAs('worker');

const { sql, listener, backend } = await openBackend('worker');
const { store, queue, timer, wakeup } = backend;

/** One leased run of `greet`: one step, then done (true). A run of another flow is parked, not ours. */
async function runLease(lease) {
  const snap = await store.loadRun(lease.runId);
  if (!snap || TERMINAL.includes(snap.run.status)) {
    await queue.ack(lease);
    return false;
  }
  if (snap.run.name !== FLOW) {
    const fireAt = new Date(Date.now() + 3_600_000);
    await store.suspendRun(snap.run.id, 'retrying', { timers: [{ runId: snap.run.id, fireAt }] });
    await queue.ack(lease);
    return false;
  }
  const attempt = await store.markRunning(snap.run.id);
  log(`started run ${snap.run.id} (${JSON.stringify(snap.run.input)})`);
  const greeting = snap.steps.get('s0')?.result ?? `hello, ${snap.run.input?.name ?? 'world'}`;
  if (!snap.steps.has('s0')) {
    await store.checkpointStep({
      runId: snap.run.id,
      cursorKey: 's0',
      status: 'ok',
      result: greeting,
      attempts: attempt,
      shape: 'step:greet',
    });
  }
  await store.markTerminal(snap.run.id, { status: 'done', output: { greeting } });
  await wakeup.signal(snap.run.id); // this process's result() waiters; other processes hear it by push
  await queue.ack(lease);
  log(`finished run ${snap.run.id}`);
  return true;
}

const stop = new AbortController();
for (const sig of ['SIGINT', 'SIGTERM']) process.once(sig, () => stop.abort());

log(`waiting for work (push ${PUSH ? 'on' : 'off: polling'}, tick ${TICK_MS} ms)`);
let done = 0;
let idleMs = TICK_MS;
while (!stop.signal.aborted && done < EXIT_AFTER) {
  const due = await timer.dueBatch({ limit: 20 });
  await Promise.all(due.map((id) => queue.enqueue(id)));
  const leases = await queue.claim({ limit: 20, leaseMs: 30_000 });
  for (const lease of leases) {
    if (await runLease(lease)) done++;
  }
  idleMs = leases.length > 0 ? TICK_MS : Math.min(idleMs * 2, TICK_MS * 8);
  if (leases.length >= 20 || done >= EXIT_AFTER) continue;
  const waitT0 = Date.now();
  if (queue.waitForWork) await queue.waitForWork(idleMs, stop.signal);
  else await new Promise((r) => setTimeout(r, idleMs));
  const waited = Date.now() - waitT0;
  if (waited < idleMs - 1 && !stop.signal.aborted) log(`woken after ${waited} ms of a ${idleMs} ms idle wait`);
}

await listener?.close();
await sql.close();
log(`stopped after ${done} run(s)`);
