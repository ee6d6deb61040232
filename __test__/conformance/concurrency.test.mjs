// docs/contract.md §12.10 (Atomicity and concurrency, 3 checks), the user-supplied (wrapped) Sql
// path of §1.2 / §14, and concurrent idempotent starts.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EXECUTORS, setup, at, T, wrapSql } from './fixture.mjs';

/** The group's tests, over the backend `ctx` holds (one executor). */
function suite(ctx) {
  const childSpec = (parent) => ({
    name: 'child',
    version: 1,
    input: null,
    parentRunId: parent,
    parentCursorKey: 's0',
    depth: 1,
  });
  const faultyOnJob = () =>
    wrapSql(ctx.sql, {
      onStatement(text) {
        if (text.includes(ctx.t.job)) throw new Error('injected fault: job table');
      },
    });

  // ---------------------------------------------------------------------------------------------
  // §12.10 checklist
  // ---------------------------------------------------------------------------------------------

  test('12.10.1 8 concurrent checkpoints on one key, each spawning a different child: one result, one child', async () => {
    for (let round = 0; round < 3; round++) {
      const parent = await ctx.newRun();
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => {
          const child = `c-${round}-${i}`;
          return ctx.store.checkpointStep(
            { runId: parent, cursorKey: 's0', status: 'ok', result: { child }, attempts: 1 },
            { spawn: [{ runId: child, spec: childSpec(parent) }], joinTarget: { runId: parent, count: 1 } },
          );
        }),
      );
      const winner = results[0].result.child;
      for (const r of results) assert.deepEqual(r, results[0]);
      const kids = await ctx.store.childrenOf(parent);
      assert.deepEqual(
        kids.map((k) => k.id),
        [winner],
        `round ${round}`,
      );
      assert.equal(await ctx.count('run', 'parent_run_id = ?', [parent]), 1);
      assert.equal(await ctx.count('job', 'run_id LIKE ?', [`c-${round}-%`]), 1);
      assert.equal(await ctx.count('job', 'run_id = ?', [winner]), 1);
      assert.equal(await ctx.count('step', 'run_id = ?', [parent]), 1);
    }
  });

  test('12.10.2 with a Sql wrapper rejecting job-table statements, a checkpoint with enqueue rejects and the step is not persisted', async () => {
    const id = await ctx.newRun();
    const faulty = ctx.makeBackend({}, faultyOnJob());
    await assert.rejects(async () =>
      faulty.store.checkpointStep(
        { runId: id, cursorKey: 's0', status: 'ok', result: 1, attempts: 1 },
        { enqueue: [{ runId: id }] },
      ),
    );
    const snap = await ctx.store.loadRun(id);
    assert.equal(snap.steps.size, 0);
    assert.equal(await ctx.count('step'), 0);
    assert.equal(await ctx.count('job'), 0);
    // the same checkpoint through the healthy backend then wins normally
    const ok = await ctx.store.checkpointStep(
      { runId: id, cursorKey: 's0', status: 'ok', result: 2, attempts: 1 },
      { enqueue: [{ runId: id }] },
    );
    assert.equal(ok.result, 2);
    assert.equal(await ctx.count('job'), 1);
  });

  test('12.10.3 20 runs, rounds of 4 concurrent claims (limit 10): never leased twice, all leased', async () => {
    const ids = [];
    for (let i = 0; i < 20; i++) {
      const id = await ctx.newRun({ input: i });
      await ctx.queue.enqueue(id);
      ids.push(id);
    }
    const seen = [];
    for (let round = 0; round < 10 && seen.length < 20; round++) {
      const batches = await Promise.all(
        Array.from({ length: 4 }, () => ctx.queue.claim({ limit: 10, leaseMs: 60_000, now: at(round) })),
      );
      for (const b of batches) seen.push(...b.map((l) => l.runId));
    }
    assert.equal(new Set(seen).size, seen.length, 'no run leased twice');
    assert.deepEqual([...seen].sort(), [...ids].sort());
    const tokens = await ctx.rows(`SELECT lease_token FROM ${ctx.t.job}`);
    assert.equal(new Set(tokens.map((r) => r.lease_token)).size, 20);
  });

  // ---------------------------------------------------------------------------------------------
  // more atomicity through the faulty wrapper (§1.8 / §7: all statements of a unit on the tx handle)
  // ---------------------------------------------------------------------------------------------

  test('§7 a failing outbox rolls back a spawn and the step (faulty wrapper)', async () => {
    const parent = await ctx.newRun();
    const faulty = ctx.makeBackend({}, faultyOnJob());
    await assert.rejects(async () =>
      faulty.store.checkpointStep(
        { runId: parent, cursorKey: 's0', status: 'ok', result: 'k', attempts: 1 },
        { spawn: [{ runId: 'kid', spec: childSpec(parent) }], joinTarget: { runId: parent, count: 1 } },
      ),
    );
    assert.equal(await ctx.store.loadRunRow('kid'), undefined);
    assert.equal(await ctx.count('run'), 1);
    assert.equal(await ctx.count('step'), 0);
    const raw = await ctx.rows(`SELECT join_remaining FROM ${ctx.t.run} WHERE id = ?`, [parent]);
    assert.equal(Number(raw[0].join_remaining), 0);
  });

  test('§3.7 / §3.17 / §3.10 units that enqueue roll back as a whole (faulty wrapper)', async () => {
    const id = await ctx.newRun();
    await ctx.store.markTerminal(id, { status: 'failed', error: { code: 'E', message: 'm' } });
    const faulty = ctx.makeBackend({}, faultyOnJob());
    await assert.rejects(async () => faulty.store.postSignal(id, 's', 1));
    assert.equal(await ctx.count('signal'), 0, 'signal insert rolled back');
    await assert.rejects(async () => faulty.store.retryRun(id));
    assert.equal((await ctx.store.loadRunRow(id)).status, 'failed', 'retry rolled back');
    const live = await ctx.newRun();
    await ctx.store.markRunning(live);
    await assert.rejects(async () =>
      faulty.store.suspendRun(live, 'sleeping', {
        timers: [{ runId: live, fireAt: at(5) }],
        enqueue: [{ runId: live }],
      }),
    );
    const row = await ctx.store.loadRunRow(live);
    assert.equal(row.status, 'running');
    assert.equal(row.attempts, 1);
    assert.equal(await ctx.count('timer'), 0);
    await assert.rejects(async () =>
      faulty.store.markTerminal(live, { status: 'done', output: 1 }, { enqueue: [{ runId: 'parent' }] }),
    );
    assert.equal((await ctx.store.loadRunRow(live)).status, 'running');
    // job-free operations through the same faulty wrapper still work
    await faulty.store.checkpointStep({ runId: live, cursorKey: 's0', status: 'ok', result: 'fine', attempts: 1 });
    assert.equal((await ctx.store.loadRun(live)).steps.get('s0').result, 'fine');
  });

  // ---------------------------------------------------------------------------------------------
  // the wrapped-Sql path (§1.2: users may pass any object implementing Sql)
  // ---------------------------------------------------------------------------------------------

  test('§1.2 a pass-through Sql wrapper runs store, queue and timer operations; units use the tx handle', async () => {
    const log = [];
    const b = ctx.makeBackend({}, wrapSql(ctx.sql, { log }));
    const { runId, created } = await b.store.startRun({
      name: 'w',
      version: 1,
      input: { a: 1 },
      idempotencyKey: 'wk',
      tags: ['t'],
    });
    assert.equal(created, true);
    assert.ok(log.length >= 1, 'statements flowed through the wrapper');
    assert.deepEqual(await b.store.startRun({ name: 'w', version: 1, input: 0, idempotencyKey: 'wk' }), {
      runId,
      created: false,
      status: 'pending',
    });
    assert.equal(await b.store.markRunning(runId), 1);
    log.length = 0;
    const out = await b.store.checkpointStep(
      { runId, cursorKey: 's0', status: 'ok', result: [1, 2], attempts: 1, shape: 'step:x' },
      { enqueue: [{ runId }], timers: [{ runId, fireAt: at(100) }] },
    );
    assert.deepEqual(out.result, [1, 2]);
    assert.ok(log.length >= 3);
    assert.ok(
      log.every((e) => e.inTx),
      'every statement of the unit used the tx handle',
    );
    assert.ok(
      log.some((e) => e.text.includes(ctx.t.job)),
      'the job statement names the quoted job table',
    );

    const snap = await b.store.loadRun(runId);
    assert.equal(snap.run.status, 'running');
    assert.deepEqual(snap.run.input, { a: 1 });
    assert.deepEqual(snap.run.tags, ['t']);
    assert.ok(snap.run.createdAt instanceof Date);
    assert.ok(snap.steps instanceof Map);
    assert.equal(snap.steps.get('s0').shape, 'step:x');

    const [lease] = await b.queue.claim({ limit: 5, leaseMs: 1000, now: at(0) });
    assert.equal(lease.runId, runId);
    assert.equal(lease.version, 1);
    assert.equal(lease.expiresAt.getTime(), T + 1000);
    const hb = await b.queue.heartbeat(lease, { leaseMs: 1000, now: at(10) });
    assert.equal(hb.expiresAt.getTime(), T + 1010);
    await b.queue.ack(hb, { now: at(20) });
    assert.equal(await ctx.count('job'), 0);
    assert.deepEqual(await b.queue.depth(at(0)), { claimable: 0, leased: 0, oldestClaimableAgeMs: null });
    assert.deepEqual(await b.timer.dueBatch({ now: at(100), limit: 10 }), [runId]);

    assert.deepEqual(await b.store.postSignal(runId, 'go', null, { idempotencyKey: 'x' }), { delivered: true });
    assert.deepEqual(await b.store.postSignal(runId, 'go', null, { idempotencyKey: 'x' }), { delivered: false });
    await b.store.suspendRun(runId, 'awaiting_signal');
    assert.deepEqual(await b.store.orphanedRuns(10), []);
    await b.store.markTerminal(runId, { status: 'done', output: 'fin' });
    const page = await b.store.listRuns({ status: 'done' }, { limit: 1 });
    assert.equal(page.runs[0].id, runId);
    assert.equal(typeof page.cursor, 'string');
    assert.equal((await b.store.runStats()).done, 1);
    assert.equal(await b.store.deleteRunsOlderThan(new Date(Date.now() + 60_000), 10), 1);
    assert.equal(await b.store.loadRun(runId), undefined);
  });

  test('§1.3 a wrapped tx handle: nested tx reuses the same handle (flat nesting)', async () => {
    const log = [];
    const w = wrapSql(ctx.sql, { log });
    await assert.rejects(
      async () =>
        w.tx(async (t) => {
          await t.exec(`INSERT INTO ${ctx.t.timer} (run_id, fire_at) VALUES (?, ?)`, ['nested', T]);
          await t.tx(async (t2) => {
            await t2.exec(`INSERT INTO ${ctx.t.timer} (run_id, fire_at) VALUES (?, ?)`, ['nested2', T]);
          });
          throw new Error('abort');
        }),
      /abort/,
    );
    assert.equal(await ctx.count('timer'), 0, 'the inner write belonged to the outer transaction');
  });

  // ---------------------------------------------------------------------------------------------
  // concurrent idempotent starts
  // ---------------------------------------------------------------------------------------------

  test('§3.2 startManyRuns with 16 concurrent callers sharing keys converges', async () => {
    const keys = ['k0', 'k1', 'k2', 'k3'];
    const all = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        ctx.store.startManyRuns([
          ...keys.map((k) => ({ name: 'f', version: 1, input: { k, i }, idempotencyKey: k })),
          { name: 'f', version: 1, input: { own: i }, idempotencyKey: `own-${i}` },
        ]),
      ),
    );
    for (let j = 0; j < keys.length; j++) {
      const ids = new Set(all.map((res) => res[j].runId));
      assert.equal(ids.size, 1, `key ${keys[j]} converged`);
      assert.equal(all.filter((res) => res[j].created).length, 1, `exactly one creator for ${keys[j]}`);
    }
    for (const res of all) assert.equal(res[4].created, true);
    assert.equal(await ctx.count('run'), keys.length + 16);
  });

  test('§3.1 16 concurrent startRun callers with one key converge on one run', async () => {
    const res = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        ctx.store.startRun({ name: 'f', version: 1, input: i, idempotencyKey: 'same' }),
      ),
    );
    assert.equal(new Set(res.map((r) => r.runId)).size, 1);
    assert.equal(res.filter((r) => r.created).length, 1);
    assert.equal(await ctx.count('run'), 1);
  });

  test('§3.6 / §3.8 concurrent markRunning and arriveAtJoin calls are serialized', async () => {
    const id = await ctx.newRun();
    const counts = await Promise.all(Array.from({ length: 10 }, () => ctx.store.markRunning(id)));
    assert.deepEqual(
      [...counts].sort((a, b) => a - b),
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    );
    assert.equal((await ctx.store.loadRunRow(id)).attempts, 10);
    const arrivals = await Promise.all(Array.from({ length: 10 }, () => ctx.store.arriveAtJoin(id)));
    assert.deepEqual(
      [...arrivals].sort((a, b) => a - b),
      [-10, -9, -8, -7, -6, -5, -4, -3, -2, -1],
    );
  });
}

for (const executor of EXECUTORS) describe(executor, () => suite(setup('conf_concurrency', { executor })));
