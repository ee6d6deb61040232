// Fidelity to the JavaScript package in corners a review found: the wrapped-Sql path sends the
// seed's statements (no outbox statement after a lost guard), the caller's own driver errors come
// back unchanged, a custom id generator is asked once per lease, `null` optional fields behave
// like absent ones, and server errors carry errno/sqlState/code.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EXECUTORS, setup, at, wrapSql } from './fixture.mjs';

/** The group's tests, over the backend `ctx` holds (one executor). */
function suite(ctx) {
  const faultyOnJob = () =>
    wrapSql(ctx.sql, {
      onStatement(text) {
        if (text.includes(ctx.t.job))
          throw Object.assign(new Error('injected fault: job table'), { code: 'E_INJECTED' });
      },
    });

  test('wrapped: replaying a won checkpoint with an outbox sends no outbox statement (returns the memo)', async () => {
    const run = await ctx.newRun();
    const first = await ctx.store.checkpointStep({ runId: run, cursorKey: 's0', status: 'ok', result: 1, attempts: 1 });
    assert.equal(first.result, 1);
    const log = [];
    const wrapped = ctx.makeBackend(undefined, wrapSql(faultyOnJob(), { log }));
    const again = await wrapped.store.checkpointStep(
      { runId: run, cursorKey: 's0', status: 'ok', result: 2, attempts: 1 },
      { enqueue: [{ runId: run }] },
    );
    assert.equal(again.result, 1, 'the first writer wins');
    assert.ok(!log.some((l) => l.text.includes(ctx.t.job)), 'no job statement was sent');
  });

  test('wrapped: suspendRun with an outbox on a canceled run is a silent no-op', async () => {
    const run = await ctx.newRun();
    await ctx.store.markTerminal(run, { status: 'canceled' });
    const wrapped = ctx.makeBackend(undefined, faultyOnJob());
    await wrapped.store.suspendRun(run, 'sleeping', {
      enqueue: [{ runId: run }],
      timers: [{ runId: run, fireAt: at(5) }],
    });
    assert.equal((await ctx.store.loadRunRow(run)).status, 'canceled');
    assert.equal(await ctx.count('timer'), 0);
  });

  test('wrapped: a won checkpoint still applies its outbox, and a fault in it rolls the step back', async () => {
    const run = await ctx.newRun();
    const wrapped = ctx.makeBackend(undefined, wrapSql(ctx.sql));
    await wrapped.store.checkpointStep(
      { runId: run, cursorKey: 's0', status: 'ok', result: 1, attempts: 1 },
      { enqueue: [{ runId: run }] },
    );
    assert.deepEqual(await ctx.claimIds(at(0)), [run]);
    const faulty = ctx.makeBackend(undefined, faultyOnJob());
    const err = await faulty.store
      .checkpointStep(
        { runId: run, cursorKey: 's1', status: 'ok', result: 1, attempts: 1 },
        { enqueue: [{ runId: run }] },
      )
      .catch((e) => e);
    assert.equal(err.code, 'E_INJECTED', "the wrapper's own error object comes back");
    assert.equal(await ctx.count('step', 'cursor_key = ?', ['s1']), 0);
  });

  test("wrapped: the caller's driver error (code, errno) propagates unchanged", async () => {
    const wrapped = ctx.makeBackend({ id: () => 'same-id' }, wrapSql(ctx.sql));
    await wrapped.store.startRun({ name: 'f', version: 1, input: 1 });
    const err = await wrapped.store.startRun({ name: 'f', version: 1, input: 2 }).catch((e) => e);
    assert.equal(err.code, 'ER_DUP_ENTRY');
    assert.equal(err.errno, 1062);
  });

  test('native: server errors carry errno, sqlState and a symbolic code', async () => {
    const b = ctx.makeBackend({ id: () => 'dup-id' });
    await b.store.startRun({ name: 'f', version: 1, input: 1 });
    const err = await b.store.startRun({ name: 'f', version: 1, input: 2 }).catch((e) => e);
    assert.equal(err.code, 'ER_DUP_ENTRY');
    assert.equal(err.errno, 1062);
    assert.equal(err.sqlState, '23000');
  });

  test('a custom id generator is called once per lease, not once per limit', async () => {
    let calls = 0;
    const b = ctx.makeBackend({ id: () => `id-${++calls}` });
    await b.queue.enqueue('r1');
    await b.queue.enqueue('r2');
    const before = calls;
    const leases = await b.queue.claim({ limit: 20, leaseMs: 1000, now: at(0) });
    assert.equal(leases.length, 2);
    assert.equal(calls - before, 2);
    assert.ok(leases.every((l) => /^id-\d+:r[12]$/.test(l.token)));
    const empty = await b.queue.claim({ limit: 20, leaseMs: 1000, now: at(0) });
    assert.equal(empty.length, 0);
    assert.equal(calls - before, 2, 'an empty claim asks for no ids');
  });

  test('null optional fields behave like absent ones', async () => {
    const a = await ctx.store.startRun({
      name: 'f',
      version: 1,
      input: 1,
      idempotencyKey: null,
      tags: null,
      depth: null,
    });
    assert.equal(a.created, true);
    const row = await ctx.store.loadRunRow(a.runId);
    assert.equal(row.idempotencyKey, undefined);
    assert.equal(row.depth, 0);
    assert.deepEqual(await ctx.store.postSignal(a.runId, 'go', 1, { idempotencyKey: null }), { delivered: true });
    assert.deepEqual(
      await ctx.store.postSignal(a.runId, 'go', 1, { idempotencyKey: null }),
      { delivered: true },
      'no key, no dedup',
    );
    await ctx.queue.enqueue('q1', { priority: null });
    assert.deepEqual(await ctx.rows(`SELECT priority FROM ${ctx.t.job} WHERE run_id = 'q1'`), [{ priority: 0 }]);
    assert.deepEqual(await ctx.store.listRuns({ status: null }, { limit: 10 }), { runs: [], cursor: undefined });
  });

  test('a spawn with an empty-string key stores "" (siblings with the same name/version collapse), as the JS package', async () => {
    const parent = await ctx.newRun();
    const spec = { name: 'child', version: 1, input: null, idempotencyKey: '', parentRunId: parent };
    await ctx.store.checkpointStep(
      { runId: parent, cursorKey: 's0', status: 'ok', result: 1, attempts: 1 },
      {
        spawn: [
          { runId: 'c1', spec },
          { runId: 'c2', spec },
        ],
      },
    );
    const kids = await ctx.rows(`SELECT id, idempotency_key FROM ${ctx.t.run} WHERE parent_run_id = ?`, [parent]);
    assert.deepEqual(kids, [{ id: 'c1', idempotency_key: '' }]);
  });
}

for (const executor of EXECUTORS) describe(executor, () => suite(setup('conf_fidelity', { executor })));
