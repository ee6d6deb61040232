// Cron firing (docs/contract.md §11.2 registerCron / runDueCrons). The mini engine's schedule is
// fixed: every whole minute. Two "workers" = two engines over two backends on two pools, one
// database.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, T } from './fixture.mjs';
import { MINUTE } from './mini-engine.mjs';

const ctx = setup('eng_cron');

function worker(name, sql) {
  const e = ctx.engine({ name }, sql);
  e.register('report', 1, async (c, input) => c.step('make', () => ({ ...input, at: c.runId })));
  e.register('long', 1, async (c) => {
    await c.sleep(150_000);
    return 'slept';
  });
  return e;
}

async function cronRuns(name) {
  return ctx.rows(
    `SELECT id, status, idempotency_key, created_at FROM ${ctx.t.run} WHERE JSON_CONTAINS(tags, JSON_QUOTE(?)) ORDER BY seq`,
    [`cron:${name}`],
  );
}

test('a cron fires exactly once per due time across two workers calling runDueCrons at the same instant', async () => {
  const a = worker('A', ctx.pool());
  const b = worker('B', ctx.pool());
  ctx.clock.set(T + 12_345);
  await a.registerCron('nightly', { flow: 'report', version: 1, input: { kind: 'daily' } });
  await b.registerCron('nightly', { flow: 'report', version: 1, input: { kind: 'daily' } }); // idempotent
  const cron = (await ctx.rows(`SELECT * FROM ${ctx.t.cron}`))[0];
  assert.equal(Number(cron.next_run_at), T + MINUTE);

  // not yet due
  ctx.clock.set(T + MINUTE - 1);
  assert.deepEqual(await Promise.all([a.runDueCrons(), b.runDueCrons()]), [[], []]);

  const fires = [];
  for (let k = 1; k <= 5; k++) {
    ctx.clock.set(T + k * MINUTE);
    const [ca, cb] = await Promise.all([a.runDueCrons(), b.runDueCrons()]);
    assert.equal(ca.length + cb.length, 1, `minute ${k}: exactly one worker created the run`);
    fires.push(...ca, ...cb);
    const row = (await ctx.rows(`SELECT * FROM ${ctx.t.cron}`))[0];
    assert.equal(Number(row.next_run_at), T + (k + 1) * MINUTE);
    assert.equal(Number(row.last_run_at), T + k * MINUTE);
    // calling again at the same instant does nothing
    assert.deepEqual(await Promise.all([a.runDueCrons(), b.runDueCrons()]), [[], []]);
  }
  const runs = await cronRuns('nightly');
  assert.equal(runs.length, 5);
  assert.deepEqual(
    runs.map((r) => r.id),
    fires,
  );
  assert.deepEqual(
    runs.map((r) => r.idempotency_key),
    [1, 2, 3, 4, 5].map((k) => `cron:nightly:${T + k * MINUTE}`),
  );
  assert.equal(await ctx.count('job'), 5, 'each created run was enqueued once');

  await ctx.quiesce([a, b]);
  const done = await cronRuns('nightly');
  assert.ok(done.every((r) => r.status === 'done'));
  const out = JSON.parse((await ctx.runRow(fires[0])).output);
  assert.deepEqual(out, { kind: 'daily', at: fires[0] });
  assert.equal(a.terminalWrites.size + b.terminalWrites.size, 5);
});

test('many racing workers (6 engines) still fire once; a clock jump fires once, not per missed minute', async () => {
  const engines = Array.from({ length: 6 }, (_, i) => worker(`W${i}`, i % 2 ? ctx.pool() : ctx.sql));
  await engines[0].registerCron('tick', { flow: 'report', version: 1, input: {} });
  ctx.clock.set(T + 10 * MINUTE + 5);
  const created = (await Promise.all(engines.map((e) => e.runDueCrons()))).flat();
  assert.equal(created.length, 1);
  const row = (await ctx.rows(`SELECT next_run_at FROM ${ctx.t.cron}`))[0];
  assert.equal(Number(row.next_run_at), T + 11 * MINUTE, 'next fire computed after now');
  assert.equal((await cronRuns('tick')).length, 1);
});

test('overlap "skip": no new run while the previous one is active', async () => {
  const a = worker('A', ctx.sql);
  const b = worker('B', ctx.pool());
  await a.registerCron('slow', { flow: 'long', version: 1, overlap: 'skip' });
  // minute 1: fires; the run sleeps 150 s
  ctx.clock.set(T + MINUTE);
  await Promise.all([a.runDueCrons(), b.runDueCrons()]);
  await ctx.quiesce([a, b]);
  assert.equal((await cronRuns('slow')).length, 1);
  // minutes 2 and 3: skipped (still sleeping); the cron still advances
  for (const k of [2, 3]) {
    ctx.clock.set(T + k * MINUTE);
    assert.deepEqual((await Promise.all([a.runDueCrons(), b.runDueCrons()])).flat(), []);
    await ctx.quiesce([a, b]);
    const row = (await ctx.rows(`SELECT next_run_at FROM ${ctx.t.cron}`))[0];
    assert.equal(Number(row.next_run_at), T + (k + 1) * MINUTE);
  }
  // T+210 s the first run wakes and completes; minute 4 fires again
  ctx.clock.set(T + 210_000);
  await ctx.quiesce([a, b]);
  assert.equal((await cronRuns('slow'))[0].status, 'done');
  ctx.clock.set(T + 4 * MINUTE);
  assert.equal((await Promise.all([a.runDueCrons(), b.runDueCrons()])).flat().length, 1);
  assert.equal((await cronRuns('slow')).length, 2);
});
