// The benchmark's figures as Markdown, from one results file (bench/results.json and friends, one
// per server): the table of drains, the engine's bulk submission and timer drain, and the flows
// for the JavaScript package, this package and the hand-written floor (bench/floor/); the single
// calls; and the front page's headline. Pure functions of the results: bench/figures.mjs puts them
// in the pages, __test__/package/readme.test.mjs checks that the pages show what they render.
// No imports of the bench's state: the test loads this module on its own.

/** `x` with thousands separators (fixed to `digits` decimals), or `n/a`; locale-independent. */
export function num(x, digits = 0) {
  if (typeof x !== 'number' || !Number.isFinite(x)) return 'n/a';
  const [int, frac] = x.toFixed(digits).split('.');
  const grouped = int.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return frac === undefined ? grouped : `${grouped}.${frac}`;
}

const rate = (x) => num(x, Number.isFinite(x) && x < 100 ? 1 : 0);
export const cell = (text) => String(text).replace(/\s+/g, ' ').replace(/\|/g, '\\|').trim();

/** One implementation's value in a cell: the number, `FAILED`, or `—` when it did not run. */
function value(side, key, format) {
  if (!side) return '—';
  if (side.error) return 'FAILED';
  return format(side[key]);
}

const SIDES = ['seed', 'native', 'floor'];

/** A per-run count: one decimal, two below 0.1 (a bulk INSERT's share of one run). */
const perRun = (x) => num(x, x > 0 && x < 0.1 ? 2 : 1);

/** `seed / native / floor` of one per-run column. */
const triple = (r, key, format) => SIDES.map((side) => value(r[side], key, format)).join(' / ');

/** Throughput of side `a` over side `b`, bold when it is this package's. */
function ratioCell(r, a, b) {
  const ratio = r[a]?.rate / r[b]?.rate;
  if (!Number.isFinite(ratio)) return 'n/a';
  return a === 'native' ? `**${ratio.toFixed(2)}×**` : `${ratio.toFixed(2)}×`;
}

/** The rows of the table: the scenarios other than micro-ops (drains, submission, timers), then the flows. */
function rowsOf(results) {
  const others = (Array.isArray(results?.scenarios) ? results.scenarios : []).filter(
    (r) => r.kind && r.kind !== 'micro' && r.kind !== 'push',
  );
  return [...others, ...(Array.isArray(results?.flows) ? results.flows : [])];
}

/** The server a results file was measured on (`MariaDB 10.11.19`), from what it records. */
export const serverOf = (results) => results?.machine?.server ?? 'an unnamed server';

/** Date, host and software of a run (`2026-12-04; 2 CPU (…) shared by Node … and MariaDB …`). */
export function runOn(results) {
  const m = results.machine ?? {};
  return [
    String(results.generatedAt ?? '').slice(0, 10) || 'undated',
    `${m.cpus ?? '?'} CPU (${m.model ?? 'unknown'}) shared by Node ${m.node ?? ''} and ${m.server ?? 'the server'}`,
  ]
    .map(cell)
    .join('; ');
}

/** runOn() and how the flows were run, from the fields a results file records about it. */
export function conditions(results) {
  const parts = [
    runOn(results),
    `${num(results.flowRuns)} root runs per flow`,
    `medians of ${results.flowReps ?? '?'} interleaved repetition${results.flowReps === 1 ? '' : 's'}`,
  ];
  if (results.scale !== undefined && results.scale !== 1) parts.push(`scale ${results.scale}`);
  if (results.only?.length) parts.push(`only scenarios matching ${results.only.map((o) => `"${o}"`).join(', ')}`);
  return parts.map(cell).join('; ');
}

/**
 * The table of one results file: one line per drain, submission, timer drain and flow — the
 * throughput of the three sides, this package's ratios to the JavaScript package and to the floor
 * and the floor's to the JavaScript package, then per run `JavaScript / native / floor` — and a
 * caption naming the server, date and host. `base`: the path from the page to the repository root.
 */
export function renderSummary(results, { base = '', file = 'bench/results.json' } = {}) {
  const rows = rowsOf(results);
  const lines = [
    '| work | JavaScript 2.0.0-alpha.2, per s | this package, per s | hand-written floor, per s | this package ÷ JavaScript | this package ÷ floor | floor ÷ JavaScript | statements per run | round trips per run | main-thread CPU µs per run | server CPU µs per run |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    const label = cell(r.chartLabel ? r.chartLabel.split('\n').join(', ') : r.name);
    lines.push(
      `| ${label} | ${SIDES.map((side) => value(r[side], 'rate', rate)).join(' | ')} | ` +
        `${ratioCell(r, 'native', 'seed')} | ${ratioCell(r, 'native', 'floor')} | ${ratioCell(r, 'floor', 'seed')} | ` +
        `${triple(r, 'stmtsPerOp', perRun)} | ${triple(r, 'rtPerOp', perRun)} | ` +
        `${triple(r, 'mainCpuUsPerOp', num)} | ${triple(r, 'serverCpuUsPerOp', num)} |`,
    );
  }
  if (rows.length === 0) lines.push('| (no flow scenario in this run) | | | | | | | | | | |');
  lines.push(
    '',
    'Runs per second (timers per second for the timer drain); per run (per timer): JavaScript / this package / floor. ' +
      'The floor is the same work written by hand over raw mysql2 with the fewest statements per call ' +
      `([bench/floor/](${base}bench/floor/index.mjs)); \`—\`: not measured in this run. ` +
      `${conditions(results)}. From [\`${file}\`](${base}${file}), written by \`npm run bench\`.`,
  );
  return lines.join('\n');
}

/** The micro scenarios paired as `<name> seq` / `<name> x16`, in the order the bench ran them. */
function pairsOf(results) {
  const micro = (results?.scenarios ?? []).filter((s) => s.kind === 'micro');
  const pairs = new Map();
  for (const s of micro) {
    const m = /^(.*) (seq|x\d+)$/.exec(s.name);
    const key = m ? m[1] : s.name;
    if (!pairs.has(key)) pairs.set(key, []);
    pairs.get(key).push(s);
  }
  return pairs;
}

/** The single calls of one results file: operations per second, the ratio, round trips per call. */
export function renderSingleCalls(results, { base = '', file = 'bench/results.json' } = {}) {
  const pairs = pairsOf(results);
  const lines = [
    '| call | JavaScript, per s | this package, per s | this package ÷ JavaScript | round trips per call, JavaScript | round trips per call, this package |',
    '|---|---:|---:|---:|---:|---:|',
  ];
  const join = (list, f) => list.map(f).join(' / ');
  for (const [name, list] of pairs) {
    const how = list.map((s) => (s.conc > 1 ? `${s.conc} at once` : 'one at a time')).join(' / ');
    const ratio = (s) => {
      const r = s.native?.rate / s.seed?.rate;
      return Number.isFinite(r) ? `${r.toFixed(2)}×` : 'n/a';
    };
    lines.push(
      `| ${cell(name)}, ${how} | ${join(list, (s) => value(s.seed, 'rate', rate))} | ` +
        `${join(list, (s) => value(s.native, 'rate', rate))} | ${join(list, ratio)} | ` +
        `${join(list, (s) => value(s.seed, 'rtPerOp', perRun))} | ${join(list, (s) => value(s.native, 'rtPerOp', perRun))} |`,
    );
  }
  if (pairs.size === 0) lines.push('| (no single-call scenario in this run) | | | | | |');
  lines.push(
    '',
    `Operations per second, one call at a time / 16 at once; ${runOn(results)}; medians of ` +
      `${results.reps ?? '?'} interleaved repetitions. From [\`${file}\`](${base}${file}).`,
  );
  return lines.join('\n');
}

/** The ratio of the native side to `side` (seed or floor) of scenario `r`, or NaN. */
const ratioTo = (r, side) => r?.native?.rate / r?.[side]?.rate;

/**
 * The front page's few figures from one results file: the 1-loop engine-shaped drain against the
 * JavaScript package and the floor, with statements per run, and the range over the flows.
 */
export function renderHeadline(results, { base = '' } = {}) {
  const drain = (results?.scenarios ?? []).find((s) => s.kind === 'drain' && s.conc === 1);
  const flows = (results?.flows ?? []).map((f) => ratioTo(f, 'seed')).filter(Number.isFinite);
  const parts = [];
  if (drain && Number.isFinite(ratioTo(drain, 'seed'))) {
    const label = drain.chartLabel ? drain.chartLabel.split('\n').join(', ') : drain.name;
    parts.push(
      `${cell(label)}: **${ratioTo(drain, 'seed').toFixed(2)}×** the JavaScript package's runs per second ` +
        `(${perRun(drain.native.stmtsPerOp)} statements per run against ${perRun(drain.seed.stmtsPerOp)})` +
        (Number.isFinite(ratioTo(drain, 'floor'))
          ? `, ${ratioTo(drain, 'floor').toFixed(2)}× a hand-written floor over mysql2`
          : ''),
    );
  }
  if (flows.length) {
    const lo = Math.min(...flows).toFixed(2);
    const hi = Math.max(...flows).toFixed(2);
    parts.push(`engine-driven flows: ${lo === hi ? `${lo}×` : `${lo}–${hi}×`} the JavaScript package's throughput`);
  }
  const what = parts.length ? parts.join('; ') : 'no comparison with the JavaScript package in this run';
  return `- **${serverOf(results)}**: ${what} (${conditions(results)}; [all figures](${base}docs/benchmarks.md)).`;
}
