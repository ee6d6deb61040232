// The listener's own bookkeeping, on the real server: a throwing onProgress callback cannot cost
// a completion wake; `names: []` still probes; close() ends what is open and is bounded when the
// server goes silent; a second watcher gets the run's status at once; the first probe includes
// the first waiter's run; a watch() opened while the listener backs off keeps the process alive.
//
// Waits that must be ended by push are given a timeout far beyond the test's own bound
// (`settles` below), so a wake lost to a timeout cannot pass for a pushed one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import m from '../../index.js';
import { closeAdmin } from '../helpers/db.mjs';
import { startFaultProxy } from '../helpers/faultproxy.mjs';
import { pushDatabase, sleep } from './helpers.mjs';

const NEVER_MS = 120_000; // a wait timeout no test here reaches
const BOUND_MS = 10_000; // how long a test gives push to do what it must

test.after(closeAdmin);

/** True when `p` settles within `ms`. */
async function settles(p, ms = BOUND_MS) {
  let timer;
  const limit = new Promise((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([p.then(() => true), limit]);
  } finally {
    clearTimeout(timer);
  }
}

async function listening(listener) {
  listener.start();
  for (const end = Date.now() + BOUND_MS; listener.state() !== 'listening' && Date.now() < end; ) await sleep(5);
  assert.equal(listener.state(), 'listening');
}

/** A pool and a listener on `env`'s database, closed by `fn`'s end. */
async function withListener(env, opts, fn) {
  const sql = m.mysqlPool(env.db.url);
  const listener = m.createMysqlListener(sql, opts);
  try {
    await fn(listener);
  } finally {
    await listener.close();
    await sql.close();
  }
}

test('a throwing onProgress callback is reported; wakes and the watcher go on', { timeout: 60_000 }, async () => {
  const env = await pushDatabase('push_cb');
  const errors = [];
  try {
    await withListener(env, { intervalMs: 20, onError: (e) => errors.push(e) }, async (listener) => {
      const boom = new Error('from the callback');
      listener.onProgress(() => {
        throw boom;
      });
      await listening(listener);
      const [a, b] = [await env.run(), await env.run()];
      const waits = [listener.wakeup.wait(a, NEVER_MS), listener.wakeup.wait(b, NEVER_MS)];
      const watching = listener.watch(b);
      assert.equal((await watching.next()).value?.status, 'pending');
      await env.backend.store.markTerminal(a, { status: 'done', output: 1 });
      await env.backend.store.markTerminal(b, { status: 'done', output: 2 });
      assert.ok(await settles(Promise.all(waits)), 'both result() waiters were woken');
      assert.equal((await watching.next()).value?.status, 'done', 'the watch saw the end too');
      assert.equal(listener.state(), 'listening', "a callback's error is not the server's");
      assert.equal(errors.length, 4, 'onError heard of each throw: two runs, pending then done');
      assert.ok(
        errors.every((e) => e === boom),
        'onError got only the callback error',
      );
    });
  } finally {
    await env.close();
  }
});

test('names: [] probes without the job branch: completion push still works', { timeout: 60_000 }, async () => {
  const env = await pushDatabase('push_nonames');
  const errors = [];
  try {
    await withListener(env, { names: [], intervalMs: 20, onError: (e) => errors.push(e) }, async (listener) => {
      const runId = await env.run();
      await env.backend.queue.enqueue(runId);
      const waiting = listener.wakeup.wait(runId, NEVER_MS);
      await listening(listener);
      await env.backend.store.markTerminal(runId, { status: 'done', output: 1 });
      assert.ok(await settles(waiting), 'the result() waiter was woken');
      assert.equal(listener.state(), 'listening');
      assert.deepEqual(
        errors.map((e) => e.message),
        [],
      );
    });
  } finally {
    await env.close();
  }
});

test(
  'close() ends open watch() streams; a watch() after close() is ended; subscribers are dropped',
  {
    timeout: 60_000,
  },
  async () => {
    const env = await pushDatabase('push_close');
    try {
      await withListener(env, { intervalMs: 20 }, async (listener) => {
        const runId = await env.run();
        const heard = [];
        listener.onProgress((ev) => heard.push(ev.status));
        const open = listener.watch(runId);
        assert.equal((await open.next()).value?.status, 'pending');
        const pending = open.next();
        await listener.close();
        assert.ok(await settles(pending), 'the open stream ended at close()');
        assert.deepEqual(await pending, { value: undefined, done: true });
        const late = listener.watch(runId).next();
        assert.ok(await settles(late), 'a watch() after close() ends');
        assert.deepEqual(await late, { value: undefined, done: true });

        // Started again, the listener reports to whoever subscribes now, not to those of before.
        heard.length = 0;
        listener.start();
        const again = listener.watch(runId);
        assert.equal((await again.next()).value?.status, 'pending');
        await env.backend.store.markRunning(runId);
        assert.equal((await again.next()).value?.status, 'running');
        assert.deepEqual(heard, [], 'the subscriber of before close() is gone');
      });
    } finally {
      await env.close();
    }
  },
);

test('a second watcher of a run first gets its current status', { timeout: 60_000 }, async () => {
  const env = await pushDatabase('push_second');
  try {
    await withListener(env, { intervalMs: 20 }, async (listener) => {
      const runId = await env.run();
      const result = listener.wakeup.wait(runId, NEVER_MS); // result() holds the run
      const first = listener.watch(runId);
      assert.equal((await first.next()).value?.status, 'pending');
      const second = listener.watch(runId);
      await env.backend.store.markRunning(runId);
      const firstOfSecond = (await second.next()).value?.status;
      assert.equal(firstOfSecond, 'pending', 'the second watcher first got the status of when it began');
      assert.equal((await second.next()).value?.status, 'running');
      assert.equal((await first.next()).value?.status, 'running');
      await env.backend.store.markTerminal(runId, { status: 'done', output: 1 });
      assert.ok(await settles(result));
      const last = await Promise.all([first.next(), second.next()]);
      assert.deepEqual(
        last.map((r) => r.value?.status),
        ['done', 'done'],
      );
    });
  } finally {
    await env.close();
  }
});

test("the first probe includes the first waiter's run", { timeout: 60_000 }, async () => {
  const env = await pushDatabase('push_first');
  try {
    // No second probe within the test: only the first one can wake the waiter.
    await withListener(env, { intervalMs: 60_000 }, async (listener) => {
      const runId = await env.run();
      await env.backend.store.markTerminal(runId, { status: 'done', output: 1 });
      let woken = false;
      void listener.wakeup.wait(runId, NEVER_MS).then(() => (woken = true));
      for (const end = Date.now() + BOUND_MS; listener.state() !== 'listening' && Date.now() < end; ) await sleep(5);
      assert.equal(listener.state(), 'listening', 'the first probe has answered');
      await sleep(0);
      assert.ok(woken, 'the first probe saw the run finished and woke its waiter');
    });
  } finally {
    await env.close();
  }
});

test('close() is bounded while a probe hangs on a silent server', { timeout: 60_000 }, async (t) => {
  const env = await pushDatabase('push_silent');
  const server = new URL(env.db.url);
  const proxy = await startFaultProxy({ host: server.hostname, port: Number(server.port) });
  const url = new URL(env.db.url);
  url.host = `127.0.0.1:${proxy.port}`;
  url.searchParams.set('queryTimeoutMs', '0');
  const sql = m.mysqlPool(url.toString());
  const listener = m.createMysqlListener(sql, { intervalMs: 20 });
  try {
    await listening(listener);
    proxy.blackhole();
    await sleep(300); // a probe has been sent into the hole by now (one every 20 ms)
    const t0 = Date.now();
    const closing = listener.close();
    assert.ok(await settles(closing), 'close() returned though the probe never will');
    t.diagnostic(`close() returned after ${Date.now() - t0} ms`);
    assert.equal(listener.state(), 'stopped');
  } finally {
    proxy.heal();
    await listener.close();
    await sql.close();
    await proxy.close();
    await env.close();
  }
});

test('a watch() opened while the listener backs off keeps the process alive', { timeout: 60_000 }, async () => {
  const env = await pushDatabase('push_alive');
  const server = new URL(env.db.url);
  const proxy = await startFaultProxy({ host: server.hostname, port: Number(server.port) });
  try {
    const runId = await env.run();
    const url = new URL(env.db.url);
    url.host = `127.0.0.1:${proxy.port}`;
    // The child's first statement (its look at the server) fails: it then pauses 2 × 500 ms,
    // unref'd, and opens its watch.
    const hit = proxy.arm({ match: /SELECT VERSION\(\) AS v/, kind: 'reset-on-answer' });
    const child = spawn(process.execPath, [fileURLToPath(new URL('./fixtures/backoff-watch.mjs', import.meta.url))], {
      env: { ...process.env, PUSH_URL: url.toString(), PUSH_RUN: runId, PUSH_INTERVAL_MS: '500' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const code = await new Promise((resolve) => child.on('exit', (c, s) => resolve(c ?? s)));
    clearTimeout(killer);
    assert.ok(hit.hit, "the child's first probe was reset");
    assert.equal(code, 0, `the child waited for its stream (exit ${code}, printed ${JSON.stringify(out)})`);
    assert.equal(JSON.parse(out).status, 'pending');
  } finally {
    await proxy.close();
    await env.close();
  }
});
