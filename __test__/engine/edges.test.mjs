// Edges an engine hits that the port-level suites do not: value fidelity through memo replay,
// the depth cap failing a 33-deep invoke chain from the bottom up, a wide (1000-child) fan-out,
// delayed and prioritised submits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, T } from './fixture.mjs';
import { MAX_DEPTH } from './mini-engine.mjs';

const ctx = setup('eng_edges');

test('values survive the memo: replayed results equal first-run results (JSON fidelity)', async () => {
  const e = ctx.engine();
  const big = 'x'.repeat(2_000_000);
  const firstRun = {};
  e.register('vals', 1, async (c) => {
    const out = {};
    out.nul = await c.step('nul', () => null);
    out.undef = await c.step('undef', () => undefined);
    out.date = await c.step('date', () => new Date(T));
    out.uni = await c.step('uni', () => 'ünïcødé ✓ 🚀 "quotes" \\ back\nslash');
    out.nested = await c.step('nested', () => ({ a: [1, { b: null, c: undefined }, NaN], z: -0 }));
    out.bigLen = (await c.step('big', () => big)).length;
    if (!c.replaying && Object.keys(firstRun).length === 0) Object.assign(firstRun, out);
    await c.sleep(1_000);
    return out;
  });
  const { runId } = await e.submit('vals', 1, { in: 'ünï' });
  await ctx.drive(e, ctx.allTerminal([runId]), { advanceMs: 1_000 });
  const out = await e.result(runId);
  assert.deepEqual(out, {
    nul: null,
    date: new Date(T).toISOString(),
    uni: 'ünïcødé ✓ 🚀 "quotes" \\ back\nslash',
    nested: { a: [1, { b: null }, null], z: 0 },
    bigLen: 2_000_000,
  });
  assert.equal('undef' in out, false);
  assert.deepEqual(out, JSON.parse(JSON.stringify(firstRun)), 'replay saw what the first run saw');
  const row = await ctx.runRow(runId);
  assert.deepEqual(JSON.parse(row.input), { in: 'ünï' });
});

test('a flow returning undefined completes with no output; null stays null', async () => {
  const e = ctx.engine();
  e.register('u', 1, async () => undefined);
  e.register('n', 1, async () => null);
  const u = (await e.submit('u', 1, undefined)).runId;
  const n = (await e.submit('n', 1, null)).runId;
  await ctx.quiesce(e);
  assert.equal((await ctx.runRow(u)).status, 'done');
  assert.equal((await ctx.runRow(u)).output, null, 'SQL NULL');
  assert.equal(await e.result(u), undefined);
  assert.equal((await ctx.runRow(n)).output, 'null', 'JSON null');
  assert.equal(await e.result(n), null);
});

test(`the depth cap (${MAX_DEPTH}) fails a recursive invoke chain, and the failure climbs to the root`, async () => {
  const e = ctx.engine();
  e.register('deep', 1, async (c, d) => (await c.invoke('deep', 1, d + 1)) + 1);
  const { runId } = await e.submit('deep', 1, 0);
  await ctx.quiesce(e);
  assert.equal(await ctx.count('run'), MAX_DEPTH + 1, 'depths 0..32 exist; 33 was never spawned');
  const rows = await ctx.rows(`SELECT depth, status, error FROM ${ctx.t.run} ORDER BY depth`);
  assert.ok(rows.every((r) => r.status === 'failed'));
  assert.equal(JSON.parse(rows[MAX_DEPTH].error).code, 'DEPTH_EXCEEDED');
  assert.equal(JSON.parse(rows[0].error).code, 'CHILD_FAILED');
  await assert.rejects(e.result(runId), (err) => err.status === 'failed');
});

test('a 1000-child fan-out: 25 chunk checkpoints, one join, outputs in order', { timeout: 30_000 }, async () => {
  const e = ctx.engine({ batchMax: 100 });
  e.register('id', 1, async (c, n) => n);
  e.register('wide', 1, async (c, n) =>
    c.all(Array.from({ length: n }, (_, i) => ({ flow: 'id', version: 1, input: i }))),
  );
  const { runId } = await e.submit('wide', 1, 1000);
  await ctx.quiesce(e);
  const out = await e.result(runId);
  assert.equal(out.length, 1000);
  assert.ok(out.every((v, i) => v === i));
  assert.equal(await ctx.count('step', 'run_id = ?', [runId]), 26);
  assert.equal(Number((await ctx.runRow(runId)).join_remaining), 0);
});

test('submit with runAt waits for it; lower priority values are dispatched first', async () => {
  const e = ctx.engine({ batchMax: 1 });
  const order = [];
  e.register('p', 1, async (c, tag) => c.step('x', () => (order.push(tag), tag)));
  const later = (await e.submit('p', 1, 'later', { runAt: new Date(T + 10_000) })).runId;
  await e.submit('p', 1, 'low', { priority: 10 });
  await e.submit('p', 1, 'high', { priority: 1 });
  await ctx.quiesce(e);
  assert.deepEqual(order, ['high', 'low']);
  assert.equal(await ctx.status(later), 'pending');
  ctx.clock.advance(10_000);
  await ctx.quiesce(e);
  assert.deepEqual(order, ['high', 'low', 'later']);
});

test('awkward strings in flow names, step names, signal names, tags and cron names', async () => {
  const e = ctx.engine();
  const weird = `q'uo"te \\ back\u0000nul ✓ 🚀 %_`;
  e.register(weird, 1, async (c, input) => {
    const a = await c.step(weird, () => input);
    const s = await c.waitForSignal(weird);
    return { a, s };
  });
  const { runId } = await e.submit(weird, 1, weird, { tags: [weird], idempotencyKey: weird });
  await ctx.quiesce(e);
  assert.equal(await ctx.status(runId), 'awaiting_signal');
  assert.deepEqual(await e.signal(runId, weird, weird, { idempotencyKey: weird }), { delivered: true });
  assert.deepEqual(await e.signal(runId, weird, 'dup', { idempotencyKey: weird }), { delivered: false });
  await ctx.quiesce(e);
  assert.deepEqual(await e.result(runId), { a: weird, s: weird });
  const again = await e.submit(weird, 1, null, { idempotencyKey: weird });
  assert.equal(again.runId, runId);
  assert.equal(again.created, false);
  const page = await e.backend.store.listRuns({ tag: weird, name: weird, status: 'done' }, { limit: 5 });
  assert.deepEqual(
    page.runs.map((r) => r.id),
    [runId],
  );
  assert.equal((await ctx.steps(runId))[0].shape, `step:${weird}`);

  await e.registerCron(weird, { flow: weird, version: 1, input: 'c' });
  ctx.clock.advance(60_000);
  const fired = await e.runDueCrons();
  assert.equal(fired.length, 1);
  assert.deepEqual((await ctx.runRow(fired[0])).idempotency_key, `cron:${weird}:${T + 60_000}`);
});
