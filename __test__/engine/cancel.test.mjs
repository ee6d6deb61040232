// Cancellation (docs/contract.md §11.3) and the parent-failed checks of §11.1 c / §12.9.5–7.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, T } from './fixture.mjs';

const ctx = setup('eng_cancel');

const HOUR = 3_600_000;

function family(e) {
  const execs = { grand: 0 };
  e.register('grand', 1, async (c) => {
    await c.sleep(10 * HOUR);
    return c.step('after', () => ++execs.grand);
  });
  e.register('kid', 1, async (c) => (await c.invoke('grand', 1, null)) + 1);
  e.register('top', 1, async (c) => (await c.invoke('kid', 1, null)) + 1);
  return execs;
}

test('12.9.5 canceling a parent (child → grandchild sleeping) cancels parent, child and grandchild', async () => {
  const e = ctx.engine();
  const execs = family(e);
  const { runId } = await e.submit('top', 1, null);
  await ctx.quiesce(e);
  const [kid] = await ctx.childIds(runId);
  const [grand] = await ctx.childIds(kid);
  assert.equal(await ctx.status(runId), 'awaiting_child');
  assert.equal(await ctx.status(kid), 'awaiting_child');
  assert.equal(await ctx.status(grand), 'sleeping');
  assert.equal(await ctx.timerOf(grand), T + 10 * HOUR);
  assert.equal(Number((await ctx.runRow(grand)).depth), 2);

  await e.cancelRun(runId);
  for (const id of [runId, kid, grand]) assert.equal(await ctx.status(id), 'canceled', id);
  assert.equal(await ctx.count('timer'), 0, "the grandchild's timer went with it");

  // nothing wakes them afterwards; a late child completion cannot resurrect the parent
  ctx.clock.advance(24 * HOUR);
  await ctx.quiesce(e);
  assert.deepEqual(await e.reconcile(), []);
  for (const id of [runId, kid, grand]) assert.equal(await ctx.status(id), 'canceled', id);
  assert.equal(execs.grand, 0);
  await assert.rejects(e.result(runId), (err) => err.status === 'canceled');
});

test('a cancel is sticky against a completion racing it (markTerminal guard)', async () => {
  const e = ctx.engine();
  e.register('selfcancel', 1, async (c) => {
    await c.step('cancel-me', () => e.cancelRun(c.runId).then(() => 1));
    return 'finished';
  });
  const { runId } = await e.submit('selfcancel', 1, null);
  await ctx.quiesce(e);
  const row = await ctx.runRow(runId);
  assert.equal(row.status, 'canceled');
  assert.equal(row.output, null, 'the done write after the cancel was ignored');
  assert.deepEqual(e.terminalWrites.get(runId), ['done'], 'the engine did issue it');
});

test('12.9.6 a child whose parent is already failed cancels itself when dispatched', async () => {
  const e = ctx.engine();
  let ran = 0;
  e.register('orphan', 1, async () => ++ran);
  const parent = await ctx.engine().backend.store.startRun({ name: 'gone', version: 1, input: null });
  await e.backend.store.markTerminal(parent.runId, { status: 'failed', error: { code: 'X', message: 'x' } });
  const child = await e.backend.store.startRun({
    name: 'orphan',
    version: 1,
    input: null,
    parentRunId: parent.runId,
    parentCursorKey: 's0',
    depth: 1,
  });
  await e.backend.queue.enqueue(child.runId);
  const r = await e.tickOnce();
  assert.deepEqual(r.results, [{ runId: child.runId, result: 'canceled' }]);
  assert.equal(await ctx.status(child.runId), 'canceled');
  assert.equal(Number((await ctx.runRow(child.runId)).attempts), 0, 'markRunning was never called');
  assert.equal(ran, 0);
  assert.equal(await ctx.count('job'), 0);
  assert.equal(await ctx.status(parent.runId), 'failed');
});

test('12.9.7 a sleeping child of a parent marked failed is re-driven by reconcile and canceled on the next tick', async () => {
  const e = ctx.engine();
  family(e);
  const { runId } = await e.submit('kid', 1, null);
  await ctx.quiesce(e);
  const [grand] = await ctx.childIds(runId);
  assert.equal(await ctx.status(grand), 'sleeping');

  // the parent fails behind the engine's back (no cascade)
  await e.backend.store.markTerminal(runId, { status: 'failed', error: { code: 'EXT', message: 'external' } });
  assert.equal(await ctx.quiesce(e), 0, 'nothing due yet');
  assert.deepEqual(await e.reconcile(), [grand], 'orphan case C');
  const r = await e.tickOnce();
  assert.deepEqual(r.results, [{ runId: grand, result: 'canceled' }]);
  assert.equal(await ctx.status(grand), 'canceled');
  assert.equal(await ctx.timerOf(grand), undefined);
  assert.deepEqual(await e.reconcile(), []);
});

test('canceling a direct child wakes nobody; reconcile (case B) then fails the parent and cancels the siblings', async () => {
  const e = ctx.engine();
  e.register('slow', 1, async (c, n) => {
    await c.sleep(HOUR * n);
    return n;
  });
  e.register('pair', 1, async (c) => c.all([1, 2, 3].map((n) => ({ flow: 'slow', version: 1, input: n }))));
  const { runId } = await e.submit('pair', 1, null);
  await ctx.quiesce(e);
  const kids = await ctx.childIds(runId);
  assert.equal(kids.length, 3);

  await e.cancelRun(kids[0]);
  assert.equal(await ctx.status(runId), 'awaiting_child');
  assert.equal(await ctx.quiesce(e), 0);
  assert.deepEqual(await e.reconcile(), [runId], 'fast-fail: one child canceled, siblings still live');
  await ctx.quiesce(e);
  const p = await ctx.runRow(runId);
  assert.equal(p.status, 'failed');
  assert.equal(JSON.parse(p.error).code, 'CHILD_FAILED');
  for (const k of kids) assert.equal(await ctx.status(k), 'canceled');
  assert.equal(await ctx.count('timer'), 0);
});
