// Reliability 4 — crashed workers, many processes.
//
// 4 Node child processes (fixtures/worker.mjs) each claim and drive runs from one database with a
// 1500 ms lease: claim → loadRun → markRunning → 3 × checkpointStep → markTerminal → ack. One of
// them is SIGKILLed in the middle of a run (after its 2nd checkpoint, while holding further
// leases). Once its leases expire the survivors finish everything: every run is done exactly once
// (one acknowledged terminal write per run), has exactly 3 step rows, and nothing is left over.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { closeAdmin } from '../helpers/db.mjs';
import { createMysqlBackend, freshPool } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const WORKER = path.join(here, 'fixtures', 'worker.mjs');

const RUNS = 240;
const PROCS = 4;
const LEASE_MS = 1500;

after(closeAdmin);
let env;
before(async () => {
  env = await freshPool('rel_crash');
});
after(async () => env && env.close());

function startWorker(id, extraEnv) {
  const child = spawn(process.execPath, [WORKER], {
    env: {
      ...process.env,
      WORKER_URL: env.url,
      WORKER_ID: String(id),
      WORKER_TOTAL: String(RUNS),
      WORKER_LEASE: String(LEASE_MS),
      ...extraEnv,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const w = { id, child, lines: [], stderr: '', done: [], errors: [], mid: null };
  w.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  child.stderr.on('data', (d) => {
    w.stderr = (w.stderr + d).slice(-4000);
  });
  const rl = readline.createInterface({ input: child.stdout });
  w.closed = new Promise((resolve) => rl.once('close', resolve));
  rl.on('line', (line) => {
    w.lines.push(line);
    const [kind, a, b] = line.split(' ');
    if (kind === 'DONE') w.done.push({ runId: a, token: b });
    else if (kind === 'ERR') w.errors.push(line);
    else if (kind === 'MID') {
      w.mid = a;
      w.onMid?.(a);
    }
  });
  return w;
}

function timeout(p, ms, what) {
  let timer;
  return Promise.race([
    p,
    new Promise((_, rej) => {
      timer = setTimeout(() => rej(new Error(`${what}: no result within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

test(
  `${PROCS} worker processes, one SIGKILLed mid-run: every run done exactly once, none lost`,
  { timeout: 120_000 },
  async (t) => {
    const b = createMysqlBackend(env.sql);
    const specs = Array.from({ length: RUNS }, (_, i) => ({
      name: 'crash',
      version: 1,
      input: { i },
      idempotencyKey: `c${i}`,
    }));
    const created = await b.store.startManyRuns(specs);
    for (const r of created) await b.queue.enqueue(r.runId);
    const ids = created.map((r) => r.runId);

    const workers = [];
    const t0 = performance.now();
    let killedAt = 0;
    try {
      const victim = startWorker(0, { WORKER_HOLD: '6' });
      const midSeen = new Promise((resolve) => {
        victim.onMid = resolve;
      });
      workers.push(victim);
      for (let i = 1; i < PROCS; i++) workers.push(startWorker(i, {}));

      const midRun = await timeout(midSeen, 30_000, 'victim reaching the middle of its 6th run');
      victim.child.kill('SIGKILL');
      killedAt = performance.now();
      const vExit = await timeout(victim.exited, 10_000, 'victim exit');
      assert.equal(vExit.signal, 'SIGKILL');
      await victim.closed;

      // The survivors finish everything and exit on their own.
      for (const w of workers.slice(1)) {
        const r = await timeout(w.exited, 60_000, `worker ${w.id} exit`);
        await w.closed;
        assert.equal(r.code, 0, `worker ${w.id} exited cleanly: ${w.stderr}`);
      }
      const recoveredMs = performance.now() - killedAt;

      // ---- accounting -----------------------------------------------------------------------------
      const rows = await env.sql.query('SELECT id, status, attempts, output FROM `run`');
      assert.equal(rows.length, RUNS, 'no run lost or added');
      const notDone = rows.filter((r) => r.status !== 'done');
      assert.deepEqual(
        notDone.map((r) => [r.id, r.status]),
        [],
        'no run left non-terminal',
      );
      const bad = await env.sql.query('SELECT run_id, COUNT(*) AS n FROM `step` GROUP BY run_id HAVING COUNT(*) <> 3');
      assert.deepEqual(bad, [], 'exactly 3 checkpoint rows per run');
      const [{ n: stepRows }] = await env.sql.query('SELECT COUNT(*) AS n FROM `step`');
      assert.equal(Number(stepRows), 3 * RUNS);
      const [{ n: jobRows }] = await env.sql.query('SELECT COUNT(*) AS n FROM `job`');
      assert.equal(Number(jobRows), 0, 'every job acked');

      const doneBy = new Map();
      for (const w of workers)
        for (const d of w.done) doneBy.set(d.runId, [...(doneBy.get(d.runId) || []), { w: w.id, token: d.token }]);
      const outputs = new Map(rows.map((r) => [r.id, JSON.parse(r.output)]));
      for (const id of ids) {
        const list = doneBy.get(id) || [];
        assert.equal(list.length, 1, `run ${id} reached done ${list.length} times (${JSON.stringify(list)})`);
        assert.equal(outputs.get(id).token, list[0].token, `run ${id}: stored output is from the acknowledged write`);
      }
      // the run the victim was in the middle of was finished by a survivor, on a second attempt
      const midOwner = doneBy.get(midRun)[0];
      assert.notEqual(midOwner.w, 0, 'the interrupted run was finished by another process');
      const midRow = rows.find((r) => r.id === midRun);
      assert.ok(midRow.attempts >= 2, 'the interrupted run was re-driven (markRunning twice)');
      const midSteps = (await b.store.loadRun(midRun)).steps;
      assert.equal(
        midSteps.get('s0').result.token,
        midSteps.get('s1').result.token,
        's0/s1 kept from the killed attempt',
      );
      assert.notEqual(midSteps.get('s2').result.token, midSteps.get('s0').result.token, 's2 written by the survivor');

      const per = workers.map((w) => `w${w.id}:${w.done.length}`).join(' ');
      const errs = workers.reduce((n, w) => n + w.errors.length, 0);
      t.diagnostic(
        `crashed-workers: ${RUNS} runs, ${PROCS} processes, lease ${LEASE_MS} ms, 1 SIGKILL mid-run; done per process ${per}; ` +
          `recovered ${Math.round(recoveredMs)} ms after the kill; runs lost 0, done twice 0; worker call errors ${errs}; ` +
          `total ${Math.round(performance.now() - t0)} ms`,
      );
    } finally {
      for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
    }
  },
);
