// Thread hand-offs per call (src/node/eager.rs): a call made while no other is in flight is polled
// first on the JS thread — its query written there — and reaches the tokio worker only when its
// answer arrives, so the JS thread does not wake the worker to start it. Counted, not timed: the
// worker is woken through an eventfd, one write(2) each, and /proc counts a thread's write(2)
// calls (`syscw`; socket sends are not among them). Also: such a call that first has to wait for
// a connection is resumed when one comes back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';

import { mysqlPool, useDatabase, within } from './helpers.mjs';

const ctx = useDatabase('sql_handoffs');
const CALLS = 100;
const BATCHES = 5;
const IO = `/proc/self/task/${process.pid}/io`;

/** write(2) calls of the JS (main) thread so far. */
function mainThreadWrites() {
  return Number(/^syscw:\s+(\d+)$/m.exec(readFileSync(IO, 'utf8'))[1]);
}

test(
  'sequential calls do not wake the tokio worker to start (their first poll runs on the JS thread)',
  { skip: !existsSync(IO) && 'needs per-thread I/O accounting in /proc (Linux)' },
  async (t) => {
    const { sql } = ctx;
    for (let i = 0; i < 20; i++) await sql.query('SELECT 1'); // connection open and warm
    // Spawned on the runtime, a call wakes the parked worker: ≈ 1 write per call (≈ 0.5 on a busy
    // machine, where the worker is often not parked yet). Polled here first: none. The median of
    // several batches, so that a stray write of the process (a log line) cannot decide.
    const perBatch = [];
    for (let b = 0; b < BATCHES; b++) {
      const before = mainThreadWrites();
      for (let i = 0; i < CALLS; i++) await sql.query('SELECT ? AS i', [i]);
      perBatch.push((mainThreadWrites() - before) / CALLS);
    }
    const median = perBatch.sort((a, b) => a - b)[BATCHES >> 1];
    t.diagnostic(`main-thread write(2) calls per call: ${perBatch.join(', ')}`);
    assert.ok(median < 0.2, `main-thread write(2) calls per call: median ${median} (want < 0.2)`);
  },
);

test('a call whose first poll waits for a connection completes once one is returned', async () => {
  const one = mysqlPool(`${ctx.db.url}?connectionLimit=1&acquireTimeoutMs=5000`);
  try {
    let release;
    const held = new Promise((r) => (release = r));
    let entered;
    const inside = new Promise((r) => (entered = r));
    const tx = one.tx(async (t) => {
      await t.query('SELECT 1');
      entered();
      await held;
    });
    await inside;
    // No other call of this thread in flight: polled first here, it parks waiting for the pool.
    const waiting = one.query('SELECT 42 AS v');
    let settled = false;
    waiting.then(
      () => (settled = true),
      () => (settled = true),
    );
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(settled, false, 'the query waited for the only connection');
    release();
    await tx;
    const rows = await within(waiting, 5000, 'the waiting query');
    assert.deepEqual(rows, [{ v: 42 }]);
  } finally {
    await one.close();
  }
});
