// Thread hand-offs per call (src/node/eager.rs): a call made while no other is in flight is polled
// first on the JS thread — its query written there — and reaches the tokio worker only when its
// answer arrives, so the JS thread does not wake the worker to start it. Asserted on the decision
// itself (the addon counts how each call started), which no load on the machine can change; what
// it saves in wake-ups and CPU is measured by the bench (bench/README.md, "Two builds in one run",
// with IFW_EAGER_POLL=0 on one side). Also: such a call that first has to wait for a connection is
// resumed when one comes back.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import binding from '../../lib/binding.js';
import { mysqlPool, useDatabase, within } from './helpers.mjs';

const ctx = useDatabase('sql_handoffs');
const CALLS = 100;

/** Calls started so far: first polled on the JS thread, spawned on the runtime. */
const starts = () => ({ ...binding.firstPolls() });

test('sequential calls start on the JS thread; calls made while others are in flight go to the runtime', async () => {
  const { sql } = ctx;
  for (let i = 0; i < 20; i++) await sql.query('SELECT 1'); // connection open and warm
  let before = starts();
  for (let i = 0; i < CALLS; i++) await sql.query('SELECT ? AS i', [i]);
  let after = starts();
  assert.equal(after.here - before.here, CALLS, 'each call made alone was first polled here');
  assert.equal(after.spawned - before.spawned, 0, 'none was spawned');

  before = starts();
  await Promise.all(Array.from({ length: 10 }, (_, i) => sql.query('SELECT ? AS i', [i])));
  after = starts();
  assert.equal(after.here - before.here, 1, 'only the first of ten calls made together is polled here');
  assert.equal(after.spawned - before.spawned, 9, 'the others go to the runtime');
});

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
