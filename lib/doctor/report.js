'use strict';
// The report as text (what the CLI prints): one line per check, then the verdict. `color: true`
// marks the verdicts with ANSI colours (the CLI asks for it on a terminal only).

const TAG = { ok: 'ok  ', warn: 'WARN', fail: 'FAIL' };
const COLOR = { ok: '32', warn: '33', fail: '31' }; // green, yellow, red

/** `text` in the colour of `verdict` when `on`. */
const paint = (on, verdict, text) => (on && COLOR[verdict] ? `\u001b[${COLOR[verdict]}m${text}\u001b[0m` : text);

/** The report as text: one line per check, then a summary. */
function formatReport(result, { header, color = false } = {}) {
  const width = Math.max(12, ...result.checks.map((x) => x.name.length));
  const lines = [];
  if (header) lines.push(header);
  for (const x of result.checks) {
    lines.push(`  ${paint(color, x.verdict, TAG[x.verdict] || x.verdict)}  ${x.name.padEnd(width)}  ${x.detail}`);
  }
  const n = (v) => result.checks.filter((x) => x.verdict === v).length;
  const verdict = paint(color, result.verdict, result.verdict.toUpperCase());
  lines.push(`verdict: ${verdict} (${n('ok')} ok, ${n('warn')} warn, ${n('fail')} fail)`);
  return lines.join('\n');
}

module.exports = { formatReport };
