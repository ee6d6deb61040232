// Prepared single-statement calls under faults at their weakest instant: the connection is reset
// right after the COM_STMT_EXECUTE was sent, on the first byte of its answer, or halfway through
// the execute packet; or the answer is only delayed. A faulted call rejects (kind `connection`)
// within a bound, a cut packet applies nothing, a delayed call answers exactly, the database
// never holds a half-applied or wrong value, and the next call through the pool succeeds.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import mysql from 'mysql2/promise';
import { closeAdmin, freshDatabase, serverUrl } from '../helpers/db.mjs';
import { startFaultProxy } from '../helpers/faultproxy.mjs';
import { applySchema, createMysqlBackend, mysqlPool, settle, withParams, within } from './helpers.mjs';

const TRIALS = 8;
const CALL_BOUND_MS = 5000;
const KINDS = ['reset-after-send', 'reset-on-answer', 'cut-mid-request', 'delay'];

let proxy;
let env;

before(async () => {
  const u = new URL(serverUrl());
  proxy = await startFaultProxy({
    host: u.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1',
    port: Number(u.port) || 3306,
  });
  const db = await freshDatabase('prep_faults');
  const viaProxy = new URL(db.url);
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String(proxy.port);
  // One connection: the only command in flight is the call under test.
  const sql = mysqlPool(
    withParams(viaProxy.toString(), { connectionLimit: 1, acquireTimeoutMs: 3000, queryTimeoutMs: 3000 }),
  );
  await applySchema(sql);
  const direct = await mysql.createConnection({ uri: db.url });
  env = {
    sql,
    b: createMysqlBackend(sql),
    q: async (text, values) => (await direct.query(text, values))[0],
    async close() {
      await within(sql.close(), 10_000, 'sql.close()').catch(() => proxy.dropAll());
      await direct.end().catch(() => {});
      await db.drop();
    },
  };
});
after(async () => {
  if (env) await env.close();
  if (proxy) await proxy.close();
  await closeAdmin();
});

const attemptsOf = async (runId) => Number((await env.q('SELECT attempts FROM run WHERE id = ?', [runId]))[0].attempts);

/** Each call: a fresh fixture, the call, what the database may hold afterwards. */
const calls = {
  async markRunning() {
    const { runId } = await env.b.store.startRun({ name: 'pf', version: 1, input: 1 });
    await env.b.store.markRunning(runId);
    return {
      call: () => env.b.store.markRunning(runId),
      answer: (v) => assert.equal(v, 2),
      applied: async () => ({ 1: false, 2: true })[await attemptsOf(runId)],
    };
  },
  async checkpointStep() {
    const { runId } = await env.b.store.startRun({ name: 'pf', version: 1, input: 1 });
    const memo = { runId, cursorKey: 'k', status: 'ok', result: { big: 'x'.repeat(200) }, attempts: 1 };
    return {
      call: () => env.b.store.checkpointStep(memo),
      answer: (v) => assert.deepEqual(v.result, memo.result),
      applied: async () => {
        const rows = await env.q('SELECT result FROM step WHERE run_id = ?', [runId]);
        if (rows.length === 0) return false;
        assert.deepEqual(JSON.parse(rows[0].result), memo.result, 'a stored memo is whole');
        return true;
      },
    };
  },
  async markTerminal() {
    const { runId } = await env.b.store.startRun({ name: 'pf', version: 1, input: 1 });
    return {
      call: () => env.b.store.markTerminal(runId, { status: 'done', output: { n: 42 } }),
      answer: () => {},
      applied: async () => {
        const [r] = await env.q('SELECT status, output FROM run WHERE id = ?', [runId]);
        if (r.status === 'pending') return false;
        assert.equal(r.status, 'done');
        assert.deepEqual(JSON.parse(r.output), { n: 42 });
        return true;
      },
    };
  },
  async ack() {
    const { runId } = await env.b.store.startRun({ name: 'pf', version: 1, input: 1 });
    await env.b.queue.enqueue(runId);
    const [lease] = (await env.b.queue.claim({ limit: 50, leaseMs: 60_000 })).filter((l) => l.runId === runId);
    return {
      call: () => env.b.queue.ack(lease),
      answer: () => {},
      applied: async () => (await env.q('SELECT COUNT(*) AS n FROM job WHERE run_id = ?', [runId]))[0].n === 0,
    };
  },
  async loadRun() {
    const { runId } = await env.b.store.startRun({ name: 'pf', version: 1, input: { deep: [1, 2] } });
    return {
      call: () => env.b.store.loadRun(runId),
      answer: (v) => assert.deepEqual(v.run.input, { deep: [1, 2] }),
      applied: async () => null,
    };
  },
};

for (const [name, make] of Object.entries(calls)) {
  test(`prepared ${name}: faults on its execute packet reject in bound, apply whole or not at all`, async (t) => {
    const seen = {};
    for (const kind of KINDS) {
      const f = (seen[kind] = { fired: 0, rejected: 0, applied: 0, notApplied: 0, maxMs: 0 });
      for (let i = 0; i < TRIALS; i++) {
        const fx = await make();
        // The next execute is this call's: it is the only command in flight (a first use, or a
        // new connection after a reset, prepares first; the execute follows the prepare).
        const h = proxy.arm({ match: /^EXECUTE$/, kind, delayMs: 150 });
        const t0 = performance.now();
        const r = await settle(within(fx.call(), CALL_BOUND_MS, `${name} under ${kind}`));
        const ms = performance.now() - t0;
        h.cancel();
        f.maxMs = Math.max(f.maxMs, ms);
        assert.ok(h.hit, `${name}/${kind}: the fault fired on the call's execute packet`);
        f.fired++;
        const applied = await fx.applied();
        if (applied === true) f.applied++;
        if (applied === false) f.notApplied++;
        if (kind === 'delay') {
          assert.ok(r.ok, `${name}: a delayed answer still resolves: ${r.error && r.error.message}`);
          fx.answer(r.value);
          if (applied !== null) assert.equal(applied, true, `${name}: a delayed call applied`);
        } else {
          assert.ok(!r.ok, `${name}/${kind}: a call whose connection was cut rejects`);
          assert.equal(r.error.kind, 'connection', `${name}/${kind}: ${r.error.message}`);
          f.rejected++;
          if (kind === 'cut-mid-request' && applied !== null) {
            assert.equal(applied, false, `${name}: a half-sent execute applies nothing`);
          }
        }
        // The pool recovers: the next call succeeds.
        const next = await settle(within(env.b.store.runStats(), CALL_BOUND_MS, 'the call after the fault'));
        assert.ok(next.ok, `${name}/${kind}: the next call failed: ${next.error && next.error.message}`);
      }
    }
    t.diagnostic(
      `prepared ${name}: ` +
        KINDS.map(
          (k) =>
            `${k} fired ${seen[k].fired}, rejected ${seen[k].rejected}, applied ${seen[k].applied}/${seen[k].notApplied} not, max ${Math.round(seen[k].maxMs)} ms`,
        ).join('; '),
    );
  });
}
