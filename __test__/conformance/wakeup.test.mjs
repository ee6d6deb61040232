// docs/contract.md §12.4 (Wakeup, 6 checks, real timers) plus §6 / §1.2 details.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EXECUTORS, setup, sleep } from './fixture.mjs';

/** The group's tests, over the backend `ctx` holds (one executor). */
function suite(ctx) {
  const settled = (p) => {
    const state = { done: false, value: 'unset' };
    p.then((v) => {
      state.done = true;
      state.value = v;
    });
    return state;
  };

  test('12.4.1 a signal resolves a pending 5 s wait promptly', async () => {
    const start = Date.now();
    const w = ctx.wakeup.wait('r1', 5000);
    setTimeout(() => {
      ctx.wakeup.signal('r1');
    }, 10);
    const v = await w;
    const took = Date.now() - start;
    assert.equal(v, undefined);
    assert.ok(took < 4000, `took ${took} ms (resolved by the signal, not the 5 s timeout)`);
  });

  test('12.4.2 a 25 ms wait without a signal resolves after >= 20 ms', async () => {
    const start = Date.now();
    const v = await ctx.wakeup.wait('r1', 25);
    const took = Date.now() - start;
    assert.equal(v, undefined);
    assert.ok(took >= 20, `took ${took} ms`);
    assert.ok(took < 2000, `took ${took} ms`);
  });

  test('12.4.3 a signal for another run leaves a 60 ms wait pending at 15 ms; it resolves by timeout', async () => {
    const start = Date.now();
    const w = ctx.wakeup.wait('r1', 60);
    const s = settled(w);
    await ctx.wakeup.signal('r2');
    await sleep(15);
    assert.equal(s.done, false, 'still pending at 15 ms');
    await w;
    const took = Date.now() - start;
    assert.ok(took >= 50, `took ${took} ms`);
  });

  test('12.4.4 signalling with no waiters resolves undefined', async () => {
    const p = ctx.wakeup.signal('nobody');
    assert.ok(p && typeof p.then === 'function');
    assert.equal(await p, undefined);
  });

  test('12.4.5 a signal sent before the wait starts is not remembered', async () => {
    await ctx.wakeup.signal('r1');
    const start = Date.now();
    await ctx.wakeup.wait('r1', 25);
    const took = Date.now() - start;
    assert.ok(took >= 20, `took ${took} ms`);
  });

  test('12.4.6 two waiters on one run both resolve from one signal', async () => {
    const start = Date.now();
    const a = ctx.wakeup.wait('r1', 5000);
    const b = ctx.wakeup.wait('r1', 5000);
    await sleep(5);
    await ctx.wakeup.signal('r1');
    const [va, vb] = await Promise.all([a, b]);
    assert.equal(va, undefined);
    assert.equal(vb, undefined);
    assert.ok(Date.now() - start < 1000);
  });

  test('§6 a resolved waiter is gone: a later signal does not affect a new wait', async () => {
    const a = ctx.wakeup.wait('r1', 5000);
    await ctx.wakeup.signal('r1');
    await a;
    const start = Date.now();
    const b = ctx.wakeup.wait('r1', 30);
    const s = settled(b);
    await sleep(10);
    assert.equal(s.done, false);
    await b;
    assert.ok(Date.now() - start >= 25);
  });

  test('§1.2 two backends do not share wakeups', async () => {
    const other = ctx.makeBackend();
    assert.notEqual(other.wakeup, ctx.wakeup);
    const w = ctx.wakeup.wait('r1', 60);
    const s = settled(w);
    await other.wakeup.signal('r1');
    await sleep(15);
    assert.equal(s.done, false, 'a signal on another backend does not wake this one');
    await ctx.wakeup.signal('r1');
    await w;
    assert.equal(s.done, true);
  });

  test('§6 many waiters on many runs: each signal wakes exactly its own run', async () => {
    const waits = Array.from({ length: 10 }, (_, i) => ({ i, s: settled(ctx.wakeup.wait(`r${i}`, 5000)) }));
    for (let i = 0; i < 10; i += 2) await ctx.wakeup.signal(`r${i}`);
    await sleep(10);
    for (const { i, s } of waits) assert.equal(s.done, i % 2 === 0, `r${i}`);
    for (let i = 1; i < 10; i += 2) await ctx.wakeup.signal(`r${i}`);
    await sleep(10);
    for (const { s } of waits) assert.equal(s.done, true);
  });
}

for (const executor of EXECUTORS) describe(executor, () => suite(setup('conf_wakeup', { executor })));
