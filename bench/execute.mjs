// Measuring: one execution of a scenario for one implementation (set-up untimed, the run timed
// with the counters, CPU and digests around it, the checks after), and one scenario for all
// implementations (the counting pass, then the interleaved repetitions, then the medians).
import { performance } from 'node:perf_hooks';

import { bench } from './context.mjs';
import {
  collectSamples,
  digestInfo,
  mergeDigests,
  perRunPrepared,
  readDigests,
  resetDigests,
  startSampling,
} from './digests.mjs';
import { COUNT_FRACTION, FLOW_REPS, REPS } from './options.mjs';
import { fmt, fmtRate } from './report.mjs';
import { retriesSoFar } from './retry.mjs';
import { delta, innodbMetrics, mainThreadCpuUs, serverCpuUs, statusCounters } from './sampling.mjs';
import { median } from './stats.mjs';

async function truncateAll(impl) {
  for (const t of Object.values(impl.t)) await bench.admin.query(`TRUNCATE TABLE ${t}`);
}

/** Scenario/implementation pairs that failed (reported at the end; the exit code is then 1). */
export const failures = [];

/**
 * One timed (or counted) execution of a scenario for one implementation.
 *
 * A scenario's `run` returns the number of operations, or `{ ops, ms?, cpuUs?, mainCpuUs?, elu?,
 * retries? }` when the work ran elsewhere (the multi-process flow: CPU of the worker processes).
 * `verify` (untimed) runs after the counters were read; `teardown` always.
 */
async function execute(sc, impl, { counted = false, size = sc.size } = {}) {
  await truncateAll(impl);
  const target = counted ? { ...impl, backend: impl.counted, sql: impl.countedSql, url: impl.countedUrl } : impl;
  // Transactions the implementation re-ran by itself after a deadlock, when it tells (native: sql.stats()).
  const internalRetries = () => {
    const st = typeof target.sql?.stats === 'function' ? target.sql.stats() : undefined;
    return Number(st?.deadlockRetries ?? 0);
  };
  const ctx = await sc.setup(target, size);
  try {
    const digests = !counted && sc.digests && digestInfo.enabled;
    const sampling = counted && sc.digests && digestInfo.enabled && digestInfo.samples;
    if (digests) await resetDigests();
    if (sampling) await startSampling();
    if (counted) bench.proxy.take();
    const s0 = await statusCounters();
    const cpu0 = process.cpuUsage();
    const th0 = mainThreadCpuUs();
    const srv0 = serverCpuUs();
    const elu0 = performance.eventLoopUtilization();
    const retries0 = retriesSoFar();
    const internal0 = internalRetries();
    const t0 = performance.now();
    const got = await sc.run(target, ctx, size, sc.conc);
    let ms = performance.now() - t0;
    const elu = performance.eventLoopUtilization(elu0);
    const th = mainThreadCpuUs() - th0;
    const srv = serverCpuUs() - srv0;
    const cpu = process.cpuUsage(cpu0);
    const s1 = await statusCounters();
    const wire = counted ? bench.proxy.take() : undefined;
    const prepared = sampling ? await collectSamples() : undefined;
    const dg = digests ? await readDigests() : undefined;
    if (sc.verify) await sc.verify(target, ctx, size);
    const ext = typeof got === 'object' ? got : { ops: got };
    const ops = ext.ops;
    if (Number.isFinite(ext.ms)) ms = ext.ms;
    const commits = innodbMetrics ? delta(s0, s1, 'trx_rw_commits') : delta(s0, s1, 'Com_commit');
    return {
      ops,
      ms,
      rate: (ops * 1000) / ms,
      stmtsPerOp: delta(s0, s1, 'Questions') / ops,
      preparesPerOp: delta(s0, s1, 'Com_stmt_prepare') / ops,
      commitsPerOp: commits / ops,
      commitStmtsPerOp: delta(s0, s1, 'Com_commit') / ops,
      rollbacksPerOp: delta(s0, s1, 'Com_rollback') / ops,
      handlerCommitsPerOp: delta(s0, s1, 'Handler_commit') / ops,
      roCommitsPerOp: (delta(s0, s1, 'trx_ro_commits') + delta(s0, s1, 'trx_nl_ro_commits')) / ops,
      retries: (ext.retries ?? 0) + retriesSoFar() - retries0 + (internalRetries() - internal0),
      info: ctx.info,
      rtPerOp: wire ? wire.roundTrips / ops : undefined,
      wire,
      cpuUsPerOp: (ext.cpuUs ?? cpu.user + cpu.system) / ops,
      mainCpuUsPerOp: (ext.mainCpuUs ?? th) / ops,
      serverCpuUsPerOp: srv / ops,
      elu: ext.elu ?? elu.utilization,
      digests: dg,
      prepared: prepared && perRunPrepared(prepared, ops),
    };
  } finally {
    await sc.teardown?.(target, ctx);
  }
}

/** One scenario, every implementation it runs on: `{ name, kind, …, reps, counted, errors, summary }`. */
export async function measure(sc) {
  // A scenario may leave implementations out (`without`: the floor has no micro-ops).
  const impls = bench.impls.filter((i) => !sc.without?.includes(i.name));
  const res = { name: sc.name, kind: sc.kind, unit: sc.unit, conc: sc.conc, size: sc.size, reps: {}, counted: {} };
  res.errors = {};
  for (const impl of impls) res.reps[impl.name] = [];
  // A failing implementation is reported and skipped for the rest of this scenario.
  const guarded = async (impl, fn) => {
    if (res.errors[impl.name]) return undefined;
    try {
      return await fn();
    } catch (e) {
      res.errors[impl.name] = e?.message ?? String(e);
      failures.push({ scenario: sc.name, impl: impl.name, error: e });
      console.error(`  ${sc.name}: ${impl.name} FAILED: ${res.errors[impl.name]}`);
      return undefined;
    }
  };
  // Counting pass (through the wire counter) doubles as warm-up.
  if (bench.proxy) {
    const size = Math.max(sc.kind === 'micro' ? 16 : 20, Math.round(sc.size * COUNT_FRACTION));
    for (const impl of impls) {
      res.counted[impl.name] = await guarded(impl, () => execute(sc, impl, { counted: true, size }));
    }
  }
  const nReps = sc.kind === 'flow' ? FLOW_REPS : REPS;
  res.repetitions = nReps;
  for (let rep = 0; rep < nReps; rep++) {
    const order = rep % 2 === 0 ? impls : [...impls].reverse();
    for (const impl of order) {
      const r = await guarded(impl, () => execute(sc, impl));
      if (r) res.reps[impl.name].push(r);
    }
  }
  const summary = {};
  for (const impl of impls) {
    const reps = res.reps[impl.name];
    const counted = res.counted[impl.name];
    if (res.errors[impl.name]) {
      summary[impl.name] = { error: res.errors[impl.name] };
      continue;
    }
    summary[impl.name] = {
      rate: median(reps.map((r) => r.rate)),
      stmtsPerOp: median(reps.map((r) => r.stmtsPerOp)),
      preparesPerOp: median(reps.map((r) => r.preparesPerOp)),
      commitsPerOp: median(reps.map((r) => r.commitsPerOp)),
      commitStmtsPerOp: median(reps.map((r) => r.commitStmtsPerOp)),
      rollbacksPerOp: median(reps.map((r) => r.rollbacksPerOp)),
      handlerCommitsPerOp: median(reps.map((r) => r.handlerCommitsPerOp)),
      roCommitsPerOp: median(reps.map((r) => r.roCommitsPerOp)),
      rtPerOp: counted?.rtPerOp,
      wire: counted?.wire,
      cpuUsPerOp: median(reps.map((r) => r.cpuUsPerOp)),
      mainCpuUsPerOp: median(reps.map((r) => r.mainCpuUsPerOp)),
      serverCpuUsPerOp: median(reps.map((r) => r.serverCpuUsPerOp)),
      elu: median(reps.map((r) => r.elu)),
      retries: reps.reduce((a, r) => a + r.retries, 0),
      info: reps.at(-1)?.info,
      digests: sc.digests ? mergeDigests(reps) : undefined,
      prepared: counted?.prepared,
    };
  }
  res.summary = summary;
  if (sc.chartLabel) res.chartLabel = sc.chartLabel;
  const line = impls
    .map((i) =>
      summary[i.name].error
        ? `${i.name} FAILED`
        : `${i.name} ${fmtRate(summary[i.name].rate)} ${sc.unit}, ${fmt(summary[i.name].rtPerOp, 2)} RT/op`,
    )
    .join(' | ');
  console.error(`  ${sc.name}: ${line}`);
  return res;
}
