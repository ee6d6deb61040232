// The engine's other entry points, through the mini engine (__test__/engine/mini-engine.mjs, from
// docs/contract.md §11):
//
// - bulk submission: SUBMIT_RUNS runs by engine.submitMany in chunks of SUBMIT_CHUNK, one chunk
//   after the other (core's submitMany: startManyRuns of the chunk, then its runs enqueued in
//   parallel). The floor has no engine of its own here: its chunk is one packet of two multi-row
//   INSERTs (the runs, their jobs) - what a user could write instead.
// - timer drain: TIMER_RUNS sleeping runs whose timers are all due, fired through the engine's
//   timer path (tickOnce's step 1: dueBatch of batchMax, then each id enqueued in parallel) until
//   a dueBatch comes back empty. The floor runs the same path over its own dueBatch and enqueue.
import { randomUUID } from 'node:crypto';

import { createEngine } from '../../__test__/engine/mini-engine.mjs';
import { bench } from '../context.mjs';
import { bulkInsert, insertRuns } from '../fixtures.mjs';
import { retryingBackend } from '../flows.mjs';
import { FLOW_BATCH, SUBMIT_CHUNK, SUBMIT_RUNS, TIMER_RUNS } from '../options.mjs';
import { withRetry } from '../retry.mjs';

const engineOf = (impl) => createEngine(retryingBackend(impl.backend, withRetry), { batchMax: FLOW_BATCH });

const count = async (table, where = '1') => {
  const [[{ c }]] = await bench.admin.query(`SELECT COUNT(*) AS c FROM ${table} WHERE ${where}`);
  return Number(c);
};

function submitScenario() {
  return {
    name: `engine.submitMany ${SUBMIT_RUNS} runs, chunks of ${SUBMIT_CHUNK}`,
    chartLabel: `bulk submission of ${SUBMIT_RUNS} runs (engine.submitMany; floor: multi-row INSERTs)\nchunks of ${SUBMIT_CHUNK}`,
    kind: 'submit',
    unit: 'runs/s',
    conc: 1,
    size: SUBMIT_RUNS,
    digests: true,
    setup: async (impl, n) => {
      const specs = Array.from({ length: n }, (_, i) => ({
        name: 'bench_steps3',
        version: 1,
        input: { i },
        tags: ['bench'],
      }));
      return { specs, engine: engineOf(impl) };
    },
    run: async (impl, ctx, n) => {
      // The floor's bulk path is its own (not a port method): see bench/floor/store.mjs.
      const submit =
        impl.name === 'floor'
          ? (chunk) => withRetry(() => impl.backend.store.submitMany(chunk))
          : ctx.engine.submitMany;
      let created = 0;
      for (let i = 0; i < n; i += SUBMIT_CHUNK) {
        const res = await submit(ctx.specs.slice(i, i + SUBMIT_CHUNK));
        created += res.filter((r) => r.created).length;
      }
      ctx.created = created;
      return n;
    },
    verify: async (impl, ctx, n) => {
      const runs = await count(impl.t.run, "status = 'pending'");
      const jobs = await count(impl.t.job, 'run_at = 0 AND lease_token IS NULL');
      if (ctx.created !== n || runs !== n || jobs !== n) {
        throw new Error(
          `submitMany (${impl.name}): created ${ctx.created}, ${runs} pending runs, ${jobs} jobs, expected ${n}`,
        );
      }
    },
  };
}

function timerScenario() {
  return {
    name: `timer drain: ${TIMER_RUNS} due timers through the engine`,
    chartLabel: `timer drain of ${TIMER_RUNS} due timers (engine timer path)\nper timer`,
    kind: 'timers',
    unit: 'timers/s',
    conc: 1,
    size: TIMER_RUNS,
    digests: true,
    setup: async (impl, n) => {
      const now = Date.now();
      const ids = Array.from({ length: n }, () => randomUUID());
      await insertRuns(bench.admin, impl.t, ids, 'bench_sleep', 'sleeping', now);
      // All due, a minute ago, in a fixed order.
      await bulkInsert(
        bench.admin,
        impl.t.timer,
        ['run_id', 'fire_at'],
        ids.map((id, i) => [id, now - 60_000 + i]),
      );
      return { engine: engineOf(impl) };
    },
    run: async (impl, ctx, n) => {
      let fired = 0;
      let batches = 0;
      for (;;) {
        const due = await ctx.engine.fireDueTimers(FLOW_BATCH);
        batches += 1;
        if (due.length === 0) break;
        fired += due.length;
      }
      ctx.fired = fired;
      ctx.info = { batches };
      return n;
    },
    verify: async (impl, ctx, n) => {
      const timers = await count(impl.t.timer);
      const jobs = await count(impl.t.job, 'run_at = 0');
      if (ctx.fired !== n || timers !== 0 || jobs !== n) {
        throw new Error(
          `timer drain (${impl.name}): fired ${ctx.fired}, ${timers} timers left, ${jobs} jobs, expected ${n}`,
        );
      }
    },
  };
}

export const engineScenarios = () => [submitScenario(), timerScenario()];
