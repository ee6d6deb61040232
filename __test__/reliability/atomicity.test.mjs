// Reliability — every transactional unit of work is all-or-nothing when its connection is lost.
//
// A fault proxy (helpers/faultproxy.mjs) sits between a small native pool and the server. For
// each transactional port method (and a user `sql.tx`) we run many trials; each trial prepares
// fresh rows with a direct connection, arms ONE fault for the packet carrying the unit's
// guarding write — or, in other trials (seeded coin), for its `COMMIT` — and makes the call:
//   reset-after-send  the whole request reaches the server, then both sides get an RST
//   reset-on-answer   the request reaches the server, the RST comes as its answer starts
//   cut-mid-request   only part of the request reaches the server, then the RST
//   delay             the answer is held for a while (the call must succeed)
// After the call settles (bounded) we wait until the server has finished with the faulted
// session (it is gone from PROCESSLIST), then read the database directly (mysql2, not through the
// proxy) and classify the unit: committed whole, rolled back whole, or partial — which must never
// happen. A call that resolved must have committed whole, and the next call through the same pool
// must succeed.
//
// ATOMICITY_TRIALS (default 100) sets the trials per fault kind and method, ATOMICITY_SEED the
// seed of the target coin, cut points and delays (printed, to replay a failure).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import mysql from 'mysql2/promise';
import { closeAdmin, freshDatabase, serverUrl } from '../helpers/db.mjs';
import { startFaultProxy } from '../helpers/faultproxy.mjs';
import { applySchema, createMysqlBackend, mysqlPool, settle, sleep, withParams, within } from './helpers.mjs';
import { rngOf } from '../helpers/rng.mjs';

const TRIALS = Number(process.env.ATOMICITY_TRIALS) || 100;
const DELAY_TRIALS = Math.min(10, Math.max(4, Math.ceil(TRIALS / 5)));
const SEED = Number(process.env.ATOMICITY_SEED) || 0x1f2e3d;
const RESET_KINDS = ['reset-after-send', 'reset-on-answer', 'cut-mid-request'];
const QUERY_TIMEOUT_MS = 5000;
const CALL_BOUND_MS = QUERY_TIMEOUT_MS + 3000; // a reset rejects at once; this only catches hangs
const SESSION_GONE_MS = 10_000;
const MAX_HUNG = 3; // stop a method's trials after this many calls that never settled
// Every statement the native pool sends starts with its process-list tag (a comment).
const COMMIT = /^\s*(\/\*[^*]*\*\/\s*)?COMMIT\b/i;
const T = Date.parse('2030-01-01T00:00:00Z');

let proxy;
before(async () => {
  const u = new URL(serverUrl());
  proxy = await startFaultProxy({
    host: u.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1',
    port: Number(u.port) || 3306,
  });
});
after(async () => {
  if (proxy) await proxy.close();
  await closeAdmin();
});

function seedFor(label) {
  let h = SEED >>> 0;
  for (const ch of label) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  return h;
}

/**
 * A fresh database, a native pool on it THROUGH the proxy and a direct mysql2 connection to it.
 * `q(text, params)` runs SQL on the direct connection and returns the rows.
 */
async function openEnv(label, params = {}) {
  const db = await freshDatabase(`atom_${label}`);
  const viaProxy = new URL(db.url);
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String(proxy.port);
  const url = withParams(viaProxy.toString(), {
    connectionLimit: 2,
    acquireTimeoutMs: 3000,
    queryTimeoutMs: QUERY_TIMEOUT_MS,
    ...params,
  });
  const sql = mysqlPool(url);
  await applySchema(sql);
  const direct = await mysql.createConnection({ uri: db.url, multipleStatements: true });
  const q = async (text, values) => (await direct.query(text, values))[0];
  return {
    db,
    sql,
    b: createMysqlBackend(sql),
    q,
    async close() {
      // A call stuck on a faulted connection would keep close() waiting: then reset them all.
      const closed = await settle(within(sql.close(), 2000, 'sql.close()'));
      if (!closed.ok) {
        proxy.dropAll();
        await within(sql.close(), 10_000, 'sql.close()').catch(() => {});
      }
      await direct.end().catch(() => {});
      await db.drop();
    },
  };
}

/**
 * Waits until the server has finished with a proxied session (`hit` from the proxy: its server
 * thread id, or else its outbound port, which PROCESSLIST shows as HOST `127.0.0.1:<port>`).
 * Returns the ms it took.
 */
async function waitSessionGone(q, hit) {
  const [where, arg] =
    hit.threadId !== null ? ['ID = ?', hit.threadId] : ["HOST LIKE CONCAT('%:', ?)", hit.upstreamPort];
  const t0 = performance.now();
  while (performance.now() - t0 < SESSION_GONE_MS) {
    const [{ n }] = await q(`SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE ${where}`, [arg]);
    if (Number(n) === 0) return performance.now() - t0;
    await sleep(5);
  }
  throw new Error(
    `server session ${hit.threadId ?? `from port ${hit.upstreamPort}`} still there after ${SESSION_GONE_MS} ms`,
  );
}

/** `parts` maps each effect of the unit to true (applied) / false (not applied) / anything else (odd). */
function classify(parts) {
  const v = Object.values(parts);
  if (v.every((x) => x === true)) return 'committed';
  if (v.every((x) => x === false)) return 'rolledBack';
  return 'partial';
}

/** 0 of n rows left ⇒ applied (deleted/consumed); all n ⇒ not; anything between is odd. */
const gone = (left, n) => (left === 0 ? true : left === n ? false : `${left} of ${n} left`);

// ---- the units ---------------------------------------------------------------------------------
//
// Each unit: `write` matches the request carrying its guarding write (or, for two-round-trip
// units, its writes); `prepare(q, k)` makes the rows trial k needs; `call(env, ctx)` is the one
// call under test; `inspect(q, ctx)` reads every effect of the unit; `verify(q, ctx, value)`
// lists problems with a resolved call's answer.

const units = [
  {
    name: 'checkpointStep+outbox',
    write: /INSERT IGNORE INTO `step`/,
    async prepare(q, k) {
      const ctx = { parent: `p${k}`, child: `c${k}`, sigs: [`g${k}a`, `g${k}b`], k };
      await q(
        "INSERT INTO `run` (id, name, version, status, attempts, created_at) VALUES (?, 'parent', 1, 'running', 1, ?); " +
          "INSERT INTO `signal` (id, run_id, name, payload) VALUES (?, ?, 'go', '1'), (?, ?, 'go', '2')",
        [ctx.parent, T, ctx.sigs[0], ctx.parent, ctx.sigs[1], ctx.parent],
      );
      return ctx;
    },
    call({ b }, ctx) {
      return b.store.checkpointStep(
        { runId: ctx.parent, cursorKey: 's0', status: 'ok', result: { k: ctx.k }, attempts: 1 },
        {
          spawn: [
            {
              runId: ctx.child,
              spec: {
                name: 'child',
                version: 1,
                input: { k: ctx.k },
                parentRunId: ctx.parent,
                parentCursorKey: 's0',
                depth: 1,
              },
            },
          ],
          enqueue: [{ runId: ctx.parent }],
          timers: [{ runId: ctx.parent, fireAt: new Date(T + ctx.k) }],
          consumeSignals: ctx.sigs,
          joinTarget: { runId: ctx.parent, count: 1 },
        },
      );
    },
    async inspect(q, ctx) {
      const [r] = await q(
        "SELECT (SELECT COUNT(*) FROM `step` WHERE run_id = ? AND cursor_key = 's0') AS step, " +
          '(SELECT COUNT(*) FROM `run` WHERE id = ?) AS child, ' +
          '(SELECT COUNT(*) FROM `job` WHERE run_id = ?) AS childJob, ' +
          '(SELECT COUNT(*) FROM `job` WHERE run_id = ?) AS selfJob, ' +
          '(SELECT COUNT(*) FROM `timer` WHERE run_id = ?) AS timer, ' +
          '(SELECT COUNT(*) FROM `signal` WHERE id IN (?, ?)) AS signals, ' +
          '(SELECT join_remaining FROM `run` WHERE id = ?) AS joinRemaining',
        [ctx.parent, ctx.child, ctx.child, ctx.parent, ctx.parent, ...ctx.sigs, ctx.parent],
      );
      return {
        step: Number(r.step) === 1,
        spawn: Number(r.child) === 1,
        spawnEnqueued: Number(r.childJob) === 1,
        enqueue: Number(r.selfJob) === 1,
        timer: Number(r.timer) === 1,
        consumeSignals: gone(Number(r.signals), 2),
        joinTarget: Number(r.joinRemaining) === 1,
      };
    },
    verify(q, ctx, v) {
      return v && v.status === 'ok' && v.result && v.result.k === ctx.k ? [] : [`answered ${JSON.stringify(v)}`];
    },
  },
  {
    name: 'markTerminal+outbox',
    write: /UPDATE `run`[^;]* SET status = 'done'/,
    async prepare(q, k) {
      const ctx = { parent: `p${k}`, child: `c${k}`, k };
      await q(
        "INSERT INTO `run` (id, name, version, status, attempts, created_at) VALUES (?, 'parent', 1, 'awaiting_child', 1, ?); " +
          "INSERT INTO `run` (id, name, version, status, attempts, parent_run_id, parent_cursor_key, depth, created_at) VALUES (?, 'child', 1, 'running', 1, ?, 's0', 1, ?); " +
          'INSERT INTO `timer` (run_id, fire_at) VALUES (?, ?)',
        [ctx.parent, T, ctx.child, ctx.parent, T, ctx.child, T + k],
      );
      return ctx;
    },
    call({ b }, ctx) {
      return b.store.markTerminal(
        ctx.child,
        { status: 'done', output: { k: ctx.k } },
        { enqueue: [{ runId: ctx.parent }], cancelTimers: [ctx.child] },
      );
    },
    async inspect(q, ctx) {
      const [r] = await q(
        'SELECT (SELECT status FROM `run` WHERE id = ?) AS status, (SELECT output FROM `run` WHERE id = ?) AS output, ' +
          '(SELECT COUNT(*) FROM `job` WHERE run_id = ?) AS parentJob, (SELECT COUNT(*) FROM `timer` WHERE run_id = ?) AS timer',
        [ctx.child, ctx.child, ctx.parent, ctx.child],
      );
      const done = r.status === 'done' && r.output === JSON.stringify({ k: ctx.k });
      return {
        terminal: done
          ? true
          : r.status === 'running' && r.output === null
            ? false
            : `status ${r.status}, output ${r.output}`,
        enqueue: Number(r.parentJob) === 1,
        cancelTimers: gone(Number(r.timer), 1),
      };
    },
  },
  {
    name: 'suspendRun+timer',
    write: /UPDATE `run`[^;]* SET status = 'sleeping'/,
    async prepare(q, k) {
      const ctx = { run: `r${k}`, k };
      await q(
        "INSERT INTO `run` (id, name, version, status, attempts, created_at) VALUES (?, 'f', 1, 'running', 2, ?)",
        [ctx.run, T],
      );
      return ctx;
    },
    call({ b }, ctx) {
      return b.store.suspendRun(ctx.run, 'sleeping', {
        timers: [{ runId: ctx.run, fireAt: new Date(T + 5000 + ctx.k) }],
      });
    },
    async inspect(q, ctx) {
      const [r] = await q(
        'SELECT status, attempts, (SELECT COUNT(*) FROM `timer` WHERE run_id = ? AND fire_at = ?) AS timer FROM `run` WHERE id = ?',
        [ctx.run, T + 5000 + ctx.k, ctx.run],
      );
      const st = `${r.status}/${r.attempts}`;
      return { suspended: st === 'sleeping/0' ? true : st === 'running/2' ? false : st, timer: Number(r.timer) === 1 };
    },
  },
  {
    name: 'postSignal',
    write: /INSERT IGNORE INTO `signal`/,
    async prepare(q, k) {
      const ctx = { run: `r${k}`, k };
      await q(
        "INSERT INTO `run` (id, name, version, status, attempts, created_at) VALUES (?, 'f', 1, 'awaiting_signal', 1, ?)",
        [ctx.run, T],
      );
      return ctx;
    },
    call({ b }, ctx) {
      return b.store.postSignal(ctx.run, 'go', { k: ctx.k }, { idempotencyKey: `key${ctx.k}` });
    },
    async inspect(q, ctx) {
      const [r] = await q(
        'SELECT (SELECT COUNT(*) FROM `signal` WHERE run_id = ?) AS sig, (SELECT COUNT(*) FROM `job` WHERE run_id = ?) AS job',
        [ctx.run, ctx.run],
      );
      return { signal: Number(r.sig) === 1, enqueue: Number(r.job) === 1 };
    },
    verify(q, ctx, v) {
      return v && v.delivered === true ? [] : [`answered ${JSON.stringify(v)}`];
    },
  },
  {
    name: 'startManyRuns',
    write: /INTO `run`/,
    async prepare(q, k) {
      return { name: `many${k}`, k };
    },
    call({ b }, ctx) {
      // Versions tell the specs apart; every other one has an idempotency key (two statements).
      const specs = Array.from({ length: 5 }, (_, i) => ({
        name: ctx.name,
        version: i + 1,
        input: { i },
        ...(i % 2 === 0 ? { idempotencyKey: `${ctx.name}-${i}` } : {}),
      }));
      return b.store.startManyRuns(specs);
    },
    async inspect(q, ctx) {
      // exactly one row per spec: a second one would be a unit applied twice
      const rows = await q('SELECT version, COUNT(*) AS n FROM `run` WHERE name = ? GROUP BY version', [ctx.name]);
      const have = new Map(rows.map((r) => [Number(r.version), Number(r.n)]));
      return Object.fromEntries(
        [1, 2, 3, 4, 5].map((v) => {
          const n = have.get(v) || 0;
          return [`spec${v}`, n === 0 ? false : n === 1 ? true : `${n} rows`];
        }),
      );
    },
    async verify(q, ctx, v) {
      if (!Array.isArray(v) || v.length !== 5 || !v.every((x) => x.created)) return [`answered ${JSON.stringify(v)}`];
      const rows = await q('SELECT id FROM `run` WHERE id IN (?)', [v.map((x) => x.runId)]);
      return rows.length === 5 ? [] : [`${rows.length} of the 5 returned run ids exist`];
    },
  },
  {
    name: 'retryRun',
    write: /UPDATE `run`[^;]* SET status = 'pending'/,
    async prepare(q, k) {
      const ctx = { run: `r${k}`, k };
      await q(
        "INSERT INTO `run` (id, name, version, status, error, attempts, created_at) VALUES (?, 'f', 1, 'failed', '\"boom\"', 3, ?)",
        [ctx.run, T],
      );
      return ctx;
    },
    call({ b }, ctx) {
      return b.store.retryRun(ctx.run);
    },
    async inspect(q, ctx) {
      const [r] = await q(
        'SELECT status, error, (SELECT COUNT(*) FROM `job` WHERE run_id = ?) AS job FROM `run` WHERE id = ?',
        [ctx.run, ctx.run],
      );
      const st = `${r.status}/${r.error}`;
      return {
        pending: st === 'pending/null' ? true : st === 'failed/"boom"' ? false : st,
        enqueue: Number(r.job) === 1,
      };
    },
    verify(q, ctx, v) {
      return v && v.retried === true ? [] : [`answered ${JSON.stringify(v)}`];
    },
  },
  {
    name: 'deleteRunsOlderThan',
    write: /DELETE FROM `step`/,
    // Trial k's runs are older than every earlier trial's, and `before` sits just above them, so
    // a call only ever picks this trial's runs (runs left by a rolled-back trial are newer).
    async prepare(q, k) {
      const createdAt = T - 10 * k;
      const ctx = { runs: [`d${k}a`, `d${k}b`], before: new Date(createdAt + 5), k };
      for (const [i, id] of ctx.runs.entries()) {
        await q(
          "INSERT INTO `run` (id, name, version, status, attempts, created_at) VALUES (?, 'old', 1, ?, 1, ?); " +
            "INSERT INTO `step` (run_id, cursor_key, status, attempts) VALUES (?, 's0', 'ok', 1), (?, 's1', 'ok', 1); " +
            "INSERT INTO `signal` (id, run_id, name) VALUES (?, ?, 'go'); " +
            'INSERT INTO `job` (run_id, run_at, version) VALUES (?, ?, 1); ' +
            'INSERT INTO `timer` (run_id, fire_at) VALUES (?, ?)',
          [id, i === 0 ? 'done' : 'failed', createdAt, id, id, `${id}-sig`, id, id, T, id, T],
        );
      }
      return ctx;
    },
    call({ b }, ctx) {
      return b.store.deleteRunsOlderThan(ctx.before, 100);
    },
    async inspect(q, ctx) {
      const parts = {};
      for (const id of ctx.runs) {
        const [r] = await q(
          'SELECT (SELECT COUNT(*) FROM `run` WHERE id = ?) AS run, (SELECT COUNT(*) FROM `step` WHERE run_id = ?) AS step, ' +
            '(SELECT COUNT(*) FROM `signal` WHERE run_id = ?) AS sig, (SELECT COUNT(*) FROM `job` WHERE run_id = ?) AS job, ' +
            '(SELECT COUNT(*) FROM `timer` WHERE run_id = ?) AS timer',
          [id, id, id, id, id],
        );
        parts[`${id}.run`] = gone(Number(r.run), 1);
        parts[`${id}.steps`] = gone(Number(r.step), 2);
        parts[`${id}.signal`] = gone(Number(r.sig), 1);
        parts[`${id}.job`] = gone(Number(r.job), 1);
        parts[`${id}.timer`] = gone(Number(r.timer), 1);
      }
      return parts;
    },
    verify(q, ctx, v) {
      return v === 2 ? [] : [`answered ${JSON.stringify(v)}`];
    },
  },
  {
    name: 'claim',
    write: /UPDATE `job` SET lease_token/,
    // Only this trial's three jobs are in the table, so the claim leases exactly them.
    async prepare(q, k) {
      const ctx = { jobs: [0, 1, 2].map((i) => `j${k}-${i}`), k };
      await q('DELETE FROM `job`; INSERT INTO `job` (run_id, run_at, priority, version) VALUES ?', [
        ctx.jobs.map((id) => [id, 0, 0, 1]),
      ]);
      return ctx;
    },
    call({ b }, ctx) {
      return b.queue.claim({ limit: 3, leaseMs: 600_000 });
    },
    async inspect(q, ctx) {
      const rows = await q('SELECT run_id, lease_token, lease_expires FROM `job` WHERE run_id IN (?)', [ctx.jobs]);
      const parts = Object.fromEntries(
        ctx.jobs.map((id) => [id, rows.some((r) => r.run_id === id && r.lease_token !== null)]),
      );
      // leased together, by one claim: one expiry for all
      const expiries = new Set(rows.filter((r) => r.lease_token !== null).map((r) => String(r.lease_expires)));
      if (expiries.size > 1) parts.oneClaim = `${expiries.size} different lease expiries`;
      return parts;
    },
    async verify(q, ctx, v) {
      if (!Array.isArray(v) || v.length !== 3) return [`answered ${JSON.stringify(v)}`];
      const rows = await q('SELECT run_id, lease_token FROM `job` WHERE run_id IN (?)', [ctx.jobs]);
      const held = new Map(rows.map((r) => [r.run_id, r.lease_token]));
      return v
        .filter((l) => held.get(l.runId) !== l.token)
        .map((l) => `lease of ${l.runId} (${l.token}) is not in the table (${held.get(l.runId)})`);
    },
  },
  {
    name: 'sql.tx(two inserts)',
    write: /INSERT INTO tx_pair[^;]*'b'/,
    async init(q) {
      await q(
        'CREATE TABLE tx_pair (trial INT NOT NULL, side CHAR(1) NOT NULL, PRIMARY KEY (trial, side)) ENGINE=InnoDB',
      );
    },
    async prepare(q, k) {
      return { k };
    },
    call({ sql }, ctx) {
      return sql.tx(async (h) => {
        await h.exec('INSERT INTO tx_pair (trial, side) VALUES (?, ?)', [ctx.k, 'a']);
        await h.exec('INSERT INTO tx_pair (trial, side) VALUES (?, ?)', [ctx.k, 'b']);
        return 'ok';
      });
    },
    async inspect(q, ctx) {
      const rows = await q('SELECT side FROM tx_pair WHERE trial = ?', [ctx.k]);
      return { a: rows.some((r) => r.side === 'a'), b: rows.some((r) => r.side === 'b') };
    },
  },
];

function newFigures() {
  return {
    trials: 0,
    fired: 0,
    write: 0,
    commit: 0,
    committed: 0,
    rolledBack: 0,
    partial: 0,
    rejected: 0,
    resolvedNotWhole: 0,
    badAnswers: 0,
    recoveryFailed: 0,
    hung: 0,
    lingering: 0,
    unfired: 0,
    maxSettleMs: 0,
    maxGoneMs: 0,
    examples: [],
    errors: new Map(),
  };
}

function note(fig, line) {
  if (fig.examples.length < 4) fig.examples.push(line);
}

/** One trial: prepare, arm, call (bounded), wait for the session, inspect, check recovery. */
async function trial(env, unit, fig, { k, kind, target, rng }) {
  const ctx = await unit.prepare(env.q, k);
  const arm = { match: target === 'commit' ? COMMIT : unit.write, kind };
  if (kind === 'delay') arm.delayMs = 20 + Math.floor(rng() * 180);
  if (kind === 'cut-mid-request') arm.cutAt = rng();
  const h = proxy.arm(arm);
  const r = await settle(within(unit.call(env, ctx), CALL_BOUND_MS, `${unit.name} under ${kind}`));
  h.cancel();
  fig.trials++;
  fig[target]++;
  fig.maxSettleMs = Math.max(fig.maxSettleMs, r.ms);
  const hung = !r.ok && /did not settle/.test(r.error.message);
  if (hung) {
    fig.hung++;
    note(fig, `k=${k} ${target}: the call did not settle within ${CALL_BOUND_MS} ms`);
  }
  if (h.hit) {
    fig.fired++;
    // A delayed session stays healthy in the pool; a reset one must be ended by the server.
    if (kind !== 'delay') {
      try {
        fig.maxGoneMs = Math.max(fig.maxGoneMs, await waitSessionGone(env.q, h.hit));
      } catch (e) {
        fig.lingering++;
        note(fig, `k=${k} ${target}: ${e.message}`);
      }
    }
  } else {
    fig.unfired++;
  }
  if (!r.ok) {
    fig.rejected++;
    const kindOf = String(r.error.message).replace(/\d+/g, 'N').slice(0, 90);
    fig.errors.set(kindOf, (fig.errors.get(kindOf) || 0) + 1);
  }
  const parts = await unit.inspect(env.q, ctx);
  const state = classify(parts);
  fig[state]++;
  if (state === 'partial') {
    const applied = Object.entries(parts)
      .filter(([, v]) => v === true)
      .map(([n]) => n);
    const odd = Object.entries(parts)
      .filter(([, v]) => v !== true && v !== false)
      .map(([n, v]) => `${n}: ${v}`);
    note(
      fig,
      `k=${k} ${target}${h.hit ? '' : ' (not fired)'}: partial, applied only [${applied.join(', ')}]${odd.length ? `, odd [${odd.join('; ')}]` : ''} (call ${r.ok ? 'resolved' : 'rejected'})`,
    );
  }
  if (r.ok) {
    if (state !== 'committed') {
      fig.resolvedNotWhole++;
      note(fig, `k=${k} ${target}: the call resolved but the unit is ${state}`);
    }
    const problems = unit.verify ? await unit.verify(env.q, ctx, r.value) : [];
    if (problems.length) {
      fig.badAnswers++;
      note(fig, `k=${k} ${target}: ${problems.join('; ')}`);
    }
  }
  // the pool recovers: the next call through it succeeds
  const rec = await settle(within(env.b.store.runStats(), CALL_BOUND_MS, 'the call after the fault'));
  if (!rec.ok) {
    fig.recoveryFailed++;
    note(fig, `k=${k} ${target}: the next call failed: ${rec.error.message}`);
  }
  return hung;
}

function report(t, unit, kind, f) {
  t.diagnostic(
    `atomicity/${unit.name}/${kind}: ${f.trials} trials (target write ${f.write} / COMMIT ${f.commit}; fired ${f.fired}), ` +
      `committed-whole ${f.committed}, rolled-back-whole ${f.rolledBack}, partial ${f.partial}, rejected ${f.rejected}` +
      `${f.resolvedNotWhole ? `, resolved-but-not-whole ${f.resolvedNotWhole}` : ''}${f.badAnswers ? `, bad answers ${f.badAnswers}` : ''}` +
      `${f.recoveryFailed ? `, next call failed ${f.recoveryFailed}` : ''}${f.hung ? `, hung ${f.hung}` : ''}` +
      `${f.lingering ? `, sessions lingering ${f.lingering}` : ''}; max settle ${Math.round(f.maxSettleMs)} ms` +
      `${kind === 'delay' ? '' : `, server done with the faulted session ≤ ${Math.round(f.maxGoneMs)} ms later`}`,
  );
  for (const [e, n] of f.errors) t.diagnostic(`  ${n} × ${e}`);
  for (const ex of f.examples) t.diagnostic(`  e.g. ${ex}`);
}

for (const unit of units) {
  test(
    `${unit.name} is all-or-nothing when its connection is reset (write or COMMIT packet)`,
    { timeout: 150_000 },
    async (t) => {
      const env = await openEnv(unit.name.replace(/[^a-z]+/gi, '_'));
      const figs = new Map();
      try {
        if (unit.init) await unit.init(env.q);
        const rng = rngOf(seedFor(unit.name));
        const plan = [...RESET_KINDS.flatMap((kind) => Array(TRIALS).fill(kind)), ...Array(DELAY_TRIALS).fill('delay')];
        let k = 0;
        let hung = 0;
        for (const kind of plan) {
          if (!figs.has(kind)) figs.set(kind, newFigures());
          k++;
          const target = rng() < 0.5 ? 'write' : 'commit';
          if (await trial(env, unit, figs.get(kind), { k, kind, target, rng })) hung++;
          if (hung >= MAX_HUNG) break;
        }
      } finally {
        await env.close();
      }
      t.diagnostic(
        `atomicity/${unit.name}: seed ${SEED}, ${TRIALS} trials per reset kind, ${DELAY_TRIALS} delay trials, pool of 2 through the proxy, queryTimeoutMs ${QUERY_TIMEOUT_MS}`,
      );
      for (const [kind, f] of figs) report(t, unit, kind, f);

      const total = (key) => [...figs.values()].reduce((n, f) => n + f[key], 0);
      const byKind = (key) => [...figs].map(([kind, f]) => `${kind} ${f[key]}`).join(', ');
      assert.equal(total('partial'), 0, `${unit.name}: units left half-applied (${byKind('partial')})`);
      assert.equal(total('resolvedNotWhole'), 0, `${unit.name}: calls that resolved without the unit committed whole`);
      assert.equal(total('badAnswers'), 0, `${unit.name}: resolved calls whose answer disagrees with the database`);
      assert.equal(total('hung'), 0, `${unit.name}: calls that never settled`);
      assert.equal(total('lingering'), 0, `${unit.name}: faulted server sessions that did not end`);
      assert.equal(
        total('recoveryFailed'),
        0,
        `${unit.name}: calls after a fault that failed (the pool did not recover)`,
      );
      assert.equal(
        total('unfired'),
        0,
        `${unit.name}: trials whose target packet was never sent (${byKind('unfired')}; a COMMIT folded into the unit's text cannot be targeted)`,
      );
      const delay = figs.get('delay');
      assert.equal(delay.rejected, 0, `${unit.name}: calls rejected under a mere delay`);
      assert.equal(delay.committed, delay.trials, `${unit.name}: delayed calls committed whole`);
      for (const kind of RESET_KINDS) assert.equal(figs.get(kind).trials, TRIALS, `${unit.name}: ${kind} trials run`);
    },
  );
}

test(
  'silent network: with queryTimeoutMs=500 calls reject in bounded time, and the pool recovers after heal()',
  { timeout: 90_000 },
  async (t) => {
    const QT = 500;
    const BOUND = 3000;
    const env = await openEnv('silent', { connectionLimit: 3, acquireTimeoutMs: 1000, queryTimeoutMs: QT });
    const { sql, b, q } = env;
    const lines = [];
    // Every rejection must be the package's own bound, not the test's `within`.
    const bounded = (what, r) => {
      assert.equal(r.ok, false, `${what} must not succeed while the network is silent`);
      assert.ok(
        !/did not settle/.test(r.error.message),
        `${what} did not settle within ${BOUND} ms (no query timeout?)`,
      );
      assert.ok(r.ms < BOUND, `${what} rejected after ${r.ms.toFixed(0)} ms`);
      lines.push(`${what} rejected after ${r.ms.toFixed(0)} ms (${String(r.error.message).slice(0, 70)})`);
    };
    try {
      // Three established connections, so the silence hits live sessions, not new ones.
      await Promise.all([0, 1, 2].map(() => sql.query('SELECT SLEEP(0.05)')));
      assert.ok(proxy.connections().length >= 3, 'the pool holds three proxied connections');
      const cp = units[0];
      const ctx = await cp.prepare(q, 1);

      // 1. A statement inside a transaction that was opened before the network went silent.
      let inner;
      const txr = await settle(
        within(
          sql.tx(async (h) => {
            await h.query('SELECT 1 AS one');
            proxy.blackhole();
            inner = settle(within(h.query('SELECT 2 AS two'), BOUND, 'the statement'));
            const r = await inner;
            if (!r.ok) throw r.error;
          }),
          2 * BOUND,
          'the sql.tx',
        ),
      );
      assert.ok(inner, 'the statement inside the tx was sent');
      bounded('a statement inside sql.tx', await inner);
      bounded('the sql.tx', txr);
      // 2. A plain query and 3. a store call (a transactional one).
      bounded("sql.query('SELECT 1')", await settle(within(sql.query('SELECT 1 AS one'), BOUND, 'sql.query')));
      bounded('store.checkpointStep+outbox', await settle(within(cp.call(env, ctx), BOUND, 'checkpointStep')));

      proxy.heal();
      // The next calls succeed.
      const after1 = await settle(within(sql.query('SELECT 1 AS one'), BOUND, 'query after heal'));
      assert.ok(after1.ok, `query after heal: ${after1.error && after1.error.message}`);
      assert.deepEqual(after1.value, [{ one: 1 }]);
      const parts = await cp.inspect(q, ctx);
      assert.notEqual(classify(parts), 'partial', `the timed-out unit is all-or-nothing: ${JSON.stringify(parts)}`);
      const after2 = await settle(within(cp.call(env, ctx), BOUND, 'checkpointStep after heal'));
      assert.ok(after2.ok, `store call after heal: ${after2.error && after2.error.message}`);
      assert.equal(classify(await cp.inspect(q, ctx)), 'committed', 'the store call after heal committed whole');
      const after3 = await settle(
        within(
          sql.tx(async (h) => (await h.query('SELECT 3 AS three'))[0].three),
          BOUND,
          'tx after heal',
        ),
      );
      assert.ok(after3.ok && after3.value === 3, `tx after heal: ${after3.error && after3.error.message}`);
      lines.push('after heal(): query, store call and tx succeed');

      // 4. Silence exactly at the unit's weakest instants, on that connection only: the guarding
      // write's packet, then its COMMIT. The call times out, its connection is discarded (so the
      // server session ends), the unit is all-or-nothing, and the pool goes on.
      for (const [i, target] of [
        [2, 'write'],
        [3, 'commit'],
      ]) {
        const c = await cp.prepare(q, i);
        const h = proxy.arm({ match: target === 'commit' ? COMMIT : cp.write, kind: 'blackhole' });
        const r = await settle(within(cp.call(env, c), BOUND, `checkpointStep silenced at ${target}`));
        h.cancel();
        assert.ok(h.hit, `the ${target} packet was sent (and silenced)`);
        bounded(`checkpointStep silenced at its ${target} packet`, r);
        const goneMs = await waitSessionGone(q, h.hit);
        const state = classify(await cp.inspect(q, c));
        assert.notEqual(state, 'partial', `checkpointStep silenced at ${target}: all-or-nothing`);
        const next = await settle(within(b.store.runStats(), BOUND, 'the call after'));
        assert.ok(next.ok, `the call after the silenced ${target}: ${next.error && next.error.message}`);
        lines.push(`  its server session ended ${goneMs.toFixed(0)} ms later; unit ${state}; the next call succeeds`);
      }
    } finally {
      proxy.heal();
      await env.close();
      for (const l of lines) t.diagnostic(`atomicity/silent network (queryTimeoutMs ${QT}): ${l}`);
    }
  },
);
