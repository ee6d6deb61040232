// The tracing channels (lib/observe/tracing.js): one event per port call with its statements and
// connection checkouts as children, user statements live, the caller's async context kept
// across the Rust boundary, nothing armed without a subscriber, mysql2's names on request.
import { AsyncLocalStorage } from 'node:async_hooks';
import { test } from 'node:test';
import assert from 'node:assert/strict';

import binding from '../../lib/binding.js';
import { serverKind } from '../helpers/server.mjs';
import { m, applySchema, createMysqlBackend, mysqlPool, server, useDatabase } from '../sql/helpers.mjs';
import { ACQUIRE, CALL, CONNECT, QUERY, record, wrapSql } from './helpers.mjs';

const ctx = useDatabase('obs_channels', { init: ({ sql }) => applySchema(sql) });

const ALL = [CALL, QUERY, ACQUIRE, CONNECT];
const SECRET = 'input-never-published-7f3a';

test('a port call: one call event with its subject, server and counts; its statements and checkout as children', async () => {
  const b = createMysqlBackend(ctx.sql);
  const rec = record(ALL);
  try {
    const { runId } = await b.store.startRun({ name: 'obs-flow', version: 1, input: { SECRET } });
    const [call] = rec.of(CALL);
    assert.equal(call.method, 'startRun');
    assert.equal(call.runId, runId);
    assert.equal(call.flow, 'obs-flow');
    assert.equal(call.contract, '2.0.0-alpha.2');
    assert.equal(call.serverAddress, server().host);
    assert.equal(call.serverPort, server().port);
    assert.equal(call.database, ctx.db.database);
    assert.equal(call.system, serverKind(), 'which server: as it says itself');
    assert.equal(rec.of(CALL, 'asyncEnd')[0], call, 'the same context ends the call');
    const queries = rec.of(QUERY);
    assert.ok(queries.length >= 1, 'at least one statement');
    assert.equal(call.statements, queries.length);
    assert.ok(call.roundTrips >= 1 && call.roundTrips <= call.statements, JSON.stringify(call));
    assert.equal(call.retries, 0);
    for (const q of queries) {
      assert.equal(q.parent, call, 'a statement names its call');
      assert.equal(q.method, 'startRun');
      assert.match(q.query, /\?/, 'placeholders, not values');
      assert.ok(!q.query.includes(SECRET), 'bound values are never published');
      assert.ok(q.startTime <= q.endTime, JSON.stringify(q));
      assert.equal(q.database, ctx.db.database);
      assert.equal(q.system, serverKind());
      assert.match(q.operation, /^[A-Z]+$/);
    }
    const [acq] = rec.of(ACQUIRE);
    assert.equal(acq.parent, call);
    assert.ok(acq.waitMs >= 0 && acq.endTime >= acq.startTime);
    // Statements follow the checkout, in order.
    assert.ok(queries[0].startTime >= acq.startTime);
    for (let i = 1; i < queries.length; i++) assert.ok(queries[i].startTime >= queries[i - 1].startTime);
  } finally {
    rec.stop();
  }
});

test('a transaction unit publishes BEGIN and COMMIT, and the caller async context reaches every event', async () => {
  const b = createMysqlBackend(ctx.sql);
  const { runId } = await b.store.startRun({ name: 'obs-flow', version: 1 });
  const als = new AsyncLocalStorage();
  const rec = record(ALL, als);
  try {
    await als.run('caller-1', () =>
      b.store.suspendRun(runId, 'sleeping', { timers: [{ runId, fireAt: new Date(Date.now() + 60_000) }] }),
    );
    const [call] = rec.of(CALL);
    assert.equal(call.method, 'suspendRun');
    const texts = rec.of(QUERY).map((q) => q.query);
    assert.equal(texts[0], 'BEGIN');
    assert.equal(texts.at(-1), 'COMMIT');
    assert.equal(call.statements, texts.length);
    for (const e of rec.events) assert.equal(e.store, 'caller-1', `${e.channel} ${e.kind} in the caller's context`);
  } finally {
    rec.stop();
  }
});

test('a failing port call publishes its error on the call channel', async () => {
  const b = createMysqlBackend(ctx.sql);
  const rec = record(ALL);
  try {
    const err = await b.store.markRunning('no-such-run').catch((e) => e);
    assert.equal(err.kind, 'contract');
    const [failed] = rec.of(CALL, 'error');
    assert.equal(failed.error, err);
    assert.equal(failed.method, 'markRunning');
    assert.equal(failed.runId, 'no-such-run');
  } finally {
    rec.stop();
  }
});

test('without a subscriber nothing is armed in Rust and nothing is published', async () => {
  const b = createMysqlBackend(ctx.sql);
  const arm = binding.armTrace;
  let armed = 0;
  binding.armTrace = (...a) => {
    armed++;
    return arm(...a);
  };
  try {
    await b.store.startRun({ name: 'obs-flow', version: 1 });
    await ctx.sql.query('SELECT 1');
    assert.equal(armed, 0, 'no trace without a subscriber');
    const rec = record([QUERY]);
    try {
      await b.store.startRun({ name: 'obs-flow', version: 1 });
      assert.equal(armed, 1, 'one trace per call once someone subscribes');
    } finally {
      rec.stop();
    }
  } finally {
    binding.armTrace = arm;
  }
});

test('user statements: sql.query / exec / tx, live, text without values unless asked', async () => {
  const rec = record(ALL);
  try {
    await ctx.sql.query('SELECT ? AS v', [SECRET]);
    await ctx.sql.tx(async (t) => {
      await t.exec('SELECT ? + 1', [41]);
    });
    const texts = rec.of(QUERY).map((q) => q.query);
    assert.deepEqual(texts, ['SELECT ? AS v', 'BEGIN', 'SELECT ? + 1', 'COMMIT']);
    for (const q of rec.of(QUERY, 'asyncEnd')) {
      assert.equal(q.values, undefined);
      assert.ok(q.startTime <= q.endTime);
    }
    const err = await ctx.sql.query('SELECT * FROM no_such_table').catch((e) => e);
    const [failed] = rec.of(QUERY, 'error');
    assert.equal(failed.error, err);
    assert.equal(failed.query, 'SELECT * FROM no_such_table');
    // The checkout of a pooled statement is its child.
    const acq = rec.of(ACQUIRE);
    assert.ok(acq.length >= 2, 'the query and the transaction each checked out a connection');
    assert.equal(acq[0].parent, rec.of(QUERY)[0]);
  } finally {
    rec.stop();
  }
  const withValues = mysqlPool(ctx.db.url, { tracing: { values: true } });
  const rec2 = record([QUERY]);
  try {
    await withValues.query('SELECT ? AS v', [SECRET]);
    assert.deepEqual(rec2.of(QUERY)[0].values, [SECRET], 'values when the pool was asked for them');
  } finally {
    rec2.stop();
    await withValues.close();
  }
});

test('opts.tracing is checked', () => {
  assert.throws(() => mysqlPool(ctx.db.url, { tracing: 'yes' }), { name: 'TypeError', message: /opts\.tracing/ });
  assert.throws(() => mysqlPool(ctx.db.url, { tracing: { mysql2: 1 } }), {
    name: 'TypeError',
    message: /opts\.tracing\.mysql2/,
  });
});

test('the connect channel reports the checkout that opened a connection, not the reuse of one', async () => {
  const sql = mysqlPool(`${ctx.db.url}?connectionLimit=2`);
  const rec = record([CONNECT, ACQUIRE]);
  try {
    // With a subscriber, a new pool first asks the server which it is (one SELECT VERSION() on a
    // connection of its own, never published); the first statement then reuses that connection.
    await sql.query('SELECT 1');
    assert.equal(rec.of(CONNECT).length, 0, 'reused');
    // Two at once: one takes the idle connection, the other opens the second.
    await Promise.all([sql.query('SELECT SLEEP(0.05)'), sql.query('SELECT 2')]);
    await sql.query('SELECT 3');
    assert.equal(rec.of(ACQUIRE).length, 4);
    const connects = rec.of(CONNECT);
    assert.equal(connects.length, 1, 'one connection opened, then reused');
    assert.match(connects[0].parent.query, /^SELECT (SLEEP|2)/);
  } finally {
    rec.stop();
    await sql.close();
  }
});

test('a wrapped Sql: each bridged statement is published live, as a child of its call, in the caller context', async () => {
  const b = createMysqlBackend(wrapSql(ctx.sql));
  const { runId } = await b.store.startRun({ name: 'obs-flow', version: 1 });
  const als = new AsyncLocalStorage();
  const rec = record([CALL, QUERY], als);
  try {
    await als.run('caller-2', () => b.store.loadRun(runId));
    const [call] = rec.of(CALL);
    assert.equal(call.method, 'loadRun');
    assert.equal(call.runId, runId);
    const mine = rec.of(QUERY).filter((q) => q.parent === call);
    assert.ok(mine.length >= 1);
    assert.equal(call.statements, mine.length);
    for (const q of mine) assert.match(q.query, /\?/);
    for (const e of rec.events) assert.equal(e.store, 'caller-2', `${e.channel} ${e.kind}`);
  } finally {
    rec.stop();
  }
});

test('inTx: a unit joined to the caller transaction publishes its savepoint and statements', async () => {
  const rec = record([CALL, QUERY]);
  try {
    await m.inTx(ctx.sql, (b) => b.store.startRun({ name: 'obs-flow', version: 1 }));
    const [call] = rec.of(CALL);
    const mine = rec.of(QUERY).filter((q) => q.parent === call);
    assert.equal(mine[0].query, 'SAVEPOINT ifw_unit');
    assert.equal(call.statements, mine.length);
  } finally {
    rec.stop();
  }
});

test('mysql2 channel names, on request: statements and checkouts with mysql2 context shape', async () => {
  const plain = record(['mysql2:query', 'mysql2:execute', 'mysql2:pool:connect']);
  try {
    await ctx.sql.query('SELECT 1');
    assert.equal(plain.events.length, 0, 'not without tracing.mysql2');
  } finally {
    plain.stop();
  }
  const sql = mysqlPool(ctx.db.url, { tracing: { mysql2: true } });
  const rec = record(['mysql2:query', 'mysql2:execute', 'mysql2:pool:connect', 'mysql2:connect']);
  try {
    await sql.query('SELECT ? AS v', [SECRET]);
    const b = createMysqlBackend(sql);
    await b.store.startRun({ name: 'obs-flow', version: 1 });
    const starts = rec.events.filter((e) => e.kind === 'start' && e.channel !== 'mysql2:pool:connect');
    assert.ok(starts.length >= 2);
    const first = starts[0].ctx;
    // `result` / `error` are what tracePromise adds once the statement settled.
    const keys = Object.keys(first).filter((k) => k !== 'result' && k !== 'error');
    assert.deepEqual(keys.sort(), ['database', 'query', 'serverAddress', 'serverPort', 'values']);
    assert.equal(first.query, 'SELECT ? AS v');
    assert.equal(first.values, undefined);
    assert.equal(first.database, ctx.db.database);
    assert.equal(first.serverPort, server().port);
    assert.ok(rec.of('mysql2:pool:connect').length >= 2, 'each checkout');
    assert.equal(rec.of('mysql2:connect').length, 1, 'one new connection');
  } finally {
    rec.stop();
    await sql.close();
  }
});
