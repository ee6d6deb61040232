// Retention through the engine's prune (docs/contract.md §11.2 prune, §3.16 deleteRunsOlderThan).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, T } from './fixture.mjs';

const ctx = setup('eng_retention');

const DAY = 86_400_000;

function engine() {
  const e = ctx.engine({ maxAttempts: 1 });
  e.register('ok', 1, async (c, n) => {
    await c.step('a', () => n);
    return c.step('b', () => n + 1);
  });
  e.register('bad', 1, async (c) => {
    await c.step('a', () => 1);
    return c.step('b', () => {
      throw new Error('nope');
    });
  });
  e.register('sleepy', 1, async (c) => {
    await c.step('a', () => 1);
    await c.sleep(30 * DAY);
    return 'late';
  });
  e.register('waits', 1, async (c) => c.waitForSignal('go'));
  e.register('parent', 1, async (c) => c.invoke('sleepy', 1, null));
  return e;
}

const perRun = async (table, id) => ctx.count(table, 'run_id = ?', [id]);

test('prune deletes old terminal runs with their steps, signals, jobs and timers; live and recent runs survive', async () => {
  const e = engine();
  // day 0: old runs
  const oldDone = (await e.submit('ok', 1, 1)).runId;
  const oldFailed = (await e.submit('bad', 1, null)).runId;
  const oldCanceled = (await e.submit('waits', 1, null)).runId;
  const oldSleeping = (await e.submit('sleepy', 1, null)).runId;
  const oldWaiting = (await e.submit('waits', 1, null)).runId;
  const oldParent = (await e.submit('parent', 1, null)).runId;
  await ctx.quiesce(e);
  await e.cancelRun(oldCanceled);
  // a late signal to the done run leaves a signal row and a job row behind
  await e.signal(oldDone, 'late', 1);
  // a pending signal on the waiting run (other name) stays with the live run
  await e.signal(oldWaiting, 'other', 2);
  await ctx.quiesce(e);
  const [oldChild] = await ctx.childIds(oldParent);

  assert.equal(await ctx.status(oldDone), 'done');
  assert.equal(await ctx.status(oldFailed), 'failed');
  assert.equal(await ctx.status(oldCanceled), 'canceled');
  assert.equal(await ctx.status(oldSleeping), 'sleeping');
  assert.equal(await ctx.status(oldWaiting), 'awaiting_signal');
  assert.equal(await perRun('step', oldDone), 2);
  assert.equal(await perRun('step', oldFailed), 1);
  assert.equal(await perRun('signal', oldDone), 1);
  await e.signal(oldDone, 'later', 3); // enqueued, not yet acked
  assert.ok(await ctx.job(oldDone));

  // day 5: recent runs
  ctx.clock.set(T + 5 * DAY);
  const newDone = (await e.submit('ok', 1, 5)).runId;
  await ctx.quiesce(e);
  assert.equal(await ctx.status(newDone), 'done');
  assert.equal(Number((await ctx.runRow(newDone)).created_at), T + 5 * DAY, 'createdAt from the engine clock');

  // day 8: keep 7 days ⇒ cut-off day 1
  ctx.clock.set(T + 8 * DAY);
  assert.equal(await e.prune(7 * DAY), 3);
  for (const id of [oldDone, oldFailed, oldCanceled]) {
    assert.equal(await ctx.runRow(id), undefined, `run ${id} deleted`);
    for (const t of ['step', 'signal', 'job', 'timer']) assert.equal(await perRun(t, id), 0, `${t} rows of ${id}`);
  }
  // live ones keep everything
  assert.equal(await ctx.status(oldSleeping), 'sleeping');
  assert.equal(await perRun('step', oldSleeping), 2);
  assert.equal(await ctx.timerOf(oldSleeping), T + 30 * DAY);
  assert.equal(await ctx.status(oldWaiting), 'awaiting_signal');
  assert.equal(await perRun('signal', oldWaiting), 1);
  assert.equal(await ctx.status(oldParent), 'awaiting_child');
  assert.equal(await ctx.status(oldChild), 'sleeping');
  assert.equal(await ctx.status(newDone), 'done');
  assert.equal(await perRun('step', newDone), 2);
  assert.equal(await e.prune(7 * DAY), 0, 'second sweep finds nothing');

  // the survivors still run to completion after the prune
  ctx.clock.set(T + 31 * DAY);
  await ctx.quiesce(e);
  assert.equal(await e.result(oldSleeping), 'late');
  assert.equal(await e.result(oldParent), 'late');
  await e.signal(oldWaiting, 'go', 'finally');
  await ctx.quiesce(e);
  assert.equal(await e.result(oldWaiting), 'finally');
});

test('prune pages with its limit, oldest first; the cut-off is strict', async () => {
  const e = engine();
  const ids = [];
  for (let i = 0; i < 5; i++) {
    ctx.clock.set(T + i * DAY);
    ids.push((await e.submit('ok', 1, i)).runId);
    await ctx.quiesce(e);
  }
  ctx.clock.set(T + 10 * DAY);
  // cut-off T + 3 days (strict): runs of days 0, 1, 2
  assert.equal(await e.prune(7 * DAY, 2), 2);
  assert.equal(await ctx.runRow(ids[0]), undefined);
  assert.equal(await ctx.runRow(ids[1]), undefined);
  assert.ok(await ctx.runRow(ids[2]));
  assert.equal(await e.prune(7 * DAY, 2), 1);
  assert.equal(await e.prune(7 * DAY, 2), 0);
  assert.ok(await ctx.runRow(ids[3]), 'created exactly at the cut-off: kept');
  assert.equal(await ctx.count('run'), 2);
  assert.equal(await ctx.count('step'), 4);
});

test('pruning a finished parent leaves a still-running child with a dangling parent id; it still completes', async () => {
  const e = engine();
  const parent = (await e.submit('parent', 1, null)).runId;
  await ctx.quiesce(e);
  const [child] = await ctx.childIds(parent);
  // the parent is finished behind the engine's back; the child sleeps on (timer at T + 30 days)
  await e.backend.store.markTerminal(parent, { status: 'done', output: 'early' });
  ctx.clock.set(T + 40 * DAY);
  assert.equal(await e.prune(DAY), 1);
  assert.equal(await ctx.runRow(parent), undefined);
  assert.equal((await ctx.runRow(child)).parent_run_id, parent);
  assert.equal(await ctx.status(child), 'sleeping');
  assert.deepEqual(await e.reconcile(), [], 'a gone parent does not make an orphan');
  await ctx.quiesce(e);
  assert.equal(await e.result(child), 'late', 'a gone parent does not cancel the child');
});
