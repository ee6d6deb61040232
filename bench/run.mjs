#!/usr/bin/env node
// npm run bench — this package (native) against the seed's JS backend over mysql2 (seed) and the
// same work written by hand over raw mysql2 (floor, bench/floor/).
//
// One server (a private MariaDB unless MYSQL_URL is set; IFW_TEST_SERVER=mysql: a private MySQL), one database, one table prefix per
// implementation (seed: js_, native: rs_, floor: fl_). Every scenario runs INTERLEAVED: repetition r
// runs the implementations back to back, the order reversing per repetition. Medians are reported.
//
// Usage: node bench/run.mjs [--only <substring>]... [--reps N] [--impl both|seed|native|native-b|floor|a,b]
//                           [--json <file>] [--list] [--no-count] [--no-chart]
//                           [--chart <svg>] [--results <json>] [--readme <md>]
// Env:   BENCH_SCALE (default 1; 0.1 for a quick smoke run), BENCH_REPS (default 3),
//        BENCH_OPS (micro-op count at scale 1, default 1000), BENCH_DRAIN_RUNS (default 2000),
//        BENCH_CLAIM_JOBS (default 1000), BENCH_CONCURRENCY (default 16),
//        BENCH_SUBMIT_RUNS (default 2000), BENCH_SUBMIT_CHUNK (default 100), BENCH_TIMER_RUNS (default 1000),
//        BENCH_FLOW_RUNS (root runs per flow scenario at scale 1, default 800),
//        BENCH_FLOW_REPS (repetitions of the flow scenarios, default 5; --reps sets both),
//        BENCH_PROCS (worker processes of the multi-process flow, default 4),
//        BENCH_PROC_FLOW (its flow: steps3 | sleep | invoke, default steps3),
//        BENCH_SLEEP_MS (the sleep flow's sleep, default 100), BENCH_IDLE_MS (an engine loop's
//        pause after an empty tick, default 10), BENCH_DIGESTS_TOP (digests shown per flow, 8),
//        BENCH_COUNT_FRACTION (size of the round-trip counting pass, default 0.25),
//        BENCH_NATIVE_URL_SUFFIX (appended to the native pool URL, e.g. "?connectionLimit=10"),
//        BENCH_SOCKET (timed pools of both implementations over a Unix socket instead of TCP:
//        "1" = the private server's socket, or a socket path; counting passes stay on TCP),
//        BENCH_NATIVE_MODULE (load the native package from this path instead of ../index.js),
//        BENCH_NATIVE_B_MODULE, BENCH_NATIVE_B_ENV (--impl native-b: a second build in the same
//        process, and the settings it runs under; bench/README.md),
//        MYSQL_URL (use this server instead of starting one), ITERATIVEFLOW_SEED (seed text path).
// Without the seed text (../shared/seeds/ beside the repository, or ITERATIVEFLOW_SEED),
// --impl both measures native and the floor.
//
// The parts: options.mjs (options), context.mjs (server, database, connections), impls.mjs (the
// implementations; the floor in floor/), scenarios/ (what is measured), execute.mjs (measuring), sampling.mjs and
// digests.mjs (counters, CPU, statement digests), report.mjs (tables, results.json, the chart, the
// README's figures table through summary.mjs).
import { performance } from 'node:perf_hooks';

import { bench, cleanup, openCountingProxy, openServer, readServerVersion } from './context.mjs';
import { checkDigests, digestInfo } from './digests.mjs';
import { failures, measure } from './execute.mjs';
import { createImpls, prepareImpls, seedFor } from './impls.mjs';
import { argv } from './options.mjs';
import { printHeader, printTables, writeOutputs } from './report.mjs';
import { enableInnodbMetrics, measureProbeCost } from './sampling.mjs';
import { allScenarios } from './scenarios/index.mjs';

async function main() {
  const benchT0 = performance.now();
  const all = allScenarios();
  // A scenario marked onlyByName (scale: minutes of filling) runs only when --only names it.
  const scenarios = argv.only?.length
    ? all.filter((s) => argv.only.some((o) => s.name.includes(o)))
    : all.filter((s) => !s.onlyByName);
  if (argv.list) {
    for (const s of all)
      console.log(`${s.name}  (${s.size} ${s.kind === 'micro' ? 'ops' : s.unit === 'timers/s' ? 'timers' : 'runs'})`);
    return;
  }
  if (scenarios.length === 0) throw new Error(`--only ${argv.only.join(', ')} matches no scenario (see --list)`);

  const seed = await seedFor(argv.impl);
  await openServer();
  await enableInnodbMetrics();
  await checkDigests();
  await readServerVersion();
  if (!digestInfo.enabled) console.error(`note: no statement digests (${digestInfo.reason})`);

  if (!argv['no-count']) await openCountingProxy();

  await createImpls(seed);
  if (bench.impls.length === 0) throw new Error('no implementation to benchmark');
  await prepareImpls();
  await measureProbeCost();

  printHeader();

  const results = [];
  for (const sc of scenarios) results.push(await (sc.measure ? sc.measure(sc) : measure(sc)));

  printTables(results, scenarios, failures);
  writeOutputs(results);
  console.log(`\nbench wall time: ${((performance.now() - benchT0) / 60_000).toFixed(1)} min`);
}

try {
  await main();
} catch (e) {
  process.exitCode = 1;
  console.error(e);
} finally {
  await cleanup();
  if (bench.server) await bench.server.stop();
}
