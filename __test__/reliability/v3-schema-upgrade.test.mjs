// Reliability — the 3.0 applySchema upgrading a 2.0.0-alpha.2 database in place (under its
// named lock) survives being cut off at any of its DDL statements: killed (SIGKILL of the process
// running it) or its connection reset (after the statement was sent, as its answer starts, or
// half-way through the statement's packet) at each CREATE TABLE, ALTER TABLE and CREATE
// FUNCTION of the upgrade, it is then run again and finishes, and the layout is exactly the fresh
// 3.0 layout (information_schema and SHOW CREATE TABLE) with every row kept.
//
// Each trial: a fresh alpha.2 database with rows in all six tables; the upgrade through the fault
// proxy with ONE fault armed for its n-th statement (the statements are recorded from a clean
// upgrade first); then applySchema again — at once, without waiting for the cut-off session,
// whose statement may still be running: the named lock orders the two.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { freshDatabase } from '../helpers/db.mjs';
import { dump, layout } from '../helpers/layout.mjs';
import { CALL_BOUND_MS, RESET_KINDS, useFaultProxy, viaProxy } from './faults.mjs';
import { LEAD } from './outcome.mjs';
import { applySchema, mysqlPool, settle, withParams, within } from './helpers.mjs';

const v3 = createRequire(import.meta.url)('../../v3.js');
const here = path.dirname(fileURLToPath(import.meta.url));
const CHILD = path.join(here, 'fixtures', 'apply-schema.mjs');
const KINDS = ['SIGKILL', ...RESET_KINDS];
const DDL = new RegExp(`${LEAD}(CREATE|ALTER|DROP)\\b`, 'i');
const T = Date.parse('2030-01-01T00:00:00Z');

const holder = useFaultProxy();

/** A fresh alpha.2 database with rows in every table; `done()` drops it. */
async function alpha2Database(label) {
  const db = await freshDatabase(label);
  const sql = mysqlPool(db.url);
  await applySchema(sql); // the 2.0.0-alpha.2 layout
  await sql.query(
    'INSERT INTO `run` (id, name, version, status, input, output, error, attempts, idempotency_key, tags, parent_run_id, parent_cursor_key, depth, join_remaining, created_at) VALUES ' +
      "('r1', 'flow', 1, 'pending', '{\"a\":[1,\"x\"]}', NULL, NULL, 0, 'k1', '[\"t\"]', NULL, NULL, 0, 0, ?), " +
      "('r2', 'flow', 2, 'done', NULL, '{\"ok\":true}', NULL, 2, NULL, NULL, NULL, NULL, 0, 0, ?), " +
      "('r3', 'kid', 1, 'failed', NULL, NULL, '{\"code\":\"E\",\"message\":\"m\"}', 1, NULL, NULL, 'r1', 's0', 1, -1, ?); " +
      "INSERT INTO `step` (run_id, cursor_key, status, result, attempts, shape) VALUES ('r1', 's0', 'ok', '7', 1, 'invoke'), ('r2', 's0', 'ok', 'null', 2, NULL); " +
      "INSERT INTO `job` (run_id, run_at, priority, version, lease_token, lease_expires) VALUES ('r1', 0, 3, 2, 'tok:r1', ?), ('r3', ?, 0, 1, NULL, NULL); " +
      "INSERT INTO `timer` (run_id, fire_at) VALUES ('r1', ?); " +
      "INSERT INTO `signal` (id, run_id, name, payload, idem_key) VALUES ('s1', 'r1', 'go', '1', 'sk'), ('s2', 'r1', 'go', NULL, NULL); " +
      "INSERT INTO `cron` (name, schedule, flow_name, flow_version, input, overlap, next_run_at, last_run_at) VALUES ('c1', '* * * * *', 'flow', 1, '{}', 'skip', ?, ?)",
    [T, T + 1, T + 2, T + 60_000, T + 5, T + 10, T + 60_000, T],
  );
  return {
    db,
    sql,
    async done() {
      await sql.close().catch(() => {});
      await db.drop();
    },
  };
}

/** The rows of an alpha.2 database as the 3.0 layout holds them: the two new columns at 0. */
function upgraded(rows) {
  return {
    ...rows,
    run: rows.run.map((r) => ({ ...r, priority: 0 })),
    signal: rows.signal.map((r) => ({ ...r, consumed: 0 })),
  };
}

/**
 * A child process about to run applySchema(3.0) on `url` (through the proxy); `go()` starts it,
 * `kill()` SIGKILLs it, `ended` resolves with its exit signal and output.
 */
async function childApplier(url) {
  const child = spawn(process.execPath, [CHILD], {
    env: { ...process.env, KW_URL: url },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let onReady;
  const ready = new Promise((r) => (onReady = r));
  child.stdout.on('data', (d) => {
    out += d;
    if (out.includes('READY')) onReady();
  });
  child.stderr.on('data', (d) => (out += d));
  const ended = new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal, out })));
  ended.then(() => onReady());
  await within(ready, 15_000, 'the child getting ready');
  return { go: () => child.stdin.write('go\n'), kill: () => child.kill('SIGKILL'), ended };
}

/** A proxy matcher firing on the n-th command it sees (1-based). */
function nthCommand(n) {
  let seen = 0;
  return () => ++seen === n;
}

test(
  'applySchema(3.0) of an alpha.2 database, killed or reset at each DDL statement of the upgrade, then run again: the fresh 3.0 layout, every row kept',
  { timeout: 240_000 },
  async (t) => {
    const proxy = holder.proxy;
    const reference = await freshDatabase('upg_ref');
    const refSql = mysqlPool(reference.url);
    let plan;
    let expected;
    try {
      await v3.applySchema(refSql);
      expected = await layout(refSql);
      // The statements of a clean upgrade, in order, as the proxy sees them.
      const dry = await alpha2Database('upg_dry');
      const sql = mysqlPool(withParams(viaProxy(proxy, dry.db.url), { connectionLimit: 1 }));
      try {
        await sql.query('SELECT 1');
        const seen = [];
        const h = proxy.arm({
          match: (text) => (seen.push(text.replace(/\s+/g, ' ').slice(0, 70)), false),
          kind: 'delay',
        });
        await v3.applySchema(sql);
        h.cancel();
        plan = seen.map((text, i) => ({ n: i + 1, text })).filter((s) => DDL.test(s.text));
        t.diagnostic(
          `upgrade: ${seen.length} statements, ${plan.length} of them DDL: ${plan.map((s) => `#${s.n} ${s.text.slice(0, 40)}`).join(' | ')}`,
        );
        assert.deepEqual(await layout(dry.sql), expected, 'a clean upgrade gives the fresh layout');
      } finally {
        await sql.close();
        await dry.done();
      }
    } finally {
      await refSql.close();
      await reference.drop();
    }
    assert.ok(
      plan.filter((s) => new RegExp(`${LEAD}ALTER TABLE`, 'i').test(s.text)).length >= 2,
      'the upgrade adds two columns',
    );

    const figs = Object.fromEntries(
      KINDS.map((k) => [k, { trials: 0, firstRejected: 0, firstFinished: 0, maxRejectMs: 0, maxRerunMs: 0 }]),
    );
    const failures = [];
    let k = 0;
    for (const step of plan) {
      for (const kind of KINDS) {
        k++;
        const d = await alpha2Database(`upg_${k}`);
        const url = withParams(viaProxy(proxy, d.db.url), {
          connectionLimit: 1,
          acquireTimeoutMs: 3000,
          queryTimeoutMs: 5000,
        });
        const label = `${kind} at #${step.n} ${step.text.slice(0, 40)}`;
        const f = figs[kind];
        f.trials++;
        let faulted;
        try {
          const before = upgraded(await dump(d.sql));
          if (kind === 'SIGKILL') {
            const child = await childApplier(url);
            const h = proxy.arm({ match: nthCommand(step.n), kind: 'delay', delayMs: 2000 });
            h.fired.then(() => child.kill());
            child.go();
            const end = await within(child.ended, CALL_BOUND_MS, `${label}: the child`);
            h.cancel();
            if (!h.hit) failures.push(`${label}: the statement was never sent`);
            if (end.signal !== 'SIGKILL')
              failures.push(`${label}: the child ended with ${end.signal || end.code}: ${end.out.trim()}`);
          } else {
            faulted = mysqlPool(url);
            await faulted.query('SELECT 1');
            const h = proxy.arm({ match: nthCommand(step.n), kind, cutAt: 0.5 });
            const r = await settle(within(v3.applySchema(faulted), CALL_BOUND_MS, label));
            h.cancel();
            if (!h.hit) failures.push(`${label}: the statement was never sent`);
            if (r.ok) f.firstFinished++;
            else if (/did not settle/.test(r.error.message)) failures.push(`${label}: ${r.error.message}`);
            else {
              f.firstRejected++;
              f.maxRejectMs = Math.max(f.maxRejectMs, r.ms);
            }
          }
          // Run again at once — on the same (proxied) pool after a reset, as a restarted process
          // would after a kill.
          const again = faulted || mysqlPool(url);
          const t0 = performance.now();
          const rerun = await settle(within(v3.applySchema(again), 70_000, `${label}: applySchema again`));
          f.maxRerunMs = Math.max(f.maxRerunMs, performance.now() - t0);
          if (!faulted) await again.close();
          if (!rerun.ok) {
            failures.push(`${label}: applySchema again failed: ${rerun.error.message}`);
            continue;
          }
          const got = await layout(d.sql);
          for (const part of Object.keys(expected)) {
            try {
              assert.deepEqual(got[part], expected[part]);
            } catch {
              failures.push(`${label}: the layout's ${part} differs from the fresh 3.0 layout`);
            }
          }
          try {
            assert.deepEqual(await dump(d.sql), before);
          } catch (e) {
            failures.push(`${label}: rows changed: ${e.message.split('\n').slice(0, 6).join(' ')}`);
          }
        } finally {
          if (faulted) await within(faulted.close(), 10_000, 'close').catch(() => proxy.dropAll());
          await d.done();
        }
      }
    }
    for (const [kind, f] of Object.entries(figs)) {
      t.diagnostic(
        `upgrade/${kind}: ${f.trials} trials (one per DDL statement)` +
          (kind === 'SIGKILL'
            ? ''
            : `, first call rejected ${f.firstRejected} (≤ ${Math.round(f.maxRejectMs)} ms), finished ${f.firstFinished}`) +
          `; run again: finished every time in ≤ ${Math.round(f.maxRerunMs)} ms`,
      );
    }
    for (const f of failures.slice(0, 8)) t.diagnostic(`  failure: ${f}`);
    assert.deepEqual(failures, [], 'every cut-off upgrade, run again, gives the fresh 3.0 layout with every row');
    // A reset always lands on a statement that was sent: the faulted call can only reject.
    for (const kind of RESET_KINDS)
      assert.equal(figs[kind].firstRejected, plan.length, `${kind}: the faulted upgrade rejected`);
  },
);
