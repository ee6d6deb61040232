// Signal wait and delivery through the engine (docs/contract.md §11.1 e/f, §11.2 signal, §12.9.4).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup } from './fixture.mjs';

const ctx = setup('eng_signal');

test('12.9.4 a flow waiting for a signal parks awaiting_signal, then completes with the payload', async () => {
  const e = ctx.engine();
  e.register('approval', 1, async (c, req) => {
    const prep = await c.step('prep', () => `req:${req}`);
    const decision = await c.waitForSignal('approve');
    return c.step('finish', () => ({ prep, decision }));
  });
  const { runId } = await e.submit('approval', 1, 7);
  await e.tickOnce();
  const row = await ctx.runRow(runId);
  assert.equal(row.status, 'awaiting_signal');
  assert.equal(Number(row.attempts), 0);
  assert.equal(await ctx.job(runId), undefined);
  assert.equal(await ctx.timerOf(runId), undefined);
  assert.deepEqual(
    (await ctx.steps(runId)).map((s) => s.shape),
    ['step:prep'],
  );

  // parked runs stay parked: time passes, ticks and reconcile find nothing
  ctx.clock.advance(3_600_000);
  assert.equal(await ctx.quiesce(e), 0);
  assert.deepEqual(await e.reconcile(), []);
  assert.equal(await ctx.status(runId), 'awaiting_signal');

  // a signal of another name does not satisfy the wait (and stays in the inbox)
  assert.deepEqual(await e.signal(runId, 'other', 'x'), { delivered: true });
  await ctx.quiesce(e);
  assert.equal(await ctx.status(runId), 'awaiting_signal');

  // delivery: stored, run enqueued, result() woken
  const waiting = e.result(runId, { pollMs: 5_000 });
  assert.deepEqual(await e.signal(runId, 'approve', { ok: true, by: 'ann' }, { idempotencyKey: 'd1' }), {
    delivered: true,
  });
  assert.equal(await ctx.count('signal', 'run_id = ?', [runId]), 2);
  assert.ok(await ctx.job(runId));
  await ctx.quiesce(e);
  assert.deepEqual(await waiting, { prep: 'req:7', decision: { ok: true, by: 'ann' } });

  const steps = await ctx.steps(runId);
  assert.deepEqual(
    steps.map((s) => [s.cursor_key, s.shape]),
    [
      ['s0', 'step:prep'],
      ['s1', 'signal:approve'],
      ['s2', 'step:finish'],
    ],
  );
  assert.deepEqual(steps[1].result, { ok: true, by: 'ann' });
  const inbox = await ctx.rows(`SELECT name FROM ${ctx.t.signal} WHERE run_id = ?`, [runId]);
  assert.deepEqual(
    inbox.map((s) => s.name),
    ['other'],
    'the consumed signal was deleted, the other one kept',
  );
  assert.equal(await ctx.count('job'), 0);
});

test('a signal posted before the wait is consumed on the first tick, in delivery order', async () => {
  const e = ctx.engine();
  e.register('collect', 1, async (c) => [
    await c.waitForSignal('n'),
    await c.waitForSignal('n'),
    await c.waitForSignal('n'),
  ]);
  const { runId } = await e.submit('collect', 1, null);
  await e.signal(runId, 'n', 1);
  await e.signal(runId, 'n', 2);
  await ctx.quiesce(e);
  assert.equal(await ctx.status(runId), 'awaiting_signal', 'two of three consumed, parked for the third');
  assert.equal(await ctx.count('signal'), 0);
  await e.signal(runId, 'n', 3);
  await ctx.quiesce(e);
  assert.deepEqual(await e.result(runId), [1, 2, 3]);
});

test('a duplicate delivery (same key) is ignored; the same key after consumption is accepted again', async () => {
  const e = ctx.engine();
  e.register('two', 1, async (c) => [await c.waitForSignal('go'), await c.waitForSignal('go')]);
  const { runId } = await e.submit('two', 1, null);
  await ctx.quiesce(e);
  assert.deepEqual(await e.signal(runId, 'go', 'a', { idempotencyKey: 'k' }), { delivered: true });
  assert.deepEqual(await e.signal(runId, 'go', 'b', { idempotencyKey: 'k' }), { delivered: false });
  await ctx.quiesce(e);
  assert.equal(await ctx.status(runId), 'awaiting_signal');
  // consumed ⇒ the key is forgotten (§3.7)
  assert.deepEqual(await e.signal(runId, 'go', 'c', { idempotencyKey: 'k' }), { delivered: true });
  await ctx.quiesce(e);
  assert.deepEqual(await e.result(runId), ['a', 'c']);
});

test('a signal arriving during the tick that parks the run is not lost (mid-lease enqueue ⇒ ack releases)', async () => {
  const e = ctx.engine();
  const sender = ctx.engine(); // another backend instance, as another process would be
  e.register('race', 1, async (c) => {
    // the snapshot was loaded before this step: the signal is invisible to this tick
    await c.step('poke', () => sender.signal(c.runId, 'go', 42).then(() => 'sent'));
    return c.waitForSignal('go');
  });
  const { runId } = await e.submit('race', 1, null);
  const first = await e.tickOnce({ batchMax: 1 });
  assert.deepEqual(first.results, [{ runId, result: 'signal' }]);
  assert.equal(await ctx.status(runId), 'awaiting_signal');
  const job = await ctx.job(runId);
  assert.ok(job, 'the ack released the job instead of deleting it');
  assert.equal(job.lease_token, null);
  assert.equal(Number(job.version), 2);
  await e.tickOnce();
  assert.equal(await e.result(runId), 42);
});

test('a signal to a terminal run is stored; the engine acks the wake without re-running', async () => {
  const e = ctx.engine();
  let execs = 0;
  e.register('fin', 1, async (c) => c.step('x', () => ++execs));
  const { runId } = await e.submit('fin', 1, null);
  await ctx.quiesce(e);
  assert.deepEqual(await e.signal(runId, 'late', 1), { delivered: true });
  const r = await e.tickOnce();
  assert.deepEqual(r.results, [{ runId, result: 'terminal' }]);
  assert.equal(execs, 1);
  assert.equal(await ctx.count('job'), 0);
  assert.equal(await ctx.count('signal'), 1);
});
