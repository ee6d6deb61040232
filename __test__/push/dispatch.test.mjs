// Dispatch push across processes: a child's idle waitForWork (10 s timeout) is released by work
// that another process makes claimable — a plain enqueue, a spawn through an outbox, a timer
// falling due — and a wake that lands while the child is busy (nobody waiting) is not lost.
// Each test has its own child (a listener with default options unless said) and its own database.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeAdmin } from '../helpers/db.mjs';
import { WAYS, sleep, withChild } from './helpers.mjs';

const LONG = 10_000;
// "Well before the timeout": generous for a loaded 2-core box and a debug build.
const PROMPT_MS = 3000;
/** The child's longest park in the tests where no ring comes: well inside PROMPT_MS. */
const UNRUNG_INTERVAL_MS = 500;

test.after(closeAdmin);

for (const [way, make] of Object.entries(WAYS)) {
  test(`work made by ${way} in another process wakes an idle waitForWork(10 s)`, { timeout: 60_000 }, async (t) => {
    await withChild(
      'push_dispatch',
      async (env, child) => {
        child.send({ type: 'wait', timeoutMs: LONG });
        await sleep(300); // the child is waiting now, and has probed a few times finding nothing
        const madeAt = Date.now();
        await make(env);
        const woke = await child.next('woke', LONG + 5000);
        t.diagnostic(`woke ${woke.at - madeAt} ms after the work was committed (waited ${woke.ms} ms)`);
        assert.ok(woke.ms < LONG - 1000, `resolved by work, not by its timeout (waited ${woke.ms} ms)`);
        assert.ok(woke.at - madeAt < PROMPT_MS, `woke ${woke.at - madeAt} ms after the work appeared`);
      },
      // The submitter has no listener, so nothing rings: the child's park ends at intervalMs and
      // its look finds the work (the path of work made by a process without a listener).
      { childEnv: { PUSH_INTERVAL_MS: String(UNRUNG_INTERVAL_MS) } },
    );
  });
}

// The latch, across processes. The work stays in the table, so any later probe finds it again: a
// latch is only seen to matter when the next probe is far off. The child probes every
// LATCH_INTERVAL_MS; its first probe ends just before it says 'ready', and the tick starts then.
// The probe at ≈ LATCH_INTERVAL_MS finds the job while the child is busy (nobody waits): kept, the
// wait after the tick returns at once; dropped, it would last until the probe at ≈ 2 ×
// LATCH_INTERVAL_MS, ≈ 1.5 s after the tick.
const LATCH_INTERVAL_MS = 2000;
const LATCH_TICK_MS = 2500;
// Well before the child's next look (intervalMs 2000): a kept wake, not the next park or probe.
const LATCH_PROMPT_MS = 1500;

test(
  'a wake that lands while the child is busy (nobody waiting) is kept for its next waitForWork',
  { timeout: 60_000 },
  async (t) => {
    await withChild(
      'push_latch',
      async (env, child) => {
        child.send({ type: 'tick', ms: LATCH_TICK_MS }); // busy, then waitForWork(10 s)
        await sleep(200);
        await env.backend.queue.enqueue(await env.run());
        await child.next('ticked');
        const woke = await child.next('woke', LONG + 5000);
        t.diagnostic(`the wait after the tick returned in ${woke.ms} ms`);
        assert.ok(woke.ms < LATCH_PROMPT_MS, `the wait after the tick returned in ${woke.ms} ms, not at once`);
      },
      { childEnv: { PUSH_INTERVAL_MS: String(LATCH_INTERVAL_MS) } },
    );
  },
);
