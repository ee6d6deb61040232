// Fan-out joins (docs/contract.md §11.1 e: chunks of 40, joinTarget on the first chunk, a final
// memo of the ordered outputs) and §12.9.8–11.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup } from './fixture.mjs';
import { CHUNK } from './mini-engine.mjs';

const ctx = setup('eng_fanout');

function fanoutEngine(opts) {
  const e = ctx.engine(opts);
  const runs = new Map(); // child input -> executions
  e.register('sq', 1, async (c, n) =>
    c.step('square', () => {
      runs.set(n, (runs.get(n) ?? 0) + 1);
      return n * n;
    }),
  );
  e.register('dbl', 1, async (c, n) => c.step('double', () => n * 2));
  e.register('fan', 1, async (c, { flow, n }) => {
    const outs = await c.all(Array.from({ length: n }, (_, i) => ({ flow, version: 1, input: i + 1 })));
    return c.step('sum', () => ({ outs, sum: outs.reduce((a, b) => a + b, 0) }));
  });
  return { e, runs };
}

async function checkJoin(parentId, n) {
  const chunks = Math.ceil(n / CHUNK);
  const steps = await ctx.steps(parentId);
  const shapes = steps.map((s) => s.shape);
  assert.deepEqual(shapes, [...Array.from({ length: chunks }, (_, i) => `all:${n}:${i}`), `all:${n}:join`, 'step:sum']);
  // each chunk memo holds the ids of exactly that chunk's children, in spawn order
  const ids = steps.slice(0, chunks).flatMap((s) => s.result);
  assert.equal(ids.length, n);
  steps.slice(0, chunks).forEach((s, i) => assert.equal(s.result.length, Math.min(CHUNK, n - i * CHUNK)));
  const children = await ctx.rows(
    `SELECT id, status, input, parent_cursor_key, depth FROM ${ctx.t.run} WHERE parent_run_id = ?`,
    [parentId],
  );
  assert.equal(children.length, n);
  const byId = new Map(children.map((c) => [c.id, c]));
  ids.forEach((id, i) => {
    const c = byId.get(id);
    assert.ok(c, `child ${i} exists`);
    assert.equal(c.status, 'done');
    assert.equal(JSON.parse(c.input), i + 1);
    assert.equal(c.parent_cursor_key, `s${Math.floor(i / CHUNK)}`, 'cursor key of the spawning chunk');
    assert.equal(Number(c.depth), 1);
  });
  assert.equal(Number((await ctx.runRow(parentId)).join_remaining), 0);
  return ids;
}

test('12.9.8 a 3-child fan-out returns [2, 4, 6] in order', async () => {
  const { e } = fanoutEngine();
  const { runId } = await e.submit('fan', 1, { flow: 'dbl', n: 3 });
  await ctx.drive(e, ctx.allTerminal([runId]));
  assert.deepEqual(await e.result(runId), { outs: [2, 4, 6], sum: 12 });
});

test('a 10-child fan-out joins and returns the outputs in order', async () => {
  const { e, runs } = fanoutEngine();
  const { runId } = await e.submit('fan', 1, { flow: 'sq', n: 10 });

  // first tick (batch 1): one chunk checkpoint spawning all 10, join armed with 10, parent parks
  await e.tickOnce({ batchMax: 1 });
  const p = await ctx.runRow(runId);
  assert.equal(p.status, 'awaiting_child');
  assert.equal(Number(p.join_remaining), 10);
  assert.equal(await ctx.count('run', 'parent_run_id = ?', [runId]), 10);
  assert.equal(await ctx.count('job'), 10);

  // the children complete one by one; the parent is only enqueued by the last arrival
  for (let i = 0; i < 9; i++) await e.tickOnce({ batchMax: 1 });
  assert.equal(Number((await ctx.runRow(runId)).join_remaining), 1);
  assert.equal(await ctx.job(runId), undefined, 'no wake before the last child');
  await e.tickOnce({ batchMax: 1 });
  assert.equal(Number((await ctx.runRow(runId)).join_remaining), 0);
  assert.ok(await ctx.job(runId), 'the last arrival enqueued the parent');
  await e.tickOnce({ batchMax: 1 });

  const squares = Array.from({ length: 10 }, (_, i) => (i + 1) ** 2);
  assert.deepEqual(await e.result(runId), { outs: squares, sum: 385 });
  await checkJoin(runId, 10);
  assert.deepEqual([...runs.values()], Array(10).fill(1), 'each child body ran once');
  assert.equal(await ctx.count('job'), 0);
});

test('12.9.10 a 45-child fan-out crosses the 40-chunk boundary and returns all 45 outputs in order', async () => {
  const { e, runs } = fanoutEngine();
  const { runId } = await e.submit('fan', 1, { flow: 'sq', n: 45 });
  await e.tickOnce({ batchMax: 1 });
  const steps = await ctx.steps(runId);
  assert.deepEqual(
    steps.map((s) => [s.cursor_key, s.shape, s.result.length]),
    [
      ['s0', 'all:45:0', 40],
      ['s1', 'all:45:1', 5],
    ],
  );
  assert.equal(Number((await ctx.runRow(runId)).join_remaining), 45, 'armed once, with N, by the first chunk');

  await ctx.drive(e, ctx.allTerminal([runId]));
  const squares = Array.from({ length: 45 }, (_, i) => (i + 1) ** 2);
  const out = await e.result(runId);
  assert.deepEqual(out.outs, squares);
  await checkJoin(runId, 45);
  assert.equal(runs.size, 45);
  assert.ok([...runs.values()].every((n) => n === 1));
  assert.deepEqual(e.errors, []);
});

test('12.9.11 fan-out with one throwing and one long-sleeping child: parent failed, both children terminal', async () => {
  const e = ctx.engine({ maxAttempts: 2 });
  e.register('boom', 1, async (c) =>
    c.step('explode', () => {
      throw Object.assign(new Error('kaboom'), { code: 'KABOOM' });
    }),
  );
  e.register('nap', 1, async (c) => {
    await c.sleep(24 * 3_600_000);
    return 'woke';
  });
  e.register('fan2', 1, async (c) =>
    c.all([
      { flow: 'boom', version: 1 },
      { flow: 'nap', version: 1 },
    ]),
  );
  const { runId } = await e.submit('fan2', 1, null);
  await ctx.drive(e, ctx.allTerminal([runId]));

  const parent = await ctx.runRow(runId);
  assert.equal(parent.status, 'failed');
  assert.equal(JSON.parse(parent.error).code, 'CHILD_FAILED');
  const kids = await ctx.rows(`SELECT id, name, status, error FROM ${ctx.t.run} WHERE parent_run_id = ?`, [runId]);
  const byName = Object.fromEntries(kids.map((k) => [k.name, k]));
  assert.equal(byName.boom.status, 'failed');
  assert.equal(JSON.parse(byName.boom.error).code, 'KABOOM');
  assert.equal(byName.nap.status, 'canceled', 'the sleeper was cancel-cascaded');
  assert.equal(await ctx.timerOf(byName.nap.id), undefined, 'its timer was canceled with it');
  // the parent did not wait for the sleeper (fast-fail): well under 24 h of rounds
  assert.ok(ctx.clock.t - Date.parse('2030-01-01T00:00:00Z') < 10 * 60_000);
  // nothing resurrects afterwards
  ctx.clock.advance(2 * 24 * 3_600_000);
  await ctx.quiesce(e);
  assert.equal(await ctx.status(byName.nap.id), 'canceled');
  assert.equal(await ctx.status(runId), 'failed');
});

test('12.9.9 a 10 001-child fan-out fails the parent (cap) with maxAttempts 1', async () => {
  const e = ctx.engine({ maxAttempts: 1 });
  e.register('noop', 1, async () => 1);
  e.register('huge', 1, async (c) => c.all(Array.from({ length: 10_001 }, () => ({ flow: 'noop', version: 1 }))));
  const { runId } = await e.submit('huge', 1, null);
  await ctx.quiesce(e);
  const row = await ctx.runRow(runId);
  assert.equal(row.status, 'failed');
  assert.equal(JSON.parse(row.error).code, 'FANOUT_TOO_LARGE');
  assert.equal(await ctx.count('run'), 1, 'no child was spawned');
  assert.equal(await ctx.count('step'), 0);
});

test('nested fan-out: each child fans out itself; depths and outputs line up', async () => {
  const { e } = fanoutEngine();
  e.register('mid', 1, async (c, k) => {
    const outs = await c.all(Array.from({ length: k }, (_, i) => ({ flow: 'dbl', version: 1, input: i })));
    return outs.reduce((a, b) => a + b, 0);
  });
  e.register('top', 1, async (c) => c.all([1, 2, 3, 4].map((k) => ({ flow: 'mid', version: 1, input: k }))));
  const { runId } = await e.submit('top', 1, null);
  await ctx.drive(e, ctx.allTerminal([runId]));
  // sum of 2*i for i < k
  assert.deepEqual(await e.result(runId), [0, 2, 6, 12]);
  assert.equal(await ctx.count('run'), 1 + 4 + 10);
  assert.equal(await ctx.count('run', 'depth = 2'), 10);
  assert.equal(await ctx.count('run', "status <> 'done'"), 0);
});
