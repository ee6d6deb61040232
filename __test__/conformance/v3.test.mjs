// The 3.0.0 contract (/work/shared/CONTRACT-3.0.md, "§n" below cites its sections) on both
// executors: every method 3.0 adds and every behaviour it changes, checked against the rows it
// leaves, plus the proof that the 2.0.0-alpha.2 default is untouched (docs/contract.md §3.7,
// §3.11, §3.17, §3.18, §4.2).
//
// Per executor two suites, each with its own database:
//   `<executor> 3.0.0`           backends `{ contract: '3.0.0' }` on the 3.0 layout (the fixture
//                                applies the alpha.2 layout, our own before hook upgrades it);
//   `<executor> 2.0.0-alpha.2`   the default backend on the alpha.2 layout, as the fixture makes it.
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  EXECUTORS,
  setup,
  at,
  T,
  LEASE,
  CRON_KEYS,
  RUN_ROW_KEYS,
  applySchema,
  createMysqlBackend,
  wrapSql,
  sleep,
} from './fixture.mjs';

const V3 = { contract: '3.0.0' };
const STEP_V3_KEYS = ['status', 'result', 'error', 'attempts', 'call'];
const STEP_ALPHA2_KEYS = ['status', 'result', 'error', 'attempts', 'shape'];
const TO = { timeout: 30_000 };
const ERR = { code: 'E_BOOM', message: 'boom' };

const sortedKeys = (o) => Object.keys(o).sort();

/** Helpers over `ctx` shared by both suites. */
function helpers(ctx) {
  const h = {
    /** Raw row of one run. */
    async run(id) {
      return (await ctx.rows(`SELECT * FROM ${ctx.t.run} WHERE id = ?`, [id]))[0];
    },
    async job(id) {
      return (
        await ctx.rows(
          `SELECT run_id, run_at, priority, version, lease_token, lease_expires FROM ${ctx.t.job} WHERE run_id = ?`,
          [id],
        )
      )[0];
    },
    async timer(id) {
      return (await ctx.rows(`SELECT fire_at FROM ${ctx.t.timer} WHERE run_id = ?`, [id]))[0];
    },
    async signals(runId) {
      return ctx.rows(`SELECT * FROM ${ctx.t.signal} WHERE run_id = ? ORDER BY seq`, [runId]);
    },
    async start(spec = {}) {
      return (await ctx.store.startRun({ name: 'flow', version: 1, input: null, ...spec })).runId;
    },
    async done(id, output = 'ok') {
      await ctx.store.markTerminal(id, { status: 'done', output });
    },
    async fail(id) {
      await ctx.store.markTerminal(id, { status: 'failed', error: ERR });
    },
    async cancel(id) {
      await ctx.store.markTerminal(id, { status: 'canceled' });
    },
    /** Status of every run, by id. */
    async statuses() {
      const rows = await ctx.rows(`SELECT id, status FROM ${ctx.t.run} ORDER BY seq`);
      return Object.fromEntries(rows.map((r) => [r.id, r.status]));
    },
    /** Ids of the runs a table has rows for. */
    async idsIn(table) {
      const col = table === 'run' ? 'id' : 'run_id';
      return (await ctx.rows(`SELECT DISTINCT ${col} AS id FROM ${ctx.t[table]} ORDER BY ${col}`)).map((r) => r.id);
    },
    /**
     * `invoke(backend)` on a 3.0 backend over a logging wrapped Sql and on one over our native
     * pool: neither may send anything. Returns both answers.
     */
    async sendsNothing(invoke) {
      const log = [];
      const logged = await invoke(createMysqlBackend(wrapSql(ctx.sql, { log }), V3));
      assert.deepEqual(log, [], 'no statement through the wrapped Sql');
      const trips = ctx.sql.stats().roundTrips;
      const native = await invoke(createMysqlBackend(ctx.sql, V3));
      assert.equal(ctx.sql.stats().roundTrips, trips, 'no round trip on the native pool');
      return [logged, native];
    },
  };
  return h;
}

/** The 3.0 suite, over the backend `ctx` holds (one executor). */
function suite(ctx) {
  const h = helpers(ctx);
  const claim = (n, opts = {}) => ctx.queue.claim({ limit: 100, leaseMs: LEASE, now: at(n), ...opts });

  // -------------------------------------------------------------------------------------------
  // §1 surface
  // -------------------------------------------------------------------------------------------

  test('§1 the 3.0 backend has every 2.5/3.0 method', TO, () => {
    for (const m of [
      'deleteRuns',
      'cancelRuns',
      'retryRuns',
      'listCrons',
      'removeCron',
      'dueCronCount',
      'deleteRunsOlderThan',
    ]) {
      assert.equal(typeof ctx.store[m], 'function', `store.${m}`);
    }
    assert.equal(typeof ctx.queue.enqueueMany, 'function');
    assert.equal(typeof ctx.timer.dueCount, 'function');
    assert.equal(typeof ctx.timer.nextDueAt, 'function');
  });

  // -------------------------------------------------------------------------------------------
  // §3 deleteRuns
  // -------------------------------------------------------------------------------------------

  test('§3 deleteRuns: a filter without any predicate is a TypeError and deletes nothing', TO, async () => {
    const id = await h.start();
    await h.done(id);
    for (const m of ['deleteRuns', 'cancelRuns', 'retryRuns']) {
      await assert.rejects(ctx.store[m]({}, 10), { name: 'TypeError' }, `${m}({})`);
      await assert.rejects(
        ctx.store[m]({ before: undefined, name: undefined }, 10),
        { name: 'TypeError' },
        `${m}(undefined fields)`,
      );
    }
    assert.deepEqual(await h.statuses(), { [id]: 'done' });
  });

  test(
    '§3 deleteRuns({ before }): terminal runs created before, oldest seq first, with all their rows',
    TO,
    async () => {
      // Inserted in this order; created_at deliberately not in insertion order.
      const d1 = await h.start({ createdAt: at(30) });
      const d2 = await h.start({ createdAt: at(10) });
      const d3 = await h.start({ createdAt: at(20) });
      const live = await h.start({ createdAt: at(0) });
      const late = await h.start({ createdAt: at(100) });
      await h.done(d1);
      await h.fail(d2);
      await h.cancel(d3);
      await h.done(late);
      for (const id of [d1, live]) {
        await ctx.store.checkpointStep({
          runId: id,
          cursorKey: 's0',
          status: 'ok',
          result: 1,
          attempts: 1,
          call: 'step:a',
        });
        await ctx.store.postSignal(id, 'sig', 1); // also enqueues it
        await ctx.timer.schedule(id, at(5));
      }
      // limit 1: the first inserted (d1), not the oldest created (d2)
      assert.equal(await ctx.store.deleteRuns({ before: at(50) }, 1), 1);
      assert.deepEqual(await h.idsIn('run'), [d2, d3, live, late].sort());
      for (const table of ['step', 'signal', 'job', 'timer'])
        assert.deepEqual(await h.idsIn(table), [live], `${table} rows of d1 gone, live's kept`);
      // the rest of the eligible ones; `live` (pending) and `late` (created after) stay
      assert.equal(await ctx.store.deleteRuns({ before: at(50) }, 10), 2);
      assert.deepEqual(await h.idsIn('run'), [live, late].sort());
      assert.equal(await ctx.store.deleteRuns({ before: at(50) }, 10), 0);
      // limit 0 deletes nothing
      assert.equal(await ctx.store.deleteRuns({ before: at(1000) }, 0), 0);
      assert.deepEqual(await h.idsIn('run'), [live, late].sort());
    },
  );

  test('§3 deleteRuns: name, version, tag and status predicates (AND), statuses ∩ terminal', TO, async () => {
    const a1 = await h.start({ name: 'a', version: 1, tags: ['x'] });
    const a2 = await h.start({ name: 'a', version: 2, tags: ['y'] });
    const b1 = await h.start({ name: 'b', version: 1, tags: ['x', 'z'] });
    const b2 = await h.start({ name: 'b', version: 2 });
    const aLive = await h.start({ name: 'a', version: 1, tags: ['x'] });
    await h.done(a1);
    await h.fail(a2);
    await h.cancel(b1);
    await h.done(b2);
    // the tag is matched exactly and case-sensitively
    assert.equal(await ctx.store.deleteRuns({ tag: 'X' }, 10), 0);
    // name + version
    assert.equal(await ctx.store.deleteRuns({ name: 'a', version: 2 }, 10), 1);
    assert.equal(await h.run(a2), undefined);
    // tag: only terminal runs (aLive is pending and tagged x)
    assert.equal(await ctx.store.deleteRuns({ tag: 'x', status: 'done' }, 10), 1);
    assert.deepEqual(await h.idsIn('run'), [aLive, b1, b2].sort());
    // a requested non-terminal status is dropped from the set: ['canceled', 'pending'] ⇒ canceled
    assert.equal(await ctx.store.deleteRuns({ status: ['canceled', 'pending'] }, 10), 1);
    assert.deepEqual(await h.idsIn('run'), [aLive, b2].sort());
    // version alone
    assert.equal(await ctx.store.deleteRuns({ version: 2 }, 10), 1);
    assert.deepEqual(await h.idsIn('run'), [aLive]);
  });

  test(
    '§3 deleteRuns / cancelRuns / retryRuns: an empty status intersection answers 0 without a query',
    TO,
    async () => {
      const p = await h.start();
      const d = await h.start();
      const f = await h.start();
      await h.done(d);
      await h.fail(f);
      const cases = [
        ['deleteRuns', { status: 'pending' }],
        ['deleteRuns', { status: ['running', 'sleeping'] }],
        ['deleteRuns', { status: [] }],
        ['cancelRuns', { status: 'done' }],
        ['cancelRuns', { status: ['failed', 'canceled'] }],
        ['cancelRuns', { status: [] }],
        ['retryRuns', { status: 'done' }],
        ['retryRuns', { status: ['pending', 'canceled'] }],
        ['retryRuns', { status: [], name: 'flow' }],
      ];
      for (const [m, filter] of cases) {
        const answers = await h.sendsNothing((b) => b.store[m](filter, 10));
        assert.deepEqual(answers, [0, 0], `${m}(${JSON.stringify(filter)})`);
      }
      assert.deepEqual(await h.statuses(), { [p]: 'pending', [d]: 'done', [f]: 'failed' });
    },
  );

  // -------------------------------------------------------------------------------------------
  // §3 cancelRuns
  // -------------------------------------------------------------------------------------------

  test(
    '§3 cancelRuns: live runs matching the filter become canceled, timers gone, jobs kept, no error',
    TO,
    async () => {
      const a1 = await h.start({ name: 'a' });
      const a2 = await h.start({ name: 'a' });
      const a3 = await h.start({ name: 'a' });
      const aDone = await h.start({ name: 'a' });
      const b1 = await h.start({ name: 'b' });
      await ctx.queue.enqueue(a1);
      await ctx.timer.schedule(a1, at(100));
      await ctx.store.suspendRun(a2, 'sleeping', { timers: [{ runId: a2, fireAt: at(200) }] });
      await ctx.store.suspendRun(a3, 'awaiting_signal');
      await h.done(aDone);
      await ctx.store.markRunning(b1);
      await ctx.timer.schedule(b1, at(300));

      assert.equal(await ctx.store.cancelRuns({ name: 'a' }, 10), 3);
      assert.deepEqual(await h.statuses(), {
        [a1]: 'canceled',
        [a2]: 'canceled',
        [a3]: 'canceled',
        [aDone]: 'done',
        [b1]: 'running',
      });
      for (const id of [a1, a2, a3]) assert.equal((await h.run(id)).error, null, 'no error recorded');
      assert.equal((await h.run(aDone)).output, '"ok"', 'a done run is untouched');
      assert.deepEqual(await h.idsIn('timer'), [b1], "the canceled runs' timers are deleted");
      assert.deepEqual(await h.idsIn('job'), [a1], 'job rows are left in place');
      // a canceled run is terminal now: a second call finds nothing
      assert.equal(await ctx.store.cancelRuns({ name: 'a' }, 10), 0);
      // status intersected with ACTIVE: ['running', 'done'] ⇒ b1 only
      assert.equal(await ctx.store.cancelRuns({ status: ['running', 'done'] }, 10), 1);
      assert.equal((await h.run(b1)).status, 'canceled');
      assert.deepEqual(await h.idsIn('timer'), []);
    },
  );

  test('§3 cancelRuns: limit, tag, version and before predicates', TO, async () => {
    const tagged = [];
    for (let i = 0; i < 5; i++) tagged.push(await h.start({ tags: ['batch'], createdAt: at(i) }));
    const other = await h.start({ tags: ['other'], createdAt: at(0) });
    const v2 = await h.start({ version: 2, createdAt: at(50) });
    assert.equal(await ctx.store.cancelRuns({ tag: 'batch' }, 2), 2);
    const st = await h.statuses();
    assert.equal(tagged.filter((id) => st[id] === 'canceled').length, 2);
    assert.equal(st[other], 'pending');
    assert.equal(await ctx.store.cancelRuns({ version: 2 }, 10), 1);
    assert.equal((await h.run(v2)).status, 'canceled');
    // before: created strictly before at(3) and still live
    const live = tagged.filter((id) => st[id] === 'pending');
    const expected = [...live.filter((id) => tagged.indexOf(id) < 3), other].length;
    assert.equal(await ctx.store.cancelRuns({ before: at(3) }, 10), expected);
    const after = await h.statuses();
    tagged.forEach((id, i) =>
      assert.equal(after[id], i < 3 || st[id] === 'canceled' ? 'canceled' : 'pending', `tagged[${i}]`),
    );
    assert.equal(after[other], 'canceled');
  });

  // -------------------------------------------------------------------------------------------
  // §3 retryRuns, retryRun
  // -------------------------------------------------------------------------------------------

  test(
    '§3 retryRuns: failed runs matching the filter ⇒ pending, error cleared, attempts 0, enqueued with their priority',
    TO,
    async () => {
      const f1 = await h.start({ name: 'a', priority: 7 });
      const f2 = await h.start({ name: 'a' });
      const fOther = await h.start({ name: 'b' });
      const dA = await h.start({ name: 'a' });
      const pA = await h.start({ name: 'a' });
      for (let i = 0; i < 3; i++) await ctx.store.markRunning(f1);
      for (const id of [f1, f2, fOther]) await h.fail(id);
      await h.done(dA);
      // f2 still has a leased job: the retry's enqueue bumps its version and keeps the lease
      await ctx.queue.enqueue(f2);
      const [lease] = await claim(0);
      assert.equal(lease.runId, f2);

      assert.equal(await ctx.store.retryRuns({ name: 'a' }, 10), 2);
      const r1 = await h.run(f1);
      assert.equal(r1.status, 'pending');
      assert.equal(r1.error, null);
      assert.equal(Number(r1.attempts), 0);
      assert.deepEqual(
        { ...(await h.job(f1)) },
        { run_id: f1, run_at: 0, priority: 7, version: 1, lease_token: null, lease_expires: null },
        'enqueued with the run priority',
      );
      const j2 = await h.job(f2);
      assert.equal(Number(j2.version), 2);
      assert.equal(j2.lease_token, lease.token, 'a held lease is not taken away');
      assert.deepEqual(await h.statuses(), {
        [f1]: 'pending',
        [f2]: 'pending',
        [fOther]: 'failed',
        [dA]: 'done',
        [pA]: 'pending',
      });
      assert.equal(await h.job(pA), undefined, 'a pending run is not enqueued');
      assert.equal(await h.job(fOther), undefined);
      // the memo stays
      const loaded = await ctx.store.loadRunRow(f1);
      assert.equal(loaded.attempts, 0);
      assert.equal(loaded.error, undefined);
    },
  );

  test('§3 retryRuns: limit and status/version predicates', TO, async () => {
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push(await h.start({ version: i < 3 ? 1 : 2 }));
    for (const id of ids) await h.fail(id);
    assert.equal(await ctx.store.retryRuns({ version: 1 }, 2), 2);
    let st = await h.statuses();
    assert.equal(ids.slice(0, 3).filter((id) => st[id] === 'pending').length, 2);
    assert.equal(st[ids[3]], 'failed');
    assert.equal((await h.idsIn('job')).length, 2);
    assert.equal(await ctx.store.retryRuns({ status: ['failed', 'done'] }, 10), 2);
    st = await h.statuses();
    assert.ok(ids.every((id) => st[id] === 'pending'));
    assert.deepEqual(await h.idsIn('job'), [...ids].sort());
  });

  test('§3 retryRun resets attempts to 0 (and enqueues with the run priority)', TO, async () => {
    const id = await h.start({ priority: 4 });
    for (let i = 0; i < 3; i++) await ctx.store.markRunning(id);
    await h.fail(id);
    assert.equal(Number((await h.run(id)).attempts), 3);
    assert.deepEqual(await ctx.store.retryRun(id), { retried: true });
    const row = await h.run(id);
    assert.equal(row.status, 'pending');
    assert.equal(row.error, null);
    assert.equal(Number(row.attempts), 0);
    assert.equal(Number((await h.job(id)).priority), 4);
    assert.deepEqual(await ctx.store.retryRun(id), { retried: false }, 'only failed runs retry');
  });

  // -------------------------------------------------------------------------------------------
  // §3 crons
  // -------------------------------------------------------------------------------------------

  const cron = (name, flowName, nextRunAt, extra = {}) =>
    ctx.store.upsertCron({
      name,
      schedule: '* * * * *',
      flowName,
      flowVersion: 1,
      input: { n: name },
      nextRunAt,
      ...extra,
    });

  test('§3 listCrons: every cron, ordered by name, as full CronRows', TO, async () => {
    assert.deepEqual(await ctx.store.listCrons(), []);
    await cron('c-b', 'beta', at(100));
    await cron('c-a', 'alpha', at(0), { overlap: 'skip' });
    await cron('c-c', 'alpha', at(-5));
    await ctx.store.advanceCron('c-a', at(0), at(60_000), at(0));
    const list = await ctx.store.listCrons();
    assert.deepEqual(
      list.map((c) => c.name),
      ['c-a', 'c-b', 'c-c'],
    );
    for (const c of list) assert.deepEqual(sortedKeys(c), [...CRON_KEYS].sort());
    assert.deepEqual(list[0], {
      name: 'c-a',
      schedule: '* * * * *',
      flowName: 'alpha',
      flowVersion: 1,
      input: { n: 'c-a' },
      overlap: 'skip',
      nextRunAt: at(60_000),
      lastRunAt: at(0),
    });
    assert.equal(list[1].lastRunAt, undefined);
    assert.ok(list[1].nextRunAt instanceof Date);
    assert.equal(list[2].overlap, 'allow');
  });

  test('§3 removeCron: true when a row went, false otherwise', TO, async () => {
    await cron('c1', 'f', at(0));
    await cron('c2', 'f', at(0));
    assert.equal(await ctx.store.removeCron('c1'), true);
    assert.deepEqual(
      (await ctx.rows(`SELECT name FROM ${ctx.t.cron}`)).map((r) => r.name),
      ['c2'],
    );
    assert.equal(await ctx.store.removeCron('c1'), false);
    assert.equal(await ctx.store.removeCron('nope'), false);
    assert.deepEqual(
      (await ctx.store.listCrons()).map((c) => c.name),
      ['c2'],
    );
  });

  test('§3 dueCronCount(now, names?): inclusive, restricted to flow names; [] ⇒ 0 without a query', TO, async () => {
    await cron('a1', 'alpha', at(-10));
    await cron('a2', 'alpha', at(0));
    await cron('a3', 'alpha', at(1));
    await cron('b1', 'beta', at(-1));
    assert.equal(await ctx.store.dueCronCount(at(0)), 3);
    assert.equal(await ctx.store.dueCronCount(at(-11)), 0);
    assert.equal(await ctx.store.dueCronCount(at(1)), 4);
    assert.equal(await ctx.store.dueCronCount(at(0), ['alpha']), 2);
    assert.equal(await ctx.store.dueCronCount(at(0), ['beta']), 1);
    assert.equal(await ctx.store.dueCronCount(at(0), ['alpha', 'beta']), 3);
    assert.equal(await ctx.store.dueCronCount(at(0), ['gamma']), 0);
    assert.equal(await ctx.store.dueCronCount(at(0), undefined), 3);
    assert.deepEqual(await h.sendsNothing((b) => b.store.dueCronCount(at(0), [])), [0, 0]);
  });

  test(
    '§3 upsertCron keeps next_run_at while the schedule is unchanged, adopts the new one when it changes',
    TO,
    async () => {
      await cron('c', 'f', at(1000));
      assert.equal(await ctx.store.advanceCron('c', at(1000), at(2000), at(1000)), true);
      // same schedule, other fields and a new nextRunAt: only next_run_at (and last_run_at) kept
      await ctx.store.upsertCron({
        name: 'c',
        schedule: '* * * * *',
        flowName: 'g',
        flowVersion: 2,
        input: 'new',
        overlap: 'skip',
        nextRunAt: at(9000),
      });
      let [row] = await ctx.store.listCrons();
      assert.deepEqual(row, {
        name: 'c',
        schedule: '* * * * *',
        flowName: 'g',
        flowVersion: 2,
        input: 'new',
        overlap: 'skip',
        nextRunAt: at(2000),
        lastRunAt: at(1000),
      });
      // a changed schedule takes the new nextRunAt
      await ctx.store.upsertCron({
        name: 'c',
        schedule: '*/5 * * * *',
        flowName: 'g',
        flowVersion: 2,
        input: 'new',
        nextRunAt: at(5000),
      });
      [row] = await ctx.store.listCrons();
      assert.equal(row.schedule, '*/5 * * * *');
      assert.equal(row.nextRunAt.getTime(), T + 5000);
      assert.equal(row.lastRunAt.getTime(), T + 1000, 'last_run_at kept');
      assert.equal(row.overlap, 'allow');
      // and unchanged again: kept
      await ctx.store.upsertCron({
        name: 'c',
        schedule: '*/5 * * * *',
        flowName: 'g',
        flowVersion: 2,
        input: 'new',
        nextRunAt: at(7777),
      });
      assert.equal(Number((await ctx.rows(`SELECT next_run_at FROM ${ctx.t.cron}`))[0].next_run_at), T + 5000);
    },
  );

  // -------------------------------------------------------------------------------------------
  // §3 RunSpec.priority
  // -------------------------------------------------------------------------------------------

  test('§3 RunSpec.priority is stored by startRun, startManyRuns and spawns (default 0)', TO, async () => {
    const a = await h.start({ priority: 5 });
    const b = await h.start();
    const c = await h.start({ priority: -3, idempotencyKey: 'k' });
    const many = await ctx.store.startManyRuns([
      { name: 'flow', version: 1, input: null, priority: 2 },
      { name: 'flow', version: 1, input: null },
      { name: 'flow', version: 1, input: null, priority: 9, idempotencyKey: 'k' }, // hits c
    ]);
    assert.equal(many[2].runId, c);
    assert.equal(many[2].created, false);
    await ctx.store.checkpointStep(
      { runId: a, cursorKey: 's0', status: 'ok', result: null, attempts: 1 },
      {
        spawn: [
          { runId: 'kid1', spec: { name: 'child', version: 1, input: null, priority: 8 } },
          { runId: 'kid2', spec: { name: 'child', version: 1, input: null } },
        ],
      },
    );
    const prio = async (id) => Number((await h.run(id)).priority);
    assert.equal(await prio(a), 5);
    assert.equal(await prio(b), 0);
    assert.equal(await prio(c), -3, 'an idempotency hit keeps the first priority');
    assert.equal(await prio(many[0].runId), 2);
    assert.equal(await prio(many[1].runId), 0);
    assert.equal(await prio('kid1'), 8);
    assert.equal(await prio('kid2'), 0);
    // RunRow has the same 14 keys as before (priority is not part of it)
    assert.deepEqual(sortedKeys(await ctx.store.loadRunRow(a)), [...RUN_ROW_KEYS].sort());
  });

  // -------------------------------------------------------------------------------------------
  // §4 enqueue priority inheritance, enqueueMany
  // -------------------------------------------------------------------------------------------

  test(
    '§4 enqueue without priority inherits the run priority (0 without a run row); an explicit one wins',
    TO,
    async () => {
      const r = await h.start({ priority: 5 });
      await ctx.queue.enqueue(r);
      assert.deepEqual([Number((await h.job(r)).priority), Number((await h.job(r)).version)], [5, 1]);
      await ctx.queue.enqueue(r, { priority: 1 });
      assert.deepEqual([Number((await h.job(r)).priority), Number((await h.job(r)).version)], [1, 2]);
      // a re-enqueue without priority resolves it again: the run's
      await ctx.queue.enqueue(r, { runAt: at(10) });
      const j = await h.job(r);
      assert.deepEqual([Number(j.priority), Number(j.version), Number(j.run_at)], [5, 3, T + 10]);
      await ctx.queue.enqueue('ghost');
      assert.equal(Number((await h.job('ghost')).priority), 0);
      await ctx.queue.enqueue('ghost', { priority: 3 });
      assert.equal(Number((await h.job('ghost')).priority), 3);
      await ctx.queue.enqueue('ghost', { priority: null });
      assert.equal(Number((await h.job('ghost')).priority), 0, 'priority: null counts as absent');
    },
  );

  test('§4 inherited priority orders claims; an ack release keeps it', TO, async () => {
    const low = await h.start({ priority: 10 });
    const high = await h.start({ priority: 1 });
    const mid = await h.start({ priority: 5 });
    for (const id of [low, high, mid]) await ctx.queue.enqueue(id);
    const order = [];
    for (let i = 0; i < 3; i++) order.push((await ctx.queue.claim({ limit: 1, leaseMs: LEASE, now: at(0) }))[0].runId);
    assert.deepEqual(order, [high, mid, low]);
    // released job (enqueued during the lease) keeps its priority
    const [l] = await claim(2000, { limit: 1 });
    assert.equal(l.runId, high);
    await ctx.queue.enqueue(high);
    await ctx.queue.ack(l, { now: at(2001) });
    const j = await h.job(high);
    assert.equal(j.lease_token, null);
    assert.equal(Number(j.priority), 1);
  });

  test('§4 postSignal and every outbox enqueue inherit the priority (spawned children: their spec)', TO, async () => {
    const parent = await h.start({ priority: 6 });
    const sibling = await h.start({ priority: 2 });
    const existing = await h.start({ priority: 4 });
    await ctx.store.postSignal(parent, 'go', null);
    assert.equal(Number((await h.job(parent)).priority), 6, 'postSignal');
    await ctx.store.checkpointStep(
      { runId: parent, cursorKey: 's0', status: 'ok', result: null, attempts: 1 },
      {
        spawn: [
          { runId: 'kid', spec: { name: 'child', version: 1, input: null, priority: 3 } },
          {
            runId: 'kid-explicit',
            spec: { name: 'child', version: 1, input: null, priority: 3 },
            enqueue: { priority: 11 },
          },
          // insert ignored (the id exists): the job takes the stored run's priority, not the spec's
          { runId: existing, spec: { name: 'child', version: 1, input: null, priority: 99 } },
        ],
        enqueue: [{ runId: sibling }, { runId: 'orphan' }, { runId: parent, opts: { priority: 12 } }],
      },
    );
    const prio = async (id) => Number((await h.job(id)).priority);
    assert.equal(await prio('kid'), 3);
    assert.equal(await prio('kid-explicit'), 11);
    assert.equal(await prio(existing), 4);
    assert.equal(Number((await h.run(existing)).priority), 4);
    assert.equal(await prio(sibling), 2);
    assert.equal(await prio('orphan'), 0);
    assert.equal(await prio(parent), 12);
    // suspendRun / markTerminal outboxes
    await ctx.store.suspendRun(sibling, 'awaiting_child', { enqueue: [{ runId: parent }] });
    assert.equal(await prio(parent), 6, 'suspendRun outbox re-enqueue inherits again');
    await ctx.store.markTerminal('kid', { status: 'done', output: 1 }, { enqueue: [{ runId: sibling }] });
    assert.equal(await prio(sibling), 2, 'markTerminal outbox');
  });

  test(
    '§4 outbox order: spawns first, then ONE combined enqueue (spawn enqueues, then fx.enqueue; the last wins)',
    TO,
    async () => {
      const parent = await h.start();
      await ctx.store.checkpointStep(
        { runId: parent, cursorKey: 's0', status: 'ok', result: null, attempts: 1 },
        {
          spawn: [
            {
              runId: 'k1',
              spec: { name: 'child', version: 1, input: null, priority: 4 },
              enqueue: { priority: 1, runAt: at(30) },
            },
            { runId: 'k2', spec: { name: 'child', version: 1, input: null, priority: 6 } },
          ],
          // k1 again: this request wins over the spawn's; k2 without priority: the spawned row's
          enqueue: [
            { runId: 'k1', opts: { priority: 9 } },
            { runId: 'k2', opts: { runAt: at(70) } },
          ],
        },
      );
      const k1 = await h.job('k1');
      const k2 = await h.job('k2');
      assert.deepEqual([Number(k1.priority), Number(k1.run_at), Number(k1.version)], [9, 0, 1], 'one upsert for k1');
      assert.deepEqual([Number(k2.priority), Number(k2.run_at), Number(k2.version)], [6, T + 70, 1]);
    },
  );

  test('§4 enqueueMany: distinct per run, the last request wins, one upsert per run', TO, async () => {
    const a = await h.start({ priority: 7 });
    await ctx.queue.enqueueMany([
      { runId: 'b', opts: { priority: 1, runAt: at(100) } },
      { runId: a },
      { runId: 'b', opts: { priority: 5 } },
      { runId: 'c', opts: { runAt: at(50) } },
      { runId: 'c', opts: { runAt: at(60), priority: 2 } },
    ]);
    const rows = await ctx.rows(
      `SELECT run_id, run_at, priority, version, lease_token FROM ${ctx.t.job} ORDER BY run_id`,
    );
    assert.deepEqual(
      rows.map((r) => ({ ...r })),
      [
        { run_id: a, run_at: 0, priority: 7, version: 1, lease_token: null },
        { run_id: 'b', run_at: 0, priority: 5, version: 1, lease_token: null },
        { run_id: 'c', run_at: T + 60, priority: 2, version: 1, lease_token: null },
      ].sort((x, y) => (x.run_id < y.run_id ? -1 : 1)),
    );
    // existing rows: version + 1, held leases kept, run_at / priority overwritten
    const [l] = await claim(0, { limit: 1 });
    await ctx.queue.enqueueMany([{ runId: l.runId, opts: { runAt: at(500) } }, { runId: 'd' }]);
    const j = await h.job(l.runId);
    assert.equal(Number(j.version), 2);
    assert.equal(j.lease_token, l.token);
    assert.equal(Number(j.run_at), T + 500);
    assert.equal(Number((await h.job('d')).version), 1);
    // nothing to do
    await ctx.queue.enqueueMany([]);
    assert.equal(await ctx.count('job'), 4);
  });

  test(
    '§4 enqueueMany: the last request wins as a whole (a later one without priority inherits again)',
    TO,
    async () => {
      const a = await h.start({ priority: 7 });
      await ctx.queue.enqueueMany([{ runId: a, opts: { priority: 1, runAt: at(40) } }, { runId: a }]);
      const j = await h.job(a);
      assert.deepEqual([Number(j.priority), Number(j.run_at), Number(j.version)], [7, 0, 1]);
      await ctx.queue.enqueueMany([
        { runId: a, opts: { runAt: at(5) } },
        { runId: 'x' },
        { runId: a, opts: { priority: 2 } },
      ]);
      const k = await h.job(a);
      assert.deepEqual([Number(k.priority), Number(k.run_at), Number(k.version)], [2, 0, 2]);
    },
  );

  test('§4 enqueueMany writes the distinct runs in first-appearance order', TO, async () => {
    const log = [];
    const b = createMysqlBackend(wrapSql(ctx.sql, { log }), V3);
    const ids = ['r3', 'r1', 'r2'];
    await b.queue.enqueueMany([
      { runId: 'r3' },
      { runId: 'r1' },
      { runId: 'r3', opts: { priority: 1 } },
      { runId: 'r2' },
      { runId: 'r1' },
    ]);
    const writes = log.filter((e) => /INSERT/i.test(e.text) && e.text.includes(ctx.t.job));
    assert.ok(writes.length >= 1, 'an insert into the job table');
    const seen = [];
    for (const w of writes) for (const p of w.params ?? []) if (ids.includes(p) && !seen.includes(p)) seen.push(p);
    assert.deepEqual(seen, ['r3', 'r1', 'r2']);
    assert.equal(Number((await h.job('r3')).priority), 1);
    assert.equal(Number((await h.job('r3')).version), 1);
  });

  test('§4 enqueueMany of 2,500 runs lands every one (statements of at most 1,000 rows)', TO, async () => {
    const reqs = Array.from({ length: 2500 }, (_, i) => ({
      runId: `m${String(i).padStart(4, '0')}`,
      opts: { priority: i % 7 },
    }));
    await ctx.queue.enqueueMany(reqs);
    assert.equal(await ctx.count('job'), 2500);
    assert.equal(await ctx.count('job', 'version = 1'), 2500);
    const [{ s }] = await ctx.rows(`SELECT SUM(priority) AS s FROM ${ctx.t.job}`);
    assert.equal(
      Number(s),
      reqs.reduce((acc, r) => acc + r.opts.priority, 0),
    );
  });

  // -------------------------------------------------------------------------------------------
  // §4 claim / depth with names
  // -------------------------------------------------------------------------------------------

  test('§4 claim({ names }): only jobs of those flows, or without a run row; [] ⇒ [] without a query', TO, async () => {
    const a1 = await h.start({ name: 'alpha' });
    const a2 = await h.start({ name: 'alpha' });
    const b1 = await h.start({ name: 'beta' });
    for (const id of [a1, a2, b1, 'ghost']) await ctx.queue.enqueue(id);
    assert.deepEqual(await h.sendsNothing((b) => b.queue.claim({ limit: 10, leaseMs: LEASE, now: at(0), names: [] })), [
      [],
      [],
    ]);
    assert.equal(await ctx.count('job', 'lease_token IS NOT NULL'), 0);
    const got = (await claim(0, { names: ['gamma'] })).map((l) => l.runId);
    assert.deepEqual(got, ['ghost'], 'a job without a run row is claimable for any list of names');
    assert.deepEqual((await claim(0, { names: ['alpha'], limit: 1 })).length, 1);
    const rest = (await claim(0, { names: ['alpha'] })).map((l) => l.runId);
    assert.equal(rest.length, 1);
    assert.ok([a1, a2].includes(rest[0]));
    assert.deepEqual(await claim(0, { names: ['alpha'] }), []);
    assert.deepEqual(
      (await claim(0, { names: ['alpha', 'beta'] })).map((l) => l.runId),
      [b1],
    );
    assert.equal(await ctx.count('job', 'lease_token IS NOT NULL'), 4);
  });

  test('§4 claim without names (or names: null) claims every flow', TO, async () => {
    const a = await h.start({ name: 'alpha' });
    const b = await h.start({ name: 'beta' });
    for (const id of [a, b, 'ghost']) await ctx.queue.enqueue(id);
    assert.deepEqual((await claim(0, { names: null, limit: 1 })).length, 1);
    assert.equal((await claim(0)).length, 2);
  });

  test(
    '§4 depth(now, names): counts only those flows (and run-less jobs); [] ⇒ zeros without a query',
    TO,
    async () => {
      const a1 = await h.start({ name: 'alpha' });
      const a2 = await h.start({ name: 'alpha' });
      const b1 = await h.start({ name: 'beta' });
      await ctx.queue.enqueue(a1, { runAt: at(-100) });
      await ctx.queue.enqueue(a2, { runAt: at(500) });
      await ctx.queue.enqueue(b1, { runAt: at(-50) });
      await ctx.queue.enqueue('ghost', { runAt: at(-10) });
      await claim(0, { names: ['beta'], limit: 10 }); // leases b1 and ghost? ghost has no run row: yes
      assert.deepEqual(await ctx.queue.depth(at(0)), { claimable: 1, leased: 2, oldestClaimableAgeMs: 100 });
      assert.deepEqual(await ctx.queue.depth(at(0), ['alpha']), { claimable: 1, leased: 1, oldestClaimableAgeMs: 100 });
      assert.deepEqual(await ctx.queue.depth(at(0), ['beta']), { claimable: 0, leased: 2, oldestClaimableAgeMs: null });
      assert.deepEqual(await ctx.queue.depth(at(600), ['alpha']), {
        claimable: 2,
        leased: 1,
        oldestClaimableAgeMs: 700,
      });
      assert.deepEqual(await ctx.queue.depth(at(0), ['gamma']), {
        claimable: 0,
        leased: 1,
        oldestClaimableAgeMs: null,
      });
      const zero = { claimable: 0, leased: 0, oldestClaimableAgeMs: null };
      assert.deepEqual(await h.sendsNothing((b) => b.queue.depth(at(0), [])), [zero, zero]);
    },
  );

  // -------------------------------------------------------------------------------------------
  // §5 timer.dueCount, timer.nextDueAt
  // -------------------------------------------------------------------------------------------

  test(
    '§5 dueCount(now, names?): inclusive; names restrict to those flows (run-less timers count); [] ⇒ 0',
    TO,
    async () => {
      const a1 = await h.start({ name: 'alpha' });
      const a2 = await h.start({ name: 'alpha' });
      const b1 = await h.start({ name: 'beta' });
      await ctx.timer.schedule(a1, at(0));
      await ctx.timer.schedule(a2, at(50));
      await ctx.timer.schedule(b1, at(10));
      await ctx.timer.schedule('ghost', at(-5));
      assert.equal(await ctx.timer.dueCount(at(-6)), 0);
      assert.equal(await ctx.timer.dueCount(at(0)), 2);
      assert.equal(await ctx.timer.dueCount(at(10)), 3);
      assert.equal(await ctx.timer.dueCount(at(10), undefined), 3);
      assert.equal(await ctx.timer.dueCount(at(10), ['alpha']), 2);
      assert.equal(await ctx.timer.dueCount(at(10), ['beta']), 2);
      assert.equal(await ctx.timer.dueCount(at(50), ['alpha', 'beta']), 4);
      assert.equal(await ctx.timer.dueCount(at(50), ['gamma']), 1);
      assert.deepEqual(await h.sendsNothing((b) => b.timer.dueCount(at(50), [])), [0, 0]);
      // counting takes nothing away
      assert.equal(await ctx.count('timer'), 4);
    },
  );

  test('§5 nextDueAt(now): the earliest fire_at strictly after now, as a Date, or null', TO, async () => {
    assert.equal(await ctx.timer.nextDueAt(at(0)), null);
    await ctx.timer.schedule('a', at(0));
    await ctx.timer.schedule('b', at(10));
    await ctx.timer.schedule('c', at(-5));
    const next = await ctx.timer.nextDueAt(at(0));
    assert.ok(next instanceof Date);
    assert.equal(next.getTime(), T + 10, 'a timer at exactly now is not "next"');
    assert.equal((await ctx.timer.nextDueAt(at(-10))).getTime(), T - 5);
    assert.equal((await ctx.timer.nextDueAt(at(-5))).getTime(), T);
    assert.equal(await ctx.timer.nextDueAt(at(10)), null);
    assert.equal(await ctx.count('timer'), 3);
  });

  // -------------------------------------------------------------------------------------------
  // §3 checkpoints: `call`, requireVersion fencing
  // -------------------------------------------------------------------------------------------

  test('§3 checkpointStep takes and answers `call` (stored in step.shape); loadRun answers it too', TO, async () => {
    const id = await h.start();
    const memo = await ctx.store.checkpointStep({
      runId: id,
      cursorKey: 's0',
      status: 'ok',
      result: { v: 1 },
      attempts: 2,
      call: 'step:fetch',
    });
    assert.deepEqual(sortedKeys(memo), [...STEP_V3_KEYS].sort());
    assert.deepEqual(memo, { status: 'ok', result: { v: 1 }, error: undefined, attempts: 2, call: 'step:fetch' });
    assert.equal((await ctx.rows(`SELECT shape FROM ${ctx.t.step} WHERE run_id = ?`, [id]))[0].shape, 'step:fetch');
    // a replay with another call answers the first writer's
    const replay = await ctx.store.checkpointStep({
      runId: id,
      cursorKey: 's0',
      status: 'ok',
      result: 2,
      attempts: 3,
      call: 'step:other',
    });
    assert.deepEqual(replay, memo);
    // with an outbox (another code path)
    const withFx = await ctx.store.checkpointStep(
      { runId: id, cursorKey: 's1', status: 'ok', result: null, attempts: 1, call: 'sleep' },
      { timers: [{ runId: id, fireAt: at(5) }] },
    );
    assert.equal(withFx.call, 'sleep');
    // no call ⇒ undefined / NULL
    const none = await ctx.store.checkpointStep({
      runId: id,
      cursorKey: 's2',
      status: 'ok',
      result: null,
      attempts: 1,
    });
    assert.equal(none.call, undefined);
    assert.equal('shape' in none, false);
    const snap = await ctx.store.loadRun(id);
    assert.deepEqual(sortedKeys(snap.steps.get('s0')), [...STEP_V3_KEYS].sort());
    assert.deepEqual([...snap.steps].map(([k, s]) => [k, s.call]).sort(), [
      ['s0', 'step:fetch'],
      ['s1', 'sleep'],
      ['s2', undefined],
    ]);
  });

  const fencedOutbox = (id, version) => ({
    requireVersion: version,
    spawn: [{ runId: 'kid', spec: { name: 'child', version: 1, input: null } }],
    enqueue: [{ runId: 'other' }],
    timers: [{ runId: id, fireAt: at(100) }],
    joinTarget: { runId: id, count: 3 },
  });

  test('§3 requireVersion: no job row ⇒ { status, attempts, committed: false } and nothing written', TO, async () => {
    const id = await h.start();
    await ctx.store.postSignal(id, 's', 1);
    const [sig] = (await ctx.store.loadRun(id)).signals;
    await ctx.rows(`DELETE FROM ${ctx.t.job}`);
    const out = await ctx.store.checkpointStep(
      { runId: id, cursorKey: 's0', status: 'ok', result: 'r', attempts: 2, call: 'step:a' },
      { ...fencedOutbox(id, 1), consumeSignals: [sig.id] },
    );
    assert.deepEqual(out, { status: 'ok', attempts: 2, committed: false });
    assert.equal(await ctx.count('step'), 0);
    assert.equal(await h.run('kid'), undefined);
    assert.equal(await ctx.count('job'), 0);
    assert.equal(await ctx.count('timer'), 0);
    assert.equal(Number((await h.run(id)).join_remaining), 0);
    assert.equal(Number((await h.signals(id))[0].consumed), 0);
  });

  test(
    '§3 requireVersion: another version ⇒ committed: false; the current version ⇒ written with its outbox',
    TO,
    async () => {
      const id = await h.start();
      await ctx.queue.enqueue(id);
      await ctx.queue.enqueue(id); // version 2
      const cp = { runId: id, cursorKey: 's0', status: 'ok', result: 'r', attempts: 1, call: 'step:a' };
      assert.deepEqual(await ctx.store.checkpointStep(cp, fencedOutbox(id, 1)), {
        status: 'ok',
        attempts: 1,
        committed: false,
      });
      assert.equal(await ctx.count('step'), 0);
      assert.deepEqual(await h.idsIn('job'), [id]);
      assert.equal(Number((await h.job(id)).version), 2);
      assert.equal(await ctx.count('timer'), 0);
      const won = await ctx.store.checkpointStep(cp, fencedOutbox(id, 2));
      assert.notEqual(won.committed, false);
      assert.equal(won.result, 'r');
      assert.equal(won.call, 'step:a');
      assert.equal(await ctx.count('step'), 1);
      assert.equal((await h.run('kid')).status, 'pending');
      assert.deepEqual(await h.idsIn('job'), [id, 'kid', 'other'].sort());
      assert.equal(Number((await h.job(id)).version), 2, "the run's own job is not bumped by its checkpoint");
      assert.equal(Number((await h.timer(id)).fire_at), T + 100);
      assert.equal(Number((await h.run(id)).join_remaining), 3);
    },
  );

  test(
    '§3 requireVersion: an already stored step answers its memo whatever the version, outbox not re-applied',
    TO,
    async () => {
      const id = await h.start();
      await ctx.queue.enqueue(id);
      const first = await ctx.store.checkpointStep(
        { runId: id, cursorKey: 's0', status: 'ok', result: 'first', attempts: 1, call: 'step:a' },
        { requireVersion: 1 },
      );
      assert.equal(first.result, 'first');
      await ctx.queue.enqueue(id); // version 2
      const again = await ctx.store.checkpointStep(
        { runId: id, cursorKey: 's0', status: 'ok', result: 'second', attempts: 9, call: 'step:b' },
        fencedOutbox(id, 1),
      );
      assert.deepEqual(again, { status: 'ok', result: 'first', error: undefined, attempts: 1, call: 'step:a' });
      assert.equal(await h.run('kid'), undefined);
      assert.equal(await h.job('other'), undefined);
      assert.equal(await ctx.count('timer'), 0);
      // an unknown run still rejects
      await assert.rejects(
        ctx.store.checkpointStep(
          { runId: 'nope', cursorKey: 's0', status: 'ok', result: 1, attempts: 1 },
          { requireVersion: 1 },
        ),
      );
      assert.equal(await ctx.count('step', 'run_id = ?', ['nope']), 0);
    },
  );

  test(
    '§3 requireVersion locks the job row: a checkpoint waits for a concurrent re-enqueue and then sees its version',
    TO,
    async () => {
      const id = await h.start();
      await ctx.queue.enqueue(id); // version 1
      let locked;
      let release;
      const isLocked = new Promise((r) => (locked = r));
      const held = new Promise((r) => (release = r));
      const holder = ctx.sql.tx(async (t) => {
        await t.exec(`UPDATE ${ctx.t.job} SET version = version + 1 WHERE run_id = ?`, [id]);
        locked();
        await held;
      });
      await isLocked;
      let settled = false;
      const cp = ctx.store.checkpointStep(
        { runId: id, cursorKey: 's0', status: 'ok', result: 1, attempts: 1, call: 'c' },
        { requireVersion: 1, enqueue: [{ runId: 'other' }] },
      );
      cp.then(
        () => (settled = true),
        () => (settled = true),
      );
      await sleep(400);
      assert.equal(settled, false, 'the fenced checkpoint waits for the job row');
      release();
      await holder;
      assert.deepEqual(await cp, { status: 'ok', attempts: 1, committed: false });
      assert.equal(await ctx.count('step'), 0);
      assert.equal(await h.job('other'), undefined);
    },
  );

  // -------------------------------------------------------------------------------------------
  // §3 markTerminal: every terminal state sticky
  // -------------------------------------------------------------------------------------------

  test('§3 markTerminal: the first terminal write wins; later ones and their outboxes are skipped', TO, async () => {
    const cases = [
      ['done', 'failed'],
      ['done', 'canceled'],
      ['done', 'done'],
      ['failed', 'done'],
      ['failed', 'canceled'],
      ['canceled', 'done'],
      ['canceled', 'failed'],
    ];
    const outcome = (s) =>
      s === 'done' ? { status: 'done', output: 'out' } : { status: s, error: { code: 'E2', message: s } };
    for (const [first, second] of cases) {
      const id = await h.start();
      await ctx.timer.schedule(id, at(100));
      await ctx.store.markTerminal(id, outcome(first), { enqueue: [{ runId: `${id}-w1` }] });
      const before = await h.run(id);
      assert.equal(before.status, first);
      assert.ok(await h.job(`${id}-w1`), `${first}: its outbox applied`);
      await ctx.store.markTerminal(
        id,
        second === 'done'
          ? { status: 'done', output: 'later' }
          : { status: second, error: { code: 'E3', message: 'later' } },
        { cancelTimers: [id], enqueue: [{ runId: `${id}-w2` }] },
      );
      const after = await h.run(id);
      assert.deepEqual(
        [after.status, after.output, after.error],
        [before.status, before.output, before.error],
        `${first} then ${second}`,
      );
      assert.ok(await h.timer(id), `${first} then ${second}: the timer survives (outbox skipped)`);
      assert.equal(await h.job(`${id}-w2`), undefined, `${first} then ${second}: no enqueue`);
    }
  });

  test('§3 markTerminal on live runs still writes (and cancel without error stores NULL)', TO, async () => {
    for (const status of ['pending', 'running', 'sleeping', 'awaiting_signal', 'awaiting_child', 'retrying']) {
      const id = await h.start();
      if (status === 'running') await ctx.store.markRunning(id);
      else if (status !== 'pending') await ctx.store.suspendRun(id, status);
      assert.equal((await h.run(id)).status, status);
      await ctx.store.markTerminal(id, { status: 'canceled' });
      const row = await h.run(id);
      assert.equal(row.status, 'canceled', `from ${status}`);
      assert.equal(row.error, null);
    }
  });

  // -------------------------------------------------------------------------------------------
  // §3 soft-consumed signals
  // -------------------------------------------------------------------------------------------

  test(
    '§3 consumeSignals sets consumed = 1; loadRun lists the unconsumed ones; the key stays deduplicated',
    TO,
    async () => {
      const id = await h.start();
      assert.deepEqual(await ctx.store.postSignal(id, 'a', 1, { idempotencyKey: 'k' }), { delivered: true });
      await ctx.store.postSignal(id, 'b', 2);
      await ctx.store.postSignal(id, 'c', 3);
      const sigs = (await ctx.store.loadRun(id)).signals;
      assert.deepEqual(
        sigs.map((s) => s.name),
        ['a', 'b', 'c'],
      );
      await ctx.store.checkpointStep(
        { runId: id, cursorKey: 's0', status: 'ok', result: 1, attempts: 1, call: 'signal' },
        { consumeSignals: [sigs[0].id] },
      );
      let rows = await h.signals(id);
      assert.deepEqual(
        rows.map((r) => [r.name, Number(r.consumed)]),
        [
          ['a', 1],
          ['b', 0],
          ['c', 0],
        ],
        'the row stays, flagged',
      );
      assert.deepEqual(
        (await ctx.store.loadRun(id)).signals.map((s) => s.name),
        ['b', 'c'],
      );
      // the consumed signal's key still dedups, and a duplicate enqueues nothing
      const version = Number((await h.job(id)).version);
      assert.deepEqual(await ctx.store.postSignal(id, 'a', 'again', { idempotencyKey: 'k' }), { delivered: false });
      assert.equal((await h.signals(id)).length, 3);
      assert.equal(Number((await h.job(id)).version), version);
      // suspendRun's outbox consumes the same way
      await ctx.store.suspendRun(id, 'awaiting_signal', { consumeSignals: [sigs[2].id] });
      rows = await h.signals(id);
      assert.deepEqual(
        rows.map((r) => Number(r.consumed)),
        [1, 0, 1],
      );
      assert.deepEqual(
        (await ctx.store.loadRun(id)).signals.map((s) => [s.name, s.payload]),
        [['b', 2]],
      );
      // retention still deletes the rows, consumed or not
      await h.done(id);
      assert.equal(await ctx.store.deleteRuns({ status: 'done' }, 10), 1);
      assert.equal(await ctx.count('signal'), 0);
    },
  );

  test('§3 the alpha.2 default over the 3.0 layout still deletes consumed signals', TO, async () => {
    const alpha2 = ctx.makeBackend({});
    const id = await h.start();
    await alpha2.store.postSignal(id, 'a', 1, { idempotencyKey: 'k' });
    const [sig] = (await alpha2.store.loadRun(id)).signals;
    await alpha2.store.checkpointStep(
      { runId: id, cursorKey: 's0', status: 'ok', result: 1, attempts: 1 },
      { consumeSignals: [sig.id] },
    );
    assert.equal(await ctx.count('signal'), 0);
    assert.deepEqual(await alpha2.store.postSignal(id, 'a', 2, { idempotencyKey: 'k' }), { delivered: true });
  });

  // -------------------------------------------------------------------------------------------
  // §3 listRuns version filter
  // -------------------------------------------------------------------------------------------

  test('§3 listRuns({ version }): equality, ANDed with the other filters, paging unchanged', TO, async () => {
    const f1 = await h.start({ name: 'f', version: 1 });
    const f2 = await h.start({ name: 'f', version: 2 });
    const g2 = await h.start({ name: 'g', version: 2, tags: ['t'] });
    const ids = async (filter, page = { limit: 10 }) => (await ctx.store.listRuns(filter, page)).runs.map((r) => r.id);
    assert.deepEqual(await ids({ version: 2 }), [g2, f2]);
    assert.deepEqual(await ids({ version: 1 }), [f1]);
    assert.deepEqual(await ids({ version: 3 }), []);
    assert.deepEqual(await ids({ name: 'f', version: 2 }), [f2]);
    assert.deepEqual(await ids({ tag: 't', version: 2 }), [g2]);
    assert.deepEqual(await ids({ version: 2, status: 'pending' }), [g2, f2]);
    assert.deepEqual(await ids({ version: undefined }), [g2, f2, f1]);
    const page = await ctx.store.listRuns({ version: 2 }, { limit: 1 });
    assert.deepEqual(
      page.runs.map((r) => r.id),
      [g2],
    );
    assert.equal(typeof page.cursor, 'string');
    assert.deepEqual(await ids({ version: 2 }, { limit: 10, cursor: page.cursor }), [f2]);
  });

  // -------------------------------------------------------------------------------------------
  // §3 strict row decoding
  // -------------------------------------------------------------------------------------------

  const contractError = (e) => {
    assert.ok(e instanceof Error, 'an Error');
    assert.notEqual(e.name, 'TypeError');
    assert.equal(e.kind, 'contract', `kind of ${e.message}`);
    return true;
  };

  test('§3 strict decoding: unknown run status, step status or cron overlap ⇒ Error kind "contract"', TO, async () => {
    const id = await h.start({ parentRunId: 'p' });
    await ctx.rows(`UPDATE ${ctx.t.run} SET status = 'zombie' WHERE id = ?`, [id]);
    await assert.rejects(ctx.store.loadRunRow(id), contractError);
    await assert.rejects(ctx.store.loadRun(id), contractError);
    await assert.rejects(ctx.store.loadRunRows([id]), contractError);
    await assert.rejects(ctx.store.listRuns({}, { limit: 10 }), contractError);
    await assert.rejects(ctx.store.childrenOf('p'), contractError);
    const ok = await h.start();
    await ctx.store.checkpointStep({ runId: ok, cursorKey: 's0', status: 'ok', result: 1, attempts: 1 });
    await ctx.rows(`UPDATE ${ctx.t.step} SET status = 'maybe' WHERE run_id = ?`, [ok]);
    await assert.rejects(ctx.store.loadRun(ok), contractError);
    await assert.rejects(
      ctx.store.checkpointStep({ runId: ok, cursorKey: 's0', status: 'ok', result: 2, attempts: 1 }),
      contractError,
      'a replay reads the stored memo',
    );
    await cron('c', 'f', at(0));
    await ctx.rows(`UPDATE ${ctx.t.cron} SET overlap = 'sometimes'`);
    await assert.rejects(ctx.store.listCrons(), contractError);
    await assert.rejects(ctx.store.dueCrons(at(0), 10), contractError);
  });

  test(
    '§3 strict decoding: an idempotency hit reads the stored status strictly (startRun, startManyRuns)',
    TO,
    async () => {
      const id = await h.start({ idempotencyKey: 'k' });
      await ctx.rows(`UPDATE ${ctx.t.run} SET status = 'zombie' WHERE id = ?`, [id]);
      await assert.rejects(
        ctx.store.startRun({ name: 'flow', version: 1, input: null, idempotencyKey: 'k' }),
        contractError,
      );
      await assert.rejects(
        ctx.store.startManyRuns([{ name: 'flow', version: 1, input: null, idempotencyKey: 'k' }]),
        contractError,
      );
    },
  );

  test('§3 strict decoding: runStats refuses an unknown status (no extra key)', TO, async () => {
    await h.start();
    const id = await h.start();
    await ctx.rows(`UPDATE ${ctx.t.run} SET status = 'zombie' WHERE id = ?`, [id]);
    await assert.rejects(ctx.store.runStats(), contractError);
  });

  test('§3 strict decoding: markRunning refuses a run with an unknown status and leaves it as it is', TO, async () => {
    const id = await h.start();
    await ctx.rows(`UPDATE ${ctx.t.run} SET status = 'zombie' WHERE id = ?`, [id]);
    await assert.rejects(ctx.store.markRunning(id), contractError);
    const row = await h.run(id);
    assert.deepEqual([row.status, Number(row.attempts)], ['zombie', 0]);
  });

  test('§3 strict decoding: error must be { code, message } strings, tags an array of strings', TO, async () => {
    const id = await h.start();
    const setRun = (col, v) => ctx.rows(`UPDATE ${ctx.t.run} SET ${col} = ? WHERE id = ?`, [v, id]);
    for (const bad of [
      '"boom"',
      '{"code":"E"}',
      '{"message":"m"}',
      '{"code":1,"message":"m"}',
      '{"code":"E","message":null}',
      '[]',
      'not json',
    ]) {
      await setRun('error', bad);
      await assert.rejects(ctx.store.loadRunRow(id), contractError, `error ${bad}`);
    }
    await setRun('error', '{"code":"E","message":"m","stack":"at x"}');
    assert.deepEqual((await ctx.store.loadRunRow(id)).error, { code: 'E', message: 'm', stack: 'at x' });
    await setRun('error', null);
    for (const bad of ['"t"', '{"a":1}', '["a",1]', '[null]', '[["a"]]', '7']) {
      await setRun('tags', bad);
      await assert.rejects(ctx.store.loadRunRow(id), contractError, `tags ${bad}`);
    }
    await setRun('tags', '["a","b"]');
    assert.deepEqual((await ctx.store.loadRunRow(id)).tags, ['a', 'b']);
    await setRun('tags', '[]');
    assert.deepEqual((await ctx.store.loadRunRow(id)).tags, []);
    await setRun('tags', 'null');
    assert.equal((await ctx.store.loadRunRow(id)).tags, null);
    await setRun('tags', null);
    assert.equal((await ctx.store.loadRunRow(id)).tags, undefined);
    // a step's error is checked the same way
    await ctx.store.checkpointStep({ runId: id, cursorKey: 's0', status: 'ok', result: null, attempts: 1 });
    await ctx.rows(`UPDATE ${ctx.t.step} SET error = '{"code":"E"}' WHERE run_id = ?`, [id]);
    await assert.rejects(ctx.store.loadRun(id), contractError);
  });

  test(
    '§3 strict decoding: a NULL in a required column ⇒ Error kind "contract" (tables loosened by hand)',
    TO,
    async () => {
      const p = 'lax_';
      await applySchema(ctx.sql, p, V3);
      await ctx.sql.query(
        `ALTER TABLE \`${p}run\` MODIFY created_at BIGINT NULL, MODIFY name VARCHAR(191) NULL, MODIFY attempts INT NULL`,
      );
      await ctx.sql.query(`ALTER TABLE \`${p}step\` MODIFY attempts INT NULL`);
      await ctx.sql.query(`ALTER TABLE \`${p}signal\` MODIFY name VARCHAR(191) NULL`);
      await ctx.sql.query(`ALTER TABLE \`${p}cron\` MODIFY schedule VARCHAR(255) NULL, MODIFY next_run_at BIGINT NULL`);
      for (const b of ['run', 'step', 'job', 'timer', 'signal', 'cron'])
        await ctx.sql.query(`DELETE FROM \`${p}${b}\``);
      const lax = ctx.makeBackend({ ...V3, prefix: p });
      const put = (sqlText, params) => ctx.sql.query(sqlText, params);
      const base = `INSERT INTO \`${p}run\` (id, name, version, status, attempts, created_at) VALUES (?, ?, 1, 'pending', ?, ?)`;
      await put(base, ['no-created', 'f', 0, null]);
      await put(base, ['no-name', null, 0, 1]);
      await put(base, ['no-attempts', 'f', null, 1]);
      for (const id of ['no-created', 'no-name', 'no-attempts']) {
        await assert.rejects(lax.store.loadRunRow(id), contractError, id);
      }
      await put(base, ['good', 'f', 0, 1]);
      assert.equal((await lax.store.loadRunRow('good')).id, 'good');
      await put(`INSERT INTO \`${p}step\` (run_id, cursor_key, status, attempts) VALUES ('good', 's0', 'ok', NULL)`);
      await assert.rejects(lax.store.loadRun('good'), contractError, 'step.attempts NULL');
      await put(`DELETE FROM \`${p}step\``);
      await put(`INSERT INTO \`${p}signal\` (id, run_id, name) VALUES ('sg', 'good', NULL)`);
      await assert.rejects(lax.store.loadRun('good'), contractError, 'signal.name NULL');
      await put(
        `INSERT INTO \`${p}cron\` (name, schedule, flow_name, flow_version, next_run_at) VALUES ('c', NULL, 'f', 1, 0)`,
      );
      await assert.rejects(lax.store.listCrons(), contractError, 'cron.schedule NULL');
      await put(`UPDATE \`${p}cron\` SET schedule = '* * * * *', next_run_at = NULL`);
      await assert.rejects(lax.store.listCrons(), contractError, 'cron.next_run_at NULL');
    },
  );

  test(
    '§3 JSON columns read back as JSON.parse reads them: lone surrogates (markTerminal, retryRun, checkpoints), every JSON field',
    TO,
    async () => {
      // What `message.slice(0, n)` leaves of an emoji, and other UTF-16 halves: JSON.stringify
      // writes them as `\ud83d` escapes, JSON.parse reads them back.
      const odd = ['x\ud83d', '\ud800', '\udc00x', 'a\udbff\udfff\udc00b', '\u2028\u0000"\\/'];
      const err = (m) => ({ code: 'E\ud83d', message: m, stack: [m] });
      const id = await h.start({ input: { odd }, tags: odd, parentRunId: 'p-odd' });
      await ctx.store.checkpointStep({ runId: id, cursorKey: 's0', status: 'ok', result: odd, attempts: 1 });
      await ctx.store.checkpointStep({
        runId: id,
        cursorKey: 's1',
        status: 'ok',
        result: null,
        error: err(odd[0]),
        attempts: 1,
      });
      await ctx.store.postSignal(id, 'sig', { odd });
      await ctx.store.markTerminal(id, { status: 'failed', error: err(odd[0]) });
      const expectRun = (r) => {
        assert.deepEqual(r.input, { odd });
        assert.deepEqual(r.tags, odd);
        assert.deepEqual(r.error, err(odd[0]));
      };
      expectRun(await ctx.store.loadRunRow(id));
      const snap = await ctx.store.loadRun(id);
      expectRun(snap.run);
      assert.deepEqual(snap.steps.get('s0').result, odd);
      assert.deepEqual(snap.steps.get('s1').error, err(odd[0]));
      assert.deepEqual(snap.signals[0].payload, { odd });
      expectRun((await ctx.store.loadRunRows([id]))[0]);
      expectRun((await ctx.store.listRuns({}, { limit: 10 })).runs[0]);
      expectRun((await ctx.store.childrenOf('p-odd'))[0]);
      for (const m of odd.slice(1)) {
        await ctx.rows(`UPDATE ${ctx.t.run} SET status = 'running' WHERE id = ?`, [id]);
        await ctx.store.markTerminal(id, { status: 'failed', error: err(m) });
        assert.deepEqual((await ctx.store.loadRunRow(id)).error, err(m), JSON.stringify(m));
      }
      // a failed run that retryRun re-queues, then fails again with a cut message
      assert.deepEqual(await ctx.store.retryRun(id), { retried: true });
      await ctx.store.markTerminal(id, { status: 'failed', error: err('\udc00x') });
      assert.deepEqual((await ctx.store.loadRunRow(id)).error, err('\udc00x'));
      // a checkpoint that loses the race reads the stored memo back
      const replay = await ctx.store.checkpointStep({
        runId: id,
        cursorKey: 's1',
        status: 'ok',
        result: 1,
        attempts: 2,
      });
      assert.deepEqual(replay.error, err(odd[0]));
      await cron('c-odd', 'f', at(0), { input: { odd } });
      assert.deepEqual((await ctx.store.listCrons())[0].input, { odd });
      assert.deepEqual((await ctx.store.dueCrons(at(0), 10))[0].input, { odd });
      // the engine's tick reads the run after claiming it
      await ctx.queue.enqueue(id);
      const [lease] = await claim(0);
      assert.deepEqual((await ctx.store.loadRunRow(lease.runId)).error, err('\udc00x'));
    },
  );

  test(
    '§3 stored JSON written by others decodes as JSON.parse decodes it: escapes, big numbers, duplicate keys, deep nesting',
    TO,
    async () => {
      const id = await h.start();
      const set = (col, text) => ctx.rows(`UPDATE ${ctx.t.run} SET ${col} = ? WHERE id = ?`, [text, id]);
      const deep = 2000;
      const texts = [
        '{"a":1,"a":2}',
        ' [1e400, -1e400, 123456789012345678901234567890, 0.1, -0, 1E-400] ',
        '"\\u0041\\/\\b\\f\\n\\r\\t\\ud83d\\ude00\\uDC00"',
        '{"__proto__":{"x":1},"constructor":2}',
        `${'['.repeat(deep)}"bottom"${']'.repeat(deep)}`,
        '\t\r\n null \n',
      ];
      // deepStrictEqual recurses too deep for the nested one: compare its JSON text instead
      const same = (a, b, text) =>
        text.startsWith('[[')
          ? assert.equal(JSON.stringify(a), JSON.stringify(b))
          : assert.deepStrictEqual(a, b, text.slice(0, 40));
      for (const text of texts) {
        await set('output', text);
        const want = JSON.parse(text);
        same((await ctx.store.loadRunRow(id)).output, want, text);
        same((await ctx.store.loadRun(id)).run.output, want, text);
      }
      // duplicate keys: the last one decides what the FlowError / tags checks see, as in JSON.parse
      await set('error', '{"code":1,"message":"m","code":"E"}');
      assert.deepEqual((await ctx.store.loadRunRow(id)).error, { code: 'E', message: 'm' });
      await set('error', '{"code":"E","message":"m","message":null}');
      await assert.rejects(ctx.store.loadRunRow(id), contractError);
      await set('error', '{"\\u0063ode":"E","message":"\\ud83d"}');
      assert.deepEqual((await ctx.store.loadRunRow(id)).error, { code: 'E', message: '\ud83d' });
      await set('tags', '["\\ud800","b"]');
      assert.deepEqual((await ctx.store.loadRunRow(id)).tags, ['\ud800', 'b']);
    },
  );

  test(
    '§3 a stored JSON cell JSON.parse refuses fails only the calls that read its run, naming the run',
    TO,
    async () => {
      const bad = await h.start({ parentRunId: 'p' });
      const good = await h.start({ parentRunId: 'p' });
      await ctx.store.checkpointStep({ runId: bad, cursorKey: 's0', status: 'ok', result: 1, attempts: 1 });
      const named = (e) => contractError(e) && e.message.includes(`run ${bad}`);
      for (const [table, col, text] of [
        ['run', 'input', '{"a":1'],
        ['run', 'output', '1},"id":"evil"'],
        ['run', 'tags', "['a']"],
        ['step', 'result', 'undefined'],
        ['signal', 'payload', '"\u0001"'],
      ]) {
        if (table === 'signal') await ctx.store.postSignal(bad, 'sig', 1);
        const key = table === 'run' ? 'id' : 'run_id';
        await ctx.rows(`UPDATE ${ctx.t[table]} SET ${col} = ? WHERE ${key} = ?`, [text, bad]);
        await assert.rejects(ctx.store.loadRun(bad), named, `${table}.${col} ${text}`);
        if (table === 'run') {
          await assert.rejects(ctx.store.loadRunRow(bad), named);
          await assert.rejects(ctx.store.listRuns({}, { limit: 10 }), named);
          await assert.rejects(ctx.store.childrenOf('p'), named);
        }
        assert.equal((await ctx.store.loadRunRow(good)).id, good, 'another run still reads');
        assert.equal((await ctx.store.loadRun(good)).run.id, good);
        await ctx.rows(`UPDATE ${ctx.t[table]} SET ${col} = NULL WHERE ${key} = ?`, [bad]);
      }
      assert.equal((await ctx.store.loadRun(bad)).run.id, bad, 'readable again');
    },
  );

  test(
    '§3 requireVersion is a comparison: a version no job has (-1, beyond every one) is fenced, never an argument error',
    TO,
    async () => {
      const id = await h.start();
      await ctx.queue.enqueue(id);
      const cp = { runId: id, cursorKey: 's0', status: 'ok', result: 'r', attempts: 1 };
      for (const v of [-1, -Number.MAX_SAFE_INTEGER, 2, Number.MAX_SAFE_INTEGER]) {
        assert.deepEqual(await ctx.store.checkpointStep(cp, fencedOutbox(id, v)), {
          status: 'ok',
          attempts: 1,
          committed: false,
        });
      }
      assert.equal(await ctx.count('step'), 0);
      assert.deepEqual(await h.idsIn('job'), [id]);
      // suspendRun and markTerminal do not fence (as 3.0.0): the write and its outbox apply
      await ctx.store.suspendRun(id, 'sleeping', { requireVersion: -1, timers: [{ runId: id, fireAt: at(5) }] });
      assert.equal((await h.run(id)).status, 'sleeping');
      assert.equal(Number((await h.timer(id)).fire_at), T + 5);
      await ctx.store.markTerminal(
        id,
        { status: 'done', output: 1 },
        { requireVersion: -7, enqueue: [{ runId: 'x' }] },
      );
      assert.equal((await h.run(id)).status, 'done');
      assert.deepEqual(await h.idsIn('job'), [id, 'x'].sort());
      for (const v of [1.5, '1', 2 ** 53])
        await assert.rejects(ctx.store.checkpointStep(cp, { requireVersion: v }), /requireVersion/);
    },
  );

  test(
    'opts.id with a lone surrogate: startRun / startManyRuns / claim answer the ids as made (stored as U+FFFD), claim does not reject',
    TO,
    async () => {
      let n = 0;
      const b = ctx.makeBackend({ ...V3, id: () => `u${++n}\ud83d` });
      const one = await b.store.startRun({ name: 'flow', version: 1, input: null });
      assert.deepEqual(one, { runId: 'u1\ud83d', created: true, status: 'pending' });
      const [two] = await b.store.startManyRuns([{ name: 'flow', version: 1, input: null }]);
      assert.equal(two.runId, 'u2\ud83d');
      assert.deepEqual(await h.idsIn('run'), ['u1\ufffd', 'u2\ufffd']);
      await b.queue.enqueueMany([{ runId: one.runId }, { runId: two.runId }]);
      const leases = await b.queue.claim({ limit: 10, leaseMs: LEASE, now: at(0) });
      assert.deepEqual(leases.map((l) => l.token).sort(), ['u3\ud83d:u1\ufffd', 'u4\ud83d:u2\ufffd']);
      for (const l of leases) {
        await b.queue.heartbeat(l, { leaseMs: LEASE, now: at(1) });
        await b.queue.ack(l, { now: at(2) });
      }
      assert.equal(await ctx.count('job'), 0, 'the tokens answered hold the leases');
    },
  );

  test('§3 the alpha.2 default still reads what 3.0 refuses (lenient decoding unchanged)', TO, async () => {
    const alpha2 = ctx.makeBackend({});
    const id = await h.start();
    await ctx.rows(`UPDATE ${ctx.t.run} SET status = 'zombie', error = '"boom"', tags = '["a",1]' WHERE id = ?`, [id]);
    const row = await alpha2.store.loadRunRow(id);
    assert.equal(row.status, 'zombie');
    assert.equal(row.error, 'boom');
    assert.deepEqual(row.tags, ['a', 1]);
  });
}

/** The 2.0.0-alpha.2 default on the alpha.2 layout: what 3.0 changes stays as it was. */
function alpha2Suite(ctx) {
  const h = helpers(ctx);

  test('alpha.2: the default backend has none of the 3.0 methods', TO, () => {
    for (const m of ['deleteRuns', 'cancelRuns', 'retryRuns', 'listCrons', 'removeCron', 'dueCronCount'])
      assert.equal(ctx.store[m], undefined, m);
    assert.equal(ctx.queue.enqueueMany, undefined);
    assert.equal(ctx.timer.dueCount, undefined);
    assert.equal(ctx.timer.nextDueAt, undefined);
  });

  test('alpha.2: the layout has no run.priority / signal.consumed (applySchema default unchanged)', TO, async () => {
    const cols = await ctx.rows(
      `SELECT TABLE_NAME AS t, COLUMN_NAME AS c FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND COLUMN_NAME IN ('priority', 'consumed') ORDER BY TABLE_NAME`,
    );
    assert.deepEqual(
      cols.map((r) => `${r.t}.${r.c}`),
      ['job.priority'],
    );
  });

  test('alpha.2 §3.11: failed (and canceled) still overwrite done; canceled stays sticky', TO, async () => {
    const a = await h.start();
    await h.done(a);
    await ctx.store.markTerminal(a, { status: 'failed', error: ERR }, { enqueue: [{ runId: 'w' }] });
    const row = await h.run(a);
    assert.equal(row.status, 'failed');
    assert.deepEqual(JSON.parse(row.error), ERR);
    assert.ok(await h.job('w'), 'its outbox applied');
    const b = await h.start();
    await h.done(b);
    await h.cancel(b);
    assert.equal((await h.run(b)).status, 'canceled');
    await h.done(b);
    assert.equal((await h.run(b)).status, 'canceled');
  });

  test('alpha.2 §3.7: consumeSignals deletes the row and the key is forgotten', TO, async () => {
    const id = await h.start();
    await ctx.store.postSignal(id, 'a', 1, { idempotencyKey: 'k' });
    const [sig] = (await ctx.store.loadRun(id)).signals;
    await ctx.store.checkpointStep(
      { runId: id, cursorKey: 's0', status: 'ok', result: 1, attempts: 1 },
      { consumeSignals: [sig.id] },
    );
    assert.equal(await ctx.count('signal'), 0);
    assert.deepEqual(await ctx.store.postSignal(id, 'a', 2, { idempotencyKey: 'k' }), { delivered: true });
  });

  test('alpha.2 §3.17: retryRun keeps the attempt count', TO, async () => {
    const id = await h.start();
    for (let i = 0; i < 3; i++) await ctx.store.markRunning(id);
    await h.fail(id);
    assert.deepEqual(await ctx.store.retryRun(id), { retried: true });
    assert.equal(Number((await h.run(id)).attempts), 3);
  });

  test('alpha.2 §3.18: upsertCron keeps next_run_at even when the schedule changes', TO, async () => {
    await ctx.store.upsertCron({
      name: 'c',
      schedule: '* * * * *',
      flowName: 'f',
      flowVersion: 1,
      input: null,
      nextRunAt: at(1000),
    });
    await ctx.store.upsertCron({
      name: 'c',
      schedule: '*/5 * * * *',
      flowName: 'f',
      flowVersion: 1,
      input: null,
      nextRunAt: at(5000),
    });
    const [row] = await ctx.store.dueCrons(at(10_000), 5);
    assert.equal(row.schedule, '*/5 * * * *');
    assert.equal(row.nextRunAt.getTime(), T + 1000);
  });

  test(
    'alpha.2: checkpoints answer `shape`, requireVersion is ignored, enqueue priority defaults to 0',
    TO,
    async () => {
      const id = await h.start({ priority: 5 });
      const memo = await ctx.store.checkpointStep(
        { runId: id, cursorKey: 's0', status: 'ok', result: 1, attempts: 1, shape: 'step:a', call: 'ignored' },
        { requireVersion: 7, enqueue: [{ runId: id }] },
      );
      assert.deepEqual(sortedKeys(memo), [...STEP_ALPHA2_KEYS].sort());
      assert.equal(memo.shape, 'step:a');
      assert.equal(memo.committed, undefined);
      assert.equal(await ctx.count('step'), 1, 'written although no job has version 7');
      assert.equal(Number((await h.job(id)).priority), 0);
    },
  );

  test('alpha.2 §7: a spawn enqueue and an fx.enqueue of the same child are two upserts (version 2)', TO, async () => {
    const parent = await h.start();
    await ctx.store.checkpointStep(
      { runId: parent, cursorKey: 's0', status: 'ok', result: null, attempts: 1 },
      {
        spawn: [{ runId: 'k1', spec: { name: 'child', version: 1, input: null }, enqueue: { priority: 1 } }],
        enqueue: [{ runId: 'k1', opts: { priority: 9 } }],
      },
    );
    const k1 = await h.job('k1');
    assert.deepEqual([Number(k1.priority), Number(k1.version)], [9, 2]);
  });

  test('alpha.2: claim ignores names; listRuns ignores version', TO, async () => {
    const a = await h.start({ name: 'alpha' });
    const b = await h.start({ name: 'beta', version: 2 });
    for (const id of [a, b]) await ctx.queue.enqueue(id);
    const leases = await ctx.queue.claim({ limit: 10, leaseMs: LEASE, now: at(0), names: [] });
    assert.equal(leases.length, 2);
    assert.equal((await ctx.store.listRuns({ version: 2 }, { limit: 10 })).runs.length, 2);
  });
}

for (const executor of EXECUTORS) {
  describe(`${executor} 3.0.0`, () => {
    const ctx = setup('conf_v3', { executor, backendOpts: V3 });
    // Registered after the fixture's own before hook, so it runs after it: upgrade to 3.0.
    before(async () => {
      await applySchema(ctx.sql, '', V3);
    });
    suite(ctx);
  });
  describe(`${executor} 2.0.0-alpha.2`, () => alpha2Suite(setup('conf_v3a', { executor })));
}
