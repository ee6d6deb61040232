// docs/contract.md §12.1 (Store, 30 checks) plus the §3 / §9 details of the store port.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EXECUTORS, setup, at, T, UUID_V4, RUN_ROW_KEYS, STEP_KEYS, RUN_STATUSES, wrapSql } from './fixture.mjs';

/** The group's tests, over the backend `ctx` holds (one executor). */
function suite(ctx) {
  const spec = (over = {}) => ({ name: 'flow', version: 1, input: { a: 1 }, ...over });
  const ckpt = (runId, cursorKey, result, over = {}) => ({
    runId,
    cursorKey,
    status: 'ok',
    result,
    attempts: 1,
    ...over,
  });

  // ---------------------------------------------------------------------------------------------
  // §12.1 checklist
  // ---------------------------------------------------------------------------------------------

  test('12.1.1 a new run starts pending, created, input intact, attempts 0', async () => {
    const input = { a: 1, nested: { b: [1, 2, 'x'] } };
    const res = await ctx.store.startRun(spec({ input }));
    assert.equal(res.created, true);
    assert.equal(res.status, 'pending');
    assert.equal(typeof res.runId, 'string');
    assert.match(res.runId, UUID_V4);
    const snap = await ctx.store.loadRun(res.runId);
    assert.ok(snap);
    assert.equal(snap.run.id, res.runId);
    assert.equal(snap.run.status, 'pending');
    assert.deepEqual(snap.run.input, input);
    assert.equal(snap.run.attempts, 0);
    assert.equal(snap.run.name, 'flow');
    assert.equal(snap.run.version, 1);
    assert.equal(snap.steps.size, 0);
    assert.deepEqual(snap.signals, []);
  });

  test('12.1.2 a 3-spec batch creates 3 runs aligned with the specs', async () => {
    const specs = [
      spec({ name: 'a', input: 1 }),
      spec({ name: 'b', input: { two: 2 } }),
      spec({ name: 'c', input: [3] }),
    ];
    const res = await ctx.store.startManyRuns(specs);
    assert.equal(res.length, 3);
    assert.equal(new Set(res.map((r) => r.runId)).size, 3);
    for (const r of res) {
      assert.equal(r.created, true);
      assert.equal(r.status, 'pending');
    }
    const rows = await ctx.store.loadRunRows(res.map((r) => r.runId));
    assert.deepEqual(
      rows.map((r) => r.name),
      ['a', 'b', 'c'],
    );
    assert.deepEqual(
      rows.map((r) => r.input),
      [1, { two: 2 }, [3]],
    );
    assert.equal(await ctx.count('run'), 3);
  });

  test('12.1.3 in a batch, an existing key returns that run while a new key creates', async () => {
    const first = await ctx.store.startRun(spec({ idempotencyKey: 'k1' }));
    const res = await ctx.store.startManyRuns([spec({ idempotencyKey: 'k1' }), spec({ idempotencyKey: 'k2' })]);
    assert.equal(res.length, 2);
    assert.deepEqual(res[0], { runId: first.runId, created: false, status: 'pending' });
    assert.equal(res[1].created, true);
    assert.notEqual(res[1].runId, first.runId);
    assert.equal(await ctx.count('run'), 2);
  });

  test('12.1.4 two batch entries with the same key collapse to one run; exactly one created', async () => {
    const res = await ctx.store.startManyRuns([
      spec({ idempotencyKey: 'dup', input: 1 }),
      spec({ idempotencyKey: 'dup', input: 2 }),
    ]);
    assert.equal(res.length, 2);
    assert.equal(res[0].runId, res[1].runId);
    assert.deepEqual(
      res.map((r) => r.created),
      [true, false],
    );
    assert.equal(await ctx.count('run'), 1);
    const row = await ctx.store.loadRunRow(res[0].runId);
    assert.equal(row.input, 1); // the first occurrence wins
  });

  test('12.1.5 repeating a key with the same (name, version) returns the same run, not created', async () => {
    const a = await ctx.store.startRun(spec({ idempotencyKey: 'same' }));
    const b = await ctx.store.startRun(spec({ idempotencyKey: 'same', input: { other: true } }));
    assert.equal(a.created, true);
    assert.deepEqual(b, { runId: a.runId, created: false, status: 'pending' });
    assert.equal(await ctx.count('run'), 1);
    assert.deepEqual((await ctx.store.loadRunRow(a.runId)).input, { a: 1 });
  });

  test('12.1.6 the same key under a different version creates a different run', async () => {
    const a = await ctx.store.startRun(spec({ idempotencyKey: 'kv', version: 1 }));
    const b = await ctx.store.startRun(spec({ idempotencyKey: 'kv', version: 2 }));
    assert.equal(b.created, true);
    assert.notEqual(a.runId, b.runId);
    // and under a different name as well
    const c = await ctx.store.startRun(spec({ idempotencyKey: 'kv', name: 'other' }));
    assert.equal(c.created, true);
    assert.equal(await ctx.count('run'), 3);
  });

  test('12.1.7 loading an unknown id yields undefined', async () => {
    assert.equal(await ctx.store.loadRun('no-such-run'), undefined);
  });

  test('12.1.8 loadRunRow returns the row without steps/signals; unknown => undefined', async () => {
    const id = await ctx.newRun();
    await ctx.store.checkpointStep(ckpt(id, 's0', 1));
    await ctx.store.postSignal(id, 'sig', 1);
    const row = await ctx.store.loadRunRow(id);
    assert.equal(row.id, id);
    assert.equal(row.status, 'pending');
    assert.equal('steps' in row, false);
    assert.equal('signals' in row, false);
    assert.equal(await ctx.store.loadRunRow('missing'), undefined);
  });

  test('12.1.9 loadRunRows([a, missing, b]) keeps length and order with an undefined hole; [] => []', async () => {
    const a = await ctx.newRun({ name: 'A' });
    const b = await ctx.newRun({ name: 'B' });
    const rows = await ctx.store.loadRunRows([a, 'missing', b]);
    assert.equal(rows.length, 3);
    assert.equal(rows[0].id, a);
    assert.equal(rows[0].name, 'A');
    assert.equal(rows[1], undefined);
    assert.equal(rows[2].id, b);
    assert.equal(rows[2].name, 'B');
    assert.deepEqual(await ctx.store.loadRunRows([]), []);
    // order follows the input, duplicates map to the same row
    const rev = await ctx.store.loadRunRows([b, a, b]);
    assert.deepEqual(
      rev.map((r) => r.id),
      [b, a, b],
    );
  });

  test('12.1.10 a join armed to 2 via a checkpoint outbox counts down 1 then 0; unknown parent => undefined', async () => {
    const parent = await ctx.newRun();
    await ctx.store.checkpointStep(ckpt(parent, 's0', 'armed'), { joinTarget: { runId: parent, count: 2 } });
    assert.equal(await ctx.store.arriveAtJoin(parent), 1);
    assert.equal(await ctx.store.arriveAtJoin(parent), 0);
    assert.equal(await ctx.store.arriveAtJoin('unknown-parent'), undefined);
  });

  test('12.1.11 a checkpointed step appears in the snapshot memo with status, result, attempts', async () => {
    const id = await ctx.newRun();
    const out = await ctx.store.checkpointStep(ckpt(id, 's0', { v: 1 }, { attempts: 3 }));
    assert.equal(out.status, 'ok');
    assert.deepEqual(out.result, { v: 1 });
    assert.equal(out.attempts, 3);
    const snap = await ctx.store.loadRun(id);
    assert.equal(snap.steps.size, 1);
    const step = snap.steps.get('s0');
    assert.ok(step);
    assert.equal(step.status, 'ok');
    assert.deepEqual(step.result, { v: 1 });
    assert.equal(step.attempts, 3);
    assert.equal(step.error, undefined);
    assert.equal(step.shape, undefined);
  });

  test('12.1.12 the shape string of a step round-trips', async () => {
    const id = await ctx.newRun();
    const out = await ctx.store.checkpointStep(ckpt(id, 's0', 1, { shape: 'step:fetch' }));
    assert.equal(out.shape, 'step:fetch');
    const snap = await ctx.store.loadRun(id);
    assert.equal(snap.steps.get('s0').shape, 'step:fetch');
  });

  test('12.1.13 a second checkpoint on the same key returns and keeps the first result', async () => {
    const id = await ctx.newRun();
    const first = await ctx.store.checkpointStep(ckpt(id, 's0', 'first', { attempts: 1, shape: 'a' }));
    const second = await ctx.store.checkpointStep(ckpt(id, 's0', 'second', { attempts: 2, shape: 'b' }));
    assert.deepEqual(second, first);
    assert.equal(second.result, 'first');
    assert.equal(second.attempts, 1);
    assert.equal(second.shape, 'a');
    const snap = await ctx.store.loadRun(id);
    assert.equal(snap.steps.size, 1);
    assert.equal(snap.steps.get('s0').result, 'first');
  });

  test('12.1.14 markRunning returns 1 then 2; the row shows attempts 2', async () => {
    const id = await ctx.newRun();
    assert.equal(await ctx.store.markRunning(id), 1);
    assert.equal(await ctx.store.markRunning(id), 2);
    const row = await ctx.store.loadRunRow(id);
    assert.equal(row.attempts, 2);
    assert.equal(row.status, 'running');
  });

  test('12.1.15 suspend retrying keeps attempts; sleeping resets to 0; next markRunning => 1', async () => {
    const id = await ctx.newRun();
    await ctx.store.markRunning(id);
    await ctx.store.markRunning(id);
    await ctx.store.suspendRun(id, 'retrying');
    let row = await ctx.store.loadRunRow(id);
    assert.equal(row.status, 'retrying');
    assert.equal(row.attempts, 2);
    await ctx.store.suspendRun(id, 'sleeping');
    row = await ctx.store.loadRunRow(id);
    assert.equal(row.status, 'sleeping');
    assert.equal(row.attempts, 0);
    assert.equal(await ctx.store.markRunning(id), 1);
  });

  test('12.1.16 markRunning on a canceled run leaves it canceled', async () => {
    const id = await ctx.newRun();
    await ctx.store.markRunning(id);
    await ctx.store.markTerminal(id, { status: 'canceled' });
    assert.equal(await ctx.store.markRunning(id), 1); // current attempts, nothing written
    const row = await ctx.store.loadRunRow(id);
    assert.equal(row.status, 'canceled');
    assert.equal(row.attempts, 1);
  });

  test('12.1.17 markTerminal(done) stores status and output', async () => {
    const id = await ctx.newRun();
    await ctx.store.markTerminal(id, { status: 'done', output: { total: 42, list: [1, 2] } });
    const row = await ctx.store.loadRunRow(id);
    assert.equal(row.status, 'done');
    assert.deepEqual(row.output, { total: 42, list: [1, 2] });
    assert.equal(row.error, undefined);
  });

  test('12.1.18 a done after canceled leaves the run canceled', async () => {
    const id = await ctx.newRun();
    await ctx.store.markTerminal(id, { status: 'canceled', error: { code: 'CANCELED', message: 'by user' } });
    await ctx.store.markTerminal(id, { status: 'done', output: 'late' });
    const row = await ctx.store.loadRunRow(id);
    assert.equal(row.status, 'canceled');
    assert.equal(row.output, undefined);
    assert.deepEqual(row.error, { code: 'CANCELED', message: 'by user' });
  });

  test('12.1.19 retention deletes an old terminal run with its step and signal, spares an old pending run', async () => {
    const old = await ctx.newRun({ createdAt: at(0) });
    const live = await ctx.newRun({ createdAt: at(0) });
    await ctx.store.checkpointStep(ckpt(old, 's0', 1));
    await ctx.store.postSignal(old, 'sig', 1); // also leaves a job row
    await ctx.timer.schedule(old, at(50));
    await ctx.store.markTerminal(old, { status: 'done', output: 1 });
    await ctx.store.checkpointStep(ckpt(live, 's0', 1));
    await ctx.store.postSignal(live, 'sig', 1);

    assert.equal(await ctx.store.deleteRunsOlderThan(at(1000), 100), 1);
    assert.equal(await ctx.store.loadRun(old), undefined);
    assert.equal(await ctx.count('step', 'run_id = ?', [old]), 0);
    assert.equal(await ctx.count('signal', 'run_id = ?', [old]), 0);
    assert.equal(await ctx.count('job', 'run_id = ?', [old]), 0);
    assert.equal(await ctx.count('timer', 'run_id = ?', [old]), 0);

    const snap = await ctx.store.loadRun(live);
    assert.ok(snap);
    assert.equal(snap.run.status, 'pending');
    assert.ok(snap.run.createdAt instanceof Date);
    assert.equal(snap.run.createdAt.getTime(), T);
    assert.equal(snap.steps.size, 1);
    assert.equal(snap.signals.length, 1);
    assert.equal(await ctx.count('job', 'run_id = ?', [live]), 1);
  });

  test('12.1.20 retention: a cut-off before all runs deletes 0; limit 1 sweeps return 1, 1, 0', async () => {
    const a = await ctx.newRun({ createdAt: at(100) });
    const b = await ctx.newRun({ createdAt: at(200) });
    await ctx.store.markTerminal(a, { status: 'done', output: null });
    await ctx.store.markTerminal(b, { status: 'failed', error: { code: 'E', message: 'x' } });
    assert.equal(await ctx.store.deleteRunsOlderThan(at(50), 10), 0);
    assert.equal(await ctx.store.deleteRunsOlderThan(at(100), 10), 0, 'cut-off is strict (created_at < before)');
    assert.equal(await ctx.store.deleteRunsOlderThan(at(1000), 1), 1);
    assert.equal(await ctx.store.loadRunRow(a), undefined, 'oldest inserted goes first');
    assert.ok(await ctx.store.loadRunRow(b));
    assert.equal(await ctx.store.deleteRunsOlderThan(at(1000), 1), 1);
    assert.equal(await ctx.store.deleteRunsOlderThan(at(1000), 1), 0);
    assert.equal(await ctx.count('run'), 0);
  });

  test('12.1.21 checkpointing against an unknown run rejects and writes no step', async () => {
    await assert.rejects(async () => ctx.store.checkpointStep(ckpt('ghost', 's0', 1)));
    assert.equal(await ctx.count('step'), 0);
  });

  test('12.1.22 an idempotent hit after the run finished reports the current status (done)', async () => {
    const a = await ctx.store.startRun(spec({ idempotencyKey: 'fin' }));
    await ctx.store.markTerminal(a.runId, { status: 'done', output: 7 });
    const b = await ctx.store.startRun(spec({ idempotencyKey: 'fin' }));
    assert.deepEqual(b, { runId: a.runId, created: false, status: 'done' });
  });

  test('12.1.23 tags round-trip as an equal array', async () => {
    const id = await ctx.newRun({ tags: ['alpha', 'beta', 'cron:x'] });
    const row = await ctx.store.loadRunRow(id);
    assert.ok(Array.isArray(row.tags));
    assert.deepEqual(row.tags, ['alpha', 'beta', 'cron:x']);
    const empty = await ctx.newRun({ tags: [] });
    assert.deepEqual((await ctx.store.loadRunRow(empty)).tags, []);
  });

  test('12.1.24 mutating a loaded snapshot does not change a re-load', async () => {
    const id = await ctx.newRun({ input: { a: 1 }, tags: ['t'] });
    await ctx.store.checkpointStep(ckpt(id, 's0', { v: 1 }));
    await ctx.store.postSignal(id, 'sig', { p: 1 });
    const snap = await ctx.store.loadRun(id);
    snap.run.input.a = 99;
    snap.run.tags.push('u');
    snap.run.createdAt.setTime(0);
    snap.steps.get('s0').result.v = 99;
    snap.signals[0].payload.p = 99;
    snap.signals.pop();
    snap.steps.clear();
    const again = await ctx.store.loadRun(id);
    assert.deepEqual(again.run.input, { a: 1 });
    assert.deepEqual(again.run.tags, ['t']);
    assert.notEqual(again.run.createdAt.getTime(), 0);
    assert.equal(again.steps.size, 1);
    assert.deepEqual(again.steps.get('s0').result, { v: 1 });
    assert.equal(again.signals.length, 1);
    assert.deepEqual(again.signals[0].payload, { p: 1 });
    assert.notEqual(again.steps, snap.steps);
  });

  test('12.1.25 mutating the caller input after startRun does not change the stored input', async () => {
    const input = { a: 1, list: [1] };
    const tags = ['x'];
    const { runId } = await ctx.store.startRun(spec({ input, tags }));
    input.a = 3;
    input.list.push(2);
    tags.push('y');
    const row = await ctx.store.loadRunRow(runId);
    assert.deepEqual(row.input, { a: 1, list: [1] });
    assert.deepEqual(row.tags, ['x']);
  });

  test('§9 inputs are snapshotted at call entry (mutation before the promise settles)', async () => {
    const input = { a: 1, list: [1] };
    const p = ctx.store.startRun(spec({ input }));
    input.a = 2;
    input.list.push(2);
    const { runId } = await p;
    assert.deepEqual((await ctx.store.loadRunRow(runId)).input, { a: 1, list: [1] });
  });

  test('12.1.26 listing is newest first; name, status and tag filters return exactly the expected runs', async () => {
    const r1 = await ctx.newRun({ name: 'alpha', tags: ['x'] });
    const r2 = await ctx.newRun({ name: 'beta', tags: ['y'] });
    const r3 = await ctx.newRun({ name: 'alpha', tags: ['x', 'y'] });
    await ctx.store.markTerminal(r2, { status: 'done', output: 1 });
    const ids = async (filter) => (await ctx.store.listRuns(filter, { limit: 10 })).runs.map((r) => r.id);
    assert.deepEqual(await ids({}), [r3, r2, r1]);
    assert.deepEqual(await ids({ name: 'alpha' }), [r3, r1]);
    assert.deepEqual(await ids({ status: 'done' }), [r2]);
    assert.deepEqual(await ids({ status: 'pending' }), [r3, r1]);
    assert.deepEqual(await ids({ status: ['pending', 'done'] }), [r3, r2, r1]);
    assert.deepEqual(await ids({ tag: 'y' }), [r3, r2]);
    assert.deepEqual(await ids({ tag: 'x', status: 'pending', name: 'alpha' }), [r3, r1]);
    assert.deepEqual(await ids({ tag: 'z' }), []);
    const page = await ctx.store.listRuns({}, { limit: 10 });
    assert.equal(page.cursor, undefined);
    assert.equal(page.runs[0].status, 'pending');
    assert.ok(page.runs[0].createdAt instanceof Date);
  });

  test('12.1.27 paging 5 runs by 2: cursor on first page, 2 runs on the second, no overlap', async () => {
    const all = [];
    for (let i = 0; i < 5; i++) all.push(await ctx.newRun({ input: i }));
    const p1 = await ctx.store.listRuns({}, { limit: 2 });
    assert.equal(p1.runs.length, 2);
    assert.equal(typeof p1.cursor, 'string');
    assert.match(p1.cursor, /^\d+$/);
    const p2 = await ctx.store.listRuns({}, { limit: 2, cursor: p1.cursor });
    assert.equal(p2.runs.length, 2);
    assert.equal(typeof p2.cursor, 'string');
    const p3 = await ctx.store.listRuns({}, { limit: 2, cursor: p2.cursor });
    assert.equal(p3.runs.length, 1);
    assert.equal(p3.cursor, undefined);
    const seen = [...p1.runs, ...p2.runs, ...p3.runs].map((r) => r.id);
    assert.equal(new Set(seen).size, 5);
    assert.deepEqual(seen, [...all].reverse());
  });

  test('12.1.28 childrenOf returns exactly the two runs started with that parent id', async () => {
    const parent = await ctx.newRun();
    const other = await ctx.newRun();
    const c1 = await ctx.newRun({ parentRunId: parent, parentCursorKey: 's0', depth: 1 });
    const c2 = await ctx.newRun({ parentRunId: parent, parentCursorKey: 's1', depth: 1 });
    await ctx.newRun({ parentRunId: other });
    await ctx.newRun({ parentRunId: c1, depth: 2 }); // grandchild: not a direct child
    const kids = await ctx.store.childrenOf(parent);
    assert.deepEqual(kids.map((r) => r.id).sort(), [c1, c2].sort());
    for (const k of kids) assert.equal(k.parentRunId, parent);
    assert.deepEqual(await ctx.store.childrenOf('nobody'), []);
  });

  test('12.1.29 retryRun on a failed run: retried, pending, error cleared, memo kept; again => false', async () => {
    const id = await ctx.newRun();
    await ctx.store.checkpointStep(ckpt(id, 's0', 'kept'));
    await ctx.store.markTerminal(id, { status: 'failed', error: { code: 'BOOM', message: 'boom' } });
    assert.deepEqual(await ctx.store.retryRun(id), { retried: true });
    const snap = await ctx.store.loadRun(id);
    assert.equal(snap.run.status, 'pending');
    assert.equal(snap.run.error, undefined);
    assert.equal(snap.steps.size, 1);
    assert.equal(snap.steps.get('s0').result, 'kept');
    assert.deepEqual(await ctx.store.retryRun(id), { retried: false });
    // enqueued in the same unit: claimable now
    assert.deepEqual(await ctx.claimIds(at(0)), [id]);
  });

  test('12.1.30 runStats counts pending 1, done 1, failed 0', async () => {
    await ctx.newRun();
    const d = await ctx.newRun();
    await ctx.store.markTerminal(d, { status: 'done', output: 1 });
    const stats = await ctx.store.runStats();
    assert.equal(stats.pending, 1);
    assert.equal(stats.done, 1);
    assert.equal(stats.failed, 0);
  });

  // ---------------------------------------------------------------------------------------------
  // §3 / §9 details
  // ---------------------------------------------------------------------------------------------

  test('§9 a RunRow carries all 14 keys; absent ones are undefined (not null)', async () => {
    const id = await ctx.newRun({ input: { a: 1 } });
    for (const row of [
      await ctx.store.loadRunRow(id),
      (await ctx.store.loadRun(id)).run,
      (await ctx.store.loadRunRows([id]))[0],
      (await ctx.store.listRuns({}, { limit: 1 })).runs[0],
    ]) {
      assert.deepEqual(Object.keys(row).sort(), [...RUN_ROW_KEYS].sort());
      for (const k of ['output', 'error', 'idempotencyKey', 'tags', 'parentRunId', 'parentCursorKey']) {
        assert.ok(k in row, `${k} present`);
        assert.equal(row[k], undefined, `${k} is undefined`);
      }
      assert.equal(row.depth, 0);
      assert.equal(typeof row.version, 'number');
      assert.equal(typeof row.attempts, 'number');
      assert.equal(typeof row.depth, 'number');
      assert.ok(row.createdAt instanceof Date);
    }
  });

  test('§3.1 all spec fields round-trip (key, tags, parent, cursor, depth, createdAt)', async () => {
    const parent = await ctx.newRun();
    const res = await ctx.store.startRun({
      name: 'full',
      version: 7,
      input: { deep: { x: [true, null] } },
      idempotencyKey: 'idem-1',
      tags: ['a', 'b'],
      parentRunId: parent,
      parentCursorKey: 's3',
      depth: 3,
      createdAt: at(12345),
    });
    const row = await ctx.store.loadRunRow(res.runId);
    assert.deepEqual(
      { ...row },
      {
        id: res.runId,
        name: 'full',
        version: 7,
        status: 'pending',
        input: { deep: { x: [true, null] } },
        attempts: 0,
        output: undefined,
        error: undefined,
        idempotencyKey: 'idem-1',
        tags: ['a', 'b'],
        parentRunId: parent,
        parentCursorKey: 's3',
        depth: 3,
        createdAt: new Date(T + 12345),
      },
    );
  });

  test('§3.1 createdAt defaults to the wall clock at insert', async () => {
    const before = Date.now();
    const id = await ctx.newRun();
    const after = Date.now();
    const row = await ctx.store.loadRunRow(id);
    assert.ok(
      row.createdAt.getTime() >= before - 5 && row.createdAt.getTime() <= after + 5,
      `${row.createdAt.toISOString()} within [${before}, ${after}]`,
    );
  });

  test('§9 Dates and the steps Map are fresh per call; steps is a real Map', async () => {
    const id = await ctx.newRun();
    await ctx.store.checkpointStep(ckpt(id, 's0', 1));
    const a = await ctx.store.loadRun(id);
    const b = await ctx.store.loadRun(id);
    assert.ok(a.steps instanceof Map);
    assert.notEqual(a.steps, b.steps);
    assert.notEqual(a.run.createdAt, b.run.createdAt);
    assert.equal(a.run.createdAt.getTime(), b.run.createdAt.getTime());
    assert.notEqual(a.signals, b.signals);
    assert.deepEqual(Object.keys(a.steps.get('s0')).sort(), [...STEP_KEYS].sort());
  });

  test('§9 JSON fidelity equals JSON.stringify -> JSON.parse', async () => {
    const input = {
      nan: NaN,
      inf: Infinity,
      ninf: -Infinity,
      negZero: -0,
      date: new Date(T),
      u: undefined,
      nested: { u: undefined, k: 1, arr: [undefined, 1, () => 1, NaN] },
      map: new Map([[1, 2]]),
      set: new Set([1]),
      str: 'ünïcødé ✓ 😀 "quoted" \\ back \n\t',
      n: null,
      big: 1.5e300,
      tiny: -2.5e-300,
    };
    const id = await ctx.newRun({ input });
    const row = await ctx.store.loadRunRow(id);
    const expected = JSON.parse(JSON.stringify(input));
    assert.deepEqual(row.input, expected);
    assert.equal(row.input.nan, null);
    assert.equal(row.input.inf, null);
    assert.ok(Object.is(row.input.negZero, 0), '-0 becomes 0');
    assert.equal(row.input.date, '2030-01-01T00:00:00.000Z');
    assert.equal('u' in row.input, false);
    assert.deepEqual(row.input.nested, { k: 1, arr: [null, 1, null, null] });
    assert.deepEqual(row.input.map, {});
    assert.deepEqual(row.input.set, {});
    // a top-level -0 and NaN too
    const z = await ctx.newRun({ input: -0 });
    assert.ok(Object.is((await ctx.store.loadRunRow(z)).input, 0));
    const n = await ctx.newRun({ input: NaN });
    assert.equal((await ctx.store.loadRunRow(n)).input, null);
  });

  test('§1.7 null input vs undefined input (JSON "null" vs SQL NULL)', async () => {
    const nul = await ctx.newRun({ input: null });
    const und = await ctx.newRun({ input: undefined });
    const a = await ctx.store.loadRunRow(nul);
    const b = await ctx.store.loadRunRow(und);
    assert.equal(a.input, null);
    assert.equal(b.input, undefined);
    assert.ok('input' in b);
    const raw = await ctx.rows(`SELECT id, input FROM ${ctx.t.run} ORDER BY seq`);
    assert.equal(raw[0].input, 'null');
    assert.equal(raw[1].input, null);
    // the same for step results
    await ctx.store.checkpointStep(ckpt(nul, 'n', null));
    await ctx.store.checkpointStep(ckpt(nul, 'u', undefined));
    const snap = await ctx.store.loadRun(nul);
    assert.equal(snap.steps.get('n').result, null);
    assert.equal(snap.steps.get('u').result, undefined);
    assert.ok('result' in snap.steps.get('u'));
  });

  test('§9 a BigInt in the input rejects and stores nothing', async () => {
    await assert.rejects(async () => ctx.store.startRun(spec({ input: { n: 10n } })));
    assert.equal(await ctx.count('run'), 0);
  });

  test('§9 errors surface as promise rejections, not synchronous throws', async () => {
    let p;
    assert.doesNotThrow(() => {
      p = ctx.store.markRunning('nope');
    });
    assert.ok(p && typeof p.then === 'function');
    await assert.rejects(p);
    let q;
    assert.doesNotThrow(() => {
      q = ctx.store.checkpointStep(ckpt('nope', 's0', 1));
    });
    await assert.rejects(q);
  });

  test('§3.8 markRunning on an unknown run rejects', async () => {
    await assert.rejects(async () => ctx.store.markRunning('missing-run'));
    assert.equal(await ctx.count('run'), 0);
  });

  test('§13.5 idempotency keys compare case-insensitively', async () => {
    const a = await ctx.store.startRun(spec({ idempotencyKey: 'Key' }));
    const b = await ctx.store.startRun(spec({ idempotencyKey: 'key' }));
    assert.equal(b.created, false);
    assert.equal(b.runId, a.runId);
    assert.equal((await ctx.store.loadRunRow(a.runId)).idempotencyKey, 'Key');
  });

  test('§2.2 an empty-string idempotency key counts as absent', async () => {
    const a = await ctx.store.startRun(spec({ idempotencyKey: '' }));
    const b = await ctx.store.startRun(spec({ idempotencyKey: '' }));
    assert.equal(a.created, true);
    assert.equal(b.created, true);
    assert.notEqual(a.runId, b.runId);
    assert.equal((await ctx.store.loadRunRow(a.runId)).idempotencyKey, undefined);
    const raw = await ctx.rows(`SELECT idempotency_key FROM ${ctx.t.run}`);
    assert.deepEqual(
      raw.map((r) => r.idempotency_key),
      [null, null],
    );
  });

  test('§3.2 startManyRuns([]) => []', async () => {
    assert.deepEqual(await ctx.store.startManyRuns([]), []);
  });

  test('§3.2 startManyRuns: key-less runs go as one multi-row INSERT, rows as startRun one by one', async () => {
    const specs = [];
    for (let n = 0; n < 30; n++) {
      const key = n % 10 === 3 ? `key-${n}` : n % 10 === 7 ? '' : undefined;
      specs.push(
        spec({
          name: `f${n % 4}`,
          version: 1 + (n % 2),
          input: n % 5 === 0 ? null : { n, s: 'é\\"' },
          idempotencyKey: key,
          tags: n % 3 === 0 ? ['a', `t${n}`] : undefined,
          createdAt: at(n),
        }),
      );
    }
    specs.push(spec({ name: 'f3', version: 2, idempotencyKey: 'key-3', input: 'second' })); // an existing key in the same batch
    const log = [];
    const logged = ctx.makeBackend(
      undefined,
      wrapSql(ctx.executor === 'wrapped' ? wrapSql(ctx.sql) : ctx.sql, { log }),
    );
    const many = await logged.store.startManyRuns(specs);
    const inserts = log.filter((l) => /^\s*INSERT INTO/i.test(l.text));
    if (ctx.executor === 'wrapped') {
      // 30 runs: 3 keyed (INSERT IGNORE each), 27 key-less in 4 runs of neighbours between them
      assert.equal(inserts.length, 4, inserts.map((l) => l.text.slice(0, 80)).join('\n'));
    }
    assert.equal(many.length, specs.length);
    assert.deepEqual(many[specs.length - 1], { runId: many[3].runId, created: false, status: 'pending' });
    assert.ok(many.slice(0, 30).every((r) => r.created && r.status === 'pending'));
    const cols =
      'name, version, status, input, idempotency_key, tags, parent_run_id, parent_cursor_key, depth, attempts, created_at';
    const read = (ids) =>
      Promise.all(ids.map(async (id) => (await ctx.rows(`SELECT ${cols} FROM ${ctx.t.run} WHERE id = ?`, [id]))[0]));
    const batched = await read(many.slice(0, 30).map((r) => r.runId));
    for (const name of Object.values(ctx.t)) await ctx.sql.query(`TRUNCATE TABLE ${name}`);
    const single = [];
    for (const sp of specs.slice(0, 30)) single.push((await ctx.store.startRun(sp)).runId);
    assert.deepEqual(batched, await read(single));
  });

  test('§3.2 startManyRuns is all-or-none', async (t) => {
    const mode = (await ctx.rows('SELECT @@SESSION.sql_mode AS m'))[0].m;
    if (!/STRICT_(TRANS|ALL)_TABLES/.test(String(mode))) return t.skip(`server not in strict mode (${mode})`);
    // a key-less spec with an over-long name fails its plain INSERT in strict mode
    await assert.rejects(async () =>
      ctx.store.startManyRuns([spec({ name: 'ok', idempotencyKey: 'kk' }), spec({ name: 'x'.repeat(300) })]),
    );
    assert.equal(await ctx.count('run'), 0);
  });

  test('§3.5 loadRunRows holes are undefined, never null', async () => {
    const a = await ctx.newRun();
    const rows = await ctx.store.loadRunRows(['m1', a, 'm2']);
    assert.equal(rows.length, 3);
    assert.strictEqual(rows[0], undefined);
    assert.strictEqual(rows[2], undefined);
    assert.equal(rows[1].id, a);
  });

  test('§3.6 arriveAtJoin has no floor: an un-armed parent goes negative', async () => {
    const p = await ctx.newRun();
    assert.equal(await ctx.store.arriveAtJoin(p), -1);
    assert.equal(await ctx.store.arriveAtJoin(p), -2);
    const raw = await ctx.rows(`SELECT join_remaining FROM ${ctx.t.run} WHERE id = ?`, [p]);
    assert.equal(Number(raw[0].join_remaining), -2);
  });

  test('§3.3 loadRun of a missing run is undefined even when steps/signals exist for its id', async () => {
    await ctx.store.postSignal('ghost', 'sig', 1);
    assert.equal(await ctx.count('signal', 'run_id = ?', ['ghost']), 1);
    assert.equal(await ctx.store.loadRun('ghost'), undefined);
  });

  test('§3.3 signals are delivered in order with exactly id, name, payload', async () => {
    const id = await ctx.newRun();
    await ctx.store.postSignal(id, 'a', { n: 1 });
    await ctx.store.postSignal(id, 'b', null);
    await ctx.store.postSignal(id, 'c', undefined);
    const snap = await ctx.store.loadRun(id);
    assert.deepEqual(
      snap.signals.map((s) => s.name),
      ['a', 'b', 'c'],
    );
    for (const s of snap.signals) {
      assert.deepEqual(Object.keys(s).sort(), ['id', 'name', 'payload']);
      assert.match(s.id, UUID_V4);
    }
    assert.deepEqual(snap.signals[0].payload, { n: 1 });
    assert.equal(snap.signals[1].payload, null);
    assert.equal(snap.signals[2].payload, undefined);
  });

  test('§3.9 a terminal run can still receive a step (no status check)', async () => {
    const id = await ctx.newRun();
    await ctx.store.markTerminal(id, { status: 'done', output: 1 });
    const out = await ctx.store.checkpointStep(ckpt(id, 's9', 'late'));
    assert.equal(out.result, 'late');
    assert.equal((await ctx.store.loadRun(id)).steps.size, 1);
  });

  test('§3.9 step errors round-trip as plain objects; StepOutcome carries all 5 keys', async () => {
    const id = await ctx.newRun();
    const err = { code: 'E_STEP', message: 'bad', stack: 'at x' };
    const out = await ctx.store.checkpointStep({ runId: id, cursorKey: 'e', status: 'ok', error: err, attempts: 2 });
    assert.deepEqual(Object.keys(out).sort(), [...STEP_KEYS].sort());
    assert.deepEqual(out.error, err);
    assert.equal(out.result, undefined);
    assert.equal(out.shape, undefined);
  });

  test('§3.10 suspendRun on unknown or terminal runs is a silent no-op', async () => {
    await ctx.store.suspendRun('ghost', 'sleeping');
    const id = await ctx.newRun();
    await ctx.store.markTerminal(id, { status: 'failed', error: { code: 'E', message: 'm' } });
    await ctx.store.suspendRun(id, 'retrying');
    const row = await ctx.store.loadRunRow(id);
    assert.equal(row.status, 'failed');
    assert.equal(await ctx.count('run'), 1);
  });

  test('§3.10 every suspend status is stored; only retrying keeps attempts', async () => {
    for (const status of ['sleeping', 'awaiting_signal', 'awaiting_child', 'retrying']) {
      const id = await ctx.newRun();
      await ctx.store.markRunning(id);
      await ctx.store.suspendRun(id, status);
      const row = await ctx.store.loadRunRow(id);
      assert.equal(row.status, status);
      assert.equal(row.attempts, status === 'retrying' ? 1 : 0, status);
    }
  });

  test('§3.11 markTerminal: failed stores the error, done/canceled quirks, attempts untouched', async () => {
    const id = await ctx.newRun();
    await ctx.store.markRunning(id);
    await ctx.store.markTerminal(id, { status: 'done', output: 'ok' });
    // done is NOT sticky: failed overwrites it and clears the output
    await ctx.store.markTerminal(id, { status: 'failed', error: { code: 'F', message: 'later' } });
    let row = await ctx.store.loadRunRow(id);
    assert.equal(row.status, 'failed');
    assert.equal(row.output, undefined);
    assert.deepEqual(row.error, { code: 'F', message: 'later' });
    assert.equal(row.attempts, 1);
    // canceled without an error: error becomes undefined
    await ctx.store.markTerminal(id, { status: 'canceled' });
    row = await ctx.store.loadRunRow(id);
    assert.equal(row.status, 'canceled');
    assert.equal(row.error, undefined);
    assert.equal(row.attempts, 1);
    // unknown run: silent
    await ctx.store.markTerminal('ghost', { status: 'done', output: 1 });
    assert.equal(await ctx.count('run'), 1);
  });

  test('§3.12 listRuns orders by insertion (seq), not createdAt', async () => {
    const a = await ctx.newRun({ createdAt: at(3000) });
    const b = await ctx.newRun({ createdAt: at(1000) });
    const c = await ctx.newRun({ createdAt: at(2000) });
    const page = await ctx.store.listRuns({}, { limit: 10 });
    assert.deepEqual(
      page.runs.map((r) => r.id),
      [c, b, a],
    );
  });

  test('§3.12 a page that ends the data exactly still has a cursor; the next page is empty without one', async () => {
    for (let i = 0; i < 4; i++) await ctx.newRun();
    const p1 = await ctx.store.listRuns({}, { limit: 2 });
    const p2 = await ctx.store.listRuns({}, { limit: 2, cursor: p1.cursor });
    assert.equal(p2.runs.length, 2);
    assert.equal(typeof p2.cursor, 'string');
    const p3 = await ctx.store.listRuns({}, { limit: 2, cursor: p2.cursor });
    assert.deepEqual(p3.runs, []);
    assert.equal(p3.cursor, undefined);
    assert.ok('cursor' in p3 || p3.cursor === undefined);
  });

  test('§3.12 limit 0 => no runs and no cursor', async () => {
    await ctx.newRun();
    const page = await ctx.store.listRuns({}, { limit: 0 });
    assert.deepEqual(page.runs, []);
    assert.equal(page.cursor, undefined);
  });

  test('§3.12 an empty status array rejects (quirk)', async () => {
    await ctx.newRun();
    await assert.rejects(async () => ctx.store.listRuns({ status: [] }, { limit: 10 }));
  });

  test('§3.12 cursor filters combine with predicates; name is case-insensitive, tag case-sensitive', async () => {
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await ctx.newRun({ name: i % 2 ? 'odd' : 'even', tags: ['Tag'] }));
    const p1 = await ctx.store.listRuns({ name: 'EVEN' }, { limit: 2 });
    assert.deepEqual(
      p1.runs.map((r) => r.id),
      [ids[4], ids[2]],
    );
    const p2 = await ctx.store.listRuns({ name: 'even' }, { limit: 2, cursor: p1.cursor });
    assert.deepEqual(
      p2.runs.map((r) => r.id),
      [ids[0]],
    );
    assert.equal(p2.cursor, undefined);
    assert.equal((await ctx.store.listRuns({ tag: 'tag' }, { limit: 10 })).runs.length, 0);
    assert.equal((await ctx.store.listRuns({ tag: 'Tag' }, { limit: 10 })).runs.length, 5);
    // runs without tags never match a tag filter
    await ctx.newRun({ name: 'even' });
    assert.equal((await ctx.store.listRuns({ tag: 'Tag', name: 'even' }, { limit: 10 })).runs.length, 3);
  });

  test('§3.14 runStats has all nine statuses as numbers', async () => {
    const empty = await ctx.store.runStats();
    assert.deepEqual(empty, Object.fromEntries(RUN_STATUSES.map((s) => [s, 0])));
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push(await ctx.newRun());
    await ctx.store.markRunning(ids[0]);
    await ctx.store.suspendRun(ids[1], 'awaiting_signal');
    await ctx.store.markTerminal(ids[2], { status: 'canceled' });
    const stats = await ctx.store.runStats();
    assert.deepEqual(stats, {
      pending: 1,
      running: 1,
      sleeping: 0,
      awaiting_signal: 1,
      awaiting_child: 0,
      retrying: 0,
      done: 0,
      failed: 0,
      canceled: 1,
    });
  });

  test('§3.16 deleteRunsOlderThan deletes step, signal, job and timer rows of every deleted run; never live runs', async () => {
    const dead = [];
    for (let i = 0; i < 3; i++) {
      const id = await ctx.newRun({ createdAt: at(i) });
      await ctx.store.checkpointStep(ckpt(id, 's0', i));
      await ctx.store.checkpointStep(ckpt(id, 's1', i));
      await ctx.store.postSignal(id, 'x', i);
      await ctx.timer.schedule(id, at(10_000));
      await ctx.store.markTerminal(
        id,
        i === 0
          ? { status: 'done', output: 1 }
          : i === 1
            ? { status: 'failed', error: { code: 'E', message: 'm' } }
            : { status: 'canceled' },
      );
      dead.push(id);
    }
    const statuses = ['running', 'sleeping', 'awaiting_signal', 'awaiting_child', 'retrying'];
    const alive = [await ctx.newRun({ createdAt: at(0) })];
    for (const s of statuses) {
      const id = await ctx.newRun({ createdAt: at(0) });
      if (s === 'running') await ctx.store.markRunning(id);
      else await ctx.store.suspendRun(id, s);
      await ctx.queue.enqueue(id);
      alive.push(id);
    }
    assert.equal(await ctx.store.deleteRunsOlderThan(at(1_000_000), 100), 3);
    for (const table of ['run', 'step', 'signal', 'job', 'timer']) {
      const col = table === 'run' ? 'id' : 'run_id';
      assert.equal(await ctx.count(table, `${col} IN (?,?,?)`, dead), 0, table);
    }
    assert.equal(await ctx.count('run'), alive.length);
    assert.equal(await ctx.count('job'), alive.length - 1);
    assert.equal(await ctx.store.deleteRunsOlderThan(at(1_000_000), 100), 0);
  });

  test('§3.16 a deleted parent leaves surviving children with a dangling parent id', async () => {
    const parent = await ctx.newRun({ createdAt: at(0) });
    const child = await ctx.newRun({ createdAt: at(0), parentRunId: parent });
    await ctx.store.markTerminal(parent, { status: 'done', output: 1 });
    assert.equal(await ctx.store.deleteRunsOlderThan(at(10), 10), 1);
    const row = await ctx.store.loadRunRow(child);
    assert.equal(row.parentRunId, parent);
  });

  test('§3.17 retryRun keeps attempts (quirk) and only applies to failed runs', async () => {
    const id = await ctx.newRun();
    await ctx.store.markRunning(id);
    await ctx.store.markRunning(id);
    await ctx.store.markTerminal(id, { status: 'failed', error: { code: 'E', message: 'm' } });
    assert.deepEqual(await ctx.store.retryRun(id), { retried: true });
    assert.equal((await ctx.store.loadRunRow(id)).attempts, 2);
    const job = await ctx.rows(`SELECT run_at, priority, version FROM ${ctx.t.job} WHERE run_id = ?`, [id]);
    assert.equal(job.length, 1);
    assert.equal(Number(job[0].run_at), 0);
    assert.equal(Number(job[0].priority), 0);
    for (const s of ['pending', 'done', 'canceled']) {
      const other = await ctx.newRun();
      if (s === 'done') await ctx.store.markTerminal(other, { status: 'done', output: 1 });
      if (s === 'canceled') await ctx.store.markTerminal(other, { status: 'canceled' });
      assert.deepEqual(await ctx.store.retryRun(other), { retried: false }, s);
      assert.equal(await ctx.count('job', 'run_id = ?', [other]), 0);
    }
    assert.deepEqual(await ctx.store.retryRun('ghost'), { retried: false });
  });
}

for (const executor of EXECUTORS) describe(executor, () => suite(setup('conf_store', { executor })));
