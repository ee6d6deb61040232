// Engine-driven flows (bench/flows.mjs: the mini engine of __test__/engine ticking real flows), in
// the bench process (1 or 4 loops over one backend) or in worker processes (procs.mjs).
import { randomUUID } from 'node:crypto';

import { bench } from '../context.mjs';
import { bulkInsert } from '../fixtures.mjs';
import { FLOWS, driveFlow, retryingBackend } from '../flows.mjs';
import { FLOW_RUNS, PROCS, PROC_FLOW, SLEEP_MS, flowOpts } from '../options.mjs';
import { withRetry } from '../retry.mjs';
import { closeWorkers, runWorkers, spawnWorkers } from './procs.mjs';

/** Inserts `n` pending, enqueued root runs of `flowName` (untimed set-up, as the drains do). */
async function insertRoots(impl, flowName, n) {
  const now = Date.now();
  const ids = Array.from({ length: n }, () => randomUUID());
  await bulkInsert(
    bench.admin,
    impl.t.run,
    ['id', 'name', 'version', 'status', 'input', 'tags', 'depth', 'created_at'],
    ids.map((id, i) => [id, flowName, 1, 'pending', JSON.stringify({ i }), '["bench"]', 0, now]),
  );
  await bulkInsert(
    bench.admin,
    impl.t.job,
    ['run_id', 'run_at', 'priority', 'version'],
    ids.map((id) => [id, 0, 0, 1]),
  );
  return ids;
}

/** Every run of the workload ended `done`; no job or timer row is left behind. */
async function verifyFlow(impl, flowKey, n) {
  const want = n * FLOWS[flowKey].runsPerRoot;
  const [rows] = await bench.admin.query(`SELECT status, COUNT(*) AS c FROM ${impl.t.run} GROUP BY status`);
  const by = Object.fromEntries(rows.map((r) => [r.status, Number(r.c)]));
  if (by.done !== want || rows.length !== 1) {
    throw new Error(`flow ${flowKey} (${impl.name}): expected ${want} runs done, found ${JSON.stringify(by)}`);
  }
  const [[{ jobs }]] = await bench.admin.query(`SELECT COUNT(*) AS jobs FROM ${impl.t.job}`);
  const [[{ timers }]] = await bench.admin.query(`SELECT COUNT(*) AS timers FROM ${impl.t.timer}`);
  if (Number(jobs) !== 0 || Number(timers) !== 0) {
    throw new Error(`flow ${flowKey} (${impl.name}): ${jobs} job and ${timers} timer rows left`);
  }
}

export function flowScenarios() {
  const defs = [
    { flow: 'steps3', loops: 1 },
    { flow: 'steps3', loops: 4 },
    { flow: 'sleep', loops: 4 },
    { flow: 'invoke', loops: 4 },
    { flow: PROC_FLOW, procs: PROCS },
  ];
  const label = (flow) => (flow === 'sleep' ? `step, sleep ${SLEEP_MS} ms, step` : FLOWS[flow].label);
  const short = { steps3: '3 steps', sleep: `step, ${SLEEP_MS} ms sleep, step`, invoke: 'invoke a child' };
  return defs.map((d) => {
    const where = d.procs ? `x${d.procs} procs` : `x${d.loops} loop${d.loops > 1 ? 's' : ''}`;
    return {
      name: `flow ${label(d.flow)} ${where}`,
      chartLabel: `${short[d.flow]}\n${d.procs ? `${d.procs} processes × 1 loop` : `${d.loops} loop${d.loops > 1 ? 's' : ''}`}`,
      kind: 'flow',
      unit: 'runs/s',
      conc: d.procs ?? d.loops,
      size: FLOW_RUNS,
      flow: d.flow,
      digests: true,
      setup: async (impl, n) => {
        const ids = await insertRoots(impl, FLOWS[d.flow].root, n);
        const workers = d.procs ? await spawnWorkers(impl, d.procs) : undefined;
        return { ids, workers };
      },
      run: async (impl, ctx, n, loops) => {
        if (ctx.workers) {
          const r = await runWorkers(ctx.workers, ctx.ids, n);
          const { ticks, emptyTicks, due, claimed, results } = r.stats;
          ctx.info = { ticks, emptyTicks, due, claimed, results, perWorker: r.perWorker };
          return r;
        }
        const stats = await driveFlow(retryingBackend(impl.backend, withRetry), {
          ...flowOpts(),
          loops,
          roots: ctx.ids,
        });
        const { ticks, emptyTicks, due, claimed, results } = stats;
        ctx.info = { ticks, emptyTicks, due, claimed, results };
        return n;
      },
      verify: async (impl, ctx, n) => {
        await verifyFlow(impl, d.flow, n);
        // Every sleep that parked on the durable timer was woken by dueBatch, once. A sleep whose
        // checkpoint came back after its 100 ms had passed does not park (the engine goes on at
        // once, as core does), so the count is of parks, not of runs.
        const parked = ctx.info.results?.sleep ?? 0;
        if (d.flow === 'sleep' && ctx.info.due !== parked) {
          throw new Error(
            `flow sleep (${impl.name}): dueBatch fired ${ctx.info.due} timers for ${parked} parked sleeps`,
          );
        }
      },
      teardown: async (impl, ctx) => {
        if (ctx?.workers) await closeWorkers(ctx.workers);
      },
    };
  });
}
