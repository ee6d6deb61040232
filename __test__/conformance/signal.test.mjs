// docs/contract.md §12.6 (Signals, 4 checks) plus the §3.7 details and quirks.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EXECUTORS, setup, at, UUID_V4 } from './fixture.mjs';

/** The group's tests, over the backend `ctx` holds (one executor). */
function suite(ctx) {
  const inbox = async (runId) => (await ctx.store.loadRun(runId)).signals;

  test('12.6.1 a posted signal is delivered, visible in the inbox, and the run becomes claimable', async () => {
    const id = await ctx.newRun();
    assert.deepEqual(await ctx.store.postSignal(id, 'approve', { by: 'ann', ok: true }), { delivered: true });
    const sigs = await inbox(id);
    assert.equal(sigs.length, 1);
    assert.equal(sigs[0].name, 'approve');
    assert.deepEqual(sigs[0].payload, { by: 'ann', ok: true });
    assert.match(sigs[0].id, UUID_V4);
    assert.deepEqual(await ctx.claimIds(at(0)), [id]);
  });

  test('12.6.2 the same idempotency key twice => true then false; the inbox holds one', async () => {
    const id = await ctx.newRun();
    assert.deepEqual(await ctx.store.postSignal(id, 'go', 1, { idempotencyKey: 'k1' }), { delivered: true });
    assert.deepEqual(await ctx.store.postSignal(id, 'go', 2, { idempotencyKey: 'k1' }), { delivered: false });
    const sigs = await inbox(id);
    assert.equal(sigs.length, 1);
    assert.equal(sigs[0].payload, 1);
    // a different key is a different signal
    assert.deepEqual(await ctx.store.postSignal(id, 'go', 3, { idempotencyKey: 'k2' }), { delivered: true });
    assert.equal((await inbox(id)).length, 2);
  });

  test('12.6.3 a checkpoint consuming signal "a" leaves only "b" and commits its memo', async () => {
    const id = await ctx.newRun();
    await ctx.store.postSignal(id, 'a', 'pa');
    await ctx.store.postSignal(id, 'b', 'pb');
    const [a] = await inbox(id);
    assert.equal(a.name, 'a');
    const out = await ctx.store.checkpointStep(
      { runId: id, cursorKey: 'w0', status: 'ok', result: a.payload, attempts: 1, shape: 'signal' },
      { consumeSignals: [a.id] },
    );
    assert.equal(out.result, 'pa');
    const snap = await ctx.store.loadRun(id);
    assert.deepEqual(
      snap.signals.map((s) => [s.name, s.payload]),
      [['b', 'pb']],
    );
    assert.equal(snap.steps.get('w0').result, 'pa');
    assert.equal(snap.steps.get('w0').shape, 'signal');
  });

  test('12.6.4 three signals with payloads 1, 2, 3 appear in that order', async () => {
    const id = await ctx.newRun();
    for (const n of [1, 2, 3]) await ctx.store.postSignal(id, 'tick', n);
    assert.deepEqual(
      (await inbox(id)).map((s) => s.payload),
      [1, 2, 3],
    );
  });

  test('§3.7 an empty-string key IS a key for signals (quirk): two posts with "" dedup', async () => {
    const id = await ctx.newRun();
    assert.deepEqual(await ctx.store.postSignal(id, 's', 1, { idempotencyKey: '' }), { delivered: true });
    assert.deepEqual(await ctx.store.postSignal(id, 's', 2, { idempotencyKey: '' }), { delivered: false });
    assert.equal((await inbox(id)).length, 1);
    const raw = await ctx.rows(`SELECT idem_key FROM ${ctx.t.signal}`);
    assert.equal(raw[0].idem_key, '');
  });

  test('§3.7 posts without a key never dedup', async () => {
    const id = await ctx.newRun();
    for (let i = 0; i < 3; i++) assert.deepEqual(await ctx.store.postSignal(id, 's', i), { delivered: true });
    assert.equal((await inbox(id)).length, 3);
    const raw = await ctx.rows(`SELECT idem_key FROM ${ctx.t.signal}`);
    assert.deepEqual(
      raw.map((r) => r.idem_key),
      [null, null, null],
    );
  });

  test('§3.7 a key is forgotten once its signal is consumed', async () => {
    const id = await ctx.newRun();
    await ctx.store.postSignal(id, 's', 1, { idempotencyKey: 'once' });
    const [sig] = await inbox(id);
    await ctx.store.checkpointStep(
      { runId: id, cursorKey: 'w0', status: 'ok', result: 1, attempts: 1 },
      { consumeSignals: [sig.id] },
    );
    assert.deepEqual(await ctx.store.postSignal(id, 's', 2, { idempotencyKey: 'once' }), { delivered: true });
    const sigs = await inbox(id);
    assert.equal(sigs.length, 1);
    assert.equal(sigs[0].payload, 2);
    assert.notEqual(sigs[0].id, sig.id);
  });

  test('§3.7 a signal to an unknown run is stored and enqueued', async () => {
    assert.deepEqual(await ctx.store.postSignal('ghost', 's', { x: 1 }), { delivered: true });
    assert.equal(await ctx.count('signal', 'run_id = ?', ['ghost']), 1);
    assert.equal(await ctx.count('run'), 0);
    assert.deepEqual(await ctx.claimIds(at(0)), ['ghost']);
  });

  test('§3.7 a signal to a terminal run is stored and enqueued', async () => {
    const id = await ctx.newRun();
    await ctx.store.markTerminal(id, { status: 'done', output: 1 });
    assert.deepEqual(await ctx.store.postSignal(id, 's', 1), { delivered: true });
    assert.equal((await inbox(id)).length, 1);
    assert.deepEqual(await ctx.claimIds(at(0)), [id]);
  });

  test('§3.7 dedup scope is per run', async () => {
    const a = await ctx.newRun();
    const b = await ctx.newRun();
    assert.deepEqual(await ctx.store.postSignal(a, 's', 1, { idempotencyKey: 'k' }), { delivered: true });
    assert.deepEqual(await ctx.store.postSignal(b, 's', 1, { idempotencyKey: 'k' }), { delivered: true });
    assert.equal((await inbox(a)).length, 1);
    assert.equal((await inbox(b)).length, 1);
  });

  test('§13.5 signal keys compare case-insensitively', async () => {
    const id = await ctx.newRun();
    assert.deepEqual(await ctx.store.postSignal(id, 's', 1, { idempotencyKey: 'Key' }), { delivered: true });
    assert.deepEqual(await ctx.store.postSignal(id, 's', 2, { idempotencyKey: 'KEY' }), { delivered: false });
  });

  test('§3.7 a duplicate post does not enqueue', async () => {
    const id = await ctx.newRun();
    await ctx.store.postSignal(id, 's', 1, { idempotencyKey: 'k' });
    const [l] = await ctx.queue.claim({ limit: 10, leaseMs: 1000, now: at(0) });
    await ctx.queue.ack(l, { now: at(1) });
    assert.equal(await ctx.count('job'), 0);
    assert.deepEqual(await ctx.store.postSignal(id, 's', 1, { idempotencyKey: 'k' }), { delivered: false });
    assert.equal(await ctx.count('job'), 0);
  });

  test('§3.7 a signal during a lease bumps the job version so the ack releases it', async () => {
    const id = await ctx.newRun();
    await ctx.queue.enqueue(id);
    const [l] = await ctx.queue.claim({ limit: 10, leaseMs: 1000, now: at(0) });
    await ctx.store.postSignal(id, 's', 1);
    assert.deepEqual(await ctx.claimIds(at(500)), [], 'the lease is not yanked');
    await ctx.queue.ack(l, { now: at(600) });
    const [again] = await ctx.queue.claim({ limit: 10, leaseMs: 1000, now: at(601) });
    assert.equal(again.runId, id);
    assert.equal(again.version, 2);
  });

  test('§1.7 signal payload null vs undefined; DeliveredSignal has exactly 3 keys', async () => {
    const id = await ctx.newRun();
    await ctx.store.postSignal(id, 'n', null);
    await ctx.store.postSignal(id, 'u', undefined);
    await ctx.store.postSignal(id, 'z', { d: new Date(0), nan: NaN, u: undefined });
    const sigs = await inbox(id);
    assert.equal(sigs[0].payload, null);
    assert.equal(sigs[1].payload, undefined);
    assert.deepEqual(sigs[2].payload, { d: '1970-01-01T00:00:00.000Z', nan: null });
    for (const s of sigs) assert.deepEqual(Object.keys(s).sort(), ['id', 'name', 'payload']);
    const raw = await ctx.rows(`SELECT name, payload FROM ${ctx.t.signal} ORDER BY seq`);
    assert.deepEqual(
      raw.map((r) => r.payload),
      ['null', null, '{"d":"1970-01-01T00:00:00.000Z","nan":null}'],
    );
  });
}

for (const executor of EXECUTORS) describe(executor, () => suite(setup('conf_signal', { executor })));
