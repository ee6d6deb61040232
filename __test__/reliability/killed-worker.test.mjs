// Reliability — a worker process killed while its outbox call is on the wire leaves nothing or
// everything of the unit, never part of it.
//
// Each trial spawns a child (fixtures/kill-mid-call.mjs) with its own native pool, straight to the
// server (no proxy). It sends ONE call — alternately checkpointStep and markTerminal, each with an
// outbox, on rows the parent prepared — and SIGKILLs itself 0–3 ms later (seeded). The parent
// waits until the server has finished with the child's session (gone from PROCESSLIST), then
// reads every effect of the unit directly and classifies it.
//
// A unit with small values is done by an idle server within a fraction of a millisecond, mostly
// before the dying process's socket is even closed; so every other pair of trials carries a 1 MB
// value (step result / run output), which keeps the server busy with the unit — reading, parsing,
// writing it — for about as long as the kill window, as a loaded server would be.
//
// KILLED_TRIALS (default 160) sets the number of trials, KILLED_SEED the seed of the delays.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { adminQuery, closeAdmin } from '../helpers/db.mjs';
import { freshPool } from './helpers.mjs';
import { classify, runKilledChild, waitSessionGone } from './faults.mjs';
import { rngOf } from '../helpers/rng.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const CHILD = path.join(here, 'fixtures', 'kill-mid-call.mjs');
const TRIALS = Number(process.env.KILLED_TRIALS) || 160;
const SEED = Number(process.env.KILLED_SEED) || 0x5eed;
const MAX_DELAY_MS = 3;
const LARGE = 1 << 20;
const CHILD_BOUND_MS = 15_000;
const T = Date.parse('2030-01-01T00:00:00Z');

let env;
before(async () => {
  env = await freshPool('rel_killed');
});
after(async () => {
  if (env) await env.close();
  await closeAdmin();
});

/** Rows on the direct admin connection (database-qualified names). */
const q = async (text, params) => (await adminQuery(text, params))[0];

/** Runs the child to its death; resolves with its connection id and how it ended. */
const runChild = (trial) => runKilledChild(CHILD, { KW_URL: env.url, KW_TRIAL: JSON.stringify(trial) }, CHILD_BOUND_MS);

/** The rows of every trial, prepared up front so each trial only spawns and inspects. */
async function prepareAll(db, trials) {
  const t = (name) => `\`${db}\`.\`${name}\``;
  for (const tr of trials) {
    if (tr.method === 'checkpointStep') {
      await q(
        `INSERT INTO ${t('run')} (id, name, version, status, attempts, created_at) VALUES (?, 'parent', 1, 'running', 1, ?); ` +
          `INSERT INTO ${t('signal')} (id, run_id, name, payload) VALUES (?, ?, 'go', '1'), (?, ?, 'go', '2')`,
        [tr.parent, T, tr.sigs[0], tr.parent, tr.sigs[1], tr.parent],
      );
    } else {
      await q(
        `INSERT INTO ${t('run')} (id, name, version, status, attempts, created_at) VALUES (?, 'parent', 1, 'awaiting_child', 1, ?); ` +
          `INSERT INTO ${t('run')} (id, name, version, status, attempts, parent_run_id, parent_cursor_key, depth, created_at) VALUES (?, 'child', 1, 'running', 1, ?, 's0', 1, ?); ` +
          `INSERT INTO ${t('timer')} (run_id, fire_at) VALUES (?, ?)`,
        [tr.parent, T, tr.child, tr.parent, T, tr.child, T + tr.k],
      );
    }
  }
}

/** Every effect of the trial's unit: true applied, false not, anything else odd. */
async function inspect(db, tr) {
  const t = (name) => `\`${db}\`.\`${name}\``;
  if (tr.method === 'checkpointStep') {
    const [r] = await q(
      `SELECT (SELECT COUNT(*) FROM ${t('step')} WHERE run_id = ? AND cursor_key = 's0') AS step, ` +
        `(SELECT COUNT(*) FROM ${t('run')} WHERE id = ?) AS child, ` +
        `(SELECT COUNT(*) FROM ${t('job')} WHERE run_id = ?) AS childJob, ` +
        `(SELECT COUNT(*) FROM ${t('job')} WHERE run_id = ?) AS selfJob, ` +
        `(SELECT COUNT(*) FROM ${t('timer')} WHERE run_id = ?) AS timer, ` +
        `(SELECT COUNT(*) FROM ${t('signal')} WHERE id IN (?, ?)) AS signals, ` +
        `(SELECT join_remaining FROM ${t('run')} WHERE id = ?) AS joinRemaining`,
      [tr.parent, tr.child, tr.child, tr.parent, tr.parent, ...tr.sigs, tr.parent],
    );
    const signals = Number(r.signals);
    return {
      step: Number(r.step) === 1,
      spawn: Number(r.child) === 1,
      spawnEnqueued: Number(r.childJob) === 1,
      enqueue: Number(r.selfJob) === 1,
      timer: Number(r.timer) === 1,
      consumeSignals: signals === 0 ? true : signals === 2 ? false : `${signals} of 2 left`,
      joinTarget: Number(r.joinRemaining) === 1,
    };
  }
  const [r] = await q(
    `SELECT (SELECT status FROM ${t('run')} WHERE id = ?) AS status, (SELECT output FROM ${t('run')} WHERE id = ?) AS output, ` +
      `(SELECT COUNT(*) FROM ${t('job')} WHERE run_id = ?) AS parentJob, (SELECT COUNT(*) FROM ${t('timer')} WHERE run_id = ?) AS timer`,
    [tr.child, tr.child, tr.parent, tr.child],
  );
  const done = r.status === 'done' && r.output !== null && JSON.parse(r.output).k === tr.k;
  return {
    terminal: done
      ? true
      : r.status === 'running' && r.output === null
        ? false
        : `status ${r.status}, output ${r.output}`,
    enqueue: Number(r.parentJob) === 1,
    cancelTimers: Number(r.timer) === 0,
  };
}

test(
  `a worker SIGKILLed 0–${MAX_DELAY_MS} ms after sending an outbox call leaves nothing or everything (${TRIALS} trials)`,
  { timeout: 180_000 },
  async (t) => {
    const db = env.db.database;
    const rng = rngOf(SEED);
    const trials = Array.from({ length: TRIALS }, (_, i) => ({
      method: i % 2 === 0 ? 'checkpointStep' : 'markTerminal',
      k: i + 1,
      parent: `p${i + 1}`,
      child: `c${i + 1}`,
      sigs: [`g${i + 1}a`, `g${i + 1}b`],
      padBytes: i % 4 >= 2 ? LARGE : 0,
      delayMs: Math.round(rng() * MAX_DELAY_MS * 1000) / 1000,
    }));
    await prepareAll(db, trials);

    const t0 = performance.now();
    const fig = new Map(); // `${method} ${bucket}` -> { committed, rolledBack, partial }
    const problems = [];
    const partials = [];
    let maxGoneMs = 0;
    for (const tr of trials) {
      const res = await runChild(tr);
      if (res.signal !== 'SIGKILL' || res.connId === null) {
        problems.push(
          `trial ${tr.k}: the child ended with ${res.signal || `exit ${res.code}`} before/without its call: ${res.stderr.trim().split('\n').pop()}`,
        );
        continue;
      }
      try {
        maxGoneMs = Math.max(maxGoneMs, await waitSessionGone(q, { threadId: res.connId }));
      } catch (e) {
        problems.push(`trial ${tr.k}: ${e.message}`);
        continue;
      }
      const parts = await inspect(db, tr);
      const state = classify(parts);
      const ms = Math.min(MAX_DELAY_MS - 1, Math.floor(tr.delayMs));
      const key = `${tr.method}, ${tr.padBytes ? '1 MB value' : 'small values'}, killed ${ms}–${ms + 1} ms after the call`;
      if (!fig.has(key)) fig.set(key, { committed: 0, rolledBack: 0, partial: 0 });
      fig.get(key)[state]++;
      if (state === 'partial') {
        const applied = Object.entries(parts)
          .filter(([, v]) => v === true)
          .map(([n]) => n);
        partials.push(
          `trial ${tr.k} (${tr.method}${tr.padBytes ? ', 1 MB value' : ''}, killed after ${tr.delayMs} ms): applied only [${applied.join(', ')}]`,
        );
      }
    }
    const elapsed = Math.round(performance.now() - t0);

    const sum = (s) => [...fig.values()].reduce((n, f) => n + f[s], 0);
    t.diagnostic(
      `killed-worker: ${TRIALS} trials (seed ${SEED}; half with a 1 MB value), SIGKILL 0–${MAX_DELAY_MS} ms after the call; ` +
        `committed-whole ${sum('committed')}, rolled-back-whole ${sum('rolledBack')}, partial ${sum('partial')}; ` +
        `server done with a session ≤ ${Math.round(maxGoneMs)} ms after the kill; ${elapsed} ms`,
    );
    for (const [key, f] of [...fig].sort()) {
      t.diagnostic(`  ${key}: committed-whole ${f.committed}, rolled-back-whole ${f.rolledBack}, partial ${f.partial}`);
    }
    for (const p of partials.slice(0, 6)) t.diagnostic(`  e.g. ${p}`);
    for (const p of problems.slice(0, 6)) t.diagnostic(`  problem: ${p}`);

    assert.equal(
      sum('partial'),
      0,
      `units left half-applied by a killed worker: ${partials.length} (${partials.slice(0, 3).join('; ')})`,
    );
    assert.deepEqual(problems, [], 'every child died by SIGKILL with its call sent, and the server ended its session');
    assert.ok(sum('rolledBack') > 0 || sum('committed') > 0, 'trials were classified');
  },
);
