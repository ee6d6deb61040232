// The micro-ops: one port call per operation, one at a time (seq) and CONC in flight (x16).
import { randomUUID } from 'node:crypto';

import { bench } from '../context.mjs';
import { bulkInsert } from '../fixtures.mjs';
import { CLAIM_JOBS, CLAIM_OPS, CONC, DUE_BATCHES, OPS } from '../options.mjs';
import { runOps } from '../retry.mjs';

const spec = (i, extra = {}) => ({
  name: 'bench',
  version: 1,
  input: { i, note: 'benchmark input' },
  tags: ['bench'],
  ...extra,
});

export function microScenarios() {
  const list = [];
  const both = (base, def) => {
    for (const conc of [1, CONC]) {
      list.push({
        name: `${base} ${conc === 1 ? 'seq' : `x${conc}`}`,
        kind: 'micro',
        unit: 'ops/s',
        conc,
        // The floor implements only what the drains and flows call (bench/floor/index.mjs).
        without: ['floor'],
        ...def,
      });
    }
  };

  both('startRun no key', {
    size: OPS,
    setup: async () => ({}),
    run: async (impl, ctx, n, conc) => {
      await runOps(n, conc, (i) => impl.backend.store.startRun(spec(i)));
      return n;
    },
  });
  both('startRun new key', {
    size: OPS,
    setup: async () => ({ tag: randomUUID().slice(0, 8) }),
    run: async (impl, ctx, n, conc) => {
      await runOps(n, conc, (i) => impl.backend.store.startRun(spec(i, { idempotencyKey: `k-${ctx.tag}-${i}` })));
      return n;
    },
  });
  both('startRun key hit', {
    size: OPS,
    setup: async (impl) => {
      const r = await impl.backend.store.startRun(spec(0, { idempotencyKey: 'hit' }));
      return { runId: r.runId };
    },
    run: async (impl, ctx, n, conc) => {
      await runOps(n, conc, async (i) => {
        const r = await impl.backend.store.startRun(spec(i, { idempotencyKey: 'hit' }));
        if (r.created || r.runId !== ctx.runId) throw new Error('startRun key hit: expected the existing run');
      });
      return n;
    },
  });
  both('loadRun 5 steps 2 signals', {
    size: OPS,
    setup: async (impl) => {
      const { store } = impl.backend;
      const { runId } = await store.startRun(spec(0));
      for (let s = 0; s < 5; s++) {
        await store.checkpointStep({
          runId,
          cursorKey: `s${s}`,
          status: 'ok',
          result: { s, value: 'x'.repeat(40) },
          attempts: 1,
          shape: `step:s${s}`,
        });
      }
      await store.postSignal(runId, 'a', { n: 1 });
      await store.postSignal(runId, 'b', { n: 2 }, { idempotencyKey: 'sig-b' });
      return { runId };
    },
    run: async (impl, ctx, n, conc) => {
      await runOps(n, conc, async () => {
        const snap = await impl.backend.store.loadRun(ctx.runId);
        if (snap.steps.size !== 5 || snap.signals.length !== 2) throw new Error('loadRun: unexpected snapshot');
      });
      return n;
    },
  });
  const manyRuns = async (impl, k = 64) => {
    const ids = [];
    for (let i = 0; i < k; i++) ids.push((await impl.backend.store.startRun(spec(i))).runId);
    return ids;
  };
  both('checkpointStep', {
    size: OPS,
    setup: async (impl) => ({ runs: await manyRuns(impl) }),
    run: async (impl, ctx, n, conc) => {
      await runOps(n, conc, (i) =>
        impl.backend.store.checkpointStep({
          runId: ctx.runs[i % ctx.runs.length],
          cursorKey: `s${i}`,
          status: 'ok',
          result: { i, value: 'step result' },
          attempts: 1,
          shape: 'step:bench',
        }),
      );
      return n;
    },
  });
  both('checkpointStep +outbox(spawn,enqueue,timer)', {
    size: OPS,
    setup: async (impl) => ({ runs: await manyRuns(impl), tag: randomUUID().slice(0, 8) }),
    run: async (impl, ctx, n, conc) => {
      const fireAt = new Date(Date.now() + 3_600_000);
      await runOps(n, conc, (i) => {
        const parent = ctx.runs[i % ctx.runs.length];
        return impl.backend.store.checkpointStep(
          {
            runId: parent,
            cursorKey: `s${i}`,
            status: 'ok',
            result: `child-${ctx.tag}-${i}`,
            attempts: 1,
            shape: 'invoke:child',
          },
          {
            spawn: [
              {
                runId: `child-${ctx.tag}-${i}`,
                spec: {
                  name: 'child',
                  version: 1,
                  input: { i },
                  parentRunId: parent,
                  parentCursorKey: `s${i}`,
                  depth: 1,
                },
              },
            ],
            enqueue: [{ runId: parent }],
            timers: [{ runId: parent, fireAt }],
          },
        );
      });
      return n;
    },
  });
  both(`claim 32 of ${CLAIM_JOBS}`, {
    size: CLAIM_OPS,
    setup: async (impl) => {
      const rows = Array.from({ length: CLAIM_JOBS }, (_, i) => [`job-${i}`, 0, 0, 1]);
      await bulkInsert(bench.admin, impl.t.job, ['run_id', 'run_at', 'priority', 'version'], rows);
      return { now: new Date() };
    },
    // Leases of 0 ms at a fixed clock expire as they are taken: every claim sees all the jobs that
    // no concurrent claim holds locked, so the queue stays at its full size.
    run: async (impl, ctx, n, conc) => {
      let short = 0;
      await runOps(n, conc, async () => {
        const leases = await impl.backend.queue.claim({ limit: 32, leaseMs: 0, now: ctx.now });
        if (leases.length !== 32) short += 1;
      });
      if (short) console.error(`  note: ${short}/${n} claims returned fewer than 32 leases (${impl.name})`);
      ctx.info = { shortClaims: short };
      return n;
    },
  });
  both('ack', {
    size: OPS,
    setup: async (impl, n) => {
      const rows = Array.from({ length: n }, (_, i) => [`ack-${i}`, 0, 0, 1]);
      await bulkInsert(bench.admin, impl.t.job, ['run_id', 'run_at', 'priority', 'version'], rows);
      const leases = [];
      for (;;) {
        const got = await impl.backend.queue.claim({ limit: 500, leaseMs: 3_600_000 });
        if (got.length === 0) break;
        leases.push(...got);
      }
      if (leases.length !== n) throw new Error(`ack setup: claimed ${leases.length} of ${n}`);
      return { leases };
    },
    run: async (impl, ctx, n, conc) => {
      await runOps(n, conc, (i) => impl.backend.queue.ack(ctx.leases[i]));
      const [[{ c }]] = await bench.admin.query(`SELECT COUNT(*) AS c FROM ${impl.t.job}`);
      if (Number(c) !== 0) throw new Error(`ack: ${c} jobs left`);
      return n;
    },
  });
  both('timer.dueBatch 100', {
    size: DUE_BATCHES,
    setup: async (impl, n) => {
      const rows = Array.from({ length: n * 100 }, (_, i) => [`tm-${i}`, 1_000 + i]);
      await bulkInsert(bench.admin, impl.t.timer, ['run_id', 'fire_at'], rows);
      return {};
    },
    run: async (impl, ctx, n, conc) => {
      let short = 0;
      await runOps(n, conc, async () => {
        const ids = await impl.backend.timer.dueBatch({ limit: 100, now: new Date() });
        if (ids.length !== 100) short += 1;
      });
      if (short) console.error(`  note: ${short}/${n} dueBatch calls returned fewer than 100 ids (${impl.name})`);
      ctx.info = { shortBatches: short };
      return n;
    },
  });
  return list;
}
