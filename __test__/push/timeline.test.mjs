// The durable timeline (docs/timeline.md): the opt-in event table, createMysqlEventSink as an
// engine's observe.sink, listEvents, and run deletion taking the events with it. Driven by the
// engine-shaped mini engine (__test__/engine/mini-engine.mjs: core's observe points and order),
// under both contracts, on a real private server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { freshDatabase, closeAdmin } from '../helpers/db.mjs';
import { createEngine } from '../engine/mini-engine.mjs';

const require = createRequire(import.meta.url);
const alpha2 = require('../../index.js');
const v3 = require('../../v3.js');

const T0 = Date.parse('2030-01-01T00:00:00Z');
const DAY = 86_400_000;

let db;
let sql;
before(async () => {
  db = await freshDatabase('timeline');
  sql = alpha2.mysqlPool(db.url);
});
after(async () => {
  await sql?.close();
  await db?.drop();
  await closeAdmin();
});

const exists = async (table) =>
  Number(
    (
      await sql.query(
        'SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?',
        [table],
      )
    )[0].n,
  ) > 0;

/** An engine over a fresh backend of `m` on `prefix`, its clock at `clock.t`, with `observe`. */
function engineOf(m, prefix, observe, clock) {
  const backend = m.createMysqlBackend(sql, { prefix });
  const e = createEngine(backend, { now: () => new Date(clock.t), maxAttempts: 2, baseDelayMs: 1000, observe });
  e.register('ok', 1, async (c, n) => {
    await c.step('a', () => n);
    return c.step('b', () => n + 1);
  });
  const failedOnce = new Set();
  // Fails its first attempt before any step (a replayed memo would emit nothing either way).
  e.register('flaky', 1, async (c) => {
    if (!failedOnce.has(c.runId)) {
      failedOnce.add(c.runId);
      throw new Error('first attempt fails');
    }
    await c.step('a', () => 1);
    return c.step('b', () => 2);
  });
  e.register('bad', 1, async (c) => {
    await c.step('a', () => 1);
    throw Object.assign(new Error('never works'), { code: 'NOPE', retryable: false });
  });
  return e;
}

/** Ticks until nothing is claimed, advancing the clock past retry back-offs `rounds` times. */
async function drain(e, clock, rounds = 3) {
  for (let i = 0; i < rounds; i++) {
    for (;;) {
      const r = await e.tickOnce();
      if (r.claimed === 0 && r.due === 0) break;
    }
    clock.t += 60_000;
  }
}

const strip = (events) => events.map(({ type, data }) => (data === undefined ? { type } : { type, data }));

for (const [contract, m, base] of [
  ['2.0.0-alpha.2', alpha2, 'a_'],
  ['3.0.0', v3, 'v3_'],
]) {
  test(`${contract}: timeline rows of a completed, a retried and a failing run, oldest first`, async () => {
    const prefix = base;
    await m.applySchema(sql, prefix, { events: true });
    const clock = { t: T0 };
    const sink = m.createMysqlEventSink(sql, prefix);
    const e = engineOf(m, prefix, { sink, level: 'all' }, clock);
    const ok = (await e.submit('ok', 1, 1)).runId;
    const flaky = (await e.submit('flaky', 1, null)).runId;
    const bad = (await e.submit('bad', 1, null)).runId;
    await drain(e, clock);
    await sink.flush();
    assert.deepEqual(e.sinkErrors, []);

    assert.deepEqual(strip(await m.listEvents(sql, ok, prefix)), [
      { type: 'run.started' },
      { type: 'step.finished', data: { cursorKey: 's0' } },
      { type: 'step.finished', data: { cursorKey: 's1' } },
      { type: 'run.completed' },
    ]);
    assert.deepEqual(strip(await m.listEvents(sql, flaky, prefix)), [
      { type: 'run.started' },
      { type: 'run.suspended', data: { status: 'retrying' } },
      // attempt 2 (a minute later): no second run.started, as core records it on attempt 1 only
      { type: 'step.finished', data: { cursorKey: 's0' } },
      { type: 'step.finished', data: { cursorKey: 's1' } },
      { type: 'run.completed' },
    ]);
    const failed = await m.listEvents(sql, bad, prefix);
    assert.deepEqual(strip(failed).slice(0, 2), [
      { type: 'run.started' },
      { type: 'step.finished', data: { cursorKey: 's0' } },
    ]);
    assert.equal(failed.length, 3);
    assert.equal(failed[2].type, 'run.failed');
    assert.deepEqual(failed[2].data, { error: { code: 'NOPE', message: 'never works' } });

    // FlowEvent objects: runId, type, `at` a Date (the engine's clock), data only when there is some
    const [first] = await m.listEvents(sql, ok, prefix);
    assert.deepEqual(first, { runId: ok, type: 'run.started', at: new Date(T0) });
    const flakyAts = (await m.listEvents(sql, flaky, prefix)).map((x) => x.at.getTime());
    assert.deepEqual(flakyAts, [T0, T0, T0 + 60_000, T0 + 60_000, T0 + 60_000]);
    assert.deepEqual(await m.listEvents(sql, 'no-such-run', prefix), []);

    const st = sink.stats();
    assert.equal(st.written, 4 + 5 + 3);
    assert.equal(st.failed, 0);
    assert.ok(st.batches <= st.written);
  });

  test(`${contract}: level 'lifecycle' records run events only`, async () => {
    const prefix = `${base}lc_`;
    await m.applySchema(sql, prefix, { events: true });
    const clock = { t: T0 };
    const sink = m.createMysqlEventSink(sql, prefix);
    const e = engineOf(m, prefix, { sink, level: 'lifecycle' }, clock);
    const ok = (await e.submit('ok', 1, 1)).runId;
    await drain(e, clock, 1);
    await sink.flush();
    assert.deepEqual(strip(await m.listEvents(sql, ok, prefix)), [{ type: 'run.started' }, { type: 'run.completed' }]);
  });

  test(`${contract}: deleteRunsOlderThan removes a run's events with it, in the same transaction`, async () => {
    const prefix = `${base}del_`;
    await m.applySchema(sql, prefix, { events: true });
    const clock = { t: T0 };
    const sink = m.createMysqlEventSink(sql, prefix);
    const e = engineOf(m, prefix, { sink, level: 'all' }, clock);
    const old = (await e.submit('ok', 1, 1)).runId;
    await drain(e, clock, 1);
    clock.t = T0 + 10 * DAY;
    const recent = (await e.submit('ok', 1, 2)).runId;
    await drain(e, clock, 1);
    await sink.flush();
    const store = e.backend.store;
    assert.equal((await m.listEvents(sql, old, prefix)).length, 4);

    // A unit that fails at the event table's DELETE rolls back the runs' deletion too.
    await sql.query(
      `CREATE TRIGGER ${prefix}event_keep BEFORE DELETE ON ${prefix}event FOR EACH ROW ` +
        "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'events are kept'",
    );
    try {
      await assert.rejects(store.deleteRunsOlderThan(new Date(T0 + DAY), 100), /events are kept/);
    } finally {
      await sql.query(`DROP TRIGGER ${prefix}event_keep`);
    }
    assert.ok(await store.loadRunRow(old), 'the run survives a failed deletion');
    assert.equal((await m.listEvents(sql, old, prefix)).length, 4, 'and so do its events');

    assert.equal(await store.deleteRunsOlderThan(new Date(T0 + DAY), 100), 1);
    assert.equal(await store.loadRunRow(old), undefined);
    assert.deepEqual(await m.listEvents(sql, old, prefix), []);
    assert.equal((await m.listEvents(sql, recent, prefix)).length, 4, 'a run not deleted keeps its events');
  });

  test(`${contract}: deletion without the event table works as before`, async () => {
    const p = `${base}noev_`;
    await m.applySchema(sql, p);
    assert.equal(await exists(`${p}event`), false);
    const clock = { t: T0 };
    const e = engineOf(m, p, undefined, clock);
    const id = (await e.submit('ok', 1, 1)).runId;
    await drain(e, clock, 1);
    assert.equal(await e.backend.store.deleteRunsOlderThan(new Date(T0 + DAY), 100), 1);
    assert.equal(await e.backend.store.loadRunRow(id), undefined);
    if (contract === '3.0.0') {
      const id2 = (await e.submit('ok', 1, 1)).runId;
      await drain(e, clock, 1);
      assert.equal(await e.backend.store.deleteRuns({ status: ['done'] }, 100), 1);
      assert.equal(await e.backend.store.loadRunRow(id2), undefined);
    }
  });

  test(`${contract}: a failing event write (the table dropped mid-run) does not fail the run`, async () => {
    const p = `${base}drop_`;
    await m.applySchema(sql, p, { events: true });
    const clock = { t: T0 };
    const errors = [];
    const sink = m.createMysqlEventSink(sql, p, { onError: (err) => errors.push(err) });
    const e = engineOf(m, p, { sink, level: 'all' }, clock);
    e.register('slow', 1, async (c) => {
      await c.step('a', () => 1);
      await sink.flush(); // the first events are in
      await sql.query(`DROP TABLE ${p}event`);
      await c.step('b', () => 2);
      return c.step('c', () => 3);
    });
    const id = (await e.submit('slow', 1, null)).runId;
    await drain(e, clock, 1);
    await sink.flush();
    assert.equal((await e.backend.store.loadRunRow(id)).status, 'done');
    assert.deepEqual((await e.backend.store.loadRunRow(id)).output, 3);
    assert.deepEqual(e.sinkErrors, [], 'record() never threw or rejected into the engine');
    const st = sink.stats();
    assert.equal(st.written, 2); // run.started, step.finished s0
    assert.equal(st.failed, 3); // s1, s2, run.completed
    assert.ok(errors.length >= 1 && errors.every((x) => x.errno === 1146), String(errors[0]));
    // and deletion now finds no table: it works as without the option
    assert.equal(await e.backend.store.deleteRunsOlderThan(new Date(T0 + DAY), 100), 1);
  });

  test(`${contract}: applySchema without the option creates no event table; ddl() is unchanged`, async () => {
    const p = `${base}plain_`;
    await m.applySchema(sql, p);
    assert.equal(await exists(`${p}event`), false);
    const plain = m.ddl(p);
    assert.deepEqual(m.ddl(p, { events: false }), plain);
    assert.ok(plain.every((s) => !s.includes(`${p}event`)));
    const withEvents = m.ddl(p, { events: true });
    assert.deepEqual(withEvents.slice(0, plain.length), plain);
    assert.equal(withEvents.length, plain.length + 1);
    assert.match(withEvents.at(-1), new RegExp(`^CREATE TABLE IF NOT EXISTS \`${p}event\``));
    assert.deepEqual(Object.keys(m.tables(p)), ['run', 'step', 'job', 'timer', 'signal', 'cron']);
    await m.applySchema(sql, p, { events: true });
    assert.equal(await exists(`${p}event`), true);
    await m.applySchema(sql, p, { events: true }); // idempotent
    // doctor knows the six tables only: the optional one changes none of its table checks
    const report = await m.checkDatabase(sql, p);
    const layoutChecks = report.checks.filter((x) => x.name === 'layout' || x.name.startsWith('table.'));
    assert.equal(layoutChecks.length, 7);
    assert.deepEqual(
      layoutChecks.filter((x) => x.verdict !== 'ok').map((x) => `${x.name}: ${x.detail}`),
      [],
    );
  });
}

test('3.0.0: deleteRuns removes the runs events in the same transaction', async () => {
  const prefix = 'v3del_';
  await v3.applySchema(sql, prefix, { events: true });
  const clock = { t: T0 };
  const sink = v3.createMysqlEventSink(sql, prefix);
  const e = engineOf(v3, prefix, { sink, level: 'all' }, clock);
  const done = (await e.submit('ok', 1, 1)).runId;
  const failed = (await e.submit('bad', 1, null)).runId;
  await drain(e, clock, 1);
  await sink.flush();
  const store = e.backend.store;
  await sql.query(
    `CREATE TRIGGER ${prefix}event_keep BEFORE DELETE ON ${prefix}event FOR EACH ROW ` +
      "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'events are kept'",
  );
  try {
    await assert.rejects(store.deleteRuns({ status: ['failed'] }, 100), /events are kept/);
  } finally {
    await sql.query(`DROP TRIGGER ${prefix}event_keep`);
  }
  assert.ok(await store.loadRunRow(failed));
  assert.equal((await v3.listEvents(sql, failed, prefix)).length, 3);
  assert.equal(await store.deleteRuns({ status: ['failed'] }, 100), 1);
  assert.deepEqual(await v3.listEvents(sql, failed, prefix), []);
  assert.equal((await v3.listEvents(sql, done, prefix)).length, 4);
  // no event outlives its run
  const orphans = await sql.query(
    `SELECT COUNT(*) AS n FROM ${prefix}event e WHERE NOT EXISTS (SELECT 1 FROM ${prefix}run r WHERE r.id = e.run_id)`,
  );
  assert.equal(Number(orphans[0].n), 0);
});

test('arguments are checked before anything is sent', async () => {
  for (const m of [alpha2, v3]) {
    assert.throws(() => m.createMysqlEventSink(null), TypeError);
    assert.throws(() => m.createMysqlEventSink(sql, 'bad-prefix'), /prefix/);
    assert.throws(() => m.createMysqlEventSink(sql, 1), TypeError);
    assert.throws(() => m.createMysqlEventSink(sql, '', { onError: 1 }), /onError/);
    assert.throws(() => m.createMysqlEventSink(sql, '', { lingerMs: -1 }), RangeError);
    assert.throws(() => m.createMysqlEventSink(sql, '', { lingerMs: '5' }), /lingerMs/);
    const sink = m.createMysqlEventSink(sql, 'a_');
    assert.throws(() => sink.record(null), /event/);
    assert.throws(() => sink.record({ runId: 1, type: 'run.started', at: new Date() }), /event\.runId/);
    assert.throws(() => sink.record({ runId: 'r', type: 'x'.repeat(65), at: new Date() }), /event\.type/);
    assert.throws(() => sink.record({ runId: 'r', type: 'run.log', at: 'now' }), /event\.at/);
    assert.throws(() => sink.record({ runId: 'r', type: 'run.log', at: new Date(), data: 1n }), /event\.data/);
    assert.equal(sink.stats().recorded, 0);
    await assert.rejects(m.listEvents(null, 'r'), TypeError);
    await assert.rejects(m.listEvents(sql, 7), /runId/);
    await assert.rejects(m.listEvents(sql, 'r', 'x;'), /prefix/);
    assert.throws(() => m.ddl('', { events: 'yes' }), /opts\.events/);
    await assert.rejects(m.applySchema(sql, '', { events: 1 }), /opts\.events/);
    assert.throws(() => m.createMysqlListener(sql, { events: 'auto' }), /opts\.events/);
  }
});
