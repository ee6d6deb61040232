// The front page's figures: one Markdown table of the flows, rendered from what results.json
// holds and written into README.md between two marker comments, so that the README can only
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

/** `seed / native` of one per-run column. */
const pair = (r, key, format) => `${value(r.seed, key, format)} / ${value(r.native, key, format)}`;

function ratioCell(r) {
  const computed = r.native?.rate / r.seed?.rate;
  const ratio = typeof r.ratio === 'number' && Number.isFinite(r.ratio) ? r.ratio : computed;
  return Number.isFinite(ratio) ? `**${ratio.toFixed(2)}×**` : 'n/a';
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
 * one line per flow, throughput of both implementations and the ratio, then per root run
 * `JavaScript / native`. The links are relative to the repository root, where README.md is.
 */
export function renderSummary(results) {
  const flows = Array.isArray(results?.flows) ? results.flows : [];
  const lines = [
    '| engine-driven flow | JavaScript 2.0.0-alpha.2, runs/s | this package, runs/s | ratio | statements per run | round trips per run | main-thread CPU µs per run | server CPU µs per run |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of flows) {
    const label = cell(r.chartLabel ? r.chartLabel.split('\n').join(', ') : r.name);
    lines.push(
      `| ${label} | ${value(r.seed, 'rate', rate)} | ${value(r.native, 'rate', rate)} | ${ratioCell(r)} | ` +
        `${pair(r, 'stmtsPerOp', (x) => num(x, 1))} | ${pair(r, 'rtPerOp', (x) => num(x, 1))} | ` +
        `${pair(r, 'mainCpuUsPerOp', num)} | ${pair(r, 'serverCpuUsPerOp', num)} |`,
    );
  }
  if (flows.length === 0) lines.push('| (no flow scenario in this run) | | | | | | | |');
  lines.push(
    '',
    `Per run: JavaScript / native. ${conditions(results)}. Written by \`npm run bench\` from ` +
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
