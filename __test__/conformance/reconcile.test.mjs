// docs/contract.md §12.7 (Reconcile, 8 checks) plus the full §8 orphan predicate.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EXECUTORS, setup, at } from './fixture.mjs';

/** The group's tests, over the backend `ctx` holds (one executor). */
function suite(ctx) {
  const orphans = (limit = 100) => ctx.store.orphanedRuns(limit);
  const fail = (id) => ctx.store.markTerminal(id, { status: 'failed', error: { code: 'E', message: 'm' } });
  const done = (id) => ctx.store.markTerminal(id, { status: 'done', output: 1 });
  const cancel = (id) => ctx.store.markTerminal(id, { status: 'canceled' });

  // ---------------------------------------------------------------------------------------------
  // §12.7 checklist
  // ---------------------------------------------------------------------------------------------

  test('12.7.1 a pending run never enqueued is an orphan', async () => {
    const id = await ctx.newRun();
    assert.deepEqual(await orphans(), [id]);
  });

  test('12.7.2 an enqueued pending run is not', async () => {
    const id = await ctx.newRun();
    await ctx.queue.enqueue(id);
    assert.deepEqual(await orphans(), []);
  });

  test('12.7.3 a sleeping run with a timer is not', async () => {
    const id = await ctx.newRun();
    await ctx.store.suspendRun(id, 'sleeping', { timers: [{ runId: id, fireAt: at(5000) }] });
    assert.deepEqual(await orphans(), []);
  });

  test('12.7.4 an awaiting_signal run is not', async () => {
    const id = await ctx.newRun();
    await ctx.store.suspendRun(id, 'awaiting_signal');
    assert.deepEqual(await orphans(), []);
  });

  test('12.7.5 an awaiting_child parent whose only child is done is', async () => {
    const p = await ctx.newRun();
    await ctx.store.suspendRun(p, 'awaiting_child');
    const c = await ctx.newRun({ parentRunId: p });
    await done(c);
    assert.deepEqual(await orphans(), [p]);
  });

  test('12.7.6 an awaiting_child parent with one done and one pending child is not', async () => {
    const p = await ctx.newRun();
    await ctx.store.suspendRun(p, 'awaiting_child');
    const c1 = await ctx.newRun({ parentRunId: p });
    const c2 = await ctx.newRun({ parentRunId: p });
    await done(c1);
    await ctx.queue.enqueue(c2);
    assert.deepEqual(await orphans(), []);
  });

  test('12.7.7 an awaiting_child parent with one failed and one pending child is', async () => {
    const p = await ctx.newRun();
    await ctx.store.suspendRun(p, 'awaiting_child');
    const c1 = await ctx.newRun({ parentRunId: p });
    const c2 = await ctx.newRun({ parentRunId: p });
    await fail(c1);
    await ctx.queue.enqueue(c2);
    assert.deepEqual(await orphans(), [p]);
  });

  test('12.7.8 a done run is not', async () => {
    const id = await ctx.newRun();
    await done(id);
    assert.deepEqual(await orphans(), []);
  });

  // ---------------------------------------------------------------------------------------------
  // §8 in full
  // ---------------------------------------------------------------------------------------------

  test('§8 A: running / sleeping / retrying without job and timer are orphans; a leased or timed one is not', async () => {
    const running = await ctx.newRun();
    await ctx.store.markRunning(running);
    const sleeping = await ctx.newRun();
    await ctx.store.suspendRun(sleeping, 'sleeping');
    const retrying = await ctx.newRun();
    await ctx.store.suspendRun(retrying, 'retrying');
    assert.deepEqual(await orphans(), [running, sleeping, retrying]);

    await ctx.queue.enqueue(running);
    await ctx.queue.claim({ limit: 10, leaseMs: 1000, now: at(0) }); // leased job still counts
    await ctx.timer.schedule(retrying, at(1_000_000)); // a far timer counts
    await ctx.queue.enqueue(sleeping, { runAt: at(1_000_000) }); // a future job counts
    assert.deepEqual(await orphans(), []);
  });

  test('§8 terminal and awaiting runs are never stranded (A)', async () => {
    const a = await ctx.newRun();
    await fail(a);
    const b = await ctx.newRun();
    await cancel(b);
    const c = await ctx.newRun();
    await ctx.store.suspendRun(c, 'awaiting_signal');
    const d = await ctx.newRun();
    await ctx.store.suspendRun(d, 'awaiting_child'); // no children at all
    assert.deepEqual(await orphans(), []);
  });

  test('§8 B: awaiting_child with a queued job is not; with all children terminal (mixed) is', async () => {
    const p = await ctx.newRun();
    await ctx.store.suspendRun(p, 'awaiting_child');
    const c1 = await ctx.newRun({ parentRunId: p });
    const c2 = await ctx.newRun({ parentRunId: p });
    await done(c1);
    await cancel(c2);
    assert.deepEqual(await orphans(), [p]);
    await ctx.queue.enqueue(p);
    assert.deepEqual(await orphans(), []);
  });

  test('§8 B: timers are not consulted for awaiting_child parents', async () => {
    const p = await ctx.newRun();
    await ctx.store.suspendRun(p, 'awaiting_child', { timers: [{ runId: p, fireAt: at(1000) }] });
    const c = await ctx.newRun({ parentRunId: p });
    await done(c);
    assert.deepEqual(await orphans(), [p]);
  });

  test('§8 B: a canceled child fast-fails even while a sibling still runs (sibling awaiting_signal)', async () => {
    const p = await ctx.newRun();
    await ctx.store.suspendRun(p, 'awaiting_child');
    const c1 = await ctx.newRun({ parentRunId: p });
    const c2 = await ctx.newRun({ parentRunId: p });
    await cancel(c1);
    await ctx.store.suspendRun(c2, 'awaiting_signal');
    assert.deepEqual(await orphans(), [p]);
  });

  test('§8 C: an abandoned child of a failed or canceled parent is an orphan whatever its status, queued or timed', async () => {
    const pf = await ctx.newRun();
    const pc = await ctx.newRun();
    const cSig = await ctx.newRun({ parentRunId: pf });
    const cChild = await ctx.newRun({ parentRunId: pf });
    const cQueued = await ctx.newRun({ parentRunId: pc });
    const cTimed = await ctx.newRun({ parentRunId: pc });
    const cDone = await ctx.newRun({ parentRunId: pf });
    await ctx.store.suspendRun(cSig, 'awaiting_signal');
    await ctx.store.suspendRun(cChild, 'awaiting_child');
    await ctx.queue.enqueue(cQueued);
    await ctx.store.suspendRun(cTimed, 'sleeping', { timers: [{ runId: cTimed, fireAt: at(99) }] });
    await done(cDone);
    await fail(pf);
    await cancel(pc);
    assert.deepEqual(await orphans(), [cSig, cChild, cQueued, cTimed]);
  });

  test('§8 C: children of a done, live or missing parent are not orphans', async () => {
    const pd = await ctx.newRun();
    await done(pd);
    const pl = await ctx.newRun();
    await ctx.queue.enqueue(pl);
    const a = await ctx.newRun({ parentRunId: pd });
    const b = await ctx.newRun({ parentRunId: pl });
    const c = await ctx.newRun({ parentRunId: 'gone' });
    for (const id of [a, b, c]) await ctx.store.suspendRun(id, 'awaiting_signal');
    assert.deepEqual(await orphans(), []);
  });

  test('§8 result: distinct ids even when several clauses match', async () => {
    const p = await ctx.newRun();
    // a pending child with no job (A) of a failed parent (C) that itself awaits a failed child (B)
    const c = await ctx.newRun({ parentRunId: p });
    await ctx.store.suspendRun(c, 'awaiting_child');
    const g1 = await ctx.newRun({ parentRunId: c });
    const g2 = await ctx.newRun({ parentRunId: c });
    await fail(g1);
    await fail(g2);
    const s = await ctx.newRun({ parentRunId: p }); // stranded pending + abandoned
    await fail(p);
    const out = await orphans();
    assert.deepEqual(out, [c, s]);
  });

  test('§8 result: ascending by insertion order (seq), not by id or createdAt', async () => {
    let n = 0;
    const names = ['zeta', 'alpha', 'mike', 'bravo'];
    const b = ctx.makeBackend({ id: () => names[n++] });
    for (let i = 0; i < names.length; i++) {
      await b.store.startRun({ name: 'f', version: 1, input: i, createdAt: at(10_000 - i) });
    }
    assert.deepEqual(await b.store.orphanedRuns(10), names);
  });

  test('§8 result: at most limit ids, the oldest first; limit 0 => []', async () => {
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await ctx.newRun());
    assert.deepEqual(await orphans(2), ids.slice(0, 2));
    assert.deepEqual(await orphans(0), []);
    assert.deepEqual(await orphans(10), ids);
  });
}

for (const executor of EXECUTORS) describe(executor, () => suite(setup('conf_reconcile', { executor })));
