// Completion push: a waiter on `wakeup.wait(runId)` — core's result() loop, here with a 10 s poll
// so that only push can end it early — in one process hears of a run finished in another; and
// `watch(runId)` yields the run's statuses as they change, ending with the terminal one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import m from '../../index.js';
import { closeAdmin } from '../helpers/db.mjs';
import { forkChild, pushDatabase, sleep } from './helpers.mjs';

const LONG = 10_000;
const PROMPT_MS = 3000;

test.after(closeAdmin);

test('result() in a child returns soon after another process finishes the run', { timeout: 60_000 }, async (t) => {
  const env = await pushDatabase('push_done', undefined, { ring: true }); // its markTerminal rings
  const child = await forkChild(env.db.url);
  try {
    const runId = await env.run();
    child.send({ type: 'result', runId, timeoutMs: 30_000, pollMs: LONG });
    await sleep(300); // the child has read the pending row and waits
    const doneAt = Date.now();
    await env.backend.store.markTerminal(runId, { status: 'done', output: 42 });
    const settled = await child.next('settled', LONG + 5000);
    t.diagnostic(`result() returned ${settled.at - doneAt} ms after markTerminal resolved`);
    assert.equal(settled.status, 'done');
    assert.ok(settled.at - doneAt < PROMPT_MS, `returned ${settled.at - doneAt} ms after the run ended`);
  } finally {
    await child.close();
    await env.close();
  }
});

test('watch(runId) yields each new status once, then ends after the terminal one', { timeout: 60_000 }, async () => {
  const env = await pushDatabase('push_watch');
  const sql = m.mysqlPool(env.db.url);
  const listener = m.createMysqlListener(sql);
  try {
    const runId = await env.run();
    const seen = [];
    const reading = (async () => {
      for await (const ev of listener.watch(runId)) seen.push(ev);
    })();
    const until = async (n) => {
      for (const end = Date.now() + LONG; seen.length < n && Date.now() < end; ) await sleep(5);
    };
    await until(1);
    await env.backend.store.markRunning(runId);
    await until(2);
    await env.backend.store.markTerminal(runId, { status: 'failed', error: { code: 'X', message: 'x' } });
    await reading;
    assert.deepEqual(
      seen.map((e) => [e.runId, e.type, e.status]),
      [
        [runId, 'status', 'pending'],
        [runId, 'status', 'running'],
        [runId, 'status', 'failed'],
      ],
    );
  } finally {
    await listener.close();
    await sql.close();
    await env.close();
  }
});
