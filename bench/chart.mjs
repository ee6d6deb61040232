// bench/results.svg from the bench's results object (bench/results.json): a self-contained SVG,
// no dependencies.
//
//   import { renderChart } from './chart.mjs'
//   writeFileSync('bench/results.svg', renderChart(results))
//
// Panel 1: runs/s per engine-driven flow, JavaScript (seed) vs native, grouped bars, the ratio
// (native / seed) above each group. Panel 2: server CPU per run (µs) per flow, both
// implementations, with the ratio. Only `results.flows` is drawn:
//   results = { title?, subtitle?, flows: [{ label, seed?: { rate, serverCpuUsPerOp }, native?: {…} }] }
// A missing or non-finite value draws no bar and reads "n/a".

const COLORS = { seed: '#e0a526', native: '#2f6db5' };
const NAMES = { seed: 'JavaScript (@iterativeflow/mysql 2.0.0-alpha.2)', native: 'native (this package)' };

/** Escapes text for XML character data and attribute values. */
export function xmlEscape(s) {
  return (
    String(s)
      .replace(/&/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/>/g, '&gt;')
      .replace(/"/g, '&quot;')
      .replace(/'/g, '&apos;')
      // Characters XML 1.0 does not allow at all.
      .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '')
  );
}

const finite = (x) => typeof x === 'number' && Number.isFinite(x);

/** A "nice" axis maximum and step for values up to `max` (about `target` intervals). */
export function niceScale(max, target = 5) {
  if (!finite(max) || max <= 0) return { max: 1, step: 0.2 };
  const raw = max / target;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  return { max: Math.ceil(max / step - 1e-9) * step, step };
}

function fmtValue(x) {
  if (!finite(x)) return 'n/a';
  if (Math.abs(x) >= 10_000) return `${(x / 1000).toFixed(Math.abs(x) >= 100_000 ? 0 : 1)}k`;
  if (Math.abs(x) >= 100) return x.toFixed(0);
  if (Math.abs(x) >= 10) return x.toFixed(1);
  return x.toFixed(2);
}

function fmtTick(x) {
  const v = Number(x.toFixed(6));
  return Math.abs(v) >= 1000 ? v.toLocaleString('en-US') : String(v);
}

/** Coordinates with at most one decimal (no float noise in the file). */
const c = (v) => String(Math.round(v * 10) / 10);

/**
 * One panel of grouped bars. `groups`: [{ label, values: { seed, native } }]. Returns SVG text
 * placed at (x, y), `w` × `h` outer size.
 */
function panel({ x, y, w, h, title, groups, impls, ratioLabel }) {
  const out = [];
  const left = 64;
  const right = 12;
  const top = 34;
  const bottom = 46;
  const pw = w - left - right;
  const ph = h - top - bottom;
  const vals = groups.flatMap((g) => impls.map((i) => g.values[i])).filter(finite);
  const { max, step } = niceScale(vals.length ? Math.max(...vals) * 1.2 : 1);
  const sy = (v) => y + top + ph - (v / max) * ph;

  out.push(`<g class="panel">`);
  out.push(`<text x="${x + left}" y="${y + 18}" class="ptitle">${xmlEscape(title)}</text>`);
  for (let v = 0; v <= max + step / 2; v += step) {
    const yy = sy(v).toFixed(1);
    out.push(`<line x1="${x + left}" y1="${yy}" x2="${x + left + pw}" y2="${yy}" class="grid"/>`);
    out.push(
      `<text x="${x + left - 6}" y="${yy}" class="tick" text-anchor="end" dominant-baseline="middle">${xmlEscape(fmtTick(v))}</text>`,
    );
  }
  out.push(`<line x1="${x + left}" y1="${y + top + ph}" x2="${x + left + pw}" y2="${y + top + ph}" class="axis"/>`);

  const n = Math.max(1, groups.length);
  const gw = pw / n;
  const barW = Math.min(46, (gw * 0.72) / Math.max(1, impls.length));
  groups.forEach((g, gi) => {
    const cx = x + left + gw * gi + gw / 2;
    const x0 = cx - (barW * impls.length) / 2;
    impls.forEach((impl, k) => {
      const v = g.values[impl];
      const bx = c(x0 + k * barW);
      if (finite(v) && v > 0) {
        const by = sy(v);
        out.push(
          `<rect x="${bx}" y="${c(by)}" width="${c(barW - 2)}" height="${c(y + top + ph - by)}" fill="${COLORS[impl]}">` +
            `<title>${xmlEscape(`${String(g.label).replace(/\n/g, ', ')} — ${impl}: ${fmtValue(v)}`)}</title></rect>`,
        );
        out.push(
          `<text x="${(x0 + k * barW + (barW - 2) / 2).toFixed(1)}" y="${(by - 4).toFixed(1)}" class="val" text-anchor="middle">${xmlEscape(fmtValue(v))}</text>`,
        );
      } else {
        out.push(
          `<text x="${(x0 + k * barW + (barW - 2) / 2).toFixed(1)}" y="${(y + top + ph - 4).toFixed(1)}" class="val" text-anchor="middle">n/a</text>`,
        );
      }
    });
    const ratio = g.values.native / g.values.seed;
    if (finite(ratio) && impls.length > 1) {
      const hi = Math.max(...impls.map((i) => g.values[i]).filter(finite));
      out.push(
        `<text x="${cx.toFixed(1)}" y="${(sy(hi) - 18).toFixed(1)}" class="ratio" text-anchor="middle">${xmlEscape(`${ratio.toFixed(2)}×${ratioLabel ? ` ${ratioLabel}` : ''}`)}</text>`,
      );
    }
    // Group label, wrapped on its own line breaks ("\n").
    String(g.label)
      .split('\n')
      .forEach((line, li) => {
        out.push(
          `<text x="${cx.toFixed(1)}" y="${y + top + ph + 16 + li * 13}" class="glabel" text-anchor="middle">${xmlEscape(line)}</text>`,
        );
      });
  });
  out.push(`</g>`);
  return out.join('\n');
}

/**
 * The whole chart as SVG text. `results.flows` entries need `label` (or `name`) and per
 * implementation `rate` (runs/s) and `serverCpuUsPerOp` (server CPU µs per run).
 */
export function renderChart(results, { width = 960, panelHeight = 300 } = {}) {
  const flows = Array.isArray(results?.flows) ? results.flows : [];
  const impls = ['seed', 'native'].filter((i) => flows.some((f) => f[i] && !f[i].error));
  const shown = impls.length ? impls : ['seed', 'native'];
  const groups = (pick) =>
    flows.map((f) => ({
      label: f.chartLabel ?? f.label ?? f.name ?? '',
      values: Object.fromEntries(shown.map((i) => [i, f[i] && !f[i].error ? pick(f[i]) : NaN])),
    }));
  const head = 78;
  const legendH = 28;
  const height = head + 2 * panelHeight + legendH + 10;
  const title = results?.title ?? 'iterativeflow MySQL backend — engine-driven flows';
  const subtitle = results?.subtitle ?? '';

  const parts = [];
  parts.push(`<?xml version="1.0" encoding="UTF-8"?>`);
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ` +
      `font-family="Helvetica, Arial, sans-serif" role="img" aria-label="${xmlEscape(title)}">`,
  );
  parts.push(`<title>${xmlEscape(title)}</title>`);
  parts.push(
    `<style>` +
      `.title{font-size:17px;font-weight:bold;fill:#222}.sub{font-size:11px;fill:#555}` +
      `.ptitle{font-size:13px;font-weight:bold;fill:#333}.tick{font-size:10px;fill:#666}` +
      `.grid{stroke:#e4e4e4;stroke-width:1}.axis{stroke:#888;stroke-width:1}` +
      `.val{font-size:10px;fill:#333}.ratio{font-size:12px;font-weight:bold;fill:#111}` +
      `.glabel{font-size:11px;fill:#333}.legend{font-size:11px;fill:#333}` +
      `</style>`,
  );
  parts.push(`<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`);
  parts.push(`<text x="16" y="26" class="title">${xmlEscape(title)}</text>`);
  if (subtitle) parts.push(`<text x="16" y="44" class="sub">${xmlEscape(subtitle)}</text>`);

  // Legend.
  let lx = 16;
  const ly = head - 12;
  for (const impl of shown) {
    parts.push(`<rect x="${c(lx)}" y="${ly - 9}" width="12" height="12" fill="${COLORS[impl]}"/>`);
    parts.push(`<text x="${c(lx + 17)}" y="${ly + 1}" class="legend">${xmlEscape(NAMES[impl])}</text>`);
    lx += 30 + NAMES[impl].length * 6;
  }
  parts.push(
    `<text x="${width - 16}" y="${ly + 1}" class="legend" text-anchor="end">ratio = native / JavaScript</text>`,
  );

  parts.push(
    panel({
      x: 0,
      y: head,
      w: width,
      h: panelHeight,
      title: 'Throughput, runs/s (higher is better)',
      groups: groups((s) => s.rate),
      impls: shown,
    }),
  );
  parts.push(
    panel({
      x: 0,
      y: head + panelHeight,
      w: width,
      h: panelHeight,
      title: 'Server CPU per run, µs (lower is better)',
      groups: groups((s) => s.serverCpuUsPerOp),
      impls: shown,
    }),
  );
  if (flows.length === 0) {
    parts.push(
      `<text x="${width / 2}" y="${head + panelHeight}" class="ptitle" text-anchor="middle">no flow results</text>`,
    );
  }
  parts.push(`</svg>`);
  return parts.join('\n') + '\n';
}
