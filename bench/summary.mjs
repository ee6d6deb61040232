// The front page's figures: one Markdown table of the drains, the engine's bulk submission and
// timer drain, and the flows, for the JavaScript package, this package and the hand-written floor
// (bench/floor/), rendered from what results.json holds and written into README.md between two
// marker comments, so that the README can only
// show the figures of the run that wrote results.json (__test__/package/readme.test.mjs checks
// that they agree). No imports of the bench's state: the test loads this module on its own.
//
//   node bench/summary.mjs [results.json] [README.md]   # rewrite the block from a results file
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const SUMMARY_START = '<!-- bench:summary:start -->';
export const SUMMARY_END = '<!-- bench:summary:end -->';

/** `x` with thousands separators (fixed to `digits` decimals), or `n/a`; locale-independent. */
function num(x, digits = 0) {
  if (typeof x !== 'number' || !Number.isFinite(x)) return 'n/a';
  const [int, frac] = x.toFixed(digits).split('.');
  const grouped = int.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return frac === undefined ? grouped : `${grouped}.${frac}`;
}

const rate = (x) => num(x, Number.isFinite(x) && x < 100 ? 1 : 0);
const cell = (text) => String(text).replace(/\s+/g, ' ').replace(/\|/g, '\\|').trim();

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

/** The conditions of the run, from the fields results.json records about it. */
function conditions(results) {
  const m = results.machine ?? {};
  const parts = [
    String(results.generatedAt ?? '').slice(0, 10) || 'undated',
    `${m.cpus ?? '?'} CPU (${m.model ?? 'unknown'}) shared by Node ${m.node ?? ''} and ${m.server ?? 'the server'}`,
    `${num(results.flowRuns)} root runs per flow`,
    `medians of ${results.flowReps ?? '?'} interleaved repetition${results.flowReps === 1 ? '' : 's'}`,
  ];
  if (results.scale !== undefined && results.scale !== 1) parts.push(`scale ${results.scale}`);
  if (results.only?.length) parts.push(`only scenarios matching ${results.only.map((o) => `"${o}"`).join(', ')}`);
  return parts.map(cell).join('; ');
}

/**
 * The Markdown block (without the markers) for a results object shaped like bench/results.json:
 * one line per drain, submission, timer drain and flow: the throughput of the three sides, this
 * package's ratios to the JavaScript package and to the floor and the floor's to the JavaScript
 * package, then per run `JavaScript / native / floor`. The links are relative to the repository
 * root, where README.md is.
 */
export function renderSummary(results) {
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
      '([bench/floor/](bench/floor/index.mjs)); `—`: not measured in this run. ' +
      `${conditions(results)}. Written by \`npm run bench\` from ` +
      '[`bench/results.json`](bench/results.json); what each column counts, the single calls and where the time ' +
      'goes: [docs/benchmarks.md](docs/benchmarks.md).',
  );
  return lines.join('\n');
}

/** `text` with the block between the markers replaced by `block`; throws when they are missing. */
export function replaceSummary(text, block) {
  const start = text.indexOf(SUMMARY_START);
  const end = text.indexOf(SUMMARY_END);
  if (start < 0 || end < start) throw new Error(`no ${SUMMARY_START} … ${SUMMARY_END} block`);
  return `${text.slice(0, start + SUMMARY_START.length)}\n${block}\n${text.slice(end)}`;
}

/** The block currently between the markers of `text`, or undefined when they are missing. */
export function readSummary(text) {
  const start = text.indexOf(SUMMARY_START);
  const end = text.indexOf(SUMMARY_END);
  if (start < 0 || end < start) return undefined;
  return text
    .slice(start + SUMMARY_START.length, end)
    .replace(/^\n/, '')
    .replace(/\n$/, '');
}

/** Rewrites the block of the file `readmePath` from `results`. */
export function writeSummary(readmePath, results) {
  writeFileSync(readmePath, replaceSummary(readFileSync(readmePath, 'utf8'), renderSummary(results)));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..');
  const [resultsPath = join(root, 'bench', 'results.json'), readmePath = join(root, 'README.md')] =
    process.argv.slice(2);
  writeSummary(readmePath, JSON.parse(readFileSync(resultsPath, 'utf8')));
  console.log(`${readmePath}: figures from ${resultsPath}`);
}
