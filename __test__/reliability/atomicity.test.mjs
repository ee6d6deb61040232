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
// seed of the target coin, cut points and delays (printed, to replay a failure). The trial
// machinery is in faults.mjs (shared with v3-atomicity.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { attackUnit, classify, COMMIT, gone, openEnv, useFaultProxy, waitSessionGone } from './faults.mjs';
import { settle, within } from './helpers.mjs';

const TRIALS = Number(process.env.ATOMICITY_TRIALS) || 100;
const DELAY_TRIALS = Math.min(10, Math.max(4, Math.ceil(TRIALS / 5)));
const SEED = Number(process.env.ATOMICITY_SEED) || 0x1f2e3d;
const T = Date.parse('2030-01-01T00:00:00Z');

const holder = useFaultProxy();

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

for (const unit of units) attackUnit(holder, unit, { trials: TRIALS, delayTrials: DELAY_TRIALS, seed: SEED });

test(
  'silent network: with queryTimeoutMs=500 calls reject in bounded time, and the pool recovers after heal()',
  { timeout: 90_000 },
  async (t) => {
    const QT = 500;
    const BOUND = 3000;
    const proxy = holder.proxy;
    const env = await openEnv(proxy, 'silent', { connectionLimit: 3, acquireTimeoutMs: 1000, queryTimeoutMs: QT });
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
