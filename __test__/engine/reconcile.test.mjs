// Reconcile (docs/contract.md §11.2 reconcile, §8 orphans) healing lost work, driven through the
// engine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, dropEnqueues } from './fixture.mjs';

const ctx = setup('eng_reconcile');

test('case A: a pending run never enqueued (crash between startRun and enqueue) is found and run', async () => {
  const e = ctx.engine();
  e.register('work', 1, async (c, n) => c.step('x', () => n + 1));
  const { runId } = await e.backend.store.startRun({ name: 'work', version: 1, input: 1 });
  assert.equal(await ctx.quiesce(e), 0, 'nothing claimable');
  assert.equal(await ctx.status(runId), 'pending');
  assert.deepEqual(await e.reconcile(), [runId]);
  assert.ok(await ctx.job(runId));
  assert.deepEqual(await e.reconcile(), [], 'once enqueued it is no longer an orphan');
  await ctx.quiesce(e);
  assert.equal(await e.result(runId), 2);
});

test('case B: an awaiting_child parent whose children are all done but whose wake was lost', async () => {
  let parentId;
  let dropParent = false;
  const e = ctx.engine({ wrap: (b) => dropEnqueues(b, (id) => dropParent && id === parentId) });
  e.register('leaf', 1, async (c, n) => c.step('x', () => n * 3));
  e.register('root', 1, async (c) => {
    const outs = await c.all([1, 2].map((n) => ({ flow: 'leaf', version: 1, input: n })));
    return outs[0] + outs[1];
  });
  ({ runId: parentId } = await e.submit('root', 1, null));
  await e.tickOnce({ batchMax: 1 });
  assert.equal(await ctx.status(parentId), 'awaiting_child');
  dropParent = true; // the wake from the last child is lost
  await ctx.quiesce(e);
  dropParent = false;
  const kids = await ctx.childIds(parentId);
  for (const k of kids) assert.equal(await ctx.status(k), 'done');
  assert.equal(Number((await ctx.runRow(parentId)).join_remaining), 0);
  assert.equal(await ctx.job(parentId), undefined);
  assert.equal(await ctx.status(parentId), 'awaiting_child', 'stuck');

  assert.deepEqual(await e.reconcile(), [parentId]);
  await ctx.quiesce(e);
  assert.equal(await e.result(parentId), 9);
  assert.deepEqual(await e.reconcile(), []);
});

test('case B negative: a parent whose children still run is not touched', async () => {
  const e = ctx.engine();
  e.register('nap', 1, async (c) => c.sleep(3_600_000));
  e.register('waiter', 1, async (c) => c.invoke('nap', 1, null));
  const { runId } = await e.submit('waiter', 1, null);
  await ctx.quiesce(e);
  assert.equal(await ctx.status(runId), 'awaiting_child');
  assert.deepEqual(await e.reconcile(), []);
});

test('case A: a running run whose job row vanished (worker crash after markRunning) is re-driven', async () => {
  const e = ctx.engine();
  let execs = 0;
  e.register('work', 1, async (c) => {
    const a = await c.step('a', () => ++execs);
    return c.step('b', () => a * 10);
  });
  const { runId } = await e.submit('work', 1, null);
  // a worker claims it, marks it running, checkpoints step a, then "dies" and its job row is lost
  const [lease] = await e.backend.queue.claim({ limit: 1, leaseMs: 600_000, now: ctx.clock.now() });
  assert.equal(await e.backend.store.markRunning(runId), 1);
  await e.backend.store.checkpointStep({
    runId,
    cursorKey: 's0',
    status: 'ok',
    result: 7,
    attempts: 1,
    shape: 'step:a',
  });
  await ctx.sql.query(`DELETE FROM ${ctx.t.job} WHERE run_id = ?`, [lease.runId]);

  assert.equal(await ctx.status(runId), 'running');
  assert.deepEqual(await e.reconcile(), [runId]);
  await ctx.quiesce(e);
  assert.equal(await e.result(runId), 70, 'resumed from the memo of the dead worker');
  assert.equal(execs, 0, 'step a was not re-executed');
  assert.equal(Number((await ctx.runRow(runId)).attempts), 2, 'second markRunning of the same streak');
});

test('a crashed worker keeps its lease: the run is re-claimed once the lease expires (no reconcile needed)', async () => {
  const e = ctx.engine({ leaseMs: 30_000 });
  e.register('work', 1, async (c) => c.step('a', () => 'ok'));
  const { runId } = await e.submit('work', 1, null);
  await e.backend.queue.claim({ limit: 1, leaseMs: 30_000, now: ctx.clock.now() });
  await e.backend.store.markRunning(runId);
  assert.deepEqual(await e.reconcile(), [], 'a leased job is not an orphan');
  assert.equal(await ctx.quiesce(e), 0, 'still leased');
  ctx.clock.advance(30_000);
  await ctx.quiesce(e);
  assert.equal(await e.result(runId), 'ok');
});

test('case A: a retrying run whose timer was lost is re-driven', async () => {
  const e = ctx.engine();
  let n = 0;
  e.register('flaky', 1, async (c) =>
    c.step('x', () => {
      if (++n === 1) throw new Error('first time');
      return n;
    }),
  );
  const { runId } = await e.submit('flaky', 1, null);
  await ctx.quiesce(e);
  assert.equal(await ctx.status(runId), 'retrying');
  assert.ok(await ctx.timerOf(runId));
  await ctx.sql.query(`DELETE FROM ${ctx.t.timer} WHERE run_id = ?`, [runId]);
  assert.deepEqual(await e.reconcile(), [runId]);
  await ctx.quiesce(e);
  assert.equal(await e.result(runId), 2);
});

test('reconcile honours its limit and returns oldest first', async () => {
  const e = ctx.engine();
  e.register('w', 1, async () => 1);
  const ids = [];
  for (let i = 0; i < 5; i++) ids.push((await e.backend.store.startRun({ name: 'w', version: 1, input: i })).runId);
  assert.deepEqual(await e.reconcile({ limit: 2 }), ids.slice(0, 2));
  assert.deepEqual(await e.reconcile({ limit: 10 }), ids.slice(2));
  await ctx.quiesce(e);
  assert.equal(await ctx.count('run', "status = 'done'"), 5);
});
