// The drains: pending runs of STEPS steps driven to done the way core's tickOnce drives them, without
// an engine (bench/engine-driver.mjs), by 1 and by 4 concurrent loops.
import { randomUUID } from 'node:crypto';

import { bench } from '../context.mjs';
import { drainRuns } from '../engine-driver.mjs';
import { bulkInsert, insertRuns } from '../fixtures.mjs';
import { DRAIN_RUNS, STEPS } from '../options.mjs';
import { withRetry } from '../retry.mjs';

export function drainScenarios() {
  return [1, 4].map((loops) => ({
    name: `drain ${STEPS}-step runs x${loops} loop${loops > 1 ? 's' : ''}`,
    chartLabel: `${STEPS}-step drain (engine-shaped driver)\n${loops} loop${loops > 1 ? 's' : ''}`,
    kind: 'drain',
    unit: 'runs/s',
    conc: loops,
    size: DRAIN_RUNS,
    setup: async (impl, n) => {
      const now = Date.now();
      const ids = Array.from({ length: n }, () => randomUUID());
      await insertRuns(bench.admin, impl.t, ids, 'bench', 'pending', now);
      await bulkInsert(
        bench.admin,
        impl.t.job,
        ['run_id', 'run_at', 'priority', 'version'],
        ids.map((id) => [id, 0, 0, 1]),
      );
      return { ids };
    },
    run: async (impl, ctx, n, loops) => {
      const stats = await drainRuns(impl.backend, {
        steps: STEPS,
        loops,
        batch: 20,
        leaseMs: 30_000,
        retry: withRetry,
      });
      ctx.info = { claims: stats.claims, emptyClaims: stats.emptyClaims };
      ctx.completed = stats.completed;
      return n;
    },
    // Untimed, after the counters were read.
    verify: async (impl, ctx, n) => {
      const [[{ c }]] = await bench.admin.query(`SELECT COUNT(*) AS c FROM ${impl.t.run} WHERE status = 'done'`);
      if (ctx.completed !== n || Number(c) !== n) {
        throw new Error(`drain (${impl.name}): completed ${ctx.completed}, done rows ${c}, expected ${n}`);
      }
    },
    digests: true,
  }));
}
