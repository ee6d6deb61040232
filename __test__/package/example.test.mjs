// examples/run.mjs, run as users run it (`npm run example`), against a fresh database.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { closeAdmin, freshDatabase } from '../helpers/db.mjs';
import { closedPort } from '../helpers/sockets.mjs';

after(closeAdmin);

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function runExample(env, timeoutMs = 90_000) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(root, 'examples', 'run.mjs')], {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

test('examples/run.mjs finishes every run and exits 0', { timeout: 120_000 }, async () => {
  const db = await freshDatabase('example');
  try {
    const r = await runExample({ MYSQL_URL: db.url, RUNS: '20', SLEEP_MS: '300' });
    const out = `${r.stdout}\n${r.stderr}`;
    assert.equal(r.code, 0, `exit ${r.code} (signal ${r.signal}):\n${out}`);
    assert.match(r.stdout, /using the server named by MYSQL_URL/);
    assert.match(r.stdout, /re-submitted 5 keys: 0 created, 5 deduplicated/);
    assert.match(r.stdout, /tick \d+: .*→ .*\d+ slept/, 'runs slept on a durable timer');
    assert.match(r.stdout, /re-submitted order 1 after completion: created=false, status=done/);
    assert.doesNotMatch(r.stdout, /PROBLEM/);
    const m = r.stdout.match(
      /^summary: (\d+)\/(\d+) runs done, (\d+) steps stored \((\d+) checkpoint calls, (\d+) replayed from memo\), (\d+) ticks, (\d+) round trips, ([\d.]+) s$/m,
    );
    assert.ok(m, `no summary line:\n${out}`);
    const [, done, total, steps, checkpoints, memo, , roundTrips] = m.map(Number);
    assert.equal(total, 20);
    assert.equal(done, 20, 'all runs done');
    assert.equal(steps, 80, 'four steps per run');
    assert.equal(checkpoints, 80, 'each step checkpointed once');
    assert.equal(memo, 60, 'three steps per run replayed after the sleep');
    assert.ok(roundTrips > 0, 'round trips counted');
    // Credentials never reach the output (the test server's root has none; check the URL's shape).
    assert.doesNotMatch(r.stdout, /mysql:\/\//);
  } finally {
    await db.drop();
  }
});

test('examples/run.mjs: an unreachable server, a malformed URL and a missing database end in one line naming where and why', async () => {
  const port = await closedPort();
  const down = await runExample({ MYSQL_URL: `mysql://someone:Secret-Pw-7@127.0.0.1:${port}/shop` });
  assert.equal(down.code, 1);
  assert.equal(down.stderr.trim().split('\n').length, 1, `one line on stderr:\n${down.stderr}`);
  assert.match(
    down.stderr,
    new RegExp(`^example failed: cannot connect to 127\\.0\\.0\\.1:${port}/shop: .*refused.*\\n$`, 'i'),
  );
  assert.doesNotMatch(down.stderr + down.stdout, /Secret-Pw-7|\n\s+at |os error/);

  const bad = await runExample({ MYSQL_URL: 'mysql://someone@[::1/shop' });
  assert.equal(bad.code, 2);
  assert.match(
    bad.stderr,
    /^example: MYSQL_URL is not usable: the connection string is not a valid URL \(expected mysql:\/\/user:password@host:port\/database\)\n$/,
  );

  const scheme = await runExample({ MYSQL_URL: 'postgres://someone@localhost/shop' });
  assert.equal(scheme.code, 2);
  assert.match(
    scheme.stderr,
    /^example: MYSQL_URL is not usable: unsupported URL scheme "postgres:" \(use mysql:\/\/\)\n$/,
  );

  const db = await freshDatabase('example_nodb');
  await db.drop();
  const missing = await runExample({ MYSQL_URL: db.url });
  assert.equal(missing.code, 1);
  assert.equal(missing.stderr.trim().split('\n').length, 1, missing.stderr);
  assert.match(
    missing.stderr,
    new RegExp(`^example failed: a call failed on 127\\.0\\.0\\.1:\\d+/${db.database}: .*${db.database}`),
  );
});

/** Starts examples/<file>; `until(re)` resolves once its stdout matches, `exited` when it ends. */
function startExample(file, env, timeoutMs = 90_000) {
  const child = spawn(process.execPath, [path.join(root, 'examples', file)], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const h = { child, stdout: '', stderr: '' };
  const watchers = new Set();
  child.stdout.on('data', (d) => {
    h.stdout += d;
    for (const w of watchers) w();
  });
  child.stderr.on('data', (d) => (h.stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  h.exited = new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      for (const w of watchers) w();
      resolve({ code, signal });
    });
  });
  h.until = (re) =>
    new Promise((resolve, reject) => {
      const check = () => {
        if (re.test(h.stdout)) {
          watchers.delete(check);
          resolve();
        } else if (child.exitCode !== null || child.signalCode !== null) {
          watchers.delete(check);
          reject(new Error(`${file} ended before printing ${re}:\n${h.stdout}\n${h.stderr}`));
        }
      };
      watchers.add(check);
      check();
    });
  return h;
}

// The push pair: a worker whose idle wait grows to 8 × 2 s and a submitter that re-reads every
// 10 s, so a run reported done well inside one re-read was dispatched and heard of by push.
test(
  'examples/push-worker.mjs and push-submitter.mjs: runs finish, heard of by push',
  { timeout: 120_000 },
  async () => {
    const db = await freshDatabase('example_push');
    const RUNS = 3;
    const POLL_MS = 10_000;
    const worker = startExample('push-worker.mjs', { MYSQL_URL: db.url, TICK_MS: '2000', EXIT_AFTER: String(RUNS) });
    try {
      await worker.until(/worker: waiting for work \(push on/);
      const sub = startExample('push-submitter.mjs', {
        MYSQL_URL: db.url,
        RUNS: String(RUNS),
        POLL_MS: String(POLL_MS),
        PAUSE_MS: '500',
      });
      const s = await sub.exited;
      const w = await worker.exited;
      const out = `--- submitter\n${sub.stdout}${sub.stderr}\n--- worker\n${worker.stdout}${worker.stderr}`;
      assert.equal(s.code, 0, `submitter exit ${s.code} (signal ${s.signal}):\n${out}`);
      assert.equal(w.code, 0, `worker exit ${w.code} (signal ${w.signal}):\n${out}`);
      assert.match(sub.stdout, new RegExp(`submitter: ${RUNS}/${RUNS} runs done`), out);
      const lags = [...sub.stdout.matchAll(/done (\d+) ms after the submit: \{"greeting":"hello, run \d"\}/g)].map(
        (m) => Number(m[1]),
      );
      assert.equal(lags.length, RUNS, out);
      for (const ms of lags)
        assert.ok(ms < POLL_MS, `a run heard of ${ms} ms after its submit, not before a re-read:\n${out}`);
      assert.equal([...worker.stdout.matchAll(/worker: finished run /g)].length, RUNS, out);
      assert.doesNotMatch(out, /mysql:\/\//);
    } finally {
      worker.child.kill('SIGKILL');
      await db.drop();
    }
  },
);
