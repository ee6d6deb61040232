// Reliability 6 — clean shutdown.
//
// close() waits for in-flight queries and then refuses new calls with a clear error; a process
// with an open pool and no pending work exits on its own; the addon works in worker_threads (two
// workers, each with its own pool) and the process still exits cleanly.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { closeAdmin } from '../helpers/db.mjs';
import { createMysqlBackend, freshPool, mysqlPool, settle, withParams } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixture = (name) => path.join(here, 'fixtures', name);

after(closeAdmin);
let env;
before(async () => {
  env = await freshPool('rel_shutdown');
});
after(async () => env && env.close());

/** Runs a fixture in a child process; resolves { code, signal, stdout, stderr, ms } or kills it after `ms`. */
function runChild(file, extraEnv, ms = 20_000) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [file], {
      env: { ...process.env, ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, ms);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, timedOut, ms: performance.now() - t0 });
    });
  });
}

async function assertClosedErrors(sql, b) {
  assert.equal(sql.closed, true);
  const calls = [
    ['query', () => sql.query('SELECT 1')],
    ['exec', () => sql.exec('DO 1')],
    ['tx', () => sql.tx(async () => 1)],
    ['store.startRun', () => b.store.startRun({ name: 'f', version: 1, input: 1 })],
    ['queue.claim', () => b.queue.claim({ limit: 1, leaseMs: 1000 })],
    ['timer.dueBatch', () => b.timer.dueBatch({ limit: 1 })],
  ];
  const messages = new Set();
  for (const [what, call] of calls) {
    const r = await settle(call());
    assert.equal(r.ok, false, `${what} after close() must reject`);
    // regression: backend port methods used to surface the driver's "Pool was disconnected."
    assert.match(r.error.message, /closed/i, `${what}: clear error: ${r.error.message}`);
    // At once: nothing is sent or waited for (a call that tried would wait acquireTimeoutMs, 10 s).
    assert.ok(r.ms < 5000, `${what}: rejects at once (${r.ms} ms)`);
    messages.add(r.error.message);
  }
  return [...messages];
}

/** Starts 10 slow queries, calls close() at once; returns the settled results and the time taken. */
async function tenSlowThenClose(sql) {
  const t0 = performance.now();
  const slow = Array.from({ length: 10 }, (_, i) => sql.query('SELECT SLEEP(0.2) AS s, ? AS i', [i]));
  const closing = sql.close();
  const results = await Promise.allSettled(slow);
  await closing;
  return { results, ms: performance.now() - t0 };
}

test(
  'after close(), every kind of call rejects at once with a clear error; close() is idempotent',
  { timeout: 30_000 },
  async (t) => {
    const sql = mysqlPool(env.url);
    const b = createMysqlBackend(sql);
    assert.equal(sql.closed, false);
    await b.store.runStats();
    await sql.close();
    const messages = await assertClosedErrors(sql, b);
    await sql.close(); // idempotent
    t.diagnostic(
      `shutdown: 6 kinds of calls after close() rejected at once: ${messages.map((m) => JSON.stringify(m)).join(' / ')}`,
    );
  },
);

test('close() waits for an open transaction, which commits', { timeout: 30_000 }, async () => {
  const sql = mysqlPool(env.url);
  const b = createMysqlBackend(sql);
  let release;
  const gate = new Promise((r) => {
    release = r;
  });
  const tx = sql.tx(async (h) => {
    await h.exec('INSERT INTO `cron` (name, schedule, flow_name, flow_version, next_run_at) VALUES (?, ?, ?, ?, ?)', [
      'shut',
      '* * * * *',
      'f',
      1,
      0,
    ]);
    await gate;
    return (await h.query('SELECT 2 AS x'))[0].x;
  });
  await new Promise((r) => setTimeout(r, 50));
  let closed = false;
  const closing = sql.close().then(() => {
    closed = true;
  });
  await new Promise((r) => setTimeout(r, 150));
  assert.equal(closed, false, 'close() is still waiting for the open transaction');
  release();
  assert.equal(Number(await tx), 2, 'the open transaction commits');
  await closing;
  assert.deepEqual(await env.sql.query("SELECT name FROM `cron` WHERE name = 'shut'"), [{ name: 'shut' }]);
  await assertClosedErrors(sql, b);
});

// regression: calls not yet holding a connection used to reject with "Pool was disconnected."
test('close() waits for 10 in-flight slow queries: all 10 resolve (5 rounds)', { timeout: 30_000 }, async (t) => {
  const failed = [];
  let ms = 0;
  for (let round = 0; round < 5; round++) {
    const sql = mysqlPool(env.url);
    if (round % 2) await sql.query('SELECT 1'); // warm pool in odd rounds
    const r = await tenSlowThenClose(sql);
    ms = Math.max(ms, r.ms);
    failed.push(...r.results.filter((x) => x.status === 'rejected').map((x) => x.reason.message));
    r.results.forEach((x, i) => x.status === 'fulfilled' && assert.equal(Number(x.value[0].i), i));
  }
  t.diagnostic(`shutdown: close() with 10 in-flight SLEEP(0.2) queries × 5 rounds: ${50 - failed.length}/50 resolved`);
  assert.deepEqual(failed, [], 'all 50 in-flight queries resolve');
  assert.ok(ms >= 150, 'close() did not cut the queries short');
});

test(
  'close() also lets calls still queued for a connection finish (connectionLimit 4), port calls included',
  { timeout: 30_000 },
  async () => {
    const sql = mysqlPool(withParams(env.url, { connectionLimit: 4 }));
    const b = createMysqlBackend(sql);
    const starts = Array.from({ length: 20 }, (_, i) => b.store.startRun({ name: 'queued', version: 1, input: i }));
    const { results } = await tenSlowThenClose(sql);
    assert.deepEqual(
      results.filter((r) => r.status === 'rejected').map((r) => r.reason.message),
      [],
    );
    const s = await Promise.allSettled(starts);
    assert.deepEqual(
      s.filter((r) => r.status === 'rejected').map((r) => r.reason.message),
      [],
    );
    const [{ n }] = await env.sql.query("SELECT COUNT(*) AS n FROM `run` WHERE name = 'queued'");
    assert.equal(Number(n), 20);
  },
);

test('a process with an open pool and no pending work exits on its own', { timeout: 60_000 }, async (t) => {
  const lines = [];
  for (const mode of ['unused', 'used', 'failed', 'closed']) {
    const r = await runChild(fixture('idle-exit.mjs'), { IDLE_URL: env.url, IDLE_MODE: mode }, 15_000);
    assert.equal(r.timedOut, false, `${mode}: the process exits on its own (it hung: ${r.stderr})`);
    assert.equal(r.code, 0, `${mode}: exit code 0: ${r.stderr}`);
    assert.match(r.stdout, /idle\n$/, `${mode}: ran to the end`);
    lines.push(`${mode} ${r.ms.toFixed(0)} ms`);
  }
  t.diagnostic(`shutdown: processes with an open pool exit on their own: ${lines.join(', ')}`);
});

test(
  'pending native calls alone keep the process alive; each settles with its own answer',
  { timeout: 60_000 },
  async (t) => {
    const lines = [];
    for (const [mode, expected] of [
      ['one', /^settled late\nclosed\n$/],
      ['burst', /^answers 2000\/2000 rejections 100\/100\nclosed\n$/],
    ]) {
      const r = await runChild(fixture('pending-alive.mjs'), { PENDING_URL: env.url, PENDING_MODE: mode }, 20_000);
      assert.equal(r.timedOut, false, `${mode}: the process exits on its own (it hung: ${r.stderr})`);
      assert.equal(r.code, 0, `${mode}: exit code 0: ${r.stderr}`);
      assert.match(r.stdout, expected, `${mode}: every call settled before the process exited`);
      lines.push(`${mode} ${r.ms.toFixed(0)} ms`);
    }
    t.diagnostic(`shutdown: processes held open by pending calls only: ${lines.join(', ')}`);
  },
);

test(
  'worker_threads: two workers with their own pools (+ one terminated mid-query) and the process exits cleanly',
  { timeout: 60_000 },
  async (t) => {
    const lines = [];
    for (const mode of ['close', 'leave', 'terminate']) {
      const r = await runChild(fixture('threads.mjs'), { THREADS_URL: env.url, THREADS_MODE: mode }, 20_000);
      assert.equal(r.timedOut, false, `${mode}: the process exits on its own (it hung: ${r.stderr})`);
      assert.equal(r.code, 0, `${mode}: exit code 0: ${r.stderr}`);
      assert.match(r.stdout, /^w1 w1 done w1$/m, `${mode}: worker 1 round trip`);
      assert.match(r.stdout, /^w2 w2 done w2$/m, `${mode}: worker 2 round trip`);
      assert.match(r.stdout, /^main main done main$/m);
      if (mode === 'terminate') {
        assert.match(r.stdout, /^terminated 1$/m);
        assert.match(
          r.stdout,
          /^after after done after$/m,
          'the addon still works after a worker was terminated mid-query',
        );
      }
      assert.match(r.stdout, /main done\n$/);
      lines.push(`${mode} ${r.ms.toFixed(0)} ms`);
    }
    const [{ n }] = await env.sql.query("SELECT COUNT(*) AS n FROM `run` WHERE name = 'thread' AND status = 'done'");
    assert.equal(Number(n), 10, 'every thread round trip committed');
    t.diagnostic(`shutdown: worker_threads (2 workers + main, each its own pool) exit cleanly: ${lines.join(', ')}`);
  },
);
