// In-process push: a backend's own enqueues release its listener's waiters at once, without a
// probe (the interval here is a minute, so no probe can explain a prompt wake); a nudge with
// nobody waiting is kept for exactly one later call; bad arguments are refused up front.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import m from '../../index.js';
import { closeAdmin } from '../helpers/db.mjs';
import { pushDatabase, sleep } from './helpers.mjs';

test.after(closeAdmin);

async function listening(listener) {
  listener.start();
  for (const end = Date.now() + 10_000; listener.state() !== 'listening' && Date.now() < end; ) await sleep(5);
  assert.equal(listener.state(), 'listening');
}

test('own enqueues wake at once; a wake with nobody waiting is latched once', { timeout: 60_000 }, async () => {
  const env = await pushDatabase('push_local');
  const listener = m.createMysqlListener(env.sql, { intervalMs: 60_000 });
  const backend = m.createMysqlBackend(env.sql, { listener });
  try {
    await listening(listener);
    assert.equal(backend.wakeup, listener.wakeup);

    let t0 = Date.now();
    const waiting = backend.queue.waitForWork(10_000);
    await backend.queue.enqueue(await env.run());
    await waiting;
    assert.ok(Date.now() - t0 < 2000, `woke ${Date.now() - t0} ms after waiting began`);
    // The waiter also started a probe of its own (its park was not looking for work), which
    // rightly fires when it sees the job, and its answer may land after the nudge's wake. With
    // the job gone, let every such wake land (until a whole wait passes without one) before
    // counting latched wakes.
    await env.sql.exec('DELETE FROM job');
    for (let i = 0; i < 20; i++) {
      const t = Date.now();
      await backend.queue.waitForWork(300);
      if (Date.now() - t >= 250) break;
    }

    await backend.store.postSignal(await env.run(), 'go', 1); // delivered: enqueues; nobody waits
    t0 = Date.now();
    await backend.queue.waitForWork(10_000);
    assert.ok(Date.now() - t0 < 500, `the latched wake returned in ${Date.now() - t0} ms`);

    // Nothing claimable is left (a listener that looks at the tables would rightly see the jobs).
    await env.sql.exec('DELETE FROM job');
    t0 = Date.now();
    await backend.queue.waitForWork(300);
    assert.ok(Date.now() - t0 >= 250, `the latch is used up: the next call waits (${Date.now() - t0} ms)`);

    const ac = new AbortController();
    t0 = Date.now();
    const aborted = backend.queue.waitForWork(10_000, ac.signal);
    ac.abort();
    await aborted;
    assert.ok(Date.now() - t0 < 500, 'an abort ends the wait');
  } finally {
    await listener.close();
    await env.close();
  }
  assert.equal(listener.state(), 'stopped');
});

test('argument checks', () => {
  const sql = { query: async () => [], exec: async () => ({}), tx: async (fn) => fn(sql) };
  assert.throws(() => m.createMysqlListener({}), { name: 'TypeError', message: /sql/ });
  assert.throws(() => m.createMysqlListener(sql, { intervalMs: 0 }), { name: 'RangeError', message: /intervalMs/ });
  assert.throws(() => m.createMysqlListener(sql, { prefix: 'a-b' }), /prefix|a-b/);
  assert.throws(() => m.createMysqlListener(sql, { names: 'x' }), { name: 'TypeError', message: /names/ });
  assert.throws(() => m.createMysqlListener(sql, { onError: 1 }), { name: 'TypeError', message: /onError/ });
  const l = m.createMysqlListener(sql);
  assert.throws(() => l.waitForWork('10'), { name: 'TypeError', message: /timeoutMs/ });
  assert.throws(() => l.waitForWork(10, {}), { name: 'TypeError', message: /signal/ });
  assert.throws(() => l.onProgress(1), { name: 'TypeError', message: /cb/ });
  assert.throws(() => m.createMysqlBackend(sql, { listener: {} }), { name: 'TypeError', message: /listener/ });
  const plain = m.createMysqlBackend(sql);
  assert.equal(plain.queue.waitForWork, undefined, 'no listener: no waitForWork');
});
