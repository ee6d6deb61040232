// Drop-in fidelity at the edges: what the JavaScript package accepts, this package accepts, with
// the same answer — Dates from another realm, `null` for optional fields, lengths counted in the
// code points a utf8mb4 column counts, lone surrogates, values someone else wrote out of range.
// Every row of README's "edges" list, on both executors.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import vm from 'node:vm';
import { EXECUTORS, setup, at, LEASE } from './fixture.mjs';

const foreignDate = (ms) => vm.runInNewContext(`new Date(${ms})`);
const ASTRAL = '\u{1F600}'; // one code point, two UTF-16 units

/** The group's tests, over the backend `ctx` holds (one executor). */
function suite(ctx) {
  test('a Date from another realm is accepted wherever a Date is', async () => {
    const d = foreignDate(at(5).getTime());
    assert.equal(d instanceof Date, false);
    const r = await ctx.store.startRun({ name: 'f', version: 1, input: null, createdAt: d });
    assert.equal((await ctx.store.loadRunRow(r.runId)).createdAt.getTime(), at(5).getTime());
    await ctx.queue.enqueue(r.runId, { runAt: d });
    assert.deepEqual(
      (await ctx.queue.claim({ limit: 5, leaseMs: LEASE, now: foreignDate(at(5).getTime()) })).map((l) => l.runId),
      [r.runId],
    );
    await ctx.timer.schedule(r.runId, d);
    assert.deepEqual(await ctx.timer.dueBatch({ now: d, limit: 5 }), [r.runId]);
    assert.equal(typeof (await ctx.queue.depth(d)).claimable, 'number');
  });

  test('null means absent for every optional field', async () => {
    const run = await ctx.newRun();
    const step = await ctx.store.checkpointStep(
      { runId: run, cursorKey: 's0', status: 'ok', result: 1, attempts: 1, shape: null },
      null,
    );
    assert.equal(step.shape, undefined);
    await ctx.store.checkpointStep(
      { runId: run, cursorKey: 's1', status: 'ok', result: 1, attempts: 1 },
      { spawn: null, enqueue: null, timers: null, cancelTimers: null, consumeSignals: null, joinTarget: null },
    );
    await ctx.store.suspendRun(run, 'sleeping', {
      spawn: null,
      enqueue: null,
      timers: null,
      cancelTimers: null,
      consumeSignals: null,
    });
    await ctx.store.markTerminal(run, { status: 'done', output: 1 }, { timers: null });
    await ctx.store.upsertCron({
      name: 'c',
      schedule: '* * * * *',
      flowName: 'f',
      flowVersion: 1,
      input: null,
      overlap: null,
      nextRunAt: at(0),
    });
    assert.equal((await ctx.store.dueCrons(at(0), 5))[0].overlap, 'allow');
    const page = await ctx.store.listRuns({}, { limit: 5, cursor: null });
    assert.equal(page.runs.length, 1);
    await ctx.queue.enqueue(run);
    assert.equal((await ctx.queue.claim({ limit: 5, leaseMs: LEASE, now: null })).length, 1);
    assert.deepEqual(await ctx.timer.dueBatch({ limit: 5, now: null }), []);
  });

  test('tags: null is stored and read back as null (undefined stays undefined)', async () => {
    const withNull = await ctx.store.startRun({ name: 'f', version: 1, input: null, tags: null });
    const without = await ctx.store.startRun({ name: 'f', version: 1, input: null });
    assert.equal((await ctx.store.loadRunRow(withNull.runId)).tags, null);
    assert.equal((await ctx.store.loadRunRow(without.runId)).tags, undefined);
    const parent = await ctx.newRun();
    await ctx.store.checkpointStep(
      { runId: parent, cursorKey: 's0', status: 'ok', result: 'kid', attempts: 1 },
      { spawn: [{ runId: 'kid', spec: { name: 'child', version: 1, input: null, tags: null } }] },
    );
    assert.equal((await ctx.store.loadRunRow('kid')).tags, null);
  });

  test('length limits count code points, as utf8mb4 columns do', async () => {
    const schedule = ASTRAL.repeat(200); // 400 UTF-16 units, 200 code points
    await ctx.store.upsertCron({
      name: 'astral',
      schedule,
      flowName: 'f',
      flowVersion: 1,
      input: null,
      nextRunAt: at(0),
    });
    assert.equal((await ctx.store.dueCrons(at(0), 5))[0].schedule, schedule);
    const key = ASTRAL.repeat(191);
    const r = await ctx.store.startRun({ name: ASTRAL.repeat(191), version: 1, input: null, idempotencyKey: key });
    assert.equal((await ctx.store.loadRunRow(r.runId)).idempotencyKey, key);
    // Beyond the column: refused up front (README, Differences: the JavaScript package lets the
    // server truncate the key instead).
    await assert.rejects(ctx.store.startRun({ name: 'f', version: 1, idempotencyKey: ASTRAL.repeat(192) }), {
      name: 'RangeError',
      message: /spec\.idempotencyKey/,
    });
    await assert.rejects(
      ctx.store.upsertCron({
        name: 'x',
        schedule: ASTRAL.repeat(256),
        flowName: 'f',
        flowVersion: 1,
        nextRunAt: at(0),
      }),
      { name: 'RangeError', message: /spec\.schedule/ },
    );
  });

  test('lone surrogates: exact in JSON columns, U+FFFD in text columns, accepted by the tag filter', async () => {
    const tag = 'x\uD800y';
    const r = await ctx.store.startRun({ name: 'lone\uDC00', version: 1, input: { s: '\uDBFF' }, tags: [tag] });
    const row = await ctx.store.loadRunRow(r.runId);
    assert.deepEqual(row.tags, [tag]);
    assert.deepEqual(row.input, { s: '\uDBFF' });
    assert.equal(row.name, 'lone\uFFFD');
    // The filter's text parameter reaches the server as UTF-8 (U+FFFD), the stored tag is JSON's
    // escape: as with the JavaScript package, it is accepted and matches nothing.
    assert.deepEqual((await ctx.store.listRuns({ tag }, { limit: 5 })).runs, []);
    assert.deepEqual((await ctx.store.listRuns({ tag: 'plain' }, { limit: 5 })).runs, []);
  });

  test('lone surrogates through startManyRuns: the rows startRun writes, keys matched the same way', async () => {
    const spec = (n) => ({
      name: `lone\uDC00${n}`,
      version: 1,
      input: { s: '\uDBFF' },
      tags: ['x\uD800y'],
      parentRunId: 'p\uD800',
      parentCursorKey: 'k\uDFFF',
      depth: 1,
      createdAt: at(1),
    });
    const cols = 'name, version, status, input, idempotency_key, tags, parent_run_id, parent_cursor_key, depth';
    const row = async (id) => (await ctx.sql.query(`SELECT ${cols} FROM ${ctx.t.run} WHERE id = ?`, [id]))[0];
    const alone = await ctx.store.startRun(spec('a'));
    const keyed = { ...spec('k'), idempotencyKey: 'key\uD800' };
    const many = await ctx.store.startManyRuns([spec('a'), keyed, spec('b')]);
    assert.deepEqual(
      many.map((r) => [r.created, r.status]),
      [
        [true, 'pending'],
        [true, 'pending'],
        [true, 'pending'],
      ],
    );
    assert.deepEqual(await row(many[0].runId), await row(alone.runId));
    assert.equal((await row(many[1].runId)).idempotency_key, 'key\uFFFD');
    assert.equal((await row(many[2].runId)).name, 'lone\uFFFDb');
    // The stored key is U+FFFD's: the same lone surrogate finds the run again, in bulk and alone.
    const again = await ctx.store.startManyRuns([keyed]);
    assert.deepEqual(again, [{ runId: many[1].runId, created: false, status: 'pending' }]);
    assert.equal((await ctx.store.startRun(keyed)).runId, many[1].runId);
  });

  test('markRunning on a run whose stored attempts is negative (written by someone else)', async () => {
    const run = await ctx.newRun();
    await ctx.sql.exec(`UPDATE ${ctx.t.run} SET attempts = -2 WHERE id = ?`, [run]);
    assert.equal(await ctx.store.markRunning(run), -1);
    assert.equal(await ctx.store.markRunning(run), 0);
    await ctx.sql.exec(`UPDATE ${ctx.t.run} SET attempts = -2147483648 WHERE id = ?`, [run]);
    assert.equal(await ctx.store.markRunning(run), -2147483647);
  });

  test('ack of a lease whose job version is beyond 2^53 (written by someone else) releases it', async () => {
    const run = await ctx.newRun();
    await ctx.queue.enqueue(run);
    await ctx.sql.exec(`UPDATE ${ctx.t.job} SET version = 9007199254740993 WHERE run_id = ?`, [run]);
    const [lease] = await ctx.queue.claim({ limit: 1, leaseMs: LEASE, now: at(0) });
    assert.equal(lease.version > Number.MAX_SAFE_INTEGER, true);
    await ctx.queue.ack(lease, { now: at(1) });
    const [job] = await ctx.sql.query(`SELECT lease_token, run_at FROM ${ctx.t.job} WHERE run_id = ?`, [run]);
    assert.deepEqual(job, { lease_token: null, run_at: 0 }, 'released, not deleted');
  });

  test("wakeup.wait coerces its timeout as Node's timers do", async () => {
    let t0 = performance.now();
    await ctx.wakeup.wait('w', '60');
    assert.ok(performance.now() - t0 >= 55, 'a numeric string waits that long');
    t0 = performance.now();
    process.once('warning', () => {}); // Node warns about the overflow, as it does for the JS package
    await ctx.wakeup.wait('w', 2 ** 31);
    assert.ok(performance.now() - t0 < 1000, 'an over-large timeout fires at once');
  });
}

for (const executor of EXECUTORS) describe(executor, () => suite(setup('conf_dropin', { executor })));
