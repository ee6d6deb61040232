// End-to-end runs through the mini engine (docs/contract.md §11.1): steps + durable sleep, the
// §12.11 builder flow and the §12.11.2 parent/child invoke, with the database state checked after
// each tick.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, T } from './fixture.mjs';
import { builder } from './mini-engine.mjs';

const ctx = setup('eng_basic');

test('multi-step run with a durable sleep: parks sleeping, wakes when the clock passes the timer', async () => {
  const e = ctx.engine();
  const calls = { a: 0, b: 0, c: 0 };
  e.register('trip', 1, async (c, input) => {
    const a = await c.step('a', () => (calls.a++, input.x + 1));
    await c.sleep(30_000);
    const b = await c.step('b', () => (calls.b++, a * 10));
    await c.sleep(0); // already due: no park
    const d = await c.step('c', () => (calls.c++, `${a}/${b}`));
    return { a, b, d };
  });
  const { runId, created } = await e.submit('trip', 1, { x: 4 });
  assert.equal(created, true);
  assert.equal(await ctx.status(runId), 'pending');
  assert.ok(await ctx.job(runId));

  // first tick: step a, sleep checkpoint, park
  const r1 = await e.tickOnce();
  assert.deepEqual(r1.results, [{ runId, result: 'sleep' }]);
  const row = await ctx.runRow(runId);
  assert.equal(row.status, 'sleeping');
  assert.equal(Number(row.attempts), 0, 'a sleeping park resets attempts');
  assert.equal(await ctx.timerOf(runId), T + 30_000);
  assert.equal(await ctx.job(runId), undefined, 'ack deleted the job (no mid-lease enqueue)');
  let steps = await ctx.steps(runId);
  assert.deepEqual(
    steps.map((s) => [s.cursor_key, s.shape]),
    [
      ['s0', 'step:a'],
      ['s1', 'sleep'],
    ],
  );
  assert.equal(steps[0].result, 5);
  assert.equal(steps[0].attempts, 1);
  assert.equal(steps[1].result, new Date(T + 30_000).toISOString());

  // not yet due
  ctx.clock.advance(29_999);
  assert.deepEqual(await e.tickOnce(), { due: 0, claimed: 0, results: [] });
  assert.equal(await ctx.status(runId), 'sleeping');

  // due (inclusive)
  ctx.clock.advance(1);
  const r2 = await e.tickOnce();
  assert.equal(r2.due, 1);
  assert.deepEqual(r2.results, [{ runId, result: 'done' }]);
  const done = await ctx.runRow(runId);
  assert.equal(done.status, 'done');
  assert.deepEqual(JSON.parse(done.output), { a: 5, b: 50, d: '5/50' });
  assert.equal(done.error, null);
  assert.equal(await ctx.timerOf(runId), undefined);
  assert.equal(await ctx.job(runId), undefined);
  steps = await ctx.steps(runId);
  assert.deepEqual(
    steps.map((s) => s.shape),
    ['step:a', 'sleep', 'step:b', 'sleep', 'step:c'],
  );
  assert.deepEqual(calls, { a: 1, b: 1, c: 1 }, 'memoized steps were replayed, not re-executed');
  assert.deepEqual(await e.result(runId), { a: 5, b: 50, d: '5/50' });
  assert.deepEqual(e.terminalWrites.get(runId), ['done']);
  assert.deepEqual(e.errors, []);

  // nothing left to do
  ctx.clock.advance(3_600_000);
  assert.equal(await ctx.quiesce(e), 0);
});

test('12.11.1 the builder flow completes with { doubled: 42, nap: "rested" }', async () => {
  const e = ctx.engine();
  e.register(
    'builder',
    1,
    builder()
      .step('doubled', (n) => n * 2)
      .sleep(5_000)
      .step('nap', () => 'rested')
      .build(),
  );
  const { runId } = await e.submit('builder', 1, 21);
  await e.tickOnce();
  assert.equal(await ctx.status(runId), 'sleeping');
  assert.equal(await ctx.timerOf(runId), T + 5_000);
  await ctx.drive(e, ctx.allTerminal([runId]), { advanceMs: 5_000 });
  assert.equal(ctx.clock.t, T + 5_000, 'completed on the first round after the 5 s timer');
  assert.deepEqual(await e.result(runId), { doubled: 42, nap: 'rested' });
  assert.deepEqual(
    (await ctx.steps(runId)).map((s) => s.shape),
    ['step:doubled', 'sleep', 'step:nap'],
  );
});

test('12.11.2 a parent invoking a child completes with the child output + 1 (51)', async () => {
  const e = ctx.engine();
  e.register('child', 1, async (c, n) => c.step('double', () => n * 2));
  e.register('parent', 1, async (c, n) => {
    const got = await c.invoke('child', 1, n);
    return c.step('inc', () => got + 1);
  });
  const { runId } = await e.submit('parent', 1, 25);

  // tick 1: the parent spawns the child and parks awaiting_child; the join is armed with 1
  await e.tickOnce({ batchMax: 1 });
  const p1 = await ctx.runRow(runId);
  assert.equal(p1.status, 'awaiting_child');
  assert.equal(Number(p1.join_remaining), 1);
  const [childId] = await ctx.childIds(runId);
  const child = await ctx.runRow(childId);
  assert.equal(child.status, 'pending');
  assert.equal(child.name, 'child');
  assert.equal(JSON.parse(child.input), 25);
  assert.equal(child.parent_cursor_key, 's0');
  assert.equal(Number(child.depth), 1);
  const s0 = (await ctx.steps(runId))[0];
  assert.equal(s0.shape, 'invoke:child@1');
  assert.equal(s0.result, childId, 'the memo holds the pre-generated child id');
  assert.ok(await ctx.job(childId), 'the spawn enqueued the child');
  assert.equal(await ctx.job(runId), undefined);

  // tick 2: the child completes, arrives at the join (0) and enqueues the parent
  await e.tickOnce({ batchMax: 1 });
  assert.equal(await ctx.status(childId), 'done');
  assert.equal(Number((await ctx.runRow(runId)).join_remaining), 0);
  assert.ok(await ctx.job(runId), 'parent woken');

  // tick 3: the parent resumes
  await e.tickOnce({ batchMax: 1 });
  assert.equal(await e.result(runId), 51);
  assert.equal(await e.result(childId), 50);
  assert.equal(await ctx.count('job'), 0);
  assert.equal(await ctx.count('run'), 2);
});

test('result() is woken by the engine wakeup when the run completes', async () => {
  const e = ctx.engine();
  e.register('quick', 1, async (c) => c.step('x', () => 'ok'));
  const { runId } = await e.submit('quick', 1, null);
  const started = Date.now();
  const waiting = e.result(runId, { pollMs: 5_000 });
  setTimeout(() => e.tickOnce(), 50);
  assert.equal(await waiting, 'ok');
  assert.ok(Date.now() - started < 4_000, 'resolved by wakeup.signal, not by the 5 s poll');
});

test('submit with an idempotency key creates once and does not re-enqueue', async () => {
  const e = ctx.engine();
  e.register('once', 1, async (c, n) => c.step('x', () => n));
  const a = await e.submit('once', 1, 1, { idempotencyKey: 'k' });
  await ctx.quiesce(e);
  const b = await e.submit('once', 1, 2, { idempotencyKey: 'k' });
  assert.equal(b.runId, a.runId);
  assert.equal(b.created, false);
  assert.equal(b.status, 'done');
  assert.equal(await ctx.job(a.runId), undefined);
  assert.equal(await e.result(a.runId), 1);
});

test('submitMany starts every spec in one call, enqueues only the created runs, and they complete', async () => {
  const e = ctx.engine();
  e.register('many', 1, async (c, n) => c.step('x', () => n * 2));
  const first = await e.submit('many', 1, 0, { idempotencyKey: 'dup' });
  await ctx.quiesce(e);
  const res = await e.submitMany([
    { name: 'many', version: 1, input: 1 },
    { name: 'many', version: 1, input: 2, idempotencyKey: 'dup' },
    { name: 'many', version: 1, input: 3, tags: ['bulk'] },
  ]);
  assert.deepEqual(
    res.map((r) => r.created),
    [true, false, true],
  );
  assert.equal(res[1].runId, first.runId);
  assert.equal(await ctx.job(first.runId), undefined, 'the existing run is not enqueued again');
  assert.ok(await ctx.job(res[0].runId));
  assert.ok(await ctx.job(res[2].runId));
  await ctx.quiesce(e);
  assert.equal(await e.result(res[0].runId), 2);
  assert.equal(await e.result(res[2].runId), 6);
  assert.deepEqual((await ctx.runRow(res[2].runId)).tags, '["bulk"]');
});
