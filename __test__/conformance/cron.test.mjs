// docs/contract.md §12.8 (Cron, 3 checks) plus §3.18–§3.20 details.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EXECUTORS, setup, at, T, CRON_KEYS } from './fixture.mjs';

/** The group's tests, over the backend `ctx` holds (one executor). */
function suite(ctx) {
  const cron = (over = {}) => ({
    name: 'nightly',
    schedule: '0 3 * * *',
    flowName: 'report',
    flowVersion: 2,
    input: { region: 'eu' },
    nextRunAt: at(1000),
    ...over,
  });

  test('12.8.1 registered with next T+1000: not due at T+999; due at T+1000 with input intact', async () => {
    await ctx.store.upsertCron(cron());
    assert.deepEqual(await ctx.store.dueCrons(at(999), 10), []);
    const rows = await ctx.store.dueCrons(at(1000), 10);
    assert.equal(rows.length, 1);
    const [r] = rows;
    assert.deepEqual(Object.keys(r).sort(), [...CRON_KEYS].sort());
    assert.equal(r.name, 'nightly');
    assert.equal(r.schedule, '0 3 * * *');
    assert.equal(r.flowName, 'report');
    assert.equal(r.flowVersion, 2);
    assert.deepEqual(r.input, { region: 'eu' });
    assert.equal(r.overlap, 'allow');
    assert.ok(r.nextRunAt instanceof Date);
    assert.equal(r.nextRunAt.getTime(), T + 1000);
    assert.ok('lastRunAt' in r);
    assert.equal(r.lastRunAt, undefined);
  });

  test('12.8.2 re-registering with new input and a later next time keeps the due time, updates input', async () => {
    await ctx.store.upsertCron(cron());
    await ctx.store.upsertCron(
      cron({ input: { region: 'us' }, nextRunAt: at(9000), schedule: '*/5 * * * *', flowVersion: 3, overlap: 'skip' }),
    );
    const rows = await ctx.store.dueCrons(at(1000), 10);
    assert.equal(rows.length, 1);
    assert.deepEqual(rows[0].input, { region: 'us' });
    assert.equal(rows[0].nextRunAt.getTime(), T + 1000);
    assert.equal(rows[0].schedule, '*/5 * * * *');
    assert.equal(rows[0].flowVersion, 3);
    assert.equal(rows[0].overlap, 'skip');
    assert.equal(await ctx.count('cron'), 1);
  });

  test('12.8.3 two identical advanceCron calls: true then false; nothing due at T+1500', async () => {
    await ctx.store.upsertCron(cron());
    assert.equal(await ctx.store.advanceCron('nightly', at(1000), at(2000), at(1000)), true);
    assert.equal(await ctx.store.advanceCron('nightly', at(1000), at(2000), at(1000)), false);
    assert.deepEqual(await ctx.store.dueCrons(at(1500), 10), []);
    const [r] = await ctx.store.dueCrons(at(2000), 10);
    assert.equal(r.nextRunAt.getTime(), T + 2000);
    assert.equal(r.lastRunAt.getTime(), T + 1000);
    assert.ok(r.lastRunAt instanceof Date);
  });

  test('§3.18 upsert keeps next_run_at and last_run_at of an existing cron', async () => {
    await ctx.store.upsertCron(cron());
    await ctx.store.advanceCron('nightly', at(1000), at(2000), at(1100));
    await ctx.store.upsertCron(cron({ nextRunAt: at(50_000), input: 'new', flowName: 'other' }));
    const raw = await ctx.rows(`SELECT next_run_at, last_run_at, flow_name, input FROM ${ctx.t.cron} WHERE name = ?`, [
      'nightly',
    ]);
    assert.equal(Number(raw[0].next_run_at), T + 2000);
    assert.equal(Number(raw[0].last_run_at), T + 1100);
    assert.equal(raw[0].flow_name, 'other');
    assert.equal(raw[0].input, '"new"');
    const [r] = await ctx.store.dueCrons(at(2000), 10);
    assert.equal(r.lastRunAt.getTime(), T + 1100);
    assert.equal(r.input, 'new');
  });

  test('§3.18 input undefined is stored as NULL and read back undefined; null stays null', async () => {
    await ctx.store.upsertCron(cron({ name: 'u', input: undefined }));
    await ctx.store.upsertCron(cron({ name: 'n', input: null }));
    const rows = await ctx.store.dueCrons(at(1000), 10);
    const byName = Object.fromEntries(rows.map((r) => [r.name, r]));
    assert.ok('input' in byName.u);
    assert.equal(byName.u.input, undefined);
    assert.equal(byName.n.input, null);
    // re-registering without input clears it
    await ctx.store.upsertCron(cron({ name: 'n', input: undefined }));
    const again = await ctx.store.dueCrons(at(1000), 10);
    assert.equal(again.find((r) => r.name === 'n').input, undefined);
  });

  test('§3.19 dueCrons: ascending by next_run_at, inclusive, limited', async () => {
    await ctx.store.upsertCron(cron({ name: 'c3', nextRunAt: at(300) }));
    await ctx.store.upsertCron(cron({ name: 'c1', nextRunAt: at(100) }));
    await ctx.store.upsertCron(cron({ name: 'c2', nextRunAt: at(200) }));
    await ctx.store.upsertCron(cron({ name: 'c4', nextRunAt: at(400) }));
    assert.deepEqual(
      (await ctx.store.dueCrons(at(300), 10)).map((r) => r.name),
      ['c1', 'c2', 'c3'],
    );
    assert.deepEqual(
      (await ctx.store.dueCrons(at(1000), 2)).map((r) => r.name),
      ['c1', 'c2'],
    );
    assert.deepEqual(await ctx.store.dueCrons(at(99), 10), []);
    assert.deepEqual(await ctx.store.dueCrons(at(1000), 0), []);
  });

  test('§3.20 advanceCron repeating next == expected with identical last returns true again (found-rows)', async () => {
    await ctx.store.upsertCron(cron());
    assert.equal(await ctx.store.advanceCron('nightly', at(1000), at(1000), at(500)), true);
    assert.equal(await ctx.store.advanceCron('nightly', at(1000), at(1000), at(500)), true);
    const [r] = await ctx.store.dueCrons(at(1000), 10);
    assert.equal(r.lastRunAt.getTime(), T + 500);
  });

  test('§3.20 advanceCron on an unknown cron or with a stale expectation is false', async () => {
    await ctx.store.upsertCron(cron());
    assert.equal(await ctx.store.advanceCron('nope', at(1000), at(2000), at(1000)), false);
    assert.equal(await ctx.store.advanceCron('nightly', at(999), at(2000), at(1000)), false);
    const [r] = await ctx.store.dueCrons(at(1000), 10);
    assert.equal(r.nextRunAt.getTime(), T + 1000);
    assert.equal(r.lastRunAt, undefined);
  });

  test('§3.20 exactly one of several racing advanceCron callers wins', async () => {
    await ctx.store.upsertCron(cron());
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => ctx.store.advanceCron('nightly', at(1000), at(2000 + i), at(1000))),
    );
    assert.equal(results.filter((x) => x === true).length, 1);
    const winner = results.indexOf(true);
    const [r] = await ctx.store.dueCrons(at(100_000), 10);
    assert.equal(r.nextRunAt.getTime(), T + 2000 + winner);
  });

  test('§13.5 cron names compare case-insensitively', async () => {
    await ctx.store.upsertCron(cron({ name: 'Daily' }));
    await ctx.store.upsertCron(cron({ name: 'daily', input: 'second' }));
    assert.equal(await ctx.count('cron'), 1);
    const [r] = await ctx.store.dueCrons(at(1000), 10);
    assert.equal(r.name, 'Daily');
    assert.equal(r.input, 'second');
  });
}

for (const executor of EXECUTORS) describe(executor, () => suite(setup('conf_cron', { executor })));
