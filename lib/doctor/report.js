'use strict';
// The report as text (what the CLI prints): one line per check, then the verdict.

/** The report as text: one line per check, then a summary. */
function formatReport(result, { header } = {}) {
  const tag = { ok: 'ok  ', warn: 'WARN', fail: 'FAIL' };
  const width = Math.max(12, ...result.checks.map((x) => x.name.length));
  const lines = [];
  if (header) lines.push(header);
  for (const x of result.checks) lines.push(`  ${tag[x.verdict] || x.verdict}  ${x.name.padEnd(width)}  ${x.detail}`);
  const n = (v) => result.checks.filter((x) => x.verdict === v).length;
  lines.push(`verdict: ${result.verdict.toUpperCase()} (${n('ok')} ok, ${n('warn')} warn, ${n('fail')} fail)`);
  return lines.join('\n');
}

module.exports = { formatReport };
