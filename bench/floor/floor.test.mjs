// The floor against a real server: the bench's flows complete through the mini engine, and the
// contract corners the floor's comment promises (first writer wins, a cancel is sticky, an ack
// releases a job enqueued during the lease, claimers never share a run, each deadline fires once)
// hold. Not part of npm test (like bench/chart.test.mjs):
//
//   node __test__/run.mjs bench/floor/floor.test.mjs
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { after, before, beforeEach, test } from 'node:test';

import mysql from 'mysql2/promise';

import { closeAdmin, freshDatabase } from '../../__test__/helpers/db.mjs';
import { driveFlow } from '../flows.mjs';
import { applyFloorSchema, createFloorBackend } from './index.mjs';

const { ddl } = createRequire(import.meta.url)('../../index.js');

let db;
let backend;
let admin;
const t = (name) => `\`fl_${name}\``;

before(async () => {
  db = await freshDatabase('floor');
  backend = createFloorBackend(db.url);
  await applyFloorSchema(backend, ddl, 'fl_');
  admin = await mysql.createConnection({ uri: db.url });
});
after(async () => {
  await admin?.end();
  await backend?.close();
  await db?.drop();
  await closeAdmin();
});
beforeEach(async () => {
  for (const name of ['run', 'step', 'job', 'timer', 'signal']) await admin.query(`TRUNCATE TABLE ${t(name)}`);
});

async function pendingRuns(flow, n) {
  const ids = Array.from({ length: n }, () => randomUUID());
  const res = await backend.store.submitMany(
    ids.map((_, i) => ({ name: flow, version: 1, input: { i }, tags: ['x'] })),
  );
  return res.map((r) => r.runId);
}

const count = async (table) => Number((await admin.query(`SELECT COUNT(*) AS c FROM ${t(table)}`))[0][0].c);

for (const [flow, root, runsPerRoot] of [
  ['3 steps', 'bench_steps3', 1],
  ['step, sleep, step', 'bench_sleep', 1],
  ['parent invokes a child', 'bench_parent', 2],
]) {
  test(`the ${flow} flow completes through the mini engine, 4 loops, nothing left behind`, async () => {
    const roots = await pendingRuns(root, 30);
    await driveFlow(backend, { loops: 4, roots, sleepMs: 20, idleMs: 5, stallMs: 20_000 });
    const [rows] = await admin.query(`SELECT status, COUNT(*) AS c FROM ${t('run')} GROUP BY status`);
    assert.deepEqual(
      rows.map((r) => [r.status, Number(r.c)]),
      [['done', 30 * runsPerRoot]],
    );
    assert.equal(await count('job'), 0);
    assert.equal(await count('timer'), 0);
  });
}

test('checkpointStep: the first writer wins, an unknown run rejects', async () => {
  const [id] = await pendingRuns('f', 1);
  const c = { runId: id, cursorKey: 's0', status: 'ok', attempts: 1, shape: 'step:a' };
  assert.deepEqual((await backend.store.checkpointStep({ ...c, result: { v: 1 } })).result, { v: 1 });
  assert.deepEqual((await backend.store.checkpointStep({ ...c, result: { v: 2 } })).result, { v: 1 });
  const snap = await backend.store.loadRun(id);
  assert.deepEqual(snap.steps.get('s0'), {
    status: 'ok',
    result: { v: 1 },
    error: undefined,
    attempts: 1,
    shape: 'step:a',
  });
  await assert.rejects(backend.store.checkpointStep({ ...c, runId: 'nope', result: 1 }));
  await assert.rejects(
    backend.store.checkpointStep({ ...c, runId: 'nope', result: 1 }, { joinTarget: { runId: id, count: 1 } }),
  );
  assert.equal(await count('step'), 1);
});

test('loadRun: the run row, its steps and its signals by seq; an unknown run is undefined', async () => {
  const [id] = await pendingRuns('f', 1);
  await backend.store.checkpointStep({
    runId: id,
    cursorKey: 's0',
    status: 'ok',
    result: 'x',
    attempts: 2,
    shape: 'step:a',
  });
  await admin.query(`INSERT INTO ${t('signal')} (id, run_id, name, payload) VALUES (?, ?, ?, ?), (?, ?, ?, ?)`, [
    'g2',
    id,
    'late',
    '{"n":2}',
    'g1',
    id,
    'early',
    null,
  ]);
  const snap = await backend.store.loadRun(id);
  assert.equal(snap.run.id, id);
  assert.equal(snap.run.status, 'pending');
  assert.deepEqual(snap.run.input, { i: 0 });
  assert.deepEqual(snap.run.tags, ['x']);
  assert.equal(snap.run.depth, 0);
  assert.ok(snap.run.createdAt instanceof Date);
  assert.deepEqual(
    [...snap.steps],
    [['s0', { status: 'ok', result: 'x', error: undefined, attempts: 2, shape: 'step:a' }]],
  );
  assert.deepEqual(snap.signals, [
    { id: 'g2', name: 'late', payload: { n: 2 } },
    { id: 'g1', name: 'early', payload: undefined },
  ]);
  assert.equal(await backend.store.loadRun('nope'), undefined);
});

test('markRunning counts attempts and leaves a terminal run alone; a cancel is sticky', async () => {
  const [id] = await pendingRuns('f', 1);
  assert.equal(await backend.store.markRunning(id), 1);
  assert.equal(await backend.store.markRunning(id), 2);
  await assert.rejects(backend.store.markRunning('nope'));
  await backend.store.markTerminal(id, { status: 'canceled' });
  await backend.store.markTerminal(id, { status: 'done', output: 1 });
  assert.equal(await backend.store.markRunning(id), 2);
  const row = await backend.store.loadRunRow(id);
  assert.equal(row.status, 'canceled');
  assert.equal(row.output, undefined);
});

test('arriveAtJoin counts down below zero; an unknown run answers undefined', async () => {
  const [id] = await pendingRuns('f', 1);
  assert.equal(await backend.store.arriveAtJoin(id), -1);
  assert.equal(await backend.store.arriveAtJoin(id), -2);
  assert.equal(await backend.store.arriveAtJoin('nope'), undefined);
});

test('ack deletes the job, or releases it when it was enqueued during the lease', async () => {
  const [a, b] = await pendingRuns('f', 2);
  const leases = await backend.queue.claim({ limit: 10, leaseMs: 30_000 });
  assert.deepEqual(leases.map((l) => l.runId).sort(), [a, b].sort());
  await backend.queue.enqueue(b, { runAt: new Date(Date.now() + 60_000) });
  for (const l of leases) await backend.queue.ack(l);
  const [jobs] = await admin.query(`SELECT run_id, run_at, lease_token FROM ${t('job')}`);
  assert.deepEqual(jobs, [{ run_id: b, run_at: 0, lease_token: null }]);
});

test('concurrent claimers never share a run; concurrent dueBatch callers fire each deadline once', async () => {
  const ids = await pendingRuns('f', 200);
  // As the bench's fixtures do: fresh statistics, or the claim may scan and lock every row.
  await admin.query(`ANALYZE TABLE ${t('job')}`);
  const claimUntilEmpty = async () => {
    const out = [];
    for (;;) {
      const leases = await backend.queue.claim({ limit: 10, leaseMs: 30_000 });
      if (leases.length === 0) return out;
      out.push(...leases.map((l) => l.runId));
    }
  };
  const claimed = (await Promise.all(Array.from({ length: 8 }, claimUntilEmpty))).flat();
  claimed.push(...(await claimUntilEmpty())); // any a racer skipped while another held it
  assert.equal(new Set(claimed).size, claimed.length, 'no run leased twice');
  assert.equal(claimed.length, 200);
  const now = Date.now();
  await admin.query(`INSERT INTO ${t('timer')} (run_id, fire_at) VALUES ?`, [ids.map((id, i) => [id, now - 1000 + i])]);
  await admin.query(`ANALYZE TABLE ${t('timer')}`);
  const fired = (
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        const out = [];
        for (;;) {
          const due = await backend.timer.dueBatch({ limit: 20 });
          if (due.length === 0) return out;
          out.push(...due);
        }
      }),
    )
  ).flat();
  assert.equal(fired.length, 200);
  assert.equal(new Set(fired).size, 200);
});

test('a sleep parks with its timer only where the suspend matched', async () => {
  const [a, b] = await pendingRuns('f', 2);
  await backend.store.markTerminal(b, { status: 'done', output: 1 });
  const fireAt = new Date(Date.now() + 1000);
  await backend.store.suspendRun(a, 'sleeping', { timers: [{ runId: a, fireAt }] });
  await backend.store.suspendRun(b, 'sleeping', { timers: [{ runId: b, fireAt }] });
  const [timers] = await admin.query(`SELECT run_id, fire_at FROM ${t('timer')}`);
  assert.deepEqual(timers, [{ run_id: a, fire_at: fireAt.getTime() }]);
  assert.equal((await backend.store.loadRunRow(b)).status, 'done');
});
