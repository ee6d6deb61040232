// Reliability 1b — Dates and generated ids at the edges of what the tables can hold.
//
// A Date is accepted by behaviour (also one from another realm, as Jest hands out), but what its
// getTime() answers must be a valid time value: Infinity, 1e300 or a fraction used to be stored
// as 0, INT64_MAX or 1. A lease whose expiry would fall outside the Date range is refused rather
// than answered with an Invalid Date, and a generated id too long for its VARCHAR(191) key is
// refused before the server sees it. Nothing is written by any refused call.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import vm from 'node:vm';
import { closeAdmin } from '../helpers/db.mjs';
import { countAll, createMysqlBackend, freshPool, TABLES } from './helpers.mjs';

after(closeAdmin);

let env;
before(async () => {
  env = await freshPool('rel_badtimes');
});
after(async () => env && env.close());

const ZERO = Object.fromEntries(TABLES.map((t) => [t, 0]));
const MAX_TIME = 8.64e15;

/** A Date whose getTime() answers `value` (someone else's subclass or patched object). */
function dateAnswering(value) {
  const d = new Date(0);
  d.getTime = () => value;
  return d;
}

test('Dates whose getTime() is not a valid time value are refused, naming the argument', async () => {
  const b = createMysqlBackend(env.sql);
  for (const value of [Infinity, -Infinity, 1e300, 1.5, MAX_TIME + 1]) {
    const d = dateAnswering(value);
    await assert.rejects(b.store.startRun({ name: 'f', version: 1, createdAt: d }), {
      name: 'RangeError',
      message: /spec\.createdAt/,
    });
    await assert.rejects(b.timer.schedule('r', d), { name: 'RangeError', message: /fireAt/ });
    await assert.rejects(b.queue.claim({ limit: 1, leaseMs: 1, now: d }), { name: 'RangeError', message: /opts\.now/ });
    await assert.rejects(b.queue.depth(d), { name: 'RangeError', message: /now/ });
  }
  assert.deepEqual(await countAll(env.sql), ZERO);
});

test('a Date from another realm is accepted', async () => {
  const b = createMysqlBackend(env.sql);
  const foreign = vm.runInNewContext('new Date("2030-05-06T07:08:09.010Z")');
  assert.equal(foreign instanceof Date, false, 'really another realm');
  const r = await b.store.startRun({ name: 'realm', version: 1, createdAt: foreign });
  const row = await b.store.loadRunRow(r.runId);
  assert.equal(row.createdAt.toISOString(), '2030-05-06T07:08:09.010Z');
  await b.timer.schedule(r.runId, vm.runInNewContext('new Date(0)'));
  assert.deepEqual(await b.timer.dueBatch({ now: vm.runInNewContext('new Date(1)'), limit: 10 }), [r.runId]);
  await env.sql.exec(`DELETE FROM run`);
});

test('a lease whose expiry falls outside the Date range is refused; one at the edge works', async () => {
  const b = createMysqlBackend(env.sql);
  await b.queue.enqueue('edge');
  const late = new Date(MAX_TIME - 10);
  await assert.rejects(b.queue.claim({ limit: 1, leaseMs: 11, now: late }), {
    name: 'RangeError',
    message: /opts\.leaseMs/,
  });
  await assert.rejects(b.queue.claim({ limit: 1, leaseMs: Number.MAX_SAFE_INTEGER }), {
    name: 'RangeError',
    message: /opts\.leaseMs/,
  });
  assert.equal(
    (await env.sql.query('SELECT COUNT(*) AS n FROM job WHERE lease_token IS NOT NULL'))[0].n,
    0,
    'nothing leased',
  );
  const [lease] = await b.queue.claim({ limit: 1, leaseMs: 10, now: late });
  assert.equal(lease.expiresAt.getTime(), MAX_TIME);
  await assert.rejects(b.queue.heartbeat(lease, { leaseMs: 11, now: late }), {
    name: 'RangeError',
    message: /opts\.leaseMs/,
  });
  await env.sql.exec('DELETE FROM job');
});

test('a generated id longer than its 191-character key is refused before anything is sent', async () => {
  const b = createMysqlBackend(env.sql, { id: () => 'x'.repeat(192) });
  await assert.rejects(b.store.startRun({ name: 'f', version: 1 }), { name: 'RangeError', message: /opts\.id\(\)/ });
  await assert.rejects(b.store.startManyRuns([{ name: 'f', version: 1 }]), {
    name: 'RangeError',
    message: /opts\.id\(\)/,
  });
  await assert.rejects(b.store.postSignal('r', 's', 1), { name: 'RangeError', message: /opts\.id\(\)/ });
  assert.deepEqual(await countAll(env.sql), ZERO);
  // 191 characters fit; as lease-token halves any length works (tokens are cut to the column).
  const ok = createMysqlBackend(env.sql, { id: () => `${'y'.repeat(185)}${Math.random().toString(36).slice(2, 8)}` });
  const r = await ok.store.startRun({ name: 'f', version: 1 });
  assert.equal(r.runId.length, 191);
  await ok.queue.enqueue(r.runId);
  const [lease] = await createMysqlBackend(env.sql, { id: () => 'z'.repeat(300) }).queue.claim({
    limit: 1,
    leaseMs: 1000,
  });
  assert.equal(lease.runId, r.runId);
});
