// One string, through every string field of every port method, and back.
//
// `exercise(sql, backendFor, v)` empties the six tables, plants a "bystander" run (with a step, a
// job, a timer, a signal and a cron row that no call below may touch), then drives the value `v`
// through: run name / idempotency key / tags / parent ids / input JSON, run ids (via the `id`
// option), cursor keys, step shapes and results, signal names / keys / payloads / ids, outbox
// spawns / enqueues / timers / cancelTimers / consumeSignals / joinTarget, lease tokens, listRuns
// name and tag filters, cron name / schedule / flow name / input, terminal outputs and errors.
// Every value read back must equal the value written, exactly; afterwards the bystander's rows must
// be byte-for-byte unchanged and the six tables must hold exactly the rows the calls imply.
import assert from 'node:assert/strict';
import { TABLES, countAll, tables } from './helpers.mjs';

const T = Date.parse('2031-06-01T00:00:00Z');
const at = (n = 0) => new Date(T + n);
const FAR = new Date(T + 10 * 365 * 86400_000);

/** A plain JS `Sql` over another one: makes createMysqlBackend take its wrapped (JS) path. */
export function wrapSql(inner) {
  const make = (target) => ({
    query: (text, params) => target.query(text, params),
    exec: (text, params) => target.exec(text, params),
    tx: (fn) => target.tx((h) => fn(make(h))),
  });
  return make(inner);
}

async function bystanderRows(sql, id) {
  const t = tables('');
  const out = {};
  for (const [table, col] of [
    ['run', 'id'],
    ['step', 'run_id'],
    ['job', 'run_id'],
    ['timer', 'run_id'],
    ['signal', 'run_id'],
  ]) {
    out[table] = await sql.query(`SELECT * FROM ${t[table]} WHERE ${col} = ? ORDER BY 1`, [id]);
  }
  out.cron = await sql.query(`SELECT * FROM ${t.cron} WHERE name = ?`, ['bystander']);
  return JSON.stringify(out);
}

async function plantBystander(sql, backend) {
  const { store, queue, timer } = backend;
  const { runId } = await store.startRun({
    name: 'bystander',
    version: 1,
    input: { b: 1 },
    idempotencyKey: 'bystander',
    tags: ['bystander'],
  });
  await store.postSignal(runId, 'bsig', 1, { idempotencyKey: 'b' });
  await queue.enqueue(runId, { runAt: FAR });
  await timer.schedule(runId, FAR);
  await store.checkpointStep({ runId, cursorKey: 'b0', status: 'ok', result: 'b', attempts: 1, shape: 'step:b' });
  await store.upsertCron({
    name: 'bystander',
    schedule: '* * * * *',
    flowName: 'bystander',
    flowVersion: 1,
    input: null,
    nextRunAt: FAR,
  });
  return runId;
}

/** Empties the six tables (prefix ''). */
export async function emptyTables(sql) {
  const t = tables('');
  for (const n of TABLES) await sql.query(`DELETE FROM ${t[n]}`);
}

/**
 * Drives `v` through every string field (see module docs). `backendFor(id)` builds the backend under
 * test with the given id generator; `plain` is a backend used only for the bystander.
 * Returns the number of port calls made with `v`.
 */
export async function exercise(sql, plain, backendFor, v, label = JSON.stringify(v)) {
  await emptyTables(sql);
  const by = await plantBystander(sql, plain);
  const byBefore = await bystanderRows(sql, by);

  let n = 0;
  const ids = [];
  const b = backendFor(() => {
    const id = n++ === 0 ? v : `${v}~${n}`;
    ids.push(id);
    return id;
  });
  const { store, queue, timer } = b;
  let calls = 0;
  const c = (p) => {
    calls++;
    return p;
  };
  const msg = (what) => `${label}: ${what}`;

  // -- runs -------------------------------------------------------------------------------------
  const input = { s: v, [v]: v, arr: [v, { k: v }], n: 1 };
  const spec = {
    name: v,
    version: 1,
    input,
    idempotencyKey: v,
    tags: [v, 'plain'],
    parentRunId: v,
    parentCursorKey: v,
  };
  const started = await c(store.startRun(spec));
  assert.deepEqual(started, { runId: v, created: true, status: 'pending' }, msg('startRun'));
  const again = await c(store.startRun(spec));
  assert.deepEqual(again, { runId: v, created: false, status: 'pending' }, msg('idempotent startRun by key'));

  const expectRun = {
    id: v,
    name: v,
    version: 1,
    status: 'pending',
    input,
    attempts: 0,
    output: undefined,
    error: undefined,
    idempotencyKey: v,
    tags: [v, 'plain'],
    parentRunId: v,
    parentCursorKey: v,
    depth: 0,
  };
  const snap = await c(store.loadRun(v));
  assert.ok(snap, msg('loadRun finds the run'));
  const { createdAt, ...rest } = snap.run;
  assert.ok(createdAt instanceof Date);
  assert.deepEqual(rest, expectRun, msg('loadRun round-trips every field'));
  assert.equal(snap.steps.size, 0);
  assert.deepEqual(snap.signals, []);
  const row = await c(store.loadRunRow(v));
  assert.deepEqual({ ...row, createdAt: undefined }, { ...expectRun, createdAt: undefined }, msg('loadRunRow'));
  const rows = await c(store.loadRunRows([v, `${v}~missing`, v]));
  assert.equal(rows.length, 3);
  assert.equal(rows[0].id, v);
  assert.equal(rows[1], undefined, msg('loadRunRows hole'));
  assert.equal(rows[2].id, v);

  const ids1 = (p) => p.runs.map((r) => r.id);
  assert.deepEqual(ids1(await c(store.listRuns({ name: v }, { limit: 5 }))), [v], msg('listRuns name filter'));
  assert.deepEqual(ids1(await c(store.listRuns({ tag: v }, { limit: 5 }))), [v], msg('listRuns tag filter'));
  assert.deepEqual(ids1(await c(store.listRuns({ status: ['pending'], name: v, tag: v }, { limit: 5 }))), [v]);
  assert.deepEqual(
    (await c(store.childrenOf(v))).map((r) => r.id),
    [v],
    msg('childrenOf (self-parented)'),
  );

  // -- signals ----------------------------------------------------------------------------------
  assert.deepEqual(
    await c(store.postSignal(v, v, { p: v }, { idempotencyKey: v })),
    { delivered: true },
    msg('postSignal'),
  );
  assert.deepEqual(
    await c(store.postSignal(v, v, { p: 'dup' }, { idempotencyKey: v })),
    { delivered: false },
    msg('postSignal dedup by key'),
  );
  const sigs = (await c(store.loadRun(v))).signals;
  assert.equal(sigs.length, 1);
  const sigId = sigs[0].id;
  assert.ok(ids.includes(sigId), msg('signal id comes from the id option'));
  assert.deepEqual(sigs[0], { id: sigId, name: v, payload: { p: v } }, msg('signal round-trips'));

  // -- steps and the outbox ---------------------------------------------------------------------
  assert.equal(await c(store.markRunning(v)), 1, msg('markRunning'));
  const child = `${v}~child`;
  const childSpec = {
    name: v,
    version: 2,
    input: v,
    idempotencyKey: v,
    tags: [v],
    parentRunId: v,
    parentCursorKey: v,
    depth: 1,
  };
  const cp = { runId: v, cursorKey: v, status: 'ok', result: { r: v }, attempts: 1, shape: v };
  const outcome = await c(
    store.checkpointStep(cp, {
      spawn: [{ runId: child, spec: childSpec }],
      enqueue: [{ runId: v, opts: { priority: 1 } }],
      timers: [{ runId: v, fireAt: at(1000) }],
      consumeSignals: [sigId],
      joinTarget: { runId: v, count: 2 },
    }),
  );
  const expectStep = { status: 'ok', result: { r: v }, error: undefined, attempts: 1, shape: v };
  assert.deepEqual(outcome, expectStep, msg('checkpointStep returns the stored outcome'));
  const replay = await c(
    store.checkpointStep({ ...cp, result: 'loser', shape: 'other' }, { enqueue: [{ runId: 'never' }] }),
  );
  assert.deepEqual(replay, expectStep, msg('first writer wins on the same cursor key'));
  const snap2 = await c(store.loadRun(v));
  assert.equal(snap2.steps.size, 1);
  assert.deepEqual(snap2.steps.get(v), expectStep, msg('step memo keyed by the cursor key'));
  assert.deepEqual(snap2.signals, [], msg('consumeSignals deleted the signal'));
  const kid = await c(store.loadRunRow(child));
  assert.ok(kid, msg('spawned child exists'));
  assert.deepEqual(
    { ...kid, createdAt: undefined },
    {
      id: child,
      name: v,
      version: 2,
      status: 'pending',
      input: v,
      attempts: 0,
      output: undefined,
      error: undefined,
      idempotencyKey: v,
      tags: [v],
      parentRunId: v,
      parentCursorKey: v,
      depth: 1,
      createdAt: undefined,
    },
    msg('spawned child round-trips'),
  );
  assert.deepEqual((await c(store.childrenOf(v))).map((r) => r.id).sort(), [v, child].sort());
  assert.equal(await c(store.arriveAtJoin(v)), 1, msg('joinTarget armed, arriveAtJoin'));

  // -- timers -----------------------------------------------------------------------------------
  assert.deepEqual(await c(timer.dueBatch({ now: at(999), limit: 10 })), [], msg('timer not yet due'));
  assert.deepEqual(await c(timer.dueBatch({ now: at(1000), limit: 10 })), [v], msg('outbox timer due'));
  await c(timer.schedule(v, at(2000)));
  await c(timer.schedule(v, at(500)));
  assert.deepEqual(await c(timer.dueBatch({ now: at(600), limit: 10 })), [v], msg('timer.schedule'));
  await c(timer.schedule(v, at(700)));
  await c(timer.cancel(v));
  assert.deepEqual(await c(timer.dueBatch({ now: at(10_000), limit: 10 })), [], msg('timer.cancel'));

  // -- queue ------------------------------------------------------------------------------------
  const leases = await c(queue.claim({ limit: 10, leaseMs: 1000, now: at(0) }));
  assert.deepEqual(leases.map((l) => l.runId).sort(), [v, child].sort(), msg('claim'));
  for (const l of leases) {
    assert.ok(l.token.endsWith(`:${l.runId}`), msg('lease token ends with :runId'));
    assert.ok(ids.includes(l.token.slice(0, l.token.length - l.runId.length - 1)), msg('token from the id option'));
  }
  const lv = leases.find((l) => l.runId === v);
  const lc = leases.find((l) => l.runId === child);
  const hb = await c(queue.heartbeat(lv, { leaseMs: 5000, now: at(10) }));
  assert.equal(hb.expiresAt.getTime(), T + 5010, msg('heartbeat'));
  await c(queue.enqueue(v)); // mid-lease: ack must release, not delete
  await c(queue.ack(lv, { now: at(20) }));
  await c(queue.ack(lc, { now: at(20) }));
  const depth = await c(queue.depth(at(30)));
  assert.equal(depth.claimable, 1, msg('depth after ack: only the released run'));
  assert.equal(depth.leased, 0);
  const relet = await c(queue.claim({ limit: 10, leaseMs: 1000, now: at(40) }));
  assert.deepEqual(
    relet.map((l) => l.runId),
    [v],
    msg('released job is claimable again'),
  );
  await c(queue.ack(relet[0], { now: at(41) }));

  // -- run lifecycle ----------------------------------------------------------------------------
  await c(store.suspendRun(v, 'sleeping', { timers: [{ runId: v, fireAt: at(3000) }] }));
  assert.equal((await c(store.loadRunRow(v))).status, 'sleeping');
  const orphans = await c(store.orphanedRuns(100));
  assert.ok(orphans.includes(child), msg('child without job/timer is an orphan'));
  assert.ok(!orphans.includes(v), msg('sleeping run with a timer is not an orphan'));
  assert.ok(!orphans.includes(by), msg('bystander is not an orphan'));
  const err = { code: v, message: v, stack: v };
  await c(store.markTerminal(v, { status: 'failed', error: err }, { cancelTimers: [v] }));
  const failed = await c(store.loadRunRow(v));
  assert.equal(failed.status, 'failed');
  assert.deepEqual(failed.error, err, msg('terminal error round-trips'));
  assert.deepEqual(
    await c(timer.dueBatch({ now: new Date(FAR.getTime() - 1), limit: 10 })),
    [],
    msg('cancelTimers removed the timer'),
  );
  assert.deepEqual(await c(store.retryRun(v)), { retried: true }, msg('retryRun'));
  assert.deepEqual(await c(store.retryRun(v)), { retried: false });
  const retried = await c(store.loadRunRow(v));
  assert.equal(retried.status, 'pending');
  assert.equal(retried.error, undefined);
  await c(store.markTerminal(v, { status: 'done', output: { o: v } }));
  const done = await c(store.loadRunRow(v));
  assert.equal(done.status, 'done');
  assert.deepEqual(done.output, { o: v }, msg('terminal output round-trips'));
  const stats = await c(store.runStats());
  assert.equal(stats.done, 1);
  assert.equal(stats.pending, 2, msg('runStats: child + bystander pending'));

  // -- cron -------------------------------------------------------------------------------------
  await c(
    store.upsertCron({
      name: v,
      schedule: v,
      flowName: v,
      flowVersion: 3,
      input: { c: v },
      overlap: 'skip',
      nextRunAt: at(100),
    }),
  );
  const due = await c(store.dueCrons(at(100), 10));
  assert.deepEqual(
    due,
    [
      {
        name: v,
        schedule: v,
        flowName: v,
        flowVersion: 3,
        input: { c: v },
        overlap: 'skip',
        nextRunAt: at(100),
        lastRunAt: undefined,
      },
    ],
    msg('cron round-trips'),
  );
  assert.equal(await c(store.advanceCron(v, at(100), at(200), at(100))), true, msg('advanceCron'));
  assert.equal(await c(store.advanceCron(v, at(100), at(200), at(100))), false, msg('advanceCron loser'));
  assert.deepEqual(await c(store.dueCrons(at(150), 10)), []);

  // -- retention --------------------------------------------------------------------------------
  assert.equal(
    await c(store.deleteRunsOlderThan(new Date(FAR.getTime() + 1), 100)),
    1,
    msg('retention deletes the done run only'),
  );
  assert.equal(await c(store.loadRun(v)), undefined);

  // -- what is left -----------------------------------------------------------------------------
  assert.equal(await bystanderRows(sql, by), byBefore, msg('bystander rows untouched'));
  assert.deepEqual(
    await countAll(sql),
    { run: 2, step: 1, job: 1, timer: 1, signal: 1, cron: 2 },
    msg('exactly the expected rows remain (bystander + child + the cron)'),
  );
  return calls;
}
