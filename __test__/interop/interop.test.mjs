// Interoperability with the published JS package (the seed, docs/contract.md §14): one database,
// one table prefix, two backends. What the seed writes, the native backend reads and continues; and
// the reverse. Every read is compared across both sides with deepStrictEqual - same keys, undefined
// vs null, Dates, Map - so a snapshot must be indistinguishable whoever reads it.
//
// The module under test is the package root (index.js). INTEROP_IMPL may name another module with
// the same surface (e.g. __test__/conformance/seed-adapter.mjs, to check this file against the seed
// itself).
//
// Every test needs the seed: without it (a bare clone, see helpers/seed.mjs) they all skip with the
// reason, except under CI=true, where they run and fail.
//
//   node __test__/run.mjs __test__/interop

import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';

import mysql from 'mysql2/promise';

import { freshDatabase } from '../helpers/db.mjs';
import { loadSeed, skipWithoutSeed } from '../helpers/seed.mjs';

const require = createRequire(import.meta.url);

async function loadNative() {
  const target = process.env.INTEROP_IMPL;
  if (!target) return require('../../index.js');
  const mod = await import(pathToFileURL(target).href);
  return mod.default?.createMysqlBackend ? mod.default : mod;
}

const T = Date.parse('2030-01-01T00:00:00Z');
const at = (n = 0) => new Date(T + n);
const PREFIX = 'io_';
const TABLES = ['run', 'step', 'job', 'timer', 'signal', 'cron'];

let seed;
let native;
let db;
let seedPool;
let seedSql;
let nativeSql;
let admin;

// Reason to skip every test here when the seed is missing (false when it is there or required).
const noSeed = skipWithoutSeed();

before(async () => {
  if (noSeed) return;
  seed = await loadSeed();
  native = await loadNative();
  db = await freshDatabase('interop');
  seedPool = mysql.createPool({ uri: db.url, connectionLimit: 10 });
  seedSql = seed.mysqlPool(seedPool);
  nativeSql = native.mysqlPool(db.url);
  admin = await mysql.createConnection({ uri: db.url });
});

after(async () => {
  await admin?.end();
  await seedPool?.end();
  await nativeSql?.close?.();
  await db?.drop();
});

const truncate = async (prefix) => {
  for (const t of TABLES) await admin.query(`TRUNCATE TABLE \`${prefix}${t}\``);
};

/** SHOW CREATE TABLE of the six tables, with the prefix and AUTO_INCREMENT counters taken out. */
async function schemaOf(prefix) {
  const out = {};
  for (const t of TABLES) {
    const [[row]] = await admin.query(`SHOW CREATE TABLE \`${prefix}${t}\``);
    out[t] = row['Create Table'].replace(`\`${prefix}${t}\``, `\`${t}\``).replace(/ AUTO_INCREMENT=\d+/, '');
  }
  return out;
}

describe('schema', () => {
  test('ddl() is identical to the seed for "" and "p_", and both reject a bad prefix', { skip: noSeed }, () => {
    assert.deepStrictEqual(native.ddl(''), seed.ddl(''));
    assert.deepStrictEqual(native.ddl('p_'), seed.ddl('p_'));
    assert.deepStrictEqual(native.ddl(), seed.ddl());
    assert.throws(() => seed.ddl('bad-prefix'));
    assert.throws(() => native.ddl('bad-prefix'));
  });

  test(
    'a schema made by the seed is taken as is by native applySchema, and the reverse',
    { skip: noSeed },
    async () => {
      await seed.applySchema(seedSql, 'sx_');
      const bySeed = await schemaOf('sx_');
      await native.applySchema(nativeSql, 'sx_');
      assert.deepStrictEqual(await schemaOf('sx_'), bySeed, 'native applySchema changed a seed schema');

      await native.applySchema(nativeSql, 'nx_');
      const byNative = await schemaOf('nx_');
      await seed.applySchema(seedSql, 'nx_');
      assert.deepStrictEqual(await schemaOf('nx_'), byNative, 'seed applySchema changed a native schema');

      assert.deepStrictEqual(byNative, bySeed, 'the two schemas differ');

      // Each backend works on the other's tables.
      for (const [mod, sql, prefix] of [
        [native, nativeSql, 'sx_'],
        [seed, seedSql, 'nx_'],
      ]) {
        const b = mod.createMysqlBackend(sql, { prefix });
        const { runId, created } = await b.store.startRun({ name: 'x', version: 1, input: { ok: 1 } });
        assert.equal(created, true);
        assert.equal((await b.store.loadRun(runId)).run.status, 'pending');
      }
    },
  );
});

/**
 * W writes, R reads and continues; at every step both read back the same thing.
 * W and R are full backends on the same database and prefix.
 */
async function crossOver(W, R, label) {
  const same = async (read, what) => {
    const [w, r] = await Promise.all([read(W), read(R)]);
    assert.deepStrictEqual(r, w, `${label}: ${what} differs between writer and reader`);
    return r;
  };
  const snap = (id) => same((b) => b.store.loadRun(id), `loadRun(${id})`);

  // --- startRun with key, keyless runs, idempotent hits across implementations ----------------
  const specA = {
    name: 'order',
    version: 1,
    input: { n: 1, nested: { list: [1, null, 'two', { deep: true }] }, text: 'ünïcødé ✓' },
    idempotencyKey: 'key-1',
    tags: ['t1', 'team:blue'],
    createdAt: at(0),
  };
  const a = await W.store.startRun(specA);
  assert.deepStrictEqual(a.created, true);
  assert.deepStrictEqual(await R.store.startRun({ ...specA, input: { other: true } }), {
    runId: a.runId,
    created: false,
    status: 'pending',
  });
  const runA = (await snap(a.runId)).run;
  assert.deepStrictEqual(runA, {
    id: a.runId,
    name: 'order',
    version: 1,
    status: 'pending',
    input: specA.input,
    attempts: 0,
    output: undefined,
    error: undefined,
    idempotencyKey: 'key-1',
    tags: ['t1', 'team:blue'],
    parentRunId: undefined,
    parentCursorKey: undefined,
    depth: 0,
    createdAt: at(0),
  });
  const b = await W.store.startRun({ name: 'plain', version: 2, input: null, createdAt: at(1) });
  const c = await W.store.startRun({ name: 'plain', version: 2, input: undefined, depth: 3, createdAt: at(2) });
  await snap(b.runId);
  const snapC = await snap(c.runId);
  assert.equal(snapC.run.input, undefined);
  assert.equal((await snap(b.runId)).run.input, null);

  const many = await W.store.startManyRuns([
    { name: 'batch', version: 1, input: 1, idempotencyKey: 'm1', createdAt: at(3) },
    { name: 'batch', version: 1, input: 2, idempotencyKey: 'm2', createdAt: at(3) },
  ]);
  const many2 = await R.store.startManyRuns([
    { name: 'batch', version: 1, input: 20, idempotencyKey: 'm2', createdAt: at(4) },
    { name: 'batch', version: 1, input: 30, idempotencyKey: 'm3', createdAt: at(4) },
  ]);
  assert.deepStrictEqual(many2[0], { runId: many[1].runId, created: false, status: 'pending' });
  assert.equal(many2[1].created, true);
  await same((x) => x.store.loadRunRows([many[0].runId, 'missing', many2[1].runId, many[0].runId]), 'loadRunRows');
  await same((x) => x.store.loadRunRow(a.runId), 'loadRunRow');
  await same((x) => x.store.loadRunRow('missing'), 'loadRunRow(missing)');
  await same((x) => x.store.loadRun('missing'), 'loadRun(missing)');

  // --- markRunning alternating ------------------------------------------------------------------
  assert.equal(await W.store.markRunning(a.runId), 1);
  assert.equal(await R.store.markRunning(a.runId), 2);
  assert.equal((await snap(a.runId)).run.status, 'running');

  // --- checkpointStep with an outbox spawn; first writer wins across implementations ----------
  const childId = `child-of-${a.runId}`;
  const step0 = { runId: a.runId, cursorKey: 's0', status: 'ok', result: { r: 1 }, attempts: 2, shape: 'invoke:child' };
  const won = await W.store.checkpointStep(step0, {
    spawn: [
      {
        runId: childId,
        spec: {
          name: 'child',
          version: 1,
          input: { c: 1 },
          tags: ['kid'],
          parentRunId: a.runId,
          parentCursorKey: 's0',
          depth: 1,
          createdAt: at(5),
        },
        enqueue: { priority: 5 },
      },
    ],
    joinTarget: { runId: a.runId, count: 1 },
  });
  assert.deepStrictEqual(won, { status: 'ok', result: { r: 1 }, error: undefined, attempts: 2, shape: 'invoke:child' });
  const lost = await R.store.checkpointStep(
    { ...step0, result: { r: 'other' }, attempts: 9, shape: 'other' },
    { spawn: [{ runId: `${childId}-2`, spec: { name: 'child', version: 1, input: 2 } }] },
  );
  assert.deepStrictEqual(lost, won);
  assert.equal(await W.store.loadRun(`${childId}-2`), undefined, 'a losing checkpoint applied its outbox');
  const child = await snap(childId);
  assert.deepStrictEqual(child.run.parentRunId, a.runId);
  assert.deepStrictEqual(child.run.depth, 1);
  await same((x) => x.store.childrenOf(a.runId), 'childrenOf');
  // A bare step (no result, no shape) and an error-carrying one.
  assert.deepStrictEqual(await R.store.checkpointStep({ runId: a.runId, cursorKey: 's1', status: 'ok', attempts: 2 }), {
    status: 'ok',
    result: undefined,
    error: undefined,
    attempts: 2,
    shape: undefined,
  });
  await W.store.checkpointStep({
    runId: a.runId,
    cursorKey: 's1b',
    status: 'ok',
    result: null,
    error: { code: 'SOFT', message: 'kept' },
    attempts: 2,
    shape: 'step:s1b',
  });
  await assert.rejects(R.store.checkpointStep({ runId: 'missing', cursorKey: 's0', status: 'ok', attempts: 1 }));

  // --- signals: dedup across implementations, order, consumption -------------------------------
  assert.deepStrictEqual(await W.store.postSignal(a.runId, 'approve', { ok: true }, { idempotencyKey: 'sig-1' }), {
    delivered: true,
  });
  assert.deepStrictEqual(await R.store.postSignal(a.runId, 'approve', { ok: false }, { idempotencyKey: 'sig-1' }), {
    delivered: false,
  });
  assert.deepStrictEqual(await R.store.postSignal(a.runId, 'note', null), { delivered: true });
  assert.deepStrictEqual(await W.store.postSignal(a.runId, 'bare', undefined), { delivered: true });
  const withSignals = await snap(a.runId);
  assert.deepStrictEqual(
    withSignals.signals.map((s) => [s.name, s.payload]),
    [
      ['approve', { ok: true }],
      ['note', null],
      ['bare', undefined],
    ],
  );
  assert.equal(withSignals.steps.size, 3);
  assert.ok(withSignals.steps instanceof Map);
  await R.store.checkpointStep(
    { runId: a.runId, cursorKey: 's2', status: 'ok', result: { ok: true }, attempts: 2, shape: 'signal:approve' },
    { consumeSignals: [withSignals.signals[0].id] },
  );
  assert.deepStrictEqual(
    (await snap(a.runId)).signals.map((s) => s.name),
    ['note', 'bare'],
  );

  // --- queue: claim by one, heartbeat / enqueue / ack by the other ------------------------------
  // Jobs now: a (postSignal), childId (spawn, priority 5).
  await same((x) => x.queue.depth(at(0)), 'depth before claim');
  const leases = await R.queue.claim({ limit: 10, leaseMs: 1000, now: at(0) });
  assert.deepStrictEqual(
    leases.map((l) => l.runId),
    [a.runId, childId],
  );
  for (const l of leases) assert.deepStrictEqual(l.expiresAt, at(1000));
  assert.deepStrictEqual(await W.queue.claim({ limit: 10, leaseMs: 1000, now: at(500) }), []);
  await same((x) => x.queue.depth(at(500)), 'depth while leased');
  const [leaseA, leaseChild] = leases;
  const beat = await W.queue.heartbeat(leaseA, { leaseMs: 1000, now: at(500) });
  assert.deepStrictEqual(beat, { ...leaseA, expiresAt: at(1500) });
  await W.queue.enqueue(a.runId); // mid-lease wake: the ack must release, not delete
  await W.queue.ack(beat, { now: at(600) });
  await W.queue.ack(leaseChild, { now: at(600) });
  const again = await R.queue.claim({ limit: 10, leaseMs: 1000, now: at(700) });
  assert.deepStrictEqual(
    again.map((l) => [l.runId, l.version]),
    [[a.runId, leaseA.version + 1]],
  );
  await assert.rejects(R.queue.heartbeat(leaseA, { leaseMs: 1000, now: at(800) }));
  await W.queue.ack(again[0], { now: at(800) });
  await same((x) => x.queue.depth(at(900)), 'depth after acks');
  assert.deepStrictEqual(await R.queue.claim({ limit: 10, leaseMs: 1000, now: at(5000) }), []);

  // --- suspend with a timer; the other side fires it -------------------------------------------
  await W.store.suspendRun(a.runId, 'sleeping', { timers: [{ runId: a.runId, fireAt: at(5000) }] });
  const sleeping = (await snap(a.runId)).run;
  assert.equal(sleeping.status, 'sleeping');
  assert.equal(sleeping.attempts, 0);
  await W.timer.schedule(b.runId, at(100));
  await R.timer.cancel(b.runId);
  assert.deepStrictEqual(await R.timer.dueBatch({ now: at(4999), limit: 10 }), []);
  assert.deepStrictEqual(await R.timer.dueBatch({ now: at(5000), limit: 10 }), [a.runId]);
  assert.deepStrictEqual(await W.timer.dueBatch({ now: at(1e9), limit: 10 }), []);

  // --- reconcile, stats, listing agree ----------------------------------------------------------
  await same((x) => x.store.orphanedRuns(100), 'orphanedRuns');
  await same((x) => x.store.runStats(), 'runStats');

  // --- child completes, parent joins, fails, is retried, completes ------------------------------
  assert.equal(await R.store.markRunning(childId), 1);
  await R.store.markTerminal(childId, { status: 'done', output: { v: 42 } });
  assert.equal(await W.store.arriveAtJoin(a.runId), 0);
  assert.equal(await R.store.arriveAtJoin('missing'), undefined);
  await W.store.markTerminal(a.runId, { status: 'failed', error: { code: 'E_BOOM', message: 'boom', stack: 'at x' } });
  assert.deepStrictEqual((await snap(a.runId)).run.error, { code: 'E_BOOM', message: 'boom', stack: 'at x' });
  assert.deepStrictEqual(await R.store.retryRun(a.runId), { retried: true });
  assert.deepStrictEqual(await W.store.retryRun(a.runId), { retried: false });
  const retried = await snap(a.runId);
  assert.equal(retried.run.status, 'pending');
  assert.equal(retried.run.error, undefined);
  assert.equal(retried.steps.size, 4);
  const [retryLease] = await W.queue.claim({ limit: 1, leaseMs: 1000, now: at(6000) });
  assert.equal(retryLease.runId, a.runId);
  await R.queue.ack(retryLease, { now: at(6001) });
  await R.store.markTerminal(a.runId, { status: 'done', output: null });
  assert.deepStrictEqual((await snap(a.runId)).run.output, null);

  // canceled is sticky whoever writes it.
  await W.store.markTerminal(b.runId, { status: 'canceled' });
  await R.store.markTerminal(b.runId, { status: 'done', output: 1 }, { enqueue: [{ runId: b.runId }] });
  const canceled = (await snap(b.runId)).run;
  assert.equal(canceled.status, 'canceled');
  assert.equal(canceled.error, undefined);
  await W.store.suspendRun(c.runId, 'awaiting_signal');
  await R.store.suspendRun(c.runId, 'retrying', { timers: [{ runId: c.runId, fireAt: at(7000) }] });
  await snap(c.runId);

  await same((x) => x.store.listRuns({}, { limit: 3 }), 'listRuns page 1');
  const page1 = await R.store.listRuns({}, { limit: 3 });
  assert.ok(page1.cursor);
  await same((x) => x.store.listRuns({}, { limit: 3, cursor: page1.cursor }), 'listRuns page 2');
  await same((x) => x.store.listRuns({ tag: 'team:blue' }, { limit: 10 }), 'listRuns by tag');
  await same((x) => x.store.listRuns({ status: ['done', 'canceled'] }, { limit: 10 }), 'listRuns by status');
  await same((x) => x.store.listRuns({ name: 'batch', status: 'pending' }, { limit: 10 }), 'listRuns by name');
  await same((x) => x.store.runStats(), 'runStats at the end');
  await same((x) => x.store.orphanedRuns(100), 'orphanedRuns at the end');

  // --- cron ----------------------------------------------------------------------------------------
  await W.store.upsertCron({
    name: 'nightly',
    schedule: '0 0 * * *',
    flowName: 'order',
    flowVersion: 1,
    input: { c: 1 },
    nextRunAt: at(1000),
  });
  assert.deepStrictEqual(await R.store.dueCrons(at(999), 10), []);
  const due = await same((x) => x.store.dueCrons(at(1000), 10), 'dueCrons');
  assert.deepStrictEqual(due, [
    {
      name: 'nightly',
      schedule: '0 0 * * *',
      flowName: 'order',
      flowVersion: 1,
      input: { c: 1 },
      overlap: 'allow',
      nextRunAt: at(1000),
      lastRunAt: undefined,
    },
  ]);
  await R.store.upsertCron({
    name: 'nightly',
    schedule: '*/5 * * * *',
    flowName: 'order',
    flowVersion: 2,
    input: { c: 2 },
    overlap: 'skip',
    nextRunAt: at(99_999),
  });
  const updated = await same((x) => x.store.dueCrons(at(1000), 10), 'dueCrons after upsert');
  assert.deepStrictEqual(updated[0].nextRunAt, at(1000));
  assert.deepStrictEqual(updated[0].input, { c: 2 });
  assert.equal(await R.store.advanceCron('nightly', at(1000), at(2000), at(1000)), true);
  assert.equal(await W.store.advanceCron('nightly', at(1000), at(2000), at(1000)), false);
  const advanced = await same((x) => x.store.dueCrons(at(2000), 10), 'dueCrons after advance');
  assert.deepStrictEqual(advanced[0].lastRunAt, at(1000));
  assert.deepStrictEqual(await W.store.dueCrons(at(1500), 10), []);

  // --- retention: the reader deletes what the writer finished --------------------------------------
  const deleted = await R.store.deleteRunsOlderThan(at(10_000), 100);
  assert.equal(deleted, 3); // a (done), b (canceled), child (done)
  assert.equal(await W.store.loadRun(a.runId), undefined);
  assert.equal(await W.store.loadRun(childId), undefined);
  const [[{ n }]] = await admin.query(`SELECT COUNT(*) AS n FROM \`${PREFIX}step\``);
  assert.equal(Number(n), 0);
  await same((x) => x.store.runStats(), 'runStats after retention');
}

describe('runs cross over between the seed and native backends', () => {
  let seedBackend;
  let nativeBackend;
  before(async () => {
    if (noSeed) return;
    await seed.applySchema(seedSql, PREFIX);
    await native.applySchema(nativeSql, PREFIX);
    seedBackend = seed.createMysqlBackend(seedSql, { prefix: PREFIX });
    nativeBackend = native.createMysqlBackend(nativeSql, { prefix: PREFIX });
  });

  test('seed writes, native reads and continues', { skip: noSeed }, async () => {
    await truncate(PREFIX);
    await crossOver(seedBackend, nativeBackend, 'seed→native');
  });

  test('native writes, seed reads and continues', { skip: noSeed }, async () => {
    await truncate(PREFIX);
    await crossOver(nativeBackend, seedBackend, 'native→seed');
  });

  test('an engine-shaped drain mixes both backends on one queue', { skip: noSeed }, async () => {
    await truncate(PREFIX);
    const { createRuns, drainRuns } = await import('../../bench/engine-driver.mjs');
    const half = 20;
    const ids = [
      ...(await createRuns(seedBackend, { n: half, name: 'mixed' })),
      ...(await createRuns(nativeBackend, { n: half, name: 'mixed' })),
    ];
    // Deadlocks are transient (the seed's SKIP LOCKED claim can meet one): re-run that call.
    const retry = async (fn) => {
      for (let i = 1; ; i++) {
        try {
          return await fn();
        } catch (e) {
          if (i >= 5 || !/deadlock/i.test(String(e?.message))) throw e;
        }
      }
    };
    const [s, r] = await Promise.all([
      drainRuns(seedBackend, { steps: 3, loops: 2, batch: 4, retry }),
      drainRuns(nativeBackend, { steps: 3, loops: 2, batch: 4, retry }),
    ]);
    assert.equal(s.runs + r.runs, 2 * half);
    assert.equal(s.completed + r.completed, 2 * half);
    for (const id of ids) {
      const [x, y] = await Promise.all([seedBackend.store.loadRun(id), nativeBackend.store.loadRun(id)]);
      assert.deepStrictEqual(y, x);
      assert.equal(x.run.status, 'done');
      assert.equal(x.run.attempts, 1);
      assert.deepStrictEqual([...x.steps.keys()].sort(), ['s0', 's1', 's2']);
    }
    assert.deepStrictEqual(await nativeBackend.queue.depth(new Date()), {
      claimable: 0,
      leased: 0,
      oldestClaimableAgeMs: null,
    });
  });
});
