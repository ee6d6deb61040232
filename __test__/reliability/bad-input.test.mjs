// Reliability 1 — bad input through every public port method (store 20, queue 5, timer 3).
//
// Every bad call must reject (never throw synchronously, never crash the process) with a
// TypeError / RangeError / Error whose message names the offending argument; every odd-but-legal
// value must round-trip exactly. Afterwards the database holds no half-written rows.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { closeAdmin } from '../helpers/db.mjs';
import { countAll, createMysqlBackend, freshPool, tableNames, TABLES } from './helpers.mjs';
import { emptyTables, exercise, wrapSql } from './roundtrip.mjs';

after(closeAdmin);

let env;
before(async () => {
  env = await freshPool('rel_badinput');
});
after(async () => env && env.close());

const ZERO = Object.fromEntries(TABLES.map((t) => [t, 0]));
const d = new Date('2031-01-01T00:00:00Z');
const BAD_DATE = new Date(NaN);
const cyc = {};
cyc.self = cyc;
const LONG_ID = 'r'.repeat(200);
const spec = (o = {}) => ({ name: 'f', version: 1, input: null, ...o });
const lease = (o = {}) => ({ runId: 'r', token: 't', version: 1, expiresAt: d, ...o });
const cp = (o = {}) => ({ runId: 'r', cursorKey: 's0', status: 'ok', result: 1, attempts: 1, ...o });
const cron = (o = {}) => ({
  name: 'c',
  schedule: '* * * * *',
  flowName: 'f',
  flowVersion: 1,
  input: null,
  nextRunAt: d,
  ...o,
});

// [method, args, expected error class, text the message must contain]
const TE = TypeError;
const RE = RangeError;
function cases() {
  const list = [
    // ---- store (20) ----
    ['store.startRun', [5], TE, 'spec'],
    ['store.startRun', [null], TE, 'spec'],
    ['store.startRun', [undefined], TE, 'spec'],
    ['store.startRun', [{ version: 1, input: 1 }], TE, 'spec.name'],
    ['store.startRun', [spec({ name: 7 })], TE, 'spec.name'],
    ['store.startRun', [spec({ version: '1' })], TE, 'spec.version'],
    ['store.startRun', [spec({ version: 1.5 })], TE, 'spec.version'],
    ['store.startRun', [spec({ version: 2 ** 40 })], RE, 'spec.version'],
    ['store.startRun', [spec({ input: 10n })], TE, 'spec.input'],
    ['store.startRun', [spec({ input: cyc })], TE, 'spec.input'],
    ['store.startRun', [spec({ input: () => 1 })], TE, 'spec.input'],
    ['store.startRun', [spec({ input: Symbol('s') })], TE, 'spec.input'],
    ['store.startRun', [spec({ input: { deep: [1, { big: 1n }] } })], TE, 'spec.input'],
    ['store.startRun', [spec({ createdAt: '2031-01-01' })], TE, 'spec.createdAt'],
    ['store.startRun', [spec({ createdAt: d.getTime() })], TE, 'spec.createdAt'],
    ['store.startRun', [spec({ createdAt: BAD_DATE })], RE, 'spec.createdAt'],
    ['store.startRun', [spec({ tags: 'a' })], TE, 'spec.tags'],
    ['store.startRun', [spec({ tags: ['a', 1] })], TE, 'spec.tags[1]'],
    ['store.startRun', [spec({ idempotencyKey: 5 })], TE, 'spec.idempotencyKey'],
    ['store.startRun', [spec({ idempotencyKey: 'k'.repeat(192) })], RE, 'spec.idempotencyKey'],
    ['store.startRun', [spec({ parentRunId: 5 })], TE, 'spec.parentRunId'],
    ['store.startRun', [spec({ parentCursorKey: {} })], TE, 'spec.parentCursorKey'],
    ['store.startRun', [spec({ depth: '1' })], TE, 'spec.depth'],
    ['store.startRun', [spec({ name: 'n'.repeat(192) })], RE, 'spec.name'],
    ['store.startManyRuns', ['x'], TE, 'specs'],
    ['store.startManyRuns', [null], TE, 'specs'],
    ['store.startManyRuns', [[null]], TE, 'specs[0]'],
    ['store.startManyRuns', [[spec(), spec({ name: 1 })]], TE, 'specs[1].name'],
    ['store.startManyRuns', [[spec(), spec(), spec({ input: cyc })]], TE, 'specs[2].input'],
    ['store.startManyRuns', [[spec(), spec({ createdAt: BAD_DATE })]], RE, 'specs[1].createdAt'],
    ['store.loadRun', [5], TE, 'runId'],
    ['store.loadRun', [null], TE, 'runId'],
    ['store.loadRun', [], TE, 'runId'],
    ['store.loadRun', [{ id: 'r' }], TE, 'runId'],
    ['store.loadRunRow', [5], TE, 'runId'],
    ['store.loadRunRow', [new Date()], TE, 'runId'],
    ['store.loadRunRows', ['r'], TE, 'runIds'],
    ['store.loadRunRows', [null], TE, 'runIds'],
    ['store.loadRunRows', [['a', 5]], TE, 'runIds[1]'],
    ['store.arriveAtJoin', [5], TE, 'parentRunId'],
    ['store.postSignal', [5, 'n', 1], TE, 'runId'],
    ['store.postSignal', ['r', 5, 1], TE, 'name'],
    ['store.postSignal', ['r', null, 1], TE, 'name'],
    ['store.postSignal', ['r', 'n', 1n], TE, 'payload'],
    ['store.postSignal', ['r', 'n', cyc], TE, 'payload'],
    ['store.postSignal', ['r', 'n', () => 1], TE, 'payload'],
    ['store.postSignal', ['r', 'n', 1, 'key'], TE, 'opts'],
    ['store.postSignal', ['r', 'n', 1, { idempotencyKey: 5 }], TE, 'opts.idempotencyKey'],
    ['store.markRunning', [5], TE, 'runId'],
    ['store.markRunning', [undefined], TE, 'runId'],
    ['store.checkpointStep', [null], TE, 'checkpoint'],
    ['store.checkpointStep', ['r'], TE, 'checkpoint'],
    ['store.checkpointStep', [cp({ runId: 5 })], TE, 'checkpoint.runId'],
    ['store.checkpointStep', [cp({ cursorKey: undefined })], TE, 'checkpoint.cursorKey'],
    ['store.checkpointStep', [cp({ status: 'failed' })], TE, 'checkpoint.status'],
    ['store.checkpointStep', [cp({ attempts: '1' })], TE, 'checkpoint.attempts'],
    ['store.checkpointStep', [cp({ result: 1n })], TE, 'checkpoint.result'],
    ['store.checkpointStep', [cp({ result: cyc })], TE, 'checkpoint.result'],
    ['store.checkpointStep', [cp({ error: cyc })], TE, 'checkpoint.error'],
    ['store.checkpointStep', [cp({ shape: 5 })], TE, 'checkpoint.shape'],
    ['store.checkpointStep', [cp(), 'fx'], TE, 'outbox'],
    ['store.checkpointStep', [cp(), { spawn: {} }], TE, 'outbox.spawn'],
    ['store.checkpointStep', [cp(), { spawn: [{ runId: 'c', spec: null }] }], TE, 'outbox.spawn[0].spec'],
    ['store.checkpointStep', [cp(), { spawn: [{ runId: 5, spec: spec() }] }], TE, 'outbox.spawn[0].runId'],
    [
      'store.checkpointStep',
      [cp(), { spawn: [{ runId: 'c', spec: spec({ input: 1n }) }] }],
      TE,
      'outbox.spawn[0].spec.input',
    ],
    [
      'store.checkpointStep',
      [cp(), { spawn: [{ runId: 'c', spec: spec(), enqueue: { runAt: 'now' } }] }],
      TE,
      'outbox.spawn[0].enqueue.runAt',
    ],
    [
      'store.checkpointStep',
      [cp(), { enqueue: [{ runId: 'x', opts: { priority: 1.5 } }] }],
      TE,
      'outbox.enqueue[0].opts.priority',
    ],
    ['store.checkpointStep', [cp(), { timers: [{ runId: 'x', fireAt: 'tomorrow' }] }], TE, 'outbox.timers[0].fireAt'],
    ['store.checkpointStep', [cp(), { timers: [{ runId: 'x', fireAt: BAD_DATE }] }], RE, 'outbox.timers[0].fireAt'],
    ['store.checkpointStep', [cp(), { cancelTimers: 'x' }], TE, 'outbox.cancelTimers'],
    ['store.checkpointStep', [cp(), { consumeSignals: [5] }], TE, 'outbox.consumeSignals[0]'],
    ['store.checkpointStep', [cp(), { joinTarget: { runId: 'r', count: '2' } }], TE, 'outbox.joinTarget.count'],
    ['store.checkpointStep', [cp(), { joinTarget: 'r' }], TE, 'outbox.joinTarget'],
    ['store.suspendRun', [5, 'sleeping'], TE, 'runId'],
    ['store.suspendRun', ['r', 'done'], TE, 'status'],
    ['store.suspendRun', ['r', undefined], TE, 'status'],
    ['store.suspendRun', ['r', 'sleeping', { timers: 'x' }], TE, 'outbox.timers'],
    ['store.suspendRun', ['r', 'sleeping', { timers: [{ runId: 'r', fireAt: 5 }] }], TE, 'outbox.timers[0].fireAt'],
    ['store.markTerminal', [5, { status: 'done', output: 1 }], TE, 'runId'],
    ['store.markTerminal', ['r', null], TE, 'outcome'],
    ['store.markTerminal', ['r', 'done'], TE, 'outcome'],
    ['store.markTerminal', ['r', { status: 'finished' }], TE, 'outcome.status'],
    ['store.markTerminal', ['r', { status: 'done', output: 1n }], TE, 'outcome.output'],
    ['store.markTerminal', ['r', { status: 'failed', error: cyc }], TE, 'outcome.error'],
    ['store.markTerminal', ['r', { status: 'done', output: 1 }, { enqueue: [5] }], TE, 'outbox.enqueue[0]'],
    ['store.listRuns', [null, { limit: 1 }], TE, 'filter'],
    ['store.listRuns', [{}, null], TE, 'page'],
    ['store.listRuns', [{}, { limit: -1 }], RE, 'page.limit'],
    ['store.listRuns', [{}, { limit: '1' }], TE, 'page.limit'],
    ['store.listRuns', [{}, {}], TE, 'page.limit'],
    ['store.listRuns', [{ status: 'nope' }, { limit: 1 }], TE, 'filter.status'],
    ['store.listRuns', [{ status: ['done', 5] }, { limit: 1 }], TE, 'filter.status'],
    ['store.listRuns', [{ name: 5 }, { limit: 1 }], TE, 'filter.name'],
    ['store.listRuns', [{ tag: 5 }, { limit: 1 }], TE, 'filter.tag'],
    ['store.listRuns', [{}, { limit: 1, cursor: 'abc' }], TE, 'page.cursor'],
    ['store.listRuns', [{}, { limit: 1, cursor: 5 }], TE, 'page.cursor'],
    ['store.childrenOf', [5], TE, 'runId'],
    ['store.orphanedRuns', ['10'], TE, 'limit'],
    ['store.orphanedRuns', [-1], RE, 'limit'],
    ['store.orphanedRuns', [1.5], TE, 'limit'],
    ['store.deleteRunsOlderThan', ['2031-01-01', 1], TE, 'before'],
    ['store.deleteRunsOlderThan', [BAD_DATE, 1], RE, 'before'],
    ['store.deleteRunsOlderThan', [d, -1], RE, 'limit'],
    ['store.deleteRunsOlderThan', [d, '1'], TE, 'limit'],
    ['store.retryRun', [5], TE, 'runId'],
    ['store.upsertCron', [null], TE, 'spec'],
    ['store.upsertCron', [cron({ name: 5 })], TE, 'spec.name'],
    ['store.upsertCron', [cron({ schedule: 5 })], TE, 'spec.schedule'],
    // VARCHAR(255) holds 255 code points: over the limit is a RangeError, like every length limit.
    ['store.upsertCron', [cron({ schedule: 's'.repeat(256) })], RE, 'spec.schedule'],
    ['store.upsertCron', [cron({ flowName: null })], TE, 'spec.flowName'],
    ['store.upsertCron', [cron({ flowVersion: '1' })], TE, 'spec.flowVersion'],
    ['store.upsertCron', [cron({ input: 1n })], TE, 'spec.input'],
    ['store.upsertCron', [cron({ overlap: 'never' })], TE, 'spec.overlap'],
    ['store.upsertCron', [cron({ nextRunAt: 'soon' })], TE, 'spec.nextRunAt'],
    ['store.upsertCron', [cron({ nextRunAt: BAD_DATE })], RE, 'spec.nextRunAt'],
    ['store.dueCrons', ['now', 1], TE, 'now'],
    ['store.dueCrons', [d, -1], RE, 'limit'],
    ['store.advanceCron', [5, d, d, d], TE, 'name'],
    ['store.advanceCron', ['c', 'x', d, d], TE, 'expectedNextRunAt'],
    ['store.advanceCron', ['c', d, BAD_DATE, d], RE, 'nextRunAt'],
    ['store.advanceCron', ['c', d, d, null], TE, 'lastRunAt'],
    // ---- queue (5) ----
    ['queue.enqueue', [5], TE, 'runId'],
    ['queue.enqueue', [null], TE, 'runId'],
    ['queue.enqueue', ['r', 'soon'], TE, 'opts'],
    ['queue.enqueue', ['r', { runAt: 'x' }], TE, 'opts.runAt'],
    ['queue.enqueue', ['r', { runAt: 1234 }], TE, 'opts.runAt'],
    ['queue.enqueue', ['r', { runAt: BAD_DATE }], RE, 'opts.runAt'],
    ['queue.enqueue', ['r', { priority: 'high' }], TE, 'opts.priority'],
    ['queue.enqueue', ['r', { priority: 2 ** 33 }], RE, 'opts.priority'],
    ['queue.claim', [], TE, 'opts'],
    ['queue.claim', [null], TE, 'opts'],
    ['queue.claim', [{ limit: -1, leaseMs: 1000 }], RE, 'opts.limit'],
    ['queue.claim', [{ limit: 10_001, leaseMs: 1000 }], RE, 'opts.limit'],
    ['queue.claim', [{ limit: 1e9, leaseMs: 1000 }], RE, 'opts.limit'],
    ['queue.claim', [{ limit: Infinity, leaseMs: 1000 }], TE, 'opts.limit'],
    ['queue.claim', [{ limit: NaN, leaseMs: 1000 }], TE, 'opts.limit'],
    ['queue.claim', [{ limit: '5', leaseMs: 1000 }], TE, 'opts.limit'],
    ['queue.claim', [{ leaseMs: 1000 }], TE, 'opts.limit'],
    ['queue.claim', [{ limit: 1, leaseMs: 'x' }], TE, 'opts.leaseMs'],
    ['queue.claim', [{ limit: 1, leaseMs: -5 }], RE, 'opts.leaseMs'],
    ['queue.claim', [{ limit: 1, leaseMs: 1000, now: 'x' }], TE, 'opts.now'],
    ['queue.claim', [{ limit: 1, leaseMs: 1000, now: BAD_DATE }], RE, 'opts.now'],
    ['queue.heartbeat', [null, { leaseMs: 1 }], TE, 'lease'],
    ['queue.heartbeat', [lease({ runId: 5 }), { leaseMs: 1 }], TE, 'lease.runId'],
    ['queue.heartbeat', [lease({ token: 5 }), { leaseMs: 1 }], TE, 'lease.token'],
    ['queue.heartbeat', [lease(), null], TE, 'opts'],
    ['queue.heartbeat', [lease(), { leaseMs: -1 }], RE, 'opts.leaseMs'],
    ['queue.heartbeat', [lease(), { leaseMs: 1, now: 'x' }], TE, 'opts.now'],
    ['queue.ack', [null], TE, 'lease'],
    ['queue.ack', [lease({ version: '1' })], TE, 'lease.version'],
    ['queue.ack', [lease({ token: null })], TE, 'lease.token'],
    ['queue.ack', [lease(), { now: 'x' }], TE, 'opts.now'],
    ['queue.ack', [lease(), { now: BAD_DATE }], RE, 'opts.now'],
    ['queue.depth', [], TE, 'now'],
    ['queue.depth', ['now'], TE, 'now'],
    ['queue.depth', [BAD_DATE], RE, 'now'],
    // ---- timer (3) ----
    ['timer.schedule', [5, d], TE, 'runId'],
    ['timer.schedule', ['r', '2031-01-01'], TE, 'fireAt'],
    ['timer.schedule', ['r', d.getTime()], TE, 'fireAt'],
    ['timer.schedule', ['r', BAD_DATE], RE, 'fireAt'],
    ['timer.schedule', ['r'], TE, 'fireAt'],
    ['timer.dueBatch', [null], TE, 'opts'],
    ['timer.dueBatch', [{ limit: -1 }], RE, 'opts.limit'],
    ['timer.dueBatch', [{ limit: 10_001 }], RE, 'opts.limit'],
    ['timer.dueBatch', [{ limit: 1, now: 5 }], TE, 'opts.now'],
    ['timer.cancel', [5], TE, 'runId'],
  ];
  // A 200-character run id through every run-id argument: longer than the VARCHAR(191) column.
  const longId = [
    ['store.loadRun', [LONG_ID], 'runId'],
    ['store.loadRunRow', [LONG_ID], 'runId'],
    ['store.loadRunRows', [['a', LONG_ID]], 'runIds[1]'],
    ['store.arriveAtJoin', [LONG_ID], 'parentRunId'],
    ['store.postSignal', [LONG_ID, 'n', 1], 'runId'],
    ['store.markRunning', [LONG_ID], 'runId'],
    ['store.checkpointStep', [cp({ runId: LONG_ID })], 'checkpoint.runId'],
    ['store.checkpointStep', [cp({ cursorKey: LONG_ID })], 'checkpoint.cursorKey'],
    ['store.checkpointStep', [cp(), { spawn: [{ runId: LONG_ID, spec: spec() }] }], 'outbox.spawn[0].runId'],
    ['store.checkpointStep', [cp(), { enqueue: [{ runId: LONG_ID }] }], 'outbox.enqueue[0].runId'],
    ['store.suspendRun', [LONG_ID, 'sleeping'], 'runId'],
    ['store.markTerminal', [LONG_ID, { status: 'canceled' }], 'runId'],
    ['store.childrenOf', [LONG_ID], 'runId'],
    ['store.retryRun', [LONG_ID], 'runId'],
    ['store.startRun', [spec({ parentRunId: LONG_ID })], 'spec.parentRunId'],
    ['queue.enqueue', [LONG_ID], 'runId'],
    ['queue.heartbeat', [lease({ runId: LONG_ID }), { leaseMs: 1 }], 'lease.runId'],
    ['queue.ack', [lease({ runId: LONG_ID })], 'lease.runId'],
    ['timer.schedule', [LONG_ID, d], 'runId'],
    ['timer.cancel', [LONG_ID], 'runId'],
  ];
  for (const [m, args, name] of longId) list.push([m, args, RE, name]);
  return list;
}

function method(b, path) {
  const [port, name] = path.split('.');
  return b[port][name].bind(b[port]);
}

test('bad arguments to all 28 port methods reject with an error naming the argument; nothing is written', async (t) => {
  const b = createMysqlBackend(env.sql);
  const list = cases();
  const covered = new Set();
  for (const [path, args, Ctor, name] of list) {
    covered.add(path);
    let p;
    assert.doesNotThrow(() => {
      p = method(b, path)(...args);
    }, `${path} must not throw synchronously`);
    assert.ok(p && typeof p.then === 'function', `${path} returns a promise`);
    await assert.rejects(
      p,
      (e) => {
        assert.ok(
          e instanceof Ctor,
          `${path}(${name}): expected ${Ctor.name}, got ${e && e.constructor.name}: ${e && e.message}`,
        );
        assert.ok(e.message.includes(name), `${path}: message must name ${name}: ${e.message}`);
        return true;
      },
      `${path} with bad ${name}`,
    );
  }
  // runStats takes no argument; junk arguments are ignored.
  const stats = await b.store.runStats(5, 'x', null);
  assert.equal(Object.keys(stats).length, 9);
  covered.add('store.runStats');
  assert.equal(covered.size, 28, `all 28 port methods covered: ${[...covered].sort().join(', ')}`);
  assert.deepEqual(await countAll(env.sql), ZERO, 'no rows written by rejected calls');
  t.diagnostic(
    `bad-input: ${list.length} invalid calls over ${covered.size} port methods, all rejected with the argument named; rows written: 0`,
  );
});

test('edge values that are legal round-trip or are answered, not crashed on', async (t) => {
  await emptyTables(env.sql);
  const b = createMysqlBackend(env.sql);
  // claim limit 0 is legal: nothing leased. limit 10 000 (the cap) is legal too.
  await b.queue.enqueue('edge');
  assert.deepEqual(await b.queue.claim({ limit: 0, leaseMs: 1000 }), []);
  const big = await b.queue.claim({ limit: 10_000, leaseMs: 1000 });
  assert.deepEqual(
    big.map((l) => l.runId),
    ['edge'],
  );
  // JSON fidelity = JSON.stringify → JSON.parse, and top-level undefined ⇒ undefined.
  const odd = {
    date: new Date(0),
    undef: undefined,
    arr: [undefined, () => 1, NaN, -0, Infinity],
    map: new Map([[1, 2]]),
  };
  const r = await b.store.startRun({ name: 'f', version: 1, input: odd });
  assert.deepEqual((await b.store.loadRunRow(r.runId)).input, JSON.parse(JSON.stringify(odd)));
  const u = await b.store.startRun({ name: 'f', version: 1, input: undefined });
  assert.equal((await b.store.loadRunRow(u.runId)).input, undefined);
  const nul = await b.store.startRun({ name: 'f', version: 1, input: null });
  assert.equal((await b.store.loadRunRow(nul.runId)).input, null);
  // lone surrogates inside JSON payloads are escaped by JSON.stringify and survive
  const lone = await b.store.startRun({ name: 'f', version: 1, input: { s: 'a\uD800b\uDC00' } });
  assert.deepEqual((await b.store.loadRunRow(lone.runId)).input, { s: 'a\uD800b\uDC00' });
  // deep nesting, extreme numbers and the extreme Dates round-trip with JSON.stringify fidelity
  let deep = 'bottom';
  for (let i = 0; i < 1000; i++) deep = i % 2 ? [deep] : { d: deep };
  const nums = {
    max: Number.MAX_VALUE,
    min: Number.MIN_VALUE,
    unsafe: 2 ** 53 + 2,
    neg: -1e-300,
    big: 1.2345678901234568e29,
  };
  for (const v of [deep, nums]) {
    const x = await b.store.startRun({ name: 'f', version: 1, input: v });
    assert.deepEqual((await b.store.loadRun(x.runId)).run.input, JSON.parse(JSON.stringify(v)));
    const o = await b.store.checkpointStep({ runId: x.runId, cursorKey: 's', status: 'ok', result: v, attempts: 1 });
    assert.deepEqual(o.result, JSON.parse(JSON.stringify(v)));
  }
  for (const when of [new Date(-8.64e15), new Date(0), new Date(8.64e15)]) {
    const x = await b.store.startRun({ name: 'when', version: 1, input: 1, createdAt: when });
    assert.equal((await b.store.loadRunRow(x.runId)).createdAt.getTime(), when.getTime());
  }
  // 191 characters (the column width) is accepted in every key column and round-trips.
  const id191 = 'i'.repeat(191);
  const b191 = createMysqlBackend(env.sql, { id: () => id191 });
  const k191 = 'k'.repeat(191);
  const s191 = await b191.store.startRun({
    name: 'n'.repeat(191),
    version: 1,
    input: 1,
    idempotencyKey: k191,
    parentRunId: 'p'.repeat(191),
    parentCursorKey: 'c'.repeat(191),
  });
  assert.equal(s191.runId, id191);
  const row = await b.store.loadRunRow(id191);
  assert.equal(row.name.length, 191);
  assert.equal(row.idempotencyKey, k191);
  assert.equal(
    (await b191.store.startRun({ name: 'n'.repeat(191), version: 1, input: 2, idempotencyKey: k191 })).created,
    false,
  );
  await b.store.checkpointStep({
    runId: id191,
    cursorKey: 'c'.repeat(191),
    status: 'ok',
    result: 1,
    attempts: 1,
    shape: 's'.repeat(191),
  });
  assert.equal((await b.store.loadRun(id191)).steps.get('c'.repeat(191)).shape.length, 191);
  t.diagnostic(
    'edge values: claim limit 0 and 10000, JSON-fidelity values, 1000-deep nesting, extreme numbers and Dates, 191-character keys/ids — all round-trip',
  );
});

test('values over the server max_allowed_packet reject cleanly; nothing half-written; the pool keeps working', async (t) => {
  await emptyTables(env.sql);
  const b = createMysqlBackend(env.sql);
  const [{ max }] = await env.sql.query('SELECT @@max_allowed_packet AS max');
  const maxBytes = Number(max);
  const huge = 'x'.repeat(maxBytes + 64 * 1024);
  // a run to hang step/terminal writes on
  const { runId } = await b.store.startRun({ name: 'f', version: 1, input: 'small' });
  await b.queue.enqueue(runId);
  const before = await countAll(env.sql);
  const attempts = [
    ['startRun input', () => b.store.startRun({ name: 'f', version: 1, input: huge })],
    [
      'startManyRuns specs[1].input',
      () =>
        b.store.startManyRuns([
          { name: 'f', version: 1, input: 1 },
          { name: 'f', version: 1, input: huge },
        ]),
    ],
    ['postSignal payload', () => b.store.postSignal(runId, 'n', huge)],
    [
      'checkpointStep result',
      () =>
        b.store.checkpointStep(
          { runId, cursorKey: 's0', status: 'ok', result: huge, attempts: 1 },
          { enqueue: [{ runId: 'other' }] },
        ),
    ],
    ['markTerminal output', () => b.store.markTerminal(runId, { status: 'done', output: huge })],
    [
      'markTerminal error',
      () => b.store.markTerminal(runId, { status: 'failed', error: { code: 'X', message: huge } }),
    ],
    [
      'upsertCron input',
      () =>
        b.store.upsertCron({
          name: 'c',
          schedule: '* * * * *',
          flowName: 'f',
          flowVersion: 1,
          input: huge,
          nextRunAt: new Date(),
        }),
    ],
    [
      'spawn spec input',
      () =>
        b.store.checkpointStep(
          { runId, cursorKey: 's1', status: 'ok', result: 1, attempts: 1 },
          { spawn: [{ runId: 'kid', spec: { name: 'f', version: 1, input: huge } }] },
        ),
    ],
    ['user query param', () => env.sql.query('SELECT LENGTH(?) AS n', [huge])],
  ];
  const messages = [];
  for (const [what, call] of attempts) {
    const r = await call().then(
      () => null,
      (e) => e,
    );
    assert.ok(
      r instanceof Error,
      `${what}: a payload of ${huge.length} bytes > max_allowed_packet ${maxBytes} must reject`,
    );
    assert.match(
      r.message,
      /max_allowed_packet|packet/i,
      `${what}: the error says the packet is too big: ${r.message}`,
    );
    messages.push(`${what}: ${r.message.slice(0, 90)}`);
    // the pool is still usable right after
    assert.deepEqual(await env.sql.query('SELECT 1 AS one'), [{ one: 1 }], `${what}: pool usable afterwards`);
  }
  assert.deepEqual(await countAll(env.sql), before, 'no half-written rows after the rejected writes');
  const snap = await b.store.loadRun(runId);
  assert.equal(snap.run.status, 'pending');
  assert.equal(snap.steps.size, 0);
  assert.equal(snap.signals.length, 0);
  // A large but legal payload (1 MiB, multi-byte, with backslashes and quotes) round-trips exactly.
  const mib = 'é\\\'"😀'.repeat((1024 * 1024) / 8);
  const ok = await b.store.startRun({ name: 'f', version: 1, input: mib });
  assert.equal((await b.store.loadRunRow(ok.runId)).input, mib);
  t.diagnostic(
    `max_allowed_packet ${maxBytes} B: ${attempts.length} oversized payloads of ${huge.length} B rejected, 0 rows written; 1 MiB payload round-tripped`,
  );
  for (const m of messages) t.diagnostic(`  ${m}`);
});

test('startManyRuns: empty batch, a 10,000-spec batch, and an all-or-none batch with a bad spec', async (t) => {
  await emptyTables(env.sql);
  const b = createMysqlBackend(env.sql);
  assert.deepEqual(await b.store.startManyRuns([]), []);
  assert.deepEqual(await countAll(env.sql), ZERO);
  const specs = Array.from({ length: 10_000 }, (_, i) => ({
    name: 'bulk',
    version: 1,
    input: { i },
    idempotencyKey: `k${i}`,
    tags: [`t${i % 7}`],
  }));
  const t0 = performance.now();
  const res = await b.store.startManyRuns(specs);
  const ms = performance.now() - t0;
  assert.equal(res.length, 10_000);
  assert.ok(res.every((r) => r.created && r.status === 'pending'));
  assert.equal(new Set(res.map((r) => r.runId)).size, 10_000, 'distinct run ids');
  assert.equal((await countAll(env.sql)).run, 10_000);
  const sample = await b.store.loadRunRows([res[0].runId, res[4321].runId, res[9999].runId]);
  assert.deepEqual(
    sample.map((r) => r.input),
    [{ i: 0 }, { i: 4321 }, { i: 9999 }],
    'results aligned with specs',
  );
  // the same batch again: all idempotent hits, same ids, nothing new
  const again = await b.store.startManyRuns(specs);
  assert.ok(again.every((r, i) => !r.created && r.runId === res[i].runId));
  assert.equal((await countAll(env.sql)).run, 10_000);
  // all-or-none at the database level: the 3rd insert of a batch fails (duplicate generated id),
  // the two before it are rolled back with it
  let n = 0;
  const dup = createMysqlBackend(env.sql, { id: () => (++n <= 2 ? `fresh-${n}` : 'fresh-1') });
  await assert.rejects(dup.store.startManyRuns([spec(), spec(), spec()]), /Duplicate/i);
  assert.equal((await countAll(env.sql)).run, 10_000, 'a failing batch writes nothing');
  assert.equal(await b.store.loadRunRow('fresh-1'), undefined);
  t.diagnostic(
    `startManyRuns: 10,000 specs in one call took ${ms.toFixed(0)} ms; repeat = 10,000 idempotent hits; a batch failing at its 3rd insert wrote 0 rows`,
  );
});

test('odd Unicode and SQL metacharacters round-trip through every string field (native and wrapped Sql)', async (t) => {
  const values = [
    'emoji 😀👨‍👩‍👧‍👦🏳️‍🌈',
    'nul\0inside',
    '\0',
    'trailing-nul\0',
    'rtl \u202Eevil\u202C مرحبا עברית',
    'quotes \' " ` ´ ‘ ’ “ ”',
    'back\\slash \\\\ \\\' \\" \\0 \\n',
    '\\',
    'combining e\u0301 \u0065\u0301\u0301 zero\u200Bwidth \uFEFFbom',
    'line\nbreak\r\ntab\tsep\u2028\u2029',
    'placeholders ? ?? :name $1 ${x} %s',
    'like % _ wildcards %%',
    'comments -- # /* */ ;',
    'trailing spaces   ',
    '   leading spaces',
    'CJK 漢字かなカナ한국어',
    'math 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ∑∫√',
    '__proto__',
    'constructor',
    'x'.repeat(80),
  ];
  const plain = createMysqlBackend(env.sql);
  let calls = 0;
  for (const v of values) {
    calls += await exercise(
      env.sql,
      plain,
      (id) => createMysqlBackend(env.sql, { id }),
      v,
      `native ${JSON.stringify(v)}`,
    );
  }
  const wrapped = wrapSql(env.sql);
  for (const v of values) {
    calls += await exercise(
      env.sql,
      plain,
      (id) => createMysqlBackend(wrapped, { id }),
      v,
      `wrapped ${JSON.stringify(v)}`,
    );
  }
  assert.deepEqual(await tableNames(env.sql), [...TABLES].sort(), 'exactly the six tables exist');
  t.diagnostic(
    `unicode/metacharacters: ${values.length} strings × every string field × 2 Sql paths = ${calls} port calls, all exact round trips`,
  );
});

test('key columns count characters, not UTF-16 units: 191 emoji fit, 192 do not', async () => {
  // regression: str() used to reject 100 emoji (200 UTF-16 units) as "longer than 191 characters"
  const b = createMysqlBackend(env.sql);
  const name = '😀'.repeat(191);
  const r = await b.store.startRun({ name, version: 1, input: 1, idempotencyKey: '👍'.repeat(191) });
  const row = await b.store.loadRunRow(r.runId);
  assert.equal(row.name, name);
  assert.equal(row.idempotencyKey, '👍'.repeat(191));
  await assert.rejects(
    b.store.startRun({ name: '😀'.repeat(192), version: 1, input: 1 }),
    (e) => e instanceof RangeError && e.message.includes('spec.name'),
  );
});

test('long (155–191 character) run ids can be claimed, heartbeaten and acked, and never block other runs', async () => {
  // regression: the lease token (uuid + ":" + runId) overflowed VARCHAR(191) and every claim failed
  await emptyTables(env.sql);
  const b = createMysqlBackend(env.sql);
  const ids = ['y'.repeat(155), 'z'.repeat(170), 'é'.repeat(191)];
  for (const id of ids) await b.queue.enqueue(id);
  await b.queue.enqueue('normal');
  const leases = await b.queue.claim({ limit: 10, leaseMs: 10_000 });
  assert.deepEqual(leases.map((l) => l.runId).sort(), [...ids, 'normal'].sort(), 'every run is claimable');
  assert.equal(new Set(leases.map((l) => l.token)).size, leases.length, 'tokens are distinct');
  for (const l of leases) {
    assert.ok([...l.token].length <= 191, 'the token fits its column');
    const hb = await b.queue.heartbeat(l, { leaseMs: 20_000 });
    assert.equal(hb.token, l.token);
    await b.queue.ack(hb);
  }
  assert.deepEqual(await countAll(env.sql), ZERO, 'all acked');
  // the same with a custom id generator whose ids are as long as the column
  let n = 0;
  const b2 = createMysqlBackend(env.sql, { id: () => `${String(++n).padStart(4, '0')}${'i'.repeat(187)}` });
  for (const id of ids) await b2.queue.enqueue(id);
  const l2 = await b2.queue.claim({ limit: 10, leaseMs: 10_000 });
  assert.equal(l2.length, ids.length);
  assert.equal(new Set(l2.map((l) => l.token)).size, l2.length, 'tokens are distinct');
  for (const l of l2) await b2.queue.ack(l);
  assert.deepEqual(await countAll(env.sql), ZERO, 'all acked');
});
