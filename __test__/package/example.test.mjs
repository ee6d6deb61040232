// examples/run.mjs, run as users run it (`npm run example`), against a fresh database.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { closeAdmin, freshDatabase } from '../helpers/db.mjs';

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
