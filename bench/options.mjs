// The bench's options: the command line (see run.mjs) and the BENCH_* environment, turned into
// the sizes, repetitions and flow settings every other module reads. Parsed once, at import.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { FLOWS } from './flows.mjs';

const here = dirname(fileURLToPath(import.meta.url));

export const { values: argv } = parseArgs({
  options: {
    only: { type: 'string', multiple: true },
    reps: { type: 'string' },
    impl: { type: 'string', default: 'both' },
    json: { type: 'string' },
    list: { type: 'boolean', default: false },
    'no-count': { type: 'boolean', default: false },
    'no-chart': { type: 'boolean', default: false },
    chart: { type: 'string', default: join(here, 'results.svg') },
    results: { type: 'string', default: join(here, 'results.json') },
    readme: { type: 'string', default: join(here, '..', 'README.md') },
  },
  allowPositionals: false,
});

const num = (name, dflt) => {
  const v = process.env[name];
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${v}`);
  return n;
};
export const SCALE = num('BENCH_SCALE', 1);
export const REPS = Math.max(1, Math.round(argv.reps ? Number(argv.reps) : num('BENCH_REPS', 3)));
// Flows are short and noisy (a 1-loop flow is latency-bound): more repetitions by default.
export const FLOW_REPS = Math.max(1, Math.round(argv.reps ? Number(argv.reps) : num('BENCH_FLOW_REPS', 5)));
export const OPS = Math.max(16, Math.round(num('BENCH_OPS', 1000) * SCALE));
export const DRAIN_RUNS = Math.max(20, Math.round(num('BENCH_DRAIN_RUNS', 2000) * SCALE));
export const CLAIM_JOBS = Math.round(num('BENCH_CLAIM_JOBS', 1000));
export const CONC = Math.round(num('BENCH_CONCURRENCY', 16));
export const COUNT_FRACTION = num('BENCH_COUNT_FRACTION', 0.25);
export const CLAIM_OPS = Math.max(16, Math.round(OPS / 4));
export const DUE_BATCHES = Math.max(8, Math.round(OPS / 10));
export const STEPS = 3;
// The engine's entry points (scenarios/engine.mjs): runs submitted through engine.submitMany in
// chunks, and due timers fired through the engine's timer path.
export const SUBMIT_RUNS = Math.max(100, Math.round(num('BENCH_SUBMIT_RUNS', 2000) * SCALE));
export const SUBMIT_CHUNK = Math.max(1, Math.round(num('BENCH_SUBMIT_CHUNK', 100)));
export const TIMER_RUNS = Math.max(100, Math.round(num('BENCH_TIMER_RUNS', 1000) * SCALE));
export const FLOW_RUNS = Math.max(20, Math.round(num('BENCH_FLOW_RUNS', 800) * SCALE));
export const PROCS = Math.max(1, Math.round(num('BENCH_PROCS', 4)));
export const PROC_FLOW = process.env.BENCH_PROC_FLOW || 'steps3';
if (!FLOWS[PROC_FLOW]) throw new Error(`BENCH_PROC_FLOW must be one of ${Object.keys(FLOWS).join(', ')}`);
export const SLEEP_MS = num('BENCH_SLEEP_MS', 100);
export const IDLE_MS = num('BENCH_IDLE_MS', 10);
export const DIGESTS_TOP = Math.round(num('BENCH_DIGESTS_TOP', 8));
export const FLOW_BATCH = 20;
export const FLOW_LEASE_MS = 30_000;
// The push scenario (scenarios/push.mjs): latency samples per variant, idle worker processes per
// variant, the idle-CPU window, core's tickMs (200: 200 ms after a partial batch, up to 8 × when
// idle), the listener's intervalMs (unset: its default).
export const PUSH_SAMPLES = Math.max(5, Math.round(num('BENCH_PUSH_SAMPLES', 30) * SCALE));
export const PUSH_WORKERS = Math.max(1, Math.round(num('BENCH_PUSH_WORKERS', 2)));
export const PUSH_IDLE_MS = Math.max(2000, Math.round(num('BENCH_PUSH_IDLE_MS', 6000) * SCALE));
export const PUSH_TICK_MS = Math.round(num('BENCH_PUSH_TICK_MS', 200));
export const PUSH_INTERVAL_MS = process.env.BENCH_PUSH_INTERVAL_MS
  ? Math.round(num('BENCH_PUSH_INTERVAL_MS', 50))
  : undefined;
/** BENCH_SOCKET: the timed pools connect over a Unix socket ("1" = the private server's). */
export const SOCKET = process.env.BENCH_SOCKET;

/** The engine settings of every flow, in the bench process and in the flow worker processes. */
export const flowOpts = () => ({ batch: FLOW_BATCH, leaseMs: FLOW_LEASE_MS, idleMs: IDLE_MS, sleepMs: SLEEP_MS });
