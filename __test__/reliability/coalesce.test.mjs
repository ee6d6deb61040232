// Coalesced `enqueue` calls (issue #23, src/node/coalesce.rs): the calls a backend gets in one
// synchronous JS turn, and those made while it has an enqueue statement in flight, go together as
// one multi-row upsert. Checked here against a real server:
//   (a) the same job rows as the calls one by one (duplicates, priorities, past and future
//       run_at, a leased job), both contracts;
//   (b) one call the server refuses fails alone, its neighbours succeed (behind a held call,
//       and within one turn);
//   (c) a lone call is sent alone, as before (one prepared single-row statement);
//   (d) two bursts over overlapping runs never deadlock each other (no deadlock retries);
//   (e) a connection lost after a batch was sent: every caller's answer agrees with the disk;
//   (f) a burst made in one turn is one statement in one round trip, per backend.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import dc from 'node:diagnostics_channel';
import mysql from 'mysql2/promise';
import { closeAdmin, freshDatabase, serverUrl } from '../helpers/db.mjs';
import { startFaultProxy } from '../helpers/faultproxy.mjs';
import { applySchema, createMysqlBackend, mysqlPool, settle, tables, withParams, within } from './helpers.mjs';

const CONTRACTS = ['2.0.0-alpha.2', '3.0.0'];
const FAR = Date.parse('2099-01-01T00:00:00Z');
const PAST = Date.parse('2020-01-01T00:00:00Z');

let db;
let direct;
const pools = [];

/** A native pool on the test database (closed after the file). */
function pool(params = {}) {
  const sql = mysqlPool(withParams(db.url, params));
  pools.push(sql);
  return sql;
}

const q = async (text, values) => (await direct.query(text, values))[0];

/** The job table, row for row. */
const jobs = (prefix) =>
  q(`SELECT run_id, run_at, priority, version, lease_token, lease_expires FROM ${tables(prefix).job} ORDER BY run_id`);

/**
 * Locks the job row of `runId` (inserting it first when absent) on a connection of its own: an
 * enqueue of it waits for `release()`, so every call the backend gets meanwhile queues behind it
 * (however slowly the caller makes them).
 */
async function hold(prefix, runId) {
  const job = tables(prefix).job;
  await q(`INSERT IGNORE INTO ${job} (run_id, run_at, priority, version) VALUES (?, 0, 0, 1)`, [runId]);
  const c = await mysql.createConnection({ uri: db.url });
  await c.query('BEGIN');
  await c.query(`SELECT * FROM ${job} WHERE run_id = ? FOR UPDATE`, [runId]);
  return async () => {
    await c.query('COMMIT');
    await c.end();
  };
}

/** Resolves once the current turn (and the microtasks it queued) is over. */
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/**
 * `ids` enqueued on `b` while its one statement in flight (an enqueue of `held`, made in a turn of
 * its own) waits on a row lock, so every one of them queues behind it and goes in the batch; each
 * call's `settle`d answer.
 */
async function burstBehindHeld(b, prefix, ids) {
  const release = await hold(prefix, 'held');
  const held = b.queue.enqueue('held');
  await nextTurn();
  const burst = Promise.all(ids.map((id) => settle(b.queue.enqueue(id))));
  await release();
  await held;
  return burst;
}

before(async () => {
  db = await freshDatabase('coalesce');
  direct = await mysql.createConnection({ uri: db.url });
});
after(async () => {
  for (const p of pools) if (!p.closed) await p.close();
  await direct?.end();
  await db?.drop();
  await closeAdmin();
});

/**
 * The enqueue calls of (a), in two bursts: runs named twice and three times (the last request
 * wins, the version counts every call), explicit and absent priorities (3.0 inherits the run's
 * own), due times in the past and the future, runs with no run row, `L`, leased, whose lease
 * stays untouched, and ids the column's case- and accent-insensitive collation takes for
 * another run's (`R03` for `r03`; `É1` and `e1`, which keep the second burst in call order).
 */
function burstsOfA() {
  // Each burst starts with `L` (which the test holds locked, so that the rest queue).
  const calls = [['L', undefined]];
  for (let i = 0; i < 40; i++) {
    const runId = `r${String(i % 25).padStart(2, '0')}`;
    const opts = [
      undefined,
      { priority: (i * 7) % 11 },
      { runAt: new Date(i % 2 ? FAR + i : PAST + i) },
      { runAt: new Date(FAR - i), priority: -i },
    ][i % 4];
    calls.push([runId, opts]);
    if (i % 9 === 0) calls.push(['L', opts]);
    if (i % 13 === 0) calls.push([`no-run-${i}`, opts]);
    if (i % 10 === 5) calls.push(['R03', opts]);
  }
  const second = [
    ['L', { priority: 2 }],
    ['e1', { priority: 4 }],
    ['r07', undefined],
    ['É1', { runAt: new Date(FAR) }],
    ['r07', { priority: 9 }],
    ['e1', undefined],
  ];
  return [calls, second];
}

async function fixtureOfA(sql, prefix, contract) {
  await applySchema(sql, prefix, { contract });
  let n = 0;
  const b = createMysqlBackend(sql, { prefix, contract, id: () => `r${String(n++).padStart(2, '0')}` });
  await b.store.startManyRuns(
    Array.from({ length: 25 }, (_, i) => ({
      name: 'f',
      version: 1,
      input: i,
      priority: i % 5,
      createdAt: new Date(0),
    })),
  );
  await q(
    `INSERT INTO ${tables(prefix).job} (run_id, run_at, priority, version, lease_token, lease_expires) VALUES ('L', 5, 3, 4, 'tok:L', ?)`,
    [FAR],
  );
  return b;
}

for (const contract of CONTRACTS) {
  test(`(a) ${contract}: the calls together leave the job rows the calls one by one leave`, async () => {
    // A backend has one enqueue statement in flight at a time: the first call goes alone, every
    // later one queues in call order, so a run's requests apply in the order of the calls.
    const sql = pool();
    const tag = contract === '3.0.0' ? 'a3' : 'a2';
    const oneByOne = await fixtureOfA(sql, `${tag}s_`, contract);
    const together = await fixtureOfA(sql, `${tag}t_`, contract);
    const bursts = burstsOfA();
    const calls = bursts.flat();

    const before1 = sql.stats().coalesced;
    for (const [runId, opts] of calls) await oneByOne.queue.enqueue(runId, opts);
    assert.deepEqual(sql.stats().coalesced, before1, 'calls one after the other are never coalesced');

    for (const burst of bursts) {
      const batches = sql.stats().coalesced.batches;
      // Its first call waits for a lock, so the others queue behind it whatever the timing.
      const release = await hold(`${tag}t_`, 'L');
      const all = Promise.all(burst.map(([runId, opts]) => together.queue.enqueue(runId, opts)));
      await release();
      await all;
      assert.equal(sql.stats().coalesced.batches, batches + 1, 'the burst was coalesced');
    }
    assert.equal(sql.stats().coalesced.resent, before1.resent);

    const expected = await jobs(`${tag}s_`);
    assert.equal(expected.length, 25 + 1 + 4 + 1);
    assert.deepEqual(await jobs(`${tag}t_`), expected);
    const leased = expected.find((r) => r.run_id === 'L');
    assert.equal(leased.lease_token, 'tok:L', 'an active lease is never touched');
    assert.equal(Number(leased.version), 4 + calls.filter(([r]) => r === 'L').length);
  });
}

test('(b) one call the server refuses fails alone; its neighbours are enqueued', async () => {
  const sql = pool({ connectionLimit: 1 });
  const prefix = 'b_';
  await applySchema(sql, prefix);
  const b = createMysqlBackend(sql, { prefix });
  const job = tables(prefix).job;
  await q(
    `CREATE TRIGGER b_refuse BEFORE INSERT ON ${job} FOR EACH ROW
       IF NEW.run_id = 'bad' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused: bad'; END IF`,
  );
  const ids = Array.from({ length: 30 }, (_, i) => (i === 17 ? 'bad' : `ok${i}`));
  const before1 = sql.stats().coalesced;
  const got = await burstBehindHeld(b, prefix, ids);
  const failed = ids.filter((_, i) => !got[i].ok);
  assert.deepEqual(failed, ['bad']);
  assert.match(got[17].error.message, /refused: bad/);
  const rows = (await jobs(prefix)).filter((r) => r.run_id !== 'held');
  assert.deepEqual(rows.map((r) => r.run_id).sort(), ids.filter((id) => id !== 'bad').sort());
  assert.ok(
    rows.every((r) => Number(r.version) === 1),
    'each neighbour applied once',
  );
  const s = sql.stats().coalesced;
  assert.equal(s.resent - before1.resent, 30, `the refused batch was re-sent call by call: ${JSON.stringify(s)}`);
  assert.match(
    sql.prometheus({ prefix: 'app', pool: 'p' }),
    new RegExp(`^app_coalesced_resent_calls_total\\{pool="p"\\} ${s.resent}$`, 'm'),
  );
});

test('(b) within one turn: the refused call fails alone; its neighbours are enqueued once', async () => {
  const sql = pool({ connectionLimit: 1 });
  const prefix = 'bt_';
  await applySchema(sql, prefix);
  const b = createMysqlBackend(sql, { prefix });
  const job = tables(prefix).job;
  await q(
    `CREATE TRIGGER bt_refuse BEFORE INSERT ON ${job} FOR EACH ROW
       IF NEW.run_id = 'bad' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused: bad'; END IF`,
  );
  const ids = Array.from({ length: 30 }, (_, i) => (i === 4 ? 'bad' : `ok${i}`));
  const before1 = sql.stats().coalesced;
  const got = await Promise.all(ids.map((id) => settle(b.queue.enqueue(id))));
  assert.deepEqual(
    ids.filter((_, i) => !got[i].ok),
    ['bad'],
  );
  assert.match(got[4].error.message, /refused: bad/);
  const rows = await jobs(prefix);
  assert.deepEqual(rows.map((r) => r.run_id).sort(), ids.filter((id) => id !== 'bad').sort());
  assert.ok(
    rows.every((r) => Number(r.version) === 1),
    'each neighbour applied once',
  );
  const s = sql.stats().coalesced;
  assert.equal(
    s.resent - before1.resent,
    30,
    `the turn's refused batch was re-sent call by call: ${JSON.stringify(s)}`,
  );
  assert.equal(s.batches - before1.batches, 1, 'the turn went as one batch');
});

test('(c) a lone call is sent alone: one prepared single-row statement', async () => {
  const sql = pool({ connectionLimit: 4 });
  const prefix = 'c_';
  await applySchema(sql, prefix);
  const b = createMysqlBackend(sql, { prefix });
  const seen = [];
  const handlers = { start: (ctx) => seen.push(ctx) };
  const ch = dc.tracingChannel('iterativeflow-mysql-native:query');
  ch.subscribe(handlers);
  try {
    for (let i = 0; i < 5; i++) {
      const s0 = sql.stats();
      seen.length = 0;
      await b.queue.enqueue(`lone${i}`, { priority: i });
      const s1 = sql.stats();
      assert.equal(s1.statements - s0.statements, 1, 'one statement');
      assert.equal(s1.roundTrips - s0.roundTrips, 1, 'one round trip');
      assert.deepEqual(s1.coalesced, s0.coalesced, 'not coalesced');
      assert.equal(seen.length, 1);
      assert.equal(seen[0].prepared, true, 'the single-row statement, prepared as before');
      assert.match(seen[0].query, /VALUES \(\?, \?, \?, 1\) ON DUPLICATE/);
    }
  } finally {
    ch.unsubscribe(handlers);
  }
});

test('(d) two bursts over overlapping runs never deadlock each other', async () => {
  const prefix = 'd_';
  const sqlA = pool({ connectionLimit: 2 });
  const sqlB = pool({ connectionLimit: 2 });
  await applySchema(sqlA, prefix);
  const a = createMysqlBackend(sqlA, { prefix });
  const b = createMysqlBackend(sqlB, { prefix });
  const ids = Array.from({ length: 300 }, (_, i) => `d${String(i).padStart(3, '0')}`);
  const shuffled = (seed) => {
    const out = [...ids];
    let x = seed;
    for (let i = out.length - 1; i > 0; i--) {
      x = (x * 1103515245 + 12345) % 2 ** 31;
      const j = x % (i + 1);
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  };
  const retries0 = sqlA.stats().deadlockRetries + sqlB.stats().deadlockRetries;
  for (let round = 0; round < 100; round++) {
    // Every other round the job rows exist (updates), else the burst inserts them.
    if (round % 2 === 0) await q(`DELETE FROM ${tables(prefix).job}`);
    const x = shuffled(round * 2 + 1).slice(0, 250);
    const y = shuffled(round * 2 + 2).slice(0, 250);
    await within(
      Promise.all([...x.map((id) => a.queue.enqueue(id)), ...y.map((id) => b.queue.enqueue(id))]),
      30_000,
      `round ${round}`,
    );
  }
  const retries = sqlA.stats().deadlockRetries + sqlB.stats().deadlockRetries - retries0;
  assert.equal(retries, 0, `no batch deadlocked another (deadlocks are re-run, and counted): ${retries}`);
  assert.ok(sqlA.stats().coalesced.batches > 0 && sqlB.stats().coalesced.batches > 0);
});

for (const kind of ['reset-after-send', 'reset-on-answer']) {
  test(`(e) ${kind} on a batch: every caller's answer agrees with what is on disk`, async () => {
    const u = new URL(serverUrl());
    const proxy = await startFaultProxy({
      host: u.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1',
      port: Number(u.port) || 3306,
    });
    try {
      const viaProxy = new URL(db.url);
      viaProxy.hostname = '127.0.0.1';
      viaProxy.port = String(proxy.port);
      const prefix = `e${kind === 'reset-after-send' ? 's' : 'a'}_`;
      const sql = pool({ connectionLimit: 1, acquireTimeoutMs: 3000, queryTimeoutMs: 3000 });
      await applySchema(sql, prefix);
      const faulty = mysqlPool(withParams(viaProxy.toString(), { connectionLimit: 1, acquireTimeoutMs: 3000 }));
      pools.push(faulty);
      const b = createMysqlBackend(faulty, { prefix });
      await b.queue.enqueue('warm'); // the connection is open before the burst
      // The multi-row statement of a batch (text protocol), not a lone call's prepared one.
      const hit = proxy.arm({ match: /VALUES \('[^']*', [^)]*\), \(/, kind });
      const ids = Array.from({ length: 20 }, (_, i) => `e${i}`);
      const got = await burstBehindHeld(b, prefix, ids);
      hit.cancel();
      assert.ok(hit.hit, 'the fault landed on a batch');
      const rows = new Map((await jobs(prefix)).map((r) => [r.run_id, Number(r.version)]));
      const failed = ids.filter((_, i) => !got[i].ok);
      assert.deepEqual(failed, ids, 'every caller of the lost batch is told');
      for (const [i, id] of ids.entries()) {
        if (got[i].ok) assert.equal(rows.get(id), 1, `${id}: a success applied once`);
        else {
          assert.equal(got[i].error.kind, 'connection', `${id}: ${got[i].error.message}`);
          assert.ok(!rows.has(id) || rows.get(id) === 1, `${id}: applied at most once`);
        }
      }
      // One statement: the failed callers' rows are all there or all absent.
      const present = failed.filter((id) => rows.has(id)).length;
      assert.ok(present === 0 || present === failed.length, `${present} of ${failed.length} present`);
      if (kind === 'reset-on-answer') assert.equal(present, failed.length, 'the server applied what it answered');
      // The next call works.
      await b.queue.enqueue('after');
      assert.equal((await jobs(prefix)).find((r) => r.run_id === 'after')?.version, 1);
    } finally {
      proxy.dropAll();
      await proxy.close();
    }
  });
}

test('(f) a burst made in one turn is one statement in one round trip, per backend', async () => {
  // The engine makes a burst's calls in one synchronous turn (Promise.all over a map): the whole
  // burst goes at the turn's end as one multi-row upsert, and a lone call still goes alone.
  const sql = pool({ connectionLimit: 4 });
  await applySchema(sql, 'f_');
  await applySchema(sql, 'g_');
  const f = createMysqlBackend(sql, { prefix: 'f_' });
  const g = createMysqlBackend(sql, { prefix: 'g_' });
  await f.queue.enqueue('warm');
  await g.queue.enqueue('warm');
  for (const n of [2, 20, 100]) {
    const ids = Array.from({ length: n }, (_, i) => `b${n}-${i}`);
    const s0 = sql.stats();
    const got = await Promise.all(ids.map((id) => f.queue.enqueue(id, { priority: n })));
    const s1 = sql.stats();
    assert.deepEqual(
      got,
      ids.map(() => undefined),
      'each caller answered',
    );
    assert.equal(s1.statements - s0.statements, 1, `${n} calls in one turn: one statement`);
    assert.equal(s1.roundTrips - s0.roundTrips, 1, `${n} calls in one turn: one round trip`);
    assert.equal(s1.coalesced.batches - s0.coalesced.batches, 1);
    assert.equal(s1.coalesced.calls - s0.coalesced.calls, n);
  }
  // Two backends' bursts in the same turn: one statement each, each on its own tables.
  const s0 = sql.stats();
  const xs = Array.from({ length: 10 }, (_, i) => `x${i}`);
  await Promise.all([...xs.map((id) => f.queue.enqueue(id)), ...xs.map((id) => g.queue.enqueue(`${id}g`))]);
  const s1 = sql.stats();
  assert.equal(s1.statements - s0.statements, 2, 'one statement per backend');
  assert.equal(s1.coalesced.batches - s0.coalesced.batches, 2);
  const fJobs = (await jobs('f_')).map((r) => r.run_id);
  const gJobs = (await jobs('g_')).map((r) => r.run_id);
  assert.ok(xs.every((id) => fJobs.includes(id) && !gJobs.includes(id)));
  assert.ok(xs.every((id) => gJobs.includes(`${id}g`) && !fJobs.includes(`${id}g`)));
  // Calls of consecutive turns: each turn's lone call goes alone, never in a batch.
  const s2 = sql.stats();
  for (let i = 0; i < 3; i++) {
    const p = f.queue.enqueue(`turn${i}`);
    await nextTurn();
    await p;
  }
  const s3 = sql.stats();
  assert.equal(s3.statements - s2.statements, 3);
  assert.deepEqual(s3.coalesced, s2.coalesced, 'lone calls are not coalesced');
});
