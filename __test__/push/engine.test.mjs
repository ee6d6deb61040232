// An idle resident engine loop (core's engine.run() semantics, fixtures/loop.mjs) in a child, its
// backend given a listener, starts a run submitted by another process promptly — where polling
// would have backed off to 8 × tickMs (1.6 s) by then.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeAdmin } from '../helpers/db.mjs';
import { forkChild, pushDatabase, sleep } from './helpers.mjs';

const RUNS = 5;
const PROMPT_MS = 500;

test.after(closeAdmin);

test(
  'an idle engine loop with a listener starts a run submitted elsewhere promptly',
  { timeout: 120_000 },
  async (t) => {
    const env = await pushDatabase('push_engine', undefined, { ring: true }); // a submitter with a listener rings
    const child = await forkChild(env.db.url);
    try {
      child.send({ type: 'engine' });
      const lags = [];
      for (let i = 0; i < RUNS; i++) {
        await sleep(3200); // long enough for a polling loop to reach its longest idle wait
        const runId = await env.run();
        const submittedAt = Date.now();
        await env.backend.queue.enqueue(runId);
        const started = await child.next('started', 15_000);
        assert.equal(started.runId, runId);
        lags.push(started.at - submittedAt);
      }
      t.diagnostic(`submit → first step start, ms: ${lags.join(', ')}`);
      for (const lag of lags) assert.ok(lag < PROMPT_MS, `started ${lag} ms after the submit (all: ${lags})`);
    } finally {
      await child.close();
      await env.close();
    }
  },
);
