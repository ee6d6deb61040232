// The push figures as Markdown, from the `push` section of one results file (the bench's push
// scenario, bench/scenarios/push.mjs): wake-up latencies per variant and the idle cost per waiting
// process. Pure functions, like summary.mjs; bench/figures.mjs puts them in the pages.
import { cell, num, runOn } from './summary.mjs';

const ms = (x) => (Number.isFinite(x) ? `${num(x, x < 10 ? 1 : 0)} ms` : 'n/a');
const pair = (d) => (d ? `${ms(d.p50)} / ${ms(d.p99)}` : '—');

/** Wake-up latencies: submit → first step, and run end → `result()` in another process. */
export function renderPushLatency(results, { base = '', file = 'bench/results.json' } = {}) {
  const push = results?.push;
  const lines = ['| variant | submit → first step, p50 / p99 | run end → `result()`, p50 / p99 |', '|---|---:|---:|'];
  for (const v of push?.variants ?? [])
    lines.push(`| ${cell(v.variant)} | ${pair(v.dispatch)} | ${pair(v.completion)} |`);
  if (!push?.variants?.length) lines.push('| (no push scenario in this run) | | |');
  lines.push(
    '',
    `${push?.samples ?? '?'} runs per variant; ${push?.workers ?? '?'} idle worker processes running core's resident ` +
      `loop (tick ${push?.tickMs ?? '?'} ms), a third process in core's \`result()\`, the bench process submitting; ` +
      `${runOn(results)}. From [\`${file}\`](${base}${file}) (\`npm run bench -- --only push\`).`,
  );
  return lines.join('\n');
}

/** The server CPU and connections an idle waiting process costs, with and without push. */
export function renderPushIdle(results, { base = '', file = 'bench/results.json' } = {}) {
  const idle = results?.push?.idle;
  const lines = [
    '| idle processes | push | server CPU per process | connections per process |',
    '|---:|---|---:|---:|',
  ];
  for (const r of idle?.rows ?? []) {
    const cpu = Number.isFinite(r.perProcMsPerS) ? `${num(Math.max(0, r.perProcMsPerS), 2)} ms/s` : 'n/a';
    lines.push(`| ${r.procs} | ${r.push ? 'on' : 'off'} | ${cpu} | ${num(r.connectionsPerProc, 1)} |`);
  }
  if (!idle?.rows?.length) lines.push('| (no idle measurement in this run) | | | |');
  lines.push(
    '',
    `Server CPU over ${num((idle?.windowMs ?? NaN) / 1000)} s windows above an idle baseline of ` +
      `${num(idle?.baselineMsPerS, 2)} ms/s (a figure within one 10 ms tick of zero is noise); ${runOn(results)}. ` +
      `From [\`${file}\`](${base}${file}).`,
  );
  return lines.join('\n');
}

/**
 * What push by the binary log would cost on MySQL (bench/push-binlog.mjs): server and reader CPU
 * per commit with 0, 1 and 10 replication streams open, and how soon a commit shows in a stream.
 */
export function renderPushBinlog(results, { base = '', file = 'bench/push-binlog.json' } = {}) {
  const lines = [
    "| replication streams open | server CPU per commit | each stream reader's CPU per commit |",
    '|---:|---:|---:|',
  ];
  for (const v of results?.variants ?? [])
    lines.push(
      `| ${v.readers} | ${num(v.serverUsPerCommit)} µs | ${v.readers ? `${num(v.readerUsPerCommit)} µs` : '—'} |`,
    );
  const lat = results?.latencyMs;
  lines.push(
    '',
    `${num(results?.commits)} one-row commits (upserts and deletes, the queue's shape) per variant; a commit shows in ` +
      `a stream p50 ${lat ? ms(lat.p50) : 'n/a'}, p99 ${lat ? ms(lat.p99) : 'n/a'} later. ${results?.server ? `MySQL ${results.server}` : ''}, ` +
      `${results?.date ? results.date.slice(0, 10) : 'undated'}${results?.host ? `, ${results.host}` : ''}. From ` +
      `[\`${file}\`](${base}${file}) (\`node bench/push-binlog.mjs\`).`,
  );
  return lines.join('\n');
}
