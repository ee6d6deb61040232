#!/usr/bin/env node
// Push, part 2 of 2: submit runs to the idle worker of examples/push-worker.mjs (another process)
// and hear of each one's end at once, the way core's engine.result() waits: read the run, then
// `backend.wakeup.wait(runId, POLL_MS)` between reads. With a listener that wait returns when the
// run turns terminal in any process; without one only when POLL_MS has passed.
//
//   MYSQL_URL=mysql://user:pw@host:3306/db node examples/push-submitter.mjs
//
// Environment: MYSQL_URL (required; the same database as the worker), RUNS (default 3),
// POLL_MS (the re-read interval; core's 500), PAUSE_MS (between runs, default 2000: the worker is
// idle again by then), PUSH=0 (no listener, to compare). Exit code 0 when every run ended `done`.
import { PUSH, TERMINAL, intFromEnv, logAs, openBackend } from './push-common.mjs';

const TIMEOUT_MS = 60_000;

const RUNS = intFromEnv('RUNS', 3);
const POLL_MS = intFromEnv('POLL_MS', 500);
const PAUSE_MS = intFromEnv('PAUSE_MS', 2000);

const log = logAs('submitter');

const { sql, listener, backend } = await openBackend('submitter');

/** core's result(): the row, else a wait on the wakeup, until terminal or the timeout. */
async function result(runId) {
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    const row = await backend.store.loadRunRow(runId);
    if (TERMINAL.includes(row?.status)) return row;
    if (Date.now() >= deadline) return row;
    await backend.wakeup.wait(runId, Math.min(POLL_MS, deadline - Date.now()));
  }
}

log(`submitting ${RUNS} run(s) (push ${PUSH ? 'on' : 'off'}, re-read every ${POLL_MS} ms)`);
let done = 0;
for (let i = 0; i < RUNS; i++) {
  if (i > 0) await new Promise((r) => setTimeout(r, PAUSE_MS));
  const name = `run ${i + 1}`;
  const { runId } = await backend.store.startRun({ name: 'greet', version: 1, input: { name } });
  const submitted = Date.now();
  await backend.queue.enqueue(runId);
  log(`submitted ${runId}`);
  const row = await result(runId);
  const ms = Date.now() - submitted;
  if (row?.status === 'done') {
    done++;
    log(`run ${runId} done ${ms} ms after the submit: ${JSON.stringify(row.output)}`);
  } else log(`run ${runId} is ${row?.status ?? 'missing'} after ${ms} ms`);
}

await listener?.close();
await sql.close();
log(`${done}/${RUNS} runs done`);
process.exitCode = done === RUNS ? 0 : 1;
