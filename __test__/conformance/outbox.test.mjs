// docs/contract.md §12.5 (Outbox, 8 checks) plus §7 order/semantics and the §3.10 / §3.11 guards.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EXECUTORS, setup, at, T } from './fixture.mjs';

/** The group's tests, over the backend `ctx` holds (one executor). */
function suite(ctx) {
  const ckpt = (runId, cursorKey, result = null) => ({ runId, cursorKey, status: 'ok', result, attempts: 1 });
  const childSpec = (parent, over = {}) => ({
    name: 'child',
    version: 1,
    input: { n: 5 },
    parentRunId: parent,
    parentCursorKey: 's0',
    depth: 1,
    ...over,
  });
  const job = async (runId) =>
    (await ctx.rows(`SELECT run_at, priority, version, lease_token FROM ${ctx.t.job} WHERE run_id = ?`, [runId]))[0];
  const timerAt = async (runId) => {
    const r = await ctx.rows(`SELECT fire_at FROM ${ctx.t.timer} WHERE run_id = ?`, [runId]);
    return r[0] ? Number(r[0].fire_at) : undefined;
  };

  // ---------------------------------------------------------------------------------------------
  // §12.5 checklist
  // ---------------------------------------------------------------------------------------------

  test('12.5.1 checkpoint with enqueue: [self] => the run is claimable', async () => {
    const id = await ctx.newRun();
    assert.deepEqual(await ctx.claimIds(at(0)), []);
    await ctx.store.checkpointStep(ckpt(id, 's0', 1), { enqueue: [{ runId: id }] });
    assert.deepEqual(await ctx.claimIds(at(0)), [id]);
  });

  test('12.5.2 checkpoint with a spawn => the child exists with its input and is claimable', async () => {
    const parent = await ctx.newRun();
    await ctx.store.checkpointStep(ckpt(parent, 's0', 'child-1'), {
      spawn: [{ runId: 'child-1', spec: childSpec(parent, { createdAt: at(42) }) }],
    });
    const row = await ctx.store.loadRunRow('child-1');
    assert.ok(row);
    assert.equal(row.status, 'pending');
    assert.deepEqual(row.input, { n: 5 });
    assert.equal(row.name, 'child');
    assert.equal(row.parentRunId, parent);
    assert.equal(row.parentCursorKey, 's0');
    assert.equal(row.depth, 1);
    assert.equal(row.attempts, 0);
    assert.equal(row.createdAt.getTime(), T + 42);
    assert.deepEqual(await ctx.claimIds(at(0)), ['child-1']);
  });

  test('12.5.3 replaying the spawning checkpoint does not re-apply the outbox; one lease for the child', async () => {
    const parent = await ctx.newRun();
    const fx = { spawn: [{ runId: 'child-1', spec: childSpec(parent) }] };
    await ctx.store.checkpointStep(ckpt(parent, 's0', 'child-1'), fx);
    const again = await ctx.store.checkpointStep(ckpt(parent, 's0', 'child-1'), fx);
    assert.equal(again.result, 'child-1');
    const leases = await ctx.queue.claim({ limit: 10, leaseMs: 1000, now: at(0) });
    assert.deepEqual(
      leases.map((l) => l.runId),
      ['child-1'],
    );
    assert.equal(leases[0].version, 1, 'not re-enqueued by the replay');
    // a replay carrying a different child id does not create it either
    await ctx.store.checkpointStep(ckpt(parent, 's0', 'child-2'), {
      spawn: [{ runId: 'child-2', spec: childSpec(parent) }],
    });
    assert.equal(await ctx.store.loadRunRow('child-2'), undefined);
    assert.equal(await ctx.count('run'), 2);
    assert.equal(await ctx.count('job'), 1);
  });

  test('12.5.4 suspendRun(sleeping) with a timer at T+5000: sleeping; not due at T+4999, due at T+5000', async () => {
    const id = await ctx.newRun();
    await ctx.store.markRunning(id);
    await ctx.store.suspendRun(id, 'sleeping', { timers: [{ runId: id, fireAt: at(5000) }] });
    assert.equal((await ctx.store.loadRunRow(id)).status, 'sleeping');
    assert.deepEqual(await ctx.timer.dueBatch({ now: at(4999), limit: 10 }), []);
    assert.deepEqual(await ctx.timer.dueBatch({ now: at(5000), limit: 10 }), [id]);
  });

  test('12.5.5 suspendRun on a done run => stays done and no timer exists', async () => {
    const id = await ctx.newRun();
    await ctx.store.markTerminal(id, { status: 'done', output: 1 });
    await ctx.store.suspendRun(id, 'sleeping', { timers: [{ runId: id, fireAt: at(5000) }], enqueue: [{ runId: id }] });
    const row = await ctx.store.loadRunRow(id);
    assert.equal(row.status, 'done');
    assert.equal(row.output, 1);
    assert.equal(await ctx.count('timer'), 0);
    assert.equal(await ctx.count('job'), 0);
  });

  test('12.5.6 markTerminal of a child with enqueue: [parent] => parent claimable', async () => {
    const parent = await ctx.newRun();
    const child = await ctx.newRun({ parentRunId: parent });
    await ctx.store.markTerminal(child, { status: 'done', output: 50 }, { enqueue: [{ runId: parent }] });
    assert.deepEqual(await ctx.claimIds(at(0)), [parent]);
    assert.equal((await ctx.store.loadRunRow(child)).status, 'done');
  });

  test('12.5.7 markTerminal with cancelTimers: [self] removes a pending timer', async () => {
    const id = await ctx.newRun();
    const other = await ctx.newRun();
    await ctx.timer.schedule(id, at(1000));
    await ctx.timer.schedule(other, at(1000));
    await ctx.store.markTerminal(id, { status: 'canceled' }, { cancelTimers: [id] });
    assert.equal(await timerAt(id), undefined);
    assert.deepEqual(await ctx.timer.dueBatch({ now: at(10_000), limit: 10 }), [other]);
  });

  test('12.5.8 markTerminal(done) with enqueue on a canceled run => stays canceled, nothing claimable', async () => {
    const id = await ctx.newRun();
    await ctx.store.markTerminal(id, { status: 'canceled' });
    await ctx.store.markTerminal(id, { status: 'done', output: 1 }, { enqueue: [{ runId: id }] });
    assert.equal((await ctx.store.loadRunRow(id)).status, 'canceled');
    assert.deepEqual(await ctx.claimIds(at(1_000_000)), []);
    assert.equal(await ctx.count('job'), 0);
  });

  // ---------------------------------------------------------------------------------------------
  // §7 order and semantics
  // ---------------------------------------------------------------------------------------------

  test('§7 a spawn enqueues even when its insert is ignored (child already exists)', async () => {
    const parent = await ctx.newRun();
    await ctx.store.checkpointStep(ckpt(parent, 's0'), {
      spawn: [{ runId: 'c1', spec: childSpec(parent, { input: 'first' }) }],
    });
    const [l] = await ctx.queue.claim({ limit: 10, leaseMs: 1000, now: at(0) });
    await ctx.queue.ack(l, { now: at(1) });
    assert.equal(await ctx.count('job'), 0);
    await ctx.store.checkpointStep(ckpt(parent, 's1'), {
      spawn: [{ runId: 'c1', spec: childSpec(parent, { input: 'second', name: 'other' }) }],
    });
    const row = await ctx.store.loadRunRow('c1');
    assert.equal(row.input, 'first', 'existing run untouched');
    assert.equal(row.name, 'child');
    assert.equal(await ctx.count('run'), 2);
    assert.deepEqual(await ctx.claimIds(at(2)), ['c1']);
  });

  test('§7 spawn enqueue options (runAt, priority) apply; spawn defaults depth 0 and key NULL', async () => {
    const parent = await ctx.newRun();
    await ctx.store.checkpointStep(ckpt(parent, 's0'), {
      spawn: [
        { runId: 'late', spec: { name: 'c', version: 1, input: 1 }, enqueue: { runAt: at(3000), priority: 2 } },
        { runId: 'keyed', spec: { name: 'c', version: 1, input: 2, idempotencyKey: 'ck', tags: ['t1'] } },
      ],
    });
    const late = await job('late');
    assert.equal(Number(late.run_at), T + 3000);
    assert.equal(Number(late.priority), 2);
    const lateRow = await ctx.store.loadRunRow('late');
    assert.equal(lateRow.depth, 0);
    assert.equal(lateRow.idempotencyKey, undefined);
    assert.equal(lateRow.parentRunId, undefined);
    const keyed = await ctx.store.loadRunRow('keyed');
    assert.equal(keyed.idempotencyKey, 'ck');
    assert.deepEqual(keyed.tags, ['t1']);
    assert.deepEqual(await ctx.claimIds(at(0), 10, 60_000), ['keyed']);
    assert.deepEqual(await ctx.claimIds(at(2999)), []);
    assert.deepEqual(await ctx.claimIds(at(3000)), ['late']);
    // a later startRun with that key finds the spawned child
    const hit = await ctx.store.startRun({ name: 'c', version: 1, input: 9, idempotencyKey: 'ck' });
    assert.deepEqual(hit, { runId: 'keyed', created: false, status: 'pending' });
  });

  test('§7 order: spawn enqueue, then enqueue entries, then timers, then cancelTimers', async () => {
    const id = await ctx.newRun();
    await ctx.store.checkpointStep(ckpt(id, 's0'), {
      spawn: [{ runId: 'kid', spec: childSpec(id) }],
      enqueue: [{ runId: 'kid', opts: { runAt: at(5000), priority: 4 } }],
      timers: [
        { runId: id, fireAt: at(100) },
        { runId: 'kid', fireAt: at(200) },
      ],
      cancelTimers: [id],
    });
    const j = await job('kid');
    assert.equal(Number(j.run_at), T + 5000, 'the enqueue entry ran after the spawn enqueue');
    assert.equal(Number(j.priority), 4);
    assert.equal(Number(j.version), 2);
    assert.equal(await timerAt(id), undefined, 'cancelTimers ran after timers');
    assert.equal(await timerAt('kid'), T + 200);
  });

  test('§7 multiple enqueue and timer entries all apply; the latest entry wins for one id', async () => {
    const id = await ctx.newRun();
    await ctx.store.checkpointStep(ckpt(id, 's0'), {
      enqueue: [{ runId: 'x' }, { runId: 'y', opts: { priority: 7 } }, { runId: 'x', opts: { runAt: at(10) } }],
      timers: [
        { runId: 'a', fireAt: at(1) },
        { runId: 'a', fireAt: at(9) },
        { runId: 'b', fireAt: at(2) },
      ],
    });
    const x = await job('x');
    assert.equal(Number(x.run_at), T + 10);
    assert.equal(Number(x.version), 2);
    assert.equal(Number((await job('y')).priority), 7);
    assert.equal(await timerAt('a'), T + 9);
    assert.equal(await timerAt('b'), T + 2);
  });

  test('§7 cancelTimers removes several timers in one go', async () => {
    const id = await ctx.newRun();
    for (const r of ['a', 'b', 'c']) await ctx.timer.schedule(r, at(1));
    await ctx.store.checkpointStep(ckpt(id, 's0'), { cancelTimers: ['a', 'c', 'none'] });
    assert.deepEqual(
      (await ctx.rows(`SELECT run_id FROM ${ctx.t.timer}`)).map((r) => r.run_id),
      ['b'],
    );
  });

  test('§7 consumeSignals hard-deletes the listed signal rows', async () => {
    const id = await ctx.newRun();
    await ctx.store.postSignal(id, 'a', 1);
    await ctx.store.postSignal(id, 'b', 2);
    await ctx.store.postSignal(id, 'c', 3);
    const sigs = (await ctx.store.loadRun(id)).signals;
    await ctx.store.checkpointStep(ckpt(id, 's0'), { consumeSignals: [sigs[0].id, sigs[2].id] });
    assert.deepEqual(
      (await ctx.store.loadRun(id)).signals.map((s) => s.name),
      ['b'],
    );
    assert.equal(await ctx.count('signal'), 1);
  });

  test('§7 joinTarget sets join_remaining = count, with no existence check', async () => {
    const id = await ctx.newRun();
    await ctx.store.checkpointStep(ckpt(id, 's0'), { joinTarget: { runId: id, count: 5 } });
    const raw = await ctx.rows(`SELECT join_remaining FROM ${ctx.t.run} WHERE id = ?`, [id]);
    assert.equal(Number(raw[0].join_remaining), 5);
    // overwrite, not add
    await ctx.store.checkpointStep(ckpt(id, 's1'), { joinTarget: { runId: id, count: 2 } });
    assert.equal(await ctx.store.arriveAtJoin(id), 1);
    // a missing target is silently ignored
    const out = await ctx.store.checkpointStep(ckpt(id, 's2', 'ok'), { joinTarget: { runId: 'ghost', count: 3 } });
    assert.equal(out.result, 'ok');
    assert.equal(await ctx.store.arriveAtJoin('ghost'), undefined);
    assert.equal(await ctx.count('run'), 1);
  });

  test('§7 an empty outbox object and empty lists are harmless', async () => {
    const id = await ctx.newRun();
    const out = await ctx.store.checkpointStep(ckpt(id, 's0', 1), {});
    assert.equal(out.result, 1);
    await ctx.store.checkpointStep(ckpt(id, 's1', 2), {
      spawn: [],
      enqueue: [],
      timers: [],
      cancelTimers: [],
      consumeSignals: [],
    });
    assert.equal((await ctx.store.loadRun(id)).steps.size, 2);
    assert.equal(await ctx.count('job'), 0);
  });

  test('§3.10 re-suspending into the same status still applies the outbox (found-rows)', async () => {
    const id = await ctx.newRun();
    await ctx.store.suspendRun(id, 'retrying', { timers: [{ runId: id, fireAt: at(1000) }] });
    assert.deepEqual(await ctx.timer.dueBatch({ now: at(1000), limit: 10 }), [id]);
    await ctx.store.suspendRun(id, 'retrying', { timers: [{ runId: id, fireAt: at(2000) }] });
    assert.equal(await timerAt(id), T + 2000);
    // the same with sleeping (attempts already 0: the row does not change)
    await ctx.store.suspendRun(id, 'sleeping');
    await ctx.store.suspendRun(id, 'sleeping', { enqueue: [{ runId: id }] });
    assert.deepEqual(await ctx.claimIds(at(0)), [id]);
  });

  test('§3.10 suspendRun applies every outbox part; unknown / failed / canceled runs skip it', async () => {
    const id = await ctx.newRun();
    await ctx.store.postSignal(id, 'sig', 1);
    const [sig] = (await ctx.store.loadRun(id)).signals;
    await ctx.store.suspendRun(id, 'awaiting_child', {
      spawn: [{ runId: 'k', spec: childSpec(id) }],
      consumeSignals: [sig.id],
      joinTarget: { runId: id, count: 1 },
    });
    assert.equal((await ctx.store.loadRunRow(id)).status, 'awaiting_child');
    assert.ok(await ctx.store.loadRunRow('k'));
    assert.equal(await ctx.count('signal'), 0);
    assert.equal(await ctx.store.arriveAtJoin(id), 0);

    await ctx.store.suspendRun('ghost', 'sleeping', {
      timers: [{ runId: 'ghost', fireAt: at(1) }],
      enqueue: [{ runId: 'ghost' }],
    });
    for (const outcome of [{ status: 'failed', error: { code: 'E', message: 'm' } }, { status: 'canceled' }]) {
      const r = await ctx.newRun();
      await ctx.store.markTerminal(r, outcome);
      await ctx.store.suspendRun(r, 'sleeping', { timers: [{ runId: r, fireAt: at(1) }] });
      assert.equal((await ctx.store.loadRunRow(r)).status, outcome.status);
    }
    assert.equal(await ctx.count('timer'), 0);
    assert.equal(await ctx.count('job', 'run_id = ?', ['ghost']), 0);
  });

  test('§3.11 repeating an identical markTerminal still applies its outbox (found-rows)', async () => {
    const id = await ctx.newRun();
    await ctx.store.markTerminal(id, { status: 'done', output: 1 });
    await ctx.store.markTerminal(id, { status: 'done', output: 1 }, { enqueue: [{ runId: id }] });
    assert.deepEqual(await ctx.claimIds(at(0)), [id]);
  });

  test('§3.11 done is not sticky: canceled overwrites done and applies its outbox', async () => {
    const id = await ctx.newRun();
    await ctx.timer.schedule(id, at(1));
    await ctx.store.markTerminal(id, { status: 'done', output: 'x' });
    await ctx.store.markTerminal(
      id,
      { status: 'canceled', error: { code: 'CANCELED', message: 'c' } },
      { cancelTimers: [id] },
    );
    const row = await ctx.store.loadRunRow(id);
    assert.equal(row.status, 'canceled');
    assert.equal(row.output, undefined);
    assert.deepEqual(row.error, { code: 'CANCELED', message: 'c' });
    assert.equal(await ctx.count('timer'), 0);
  });

  test('§3.11 markTerminal on an unknown run is silent and skips its outbox', async () => {
    await ctx.store.markTerminal(
      'ghost',
      { status: 'done', output: 1 },
      { enqueue: [{ runId: 'parent' }], timers: [{ runId: 'x', fireAt: at(1) }] },
    );
    assert.equal(await ctx.count('job'), 0);
    assert.equal(await ctx.count('timer'), 0);
    assert.equal(await ctx.count('run'), 0);
  });

  test('§3.11 a canceled run is sticky against failed too, and keeps its outbox unapplied', async () => {
    const id = await ctx.newRun();
    await ctx.store.markTerminal(id, { status: 'canceled' });
    await ctx.store.markTerminal(
      id,
      { status: 'failed', error: { code: 'E', message: 'm' } },
      {
        spawn: [{ runId: 'zombie', spec: childSpec(id) }],
      },
    );
    const row = await ctx.store.loadRunRow(id);
    assert.equal(row.status, 'canceled');
    assert.equal(row.error, undefined);
    assert.equal(await ctx.store.loadRunRow('zombie'), undefined);
  });

  test('§3.9 the step memo and its outbox commit together; the loser of a replay sees the winner', async () => {
    const id = await ctx.newRun();
    const w = await ctx.store.checkpointStep(
      { runId: id, cursorKey: 'k', status: 'ok', result: 'w', attempts: 1, shape: 'step:a' },
      { timers: [{ runId: id, fireAt: at(7) }] },
    );
    const l = await ctx.store.checkpointStep(
      { runId: id, cursorKey: 'k', status: 'ok', result: 'l', attempts: 9, shape: 'step:b' },
      { timers: [{ runId: id, fireAt: at(99) }] },
    );
    assert.deepEqual(l, w);
    assert.equal(await timerAt(id), T + 7);
  });
}

for (const executor of EXECUTORS) describe(executor, () => suite(setup('conf_outbox', { executor })));
