// The report: the header, the tables on stdout (main, detail, flows, digests, failures), and the
// files - the raw numbers (--json), results.json, the chart drawn from it (bench/chart.mjs) and
// the figures in README.md and docs/ rendered from it (bench/figures.mjs).
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';

import { renderChart } from './chart.mjs';
import { bench } from './context.mjs';
import { digestInfo } from './digests.mjs';
import { IMPL_NAMES } from './impls.mjs';
import { COUNT_FRACTION, DIGESTS_TOP, FLOW_REPS, FLOW_RUNS, IDLE_MS, REPS, SCALE, SOCKET, argv } from './options.mjs';
import { commitsLabel } from './sampling.mjs';
import { planLines, timeTables } from './scale/report.mjs';
import { median } from './stats.mjs';
import { writeFigures } from './figures.mjs';

export const fmt = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
export const fmtRate = (x) => (Number.isFinite(x) ? (x >= 100 ? x.toFixed(0) : x.toFixed(1)) : 'n/a');

/** A digest text on one line, shortened for the table (the JSON keeps it whole). */
function shortDigest(text, max = 120) {
  const t = String(text ?? '')
    .replace(/\s+/g, ' ')
    .replace(/\|/g, '\\|')
    .replace(/`/g, '')
    .trim();
  if (t.length <= max) return t;
  // Keep the head (the verb and target) and the tail (FROM / WHERE), which tell similar shapes apart.
  const head = Math.round(max * 0.45);
  return `${t.slice(0, head)} … ${t.slice(t.length - (max - head - 3))}`;
}

/** The first lines: server, machine, sizes, implementations, the native binary. */
export function printHeader() {
  const [{ model }] = cpus();
  console.log(`# iterativeflow MySQL backend: seed (JS over mysql2), native, and the floor (by hand over mysql2)\n`);
  console.log(
    `server ${bench.server ? `private ${bench.serverVersion ?? bench.server.kind} (started for this run)` : bench.serverUrl.replace(/\/\/[^@]*@/, '//…@')}, ` +
      `${cpus().length} CPU (${model.trim()}), node ${process.version}, scale ${SCALE}, reps ${REPS} (flows ${FLOW_REPS}), ` +
      `implementations: ${bench.impls.map((i) => i.name).join(', ')}, timed pools over ${SOCKET ? 'a Unix socket' : 'TCP'}`,
  );
  if (bench.nativeInfo) console.log(bench.nativeInfo);
  if (!bench.server) console.log('note: MYSQL_URL server - statement counts assume no other clients are active');
  console.log('');
}

const S = (r, impl, k) => r.summary[impl]?.[k];
const rateCell = (r, impl) => (r.errors[impl] ? 'FAILED' : fmtRate(S(r, impl, 'rate')));
/** `a / b` throughput as `1.23×`, or n/a when either side did not run. */
const ratioCell = (r, a, b) => {
  const x = S(r, a, 'rate') / S(r, b, 'rate');
  return Number.isFinite(x) ? `${x.toFixed(2)}×` : 'n/a';
};
/** The columns of the rate tables: seed, native and floor always, native-b when it ran. */
const hasNativeB = () => bench.impls.some((i) => i.name === 'native-b');
const columns = () => IMPL_NAMES.filter((n) => n !== 'native-b' || hasNativeB());
/** The ratios shown: `[a, b]` is a / b; an A/B run adds native-b / native. */
const ratioPairs = () => [
  ['native', 'seed'],
  ['floor', 'seed'],
  ['native', 'floor'],
  ...(hasNativeB() ? [['native-b', 'native']] : []),
];
const ratioHeads = () =>
  `| ${ratioPairs()
    .map(([a, b]) => `${a}/${b}`)
    .join(' | ')} |`;
const ratioCells = (r) =>
  `${ratioPairs()
    .map(([a, b]) => ratioCell(r, a, b))
    .join(' | ')} |`;
const rule = (n) => `|---|${'---:|'.repeat(n)}`;

/** The main table and the detail table: rates and costs per operation of every rate scenario. */
function printRates(results) {
  const shown = columns();
  console.log(`| scenario | ${shown.join(' | ')} ${ratioHeads()} ${shown.map((i) => `${i} RT/op`).join(' | ')} |`);
  console.log(rule(shown.length * 2 + ratioPairs().length));
  for (const r of results) {
    console.log(
      `| ${r.name} | ${shown.map((i) => rateCell(r, i)).join(' | ')} | ${ratioCells(r)} ` +
        `${shown.map((i) => fmt(S(r, i, 'rtPerOp'), 2)).join(' | ')} |`,
    );
  }
  console.log(
    `\nRates are medians over ${REPS} interleaved repetitions (${FLOW_REPS} for flows; ops/s; runs/s for drains, submissions and flows; timers/s for the timer drain). ` +
      `native/seed = native / seed throughput (> 1: native faster); floor = the same work by hand over raw mysql2 (bench/floor/), ` +
      `native/floor above 1: native beats the floor${hasNativeB() ? '; native-b/native = the other build over this one, in the same process (above 1: native-b faster)' : ''}. RT/op = client commands awaiting a server reply, ` +
      `counted on the wire in a separate pass (${COUNT_FRACTION} of the size).\n`,
  );

  // Detail table.
  console.log(
    '| scenario | impl | stmts/op | commits/op | prepares/op | CPU µs/op (process) | CPU µs/op (main thread) | CPU µs/op (server) | ELU | retries |',
  );
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of results) {
    for (const impl of bench.impls) {
      const s = r.summary[impl.name];
      if (!s) continue;
      if (s.error) {
        console.log(
          `| ${r.name} | ${impl.name} | FAILED: ${s.error.replace(/\|/g, '/').replace(/\s+/g, ' ').slice(0, 120)} | | | | | | | |`,
        );
        continue;
      }
      console.log(
        `| ${r.name} | ${impl.name} | ${fmt(s.stmtsPerOp, 2)} | ${fmt(s.commitsPerOp, 2)} | ${fmt(s.preparesPerOp, 2)} | ${fmt(s.cpuUsPerOp, 0)} | ` +
          `${fmt(s.mainCpuUsPerOp, 0)} | ${fmt(s.serverCpuUsPerOp, 0)} | ${fmt(s.elu, 2)} | ${s.retries} |`,
      );
    }
  }
  console.log(
    "\nstmts/op from the server's Questions counter (each statement of a multi-statement query counts, and so does each execution of a prepared statement; " +
      `prepares do not). commits/op = ${commitsLabel()}. ` +
      'Process CPU includes native worker threads; main-thread CPU is the JS thread alone; server CPU is the private server process (n/a with MYSQL_URL). ' +
      'retries = operations re-run after a deadlock or lock-wait timeout, by the bench or (native, from sql.stats()) ' +
      'inside the implementation; sum over the timed repetitions.',
  );
}

/**
 * An A/B run's verdict per scenario: native-b's rate over native's, repetition by repetition
 * (the two ran back to back in each, so the host's drift cancels), and its CPU per operation
 * against native's (medians).
 */
function printPairs(results) {
  console.log('\n## native-b against native, paired by repetition\n');
  console.log(
    '| scenario | pairs | native-b/native, median | lowest | highest | native-b faster in | Node CPU µs | main-thread CPU µs | server CPU µs |',
  );
  console.log(rule(8));
  for (const r of results) {
    const a = r.reps?.native ?? [];
    const b = r.reps?.['native-b'] ?? [];
    const ratios = b
      .slice(0, a.length)
      .map((x, i) => x.rate / a[i].rate)
      .filter(Number.isFinite);
    if (ratios.length === 0) continue;
    const sorted = [...ratios].sort((x, y) => x - y);
    const both = (k) => `${fmt(S(r, 'native', k), 0)} → ${fmt(S(r, 'native-b', k), 0)}`;
    console.log(
      `| ${r.name} | ${ratios.length} | ${median(ratios).toFixed(3)}× | ${sorted[0].toFixed(3)}× | ${sorted.at(-1).toFixed(3)}× | ` +
        `${ratios.filter((x) => x > 1).length} of ${ratios.length} | ${both('cpuUsPerOp')} | ${both('mainCpuUsPerOp')} | ${both('serverCpuUsPerOp')} |`,
    );
  }
}

/** The tables on stdout; failures, listed last, set the exit code to 1. */
export function printTables(all, scenarios, failures) {
  // The push and scale scenarios have latencies, not rates: their own tables, after the others.
  const results = all.filter((r) => r.kind !== 'push' && r.kind !== 'scale');
  if (results.length) printRates(results);
  if (results.length && hasNativeB()) printPairs(results);
  const flows = results.filter((r) => r.kind === 'flow');
  // Flows: one line per flow, both implementations side by side ("seed / native").
  if (flows.length) {
    const pair = (r, k, d = 0) =>
      bench.impls.map((i) => (r.summary[i.name]?.error ? 'FAILED' : fmt(r.summary[i.name]?.[k], d))).join(' / ');
    console.log(`\n## Engine-driven flows (per run: ${bench.impls.map((i) => i.name).join(' / ')})\n`);
    const shown = columns();
    console.log(
      `| flow | ${shown.map((i) => `${i} runs/s`).join(' | ')} ${ratioHeads()} statements | commits | round trips | Node CPU µs | main-thread CPU µs | server CPU µs | retries |`,
    );
    console.log(rule(shown.length + ratioPairs().length + 7));
    for (const r of flows) {
      console.log(
        `| ${r.name} | ${shown.map((i) => rateCell(r, i)).join(' | ')} | ${ratioCells(r)} ` +
          `${pair(r, 'stmtsPerOp', 1)} | ${pair(r, 'commitsPerOp', 1)} | ${pair(r, 'rtPerOp', 1)} | ${pair(r, 'cpuUsPerOp')} | ` +
          `${pair(r, 'mainCpuUsPerOp')} | ${pair(r, 'serverCpuUsPerOp')} | ${pair(r, 'retries')} |`,
      );
    }
    console.log('\n| flow | impl | ticks/run | empty ticks | timers fired/run | leases/run | lease outcomes |');
    console.log('|---|---|---:|---:|---:|---:|---|');
    for (const r of flows) {
      for (const impl of bench.impls) {
        const info = r.summary[impl.name]?.info;
        if (!info) continue;
        const outcomes = Object.entries(info.results ?? {})
          .map(([k, v]) => `${k} ${v}`)
          .join(', ');
        console.log(
          `| ${r.name} | ${impl.name} | ${fmt(info.ticks / r.size, 3)} | ${info.emptyTicks} | ${fmt(info.due / r.size, 2)} | ${fmt(info.claimed / r.size, 2)} | ${outcomes} |`,
        );
      }
    }
    console.log(
      '\nEngine ticks of the last timed repetition: ticks and leases per root run, empty ticks (claimed and fired nothing; ' +
        `each followed by a ${IDLE_MS} ms pause) in total, timers fired by dueBatch per run, runTick outcomes by kind.`,
    );
    console.log(
      `\n${FLOW_RUNS} root runs per flow (${Math.max(20, Math.round(FLOW_RUNS * COUNT_FRACTION))} in the counting pass); ` +
        'a run is one root run (for "invoke", the parent and its child together). ' +
        `commits = ${commitsLabel()}. Node CPU of the multi-process flow = the worker processes' sum.`,
    );
  }

  // Server time per statement shape.
  const withDigests = results.filter((r) => bench.impls.some((i) => r.summary[i.name]?.digests));
  if (withDigests.length) {
    console.log(
      `\n## Server time per statement shape (performance_schema digests, top ${DIGESTS_TOP} by server time per run)\n`,
    );
    console.log(
      'events_statements_summary_by_digest, truncated before each timed repetition and summed over them. ' +
        'per run = COUNT_STAR / runs; µs/stmt = SUM_TIMER_WAIT / COUNT_STAR (server-side latency: execution, lock waits ' +
        `and waiting for a CPU; not CPU time${digestInfo.cpu ? '; SUM_CPU_TIME is in the cpu column' : ', which MariaDB does not report'}); µs/run = SUM_TIMER_WAIT / runs.`,
    );
    for (const r of withDigests) {
      for (const impl of bench.impls) {
        const d = r.summary[impl.name]?.digests;
        if (!d) continue;
        console.log(`\n### ${r.name} — ${impl.name} (${d.shapes} shapes over ${d.runs} runs)\n`);
        console.log(
          `| statement | per run | µs/stmt | µs/run |${digestInfo.cpu ? ' cpu µs/run |' : ''} rows examined/stmt |`,
        );
        console.log(`|---|---:|---:|---:|${digestInfo.cpu ? '---:|' : ''}---:|`);
        for (const row of [...d.rows.slice(0, DIGESTS_TOP), d.total]) {
          const where =
            {
              'packet-first': ' (1st of a packet)',
              'packet-inner': ' (in a packet)',
              'packet-last': ' (last of a packet)',
            }[row.position] ?? (row.textSource === 'digest_text' ? " (server's digest text)" : '');
          const text = row === d.total ? `**${row.text}**` : `\`${shortDigest(row.text)}\`${where}`;
          console.log(
            `| ${text} | ${fmt(row.perRun, 2)} | ${fmt(row.usPerStmt, 0)} | ${fmt(row.usPerRun, 0)} |` +
              `${digestInfo.cpu ? ` ${fmt(row.cpuUsPerRun, 0)} |` : ''} ${fmt(row.rowsExaminedPerStmt, 1)} |`,
          );
        }
        const p = r.summary[impl.name]?.prepared;
        if (p?.rows.length) {
          console.log(
            `\nPrepared-statement executions (not in the digests above), from the counting pass (${p.runs} runs):\n`,
          );
          console.log('| prepared statement | per run | µs/exec | µs/run | rows examined/exec |');
          console.log('|---|---:|---:|---:|---:|');
          for (const row of [...p.rows.slice(0, DIGESTS_TOP), p.total]) {
            const text = row === p.total ? `**${row.text}**` : `\`${shortDigest(row.text)}\``;
            console.log(
              `| ${text} | ${fmt(row.perRun, 2)} | ${fmt(row.usPerExec, 0)} | ${fmt(row.usPerRun, 0)} | ${fmt(row.rowsExaminedPerExec, 1)} |`,
            );
          }
        }
      }
    }
  } else if (scenarios.some((s) => s.digests)) {
    console.log(`\n(no statement digests: ${digestInfo.reason})`);
  }

  const push = all.find((r) => r.kind === 'push');
  if (push) printPush(push.push);
  const scale = all.find((r) => r.kind === 'scale')?.scale;
  if (scale) {
    const cpu = bench.server ? `\n${timeTables(scale, 'serverCpuMs')}` : '';
    console.log(`\n## Cost with history (bench/scale/)\n${timeTables(scale)}${cpu}\n${planLines(scale)}`);
  }

  if (failures.length) {
    console.log(`\n${failures.length} scenario/implementation pair(s) FAILED:`);
    for (const f of failures) console.log(`- ${f.scenario} (${f.impl}): ${f.error?.message ?? f.error}`);
    process.exitCode = 1;
  }
}

/** The push scenario's tables: latency per variant, then the idle server CPU. */
function printPush(p) {
  console.log(
    `\n## Push: latency across processes (${p.samples} runs per variant, ${p.workers} idle worker processes each)\n`,
  );
  console.log('| variant | submit → first step p50 | p99 | max | run end → result() p50 | p99 | max |');
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const v of p.variants) {
    if (v.error) {
      console.log(
        `| ${v.variant} | FAILED: ${v.error.replace(/\|/g, '/').replace(/\s+/g, ' ').slice(0, 120)} | | | | | |`,
      );
      continue;
    }
    const d = v.dispatch;
    const c = v.completion;
    console.log(
      `| ${v.variant} | ${fmt(d.p50, 1)} | ${fmt(d.p99, 1)} | ${fmt(d.max, 1)} | ${fmt(c.p50, 1)} | ${fmt(c.p99, 1)} | ${fmt(c.max, 1)} |`,
    );
  }
  console.log(
    `\nms. Workers run core's resident loop (tickMs ${p.tickMs}: ${p.tickMs} ms after a partial batch, doubling to ` +
      `${p.tickMs * 8} ms when idle; with push the wait is queue.waitForWork); the waiter runs core's result() ` +
      `(500 ms re-read); listener intervalMs ${p.intervalMs}. Each run is enqueued after a random pause that lets the ` +
      `workers back off fully; the variants sample concurrently (${fmt(p.latencyWallS, 0)} s).`,
  );
  const idle = p.idle;
  if (!idle) return;
  console.log(`\n| idle worker processes | server CPU ms/s | per process ms/s | connections per process |`);
  console.log('|---|---:|---:|---:|');
  for (const r of idle.rows) {
    console.log(
      `| ${r.procs} × ${r.label} | ${fmt(r.serverMsPerS, 1)} | ${fmt(r.perProcMsPerS, 2)} | ${fmt(r.connectionsPerProc, 1)} |`,
    );
  }
  console.log(
    `\nServer CPU (/proc of the private server, 10 ms ticks; n/a with MYSQL_URL) over ${idle.windowMs} ms windows, ` +
      `minus the idle server's own ${fmt(idle.baselineMsPerS, 1)} ms/s. 100 idle processes with push on ≈ ` +
      `${fmt(idle.hundredMsPerS, 0)} ms/s (the 10-process figure × 100); intervalMs trades it against latency.`,
  );
}

/** The push figures for results.json, without the raw samples. */
function pushSummary(results) {
  const p = results.find((r) => r.kind === 'push')?.push;
  if (!p) return undefined;
  return { ...p, variants: p.variants.map(({ raw, ...v }) => v) };
}

/**
 * --json (every repetition), and unless --no-chart results.json, the chart and the README's
 * figures table, when flows ran.
 */
export function writeOutputs(results) {
  const [{ model }] = cpus();
  const flows = results.filter((r) => r.kind === 'flow');
  const stamp = new Date().toISOString();
  const machine = { cpus: cpus().length, model: model.trim(), node: process.version, server: bench.serverVersion };
  if (argv.json) {
    const raw = results.map((r) => ({ ...r, reps: r.reps, counted: r.counted }));
    writeFileSync(
      argv.json,
      JSON.stringify(
        {
          generatedAt: stamp,
          scale: SCALE,
          reps: REPS,
          flowReps: FLOW_REPS,
          machine,
          commits: commitsLabel(),
          digests: digestInfo,
          results: raw,
        },
        null,
        2,
      ),
    );
    console.log(`\nraw results: ${argv.json}`);
  }
  if (!argv['no-chart'] && flows.length === 0) {
    console.log(`\nchart not rewritten (${argv.chart}): no flow scenario in this run`);
  } else if (!argv['no-chart']) {
    const pick = (s, top) => {
      if (!s) return undefined;
      if (s.error) return { error: s.error };
      const { wire, digests, info, prepared, ...rest } = s;
      return {
        ...rest,
        info,
        prepared: prepared && {
          runs: prepared.runs,
          total: prepared.total,
          top: top ? prepared.rows.slice(0, DIGESTS_TOP) : undefined,
        },
        digests: digests && {
          runs: digests.runs,
          shapes: digests.shapes,
          total: digests.total,
          top: top ? digests.rows.slice(0, DIGESTS_TOP) : undefined,
        },
      };
    };
    const entry = (r, top = true) => ({
      name: r.name,
      kind: r.kind,
      chartLabel: r.chartLabel,
      size: r.size,
      conc: r.conc,
      unit: r.unit,
      ratio: S(r, 'native', 'rate') / S(r, 'seed', 'rate'),
      ratioToFloor: S(r, 'native', 'rate') / S(r, 'floor', 'rate'),
      seed: pick(r.summary.seed, top),
      native: pick(r.summary.native, top),
      floor: pick(r.summary.floor, top),
    });
    const summary = {
      title: 'iterativeflow MySQL backend: engine-driven flows, JavaScript 2.0.0-alpha.2 vs native',
      implementations: bench.impls.map((i) => i.name),
      subtitle:
        `${machine.cpus} CPU (${machine.model}) shared with ${bench.serverVersion ?? 'the server'}; node ${process.version}; ` +
        `scale ${SCALE}, ${FLOW_RUNS} runs per flow, medians of ${FLOW_REPS} interleaved reps; ${stamp.slice(0, 10)}`,
      generatedAt: stamp,
      scale: SCALE,
      reps: REPS,
      flowReps: FLOW_REPS,
      flowRuns: FLOW_RUNS,
      machine,
      nativeBinary: bench.nativeInfo || undefined,
      commits: commitsLabel(),
      only: argv.only,
      flows: flows.map((r) => entry(r)),
      // The other scenarios' medians (their digests as totals only; --json has everything).
      scenarios: results.filter((r) => !['flow', 'push', 'scale'].includes(r.kind)).map((r) => entry(r, false)),
      // The push scenario's latencies and idle cost (raw samples left to --json).
      push: pushSummary(results),
    };
    // Four significant digits are plenty for a chart's numbers.
    const round = (k, v) =>
      typeof v === 'number' && Number.isFinite(v) && !Number.isInteger(v) ? Number(v.toPrecision(4)) : v;
    const text = JSON.stringify(summary, round, 1);
    writeFileSync(argv.results, text + '\n');
    // Drawn from exactly what results.json holds (bench/chart.test.mjs checks that they match).
    writeFileSync(argv.chart, renderChart(JSON.parse(text)));
    console.log(`\nchart: ${argv.chart} (numbers: ${argv.results})`);
    // The figures in README and docs/, from the results files (__test__/package/readme.test.mjs checks them).
    try {
      const changed = writeFigures();
      console.log(`figures: ${changed.length ? changed.join(', ') : 'unchanged'}`);
    } catch (e) {
      console.error(`figures not written: ${e.message}`);
      process.exitCode = 1;
    }
  }
}
