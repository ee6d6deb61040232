// The scale benchmark's tables (Markdown, as docs/benchmarks.md shows them): per server and
// contract, each call's median at every size for this package and the JavaScript package, the
// growth from the smallest to the largest size, and the plans of the largest size.

const ms = (x) => (Number.isFinite(x) ? (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2)) : '—');
const kRuns = (n) => (n >= 1e6 ? `${n / 1e6}M` : n >= 1e3 ? `${n / 1e3}k` : String(n));
const JS = { '2.0.0-alpha.2': 'JavaScript 2.0.0-alpha.2', '3.0.0': 'JavaScript 3.0.0' };

/**
 * One Markdown table per contract of `result` (one server): of the wall-time medians, or with
 * `key` 'serverCpuMs' of the server's CPU time per call (private servers only; 10 ms ticks).
 */
export function timeTables(result, key = 'medianMs') {
  const out = [];
  const contracts = [...new Set(result.sizes.flatMap((s) => s.calls.map((c) => c.contract)))];
  for (const contract of contracts) {
    const sizes = result.sizes.filter((s) => s.calls.some((c) => c.contract === contract));
    const first = sizes[0];
    const last = sizes.at(-1);
    const what = key === 'medianMs' ? 'wall ms' : 'server CPU ms';
    out.push(`\n#### ${result.server}, ${contract} (${what}, median of ${result.reps}; native / ${JS[contract]})\n`);
    out.push(
      `| call | ${sizes.map((s) => `${kRuns(s.runs)} runs`).join(' | ')} | growth ${kRuns(first.runs)} → ${kRuns(last.runs)}, native / JS |`,
    );
    out.push(`|---|${sizes.map(() => '---:').join('|')}|---:|`);
    for (const call of first.calls.filter((c) => c.contract === contract)) {
      const at = (size) => size.calls.find((c) => c.contract === contract && c.name === call.name)?.sides ?? {};
      const cell = (size) => {
        const s = at(size);
        const js = s.js ? (s.js.error ? 'error' : ms(s.js[key])) : '—';
        return `${ms(s.native?.[key])} / ${js}`;
      };
      const growth = (side) => {
        const a = at(first)[side]?.[key];
        const b = at(last)[side]?.[key];
        return Number.isFinite(a) && Number.isFinite(b) && a > 0 ? `${(b / a).toFixed(1)}×` : '—';
      };
      const name = call.live ? `**${call.name}**` : call.name;
      out.push(`| ${name} | ${sizes.map(cell).join(' | ')} | ${growth('native')} / ${growth('js')} |`);
    }
  }
  return out.join('\n');
}

/** The statements of every call at the largest size, each with its EXPLAIN, per side. */
export function planLines(result) {
  const last = result.sizes.at(-1);
  const out = [`\n#### Plans at ${kRuns(last.runs)} runs, ${result.server} (table type key rows Extra; per access)\n`];
  for (const call of last.calls) {
    for (const [side, s] of Object.entries(call.sides)) {
      if (!s.plans) continue;
      out.push(
        `- ${call.name} — ${call.contract}, ${side === 'native' ? 'this package' : JS[call.contract]}, ${ms(s.medianMs)} ms`,
      );
      for (const p of s.plans)
        out.push(`  - \`${p.sql.slice(0, 160)}${p.sql.length > 160 ? '…' : ''}\`\n    → ${p.plan}`);
    }
  }
  return out.join('\n');
}
