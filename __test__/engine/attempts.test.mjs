// Attempt accounting, retries, unregistered flows and replay drift (docs/contract.md §11.1 b/d/f,
// §12.9.1–3). Driven like §12.9: batch 16, lease 600 s, 60 s per round, at most 200 rounds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, T } from './fixture.mjs';

const ctx = setup('eng_attempts');

test('12.9.1 a flow with 6 sleeps completes under maxAttempts 3 (forward-progress parks reset attempts)', async () => {
  const e = ctx.engine({ maxAttempts: 3 });
  e.register('sleeper', 1, async (c) => {
    let n = 0;
    for (let i = 0; i < 6; i++) {
      n = await c.step(`s${i}`, () => n + 1);
      await c.sleep(1_000);
    }
    return n;
  });
  const { runId } = await e.submit('sleeper', 1, null);
  const rounds = await ctx.drive(e, ctx.allTerminal([runId]));
  assert.equal(rounds, 6);
  assert.equal(await e.result(runId), 6);
  const attempts = e.events.filter((x) => x.type === 'running').map((x) => x.attempt);
  assert.deepEqual(attempts, [1, 1, 1, 1, 1, 1, 1], 'seven dispatches, each a fresh streak');
  assert.equal(await ctx.count('step', 'run_id = ?', [runId]), 12);
});

test('12.9.2 an always-throwing step ends failed under maxAttempts 2', async () => {
  const e = ctx.engine({ maxAttempts: 2 });
  let tries = 0;
  e.register('thrower', 1, async (c) => {
    await c.step('fine', () => 'ok');
    return c.step('boom', () => {
      tries++;
      throw Object.assign(new Error('always'), { code: 'ALWAYS' });
    });
  });
  const { runId } = await e.submit('thrower', 1, null);

  await e.tickOnce();
  let row = await ctx.runRow(runId);
  assert.equal(row.status, 'retrying');
  assert.equal(Number(row.attempts), 1, 'a retrying park keeps attempts');
  assert.equal(await ctx.timerOf(runId), T + 1_000, 'back-off base·2^0');
  assert.equal(await ctx.job(runId), undefined);

  await ctx.drive(e, ctx.allTerminal([runId]));
  row = await ctx.runRow(runId);
  assert.equal(row.status, 'failed');
  assert.equal(Number(row.attempts), 2);
  assert.deepEqual(JSON.parse(row.error), { code: 'ALWAYS', message: 'always' });
  assert.equal(tries, 2);
  assert.deepEqual(
    (await ctx.steps(runId)).map((s) => s.shape),
    ['step:fine'],
    'failed steps are never checkpointed',
  );
  assert.equal(await ctx.count('timer'), 0);
  assert.equal(await ctx.count('job'), 0);
});

test('12.9.3 a run pre-bumped 5 times by markRunning fails with RUN_ATTEMPTS_EXHAUSTED on its first tick (cap 3)', async () => {
  const e = ctx.engine({ maxAttempts: 3 });
  let ran = 0;
  e.register('capped', 1, async () => ++ran);
  const { runId } = await e.submit('capped', 1, null);
  for (let i = 1; i <= 5; i++) assert.equal(await e.backend.store.markRunning(runId), i);
  const r = await e.tickOnce();
  assert.deepEqual(r.results, [{ runId, result: 'failed' }]);
  const row = await ctx.runRow(runId);
  assert.equal(row.status, 'failed');
  assert.equal(Number(row.attempts), 6);
  assert.equal(JSON.parse(row.error).code, 'RUN_ATTEMPTS_EXHAUSTED');
  assert.equal(ran, 0, 'the body never ran');
  assert.equal(await ctx.count('job'), 0);
});

test('a step that fails once is retried after the back-off and its memo records the attempt', async () => {
  const e = ctx.engine({ maxAttempts: 5, baseDelayMs: 2_000 });
  let n = 0;
  e.register('flaky', 1, async (c) => {
    const v = await c.step('x', () => {
      if (++n < 3) throw new Error(`try ${n}`);
      return n;
    });
    return v;
  });
  const { runId } = await e.submit('flaky', 1, null);
  await e.tickOnce();
  assert.equal(await ctx.timerOf(runId), T + 2_000);
  ctx.clock.advance(1_999);
  assert.equal(await ctx.quiesce(e), 0);
  ctx.clock.advance(1);
  await ctx.quiesce(e);
  assert.equal(await ctx.status(runId), 'retrying');
  assert.equal(await ctx.timerOf(runId), T + 2_000 + 4_000, 'back-off base·2^1');
  ctx.clock.advance(4_000);
  await ctx.quiesce(e);
  assert.equal(await e.result(runId), 3);
  const [step] = await ctx.steps(runId);
  assert.equal(step.attempts, 3);
  assert.equal(Number((await ctx.runRow(runId)).attempts), 3);
});

test('a permanent error fails at once whatever the budget', async () => {
  const e = ctx.engine({ maxAttempts: 10 });
  e.register('perm', 1, async () => {
    throw Object.assign(new Error('bad input'), { code: 'BAD_INPUT', retryable: false });
  });
  const { runId } = await e.submit('perm', 1, null);
  await e.tickOnce();
  const row = await ctx.runRow(runId);
  assert.equal(row.status, 'failed');
  assert.equal(Number(row.attempts), 1);
});

test('unregistered flow: parks retrying (before markRunning) and re-parks with a new timer until registered', async () => {
  const e = ctx.engine();
  const { runId } = await e.submit('later', 2, 'x');
  await e.tickOnce();
  let row = await ctx.runRow(runId);
  assert.equal(row.status, 'retrying');
  assert.equal(Number(row.attempts), 0, 'markRunning not called');
  assert.equal(await ctx.timerOf(runId), T + 1_000);

  // second park into the same status must still write the timer (§13.3 matched rows)
  ctx.clock.advance(1_000);
  await ctx.quiesce(e);
  assert.equal(await ctx.status(runId), 'retrying');
  assert.equal(await ctx.timerOf(runId), T + 2_000, 're-suspending into the same status applied the outbox');
  assert.deepEqual(await e.reconcile(), []);

  e.register('later', 2, async (c, s) => c.step('up', () => s.toUpperCase()));
  ctx.clock.advance(1_000);
  await ctx.quiesce(e);
  assert.equal(await e.result(runId), 'X');
  assert.equal(Number((await ctx.runRow(runId)).attempts), 1);
});

test('replay drift: policy "park" parks retrying without touching the memo; policy "fail" fails', async () => {
  const e = ctx.engine();
  e.register('evolving', 1, async (c) => {
    await c.step('a', () => 1);
    await c.sleep(5_000);
    return c.step('b', () => 2);
  });
  const { runId } = await e.submit('evolving', 1, null);
  await e.tickOnce();
  assert.equal(await ctx.status(runId), 'sleeping');

  // the code changes under the same version: s0 is now a different step
  const changed = async (c) => {
    await c.step('renamed', () => 1);
    return 'never';
  };
  e.register('evolving', 1, changed);
  ctx.clock.advance(5_000);
  await ctx.quiesce(e);
  assert.equal(await ctx.status(runId), 'retrying');
  assert.ok(
    e.events.some((x) => x.type === 'drift' && x.key === 's0' && x.stored === 'step:a' && x.issued === 'step:renamed'),
  );
  assert.deepEqual(
    (await ctx.steps(runId)).map((s) => s.shape),
    ['step:a', 'sleep'],
  );

  const strict = ctx.engine({ drift: 'fail' });
  strict.register('evolving', 1, changed);
  ctx.clock.advance(1_000);
  await ctx.quiesce(strict);
  const row = await ctx.runRow(runId);
  assert.equal(row.status, 'failed');
  assert.equal(JSON.parse(row.error).code, 'REPLAY_DRIFT');
});

test('a failed run retried via retryRun keeps its memo but dead-letters again (attempts not reset, §3.17 quirk)', async () => {
  const e = ctx.engine({ maxAttempts: 2 });
  let execA = 0;
  let fail = true;
  e.register('rr', 1, async (c) => {
    await c.step('a', () => ++execA);
    return c.step('b', () => {
      if (fail) throw new Error('down');
      return 'up';
    });
  });
  const { runId } = await e.submit('rr', 1, null);
  await ctx.drive(e, ctx.allTerminal([runId]));
  assert.equal(await ctx.status(runId), 'failed');
  fail = false;
  assert.deepEqual(await e.retry(runId), { retried: true });
  assert.equal(await ctx.status(runId), 'pending');
  await ctx.quiesce(e);
  const row = await ctx.runRow(runId);
  assert.equal(row.status, 'failed');
  assert.equal(JSON.parse(row.error).code, 'RUN_ATTEMPTS_EXHAUSTED');
  assert.equal(execA, 1);
});
