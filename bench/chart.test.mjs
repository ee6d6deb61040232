// Unit check of bench/chart.mjs (not part of npm test):  node --test bench/chart.test.mjs
// The SVG must be well-formed XML (checked by the small parser below), carry the values and
// ratios, and survive odd input (markup characters in labels, missing values, one implementation).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { niceScale, renderChart, xmlEscape } from './chart.mjs';

/**
 * A minimal XML well-formedness check: one root element, properly nested and closed tags, quoted
 * and unique attributes, no raw `<` or stray `&` in text or attribute values, only the XML
 * declaration and comments outside elements. Returns { root, elements }; throws on the first fault.
 */
export function checkWellFormed(xml) {
  const NAME = /^[A-Za-z_:][-A-Za-z0-9_:.]*/;
  const ENTITY = /&(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);/g;
  const checkChars = (s, where) => {
    if (s.replace(ENTITY, '').includes('&')) throw new Error(`stray & in ${where}: ${JSON.stringify(s.slice(0, 80))}`);
  };
  const stack = [];
  let root;
  let elements = 0;
  let i = 0;
  if (xml.startsWith('<?xml')) {
    const e = xml.indexOf('?>');
    if (e < 0) throw new Error('unterminated XML declaration');
    i = e + 2;
  }
  while (i < xml.length) {
    const lt = xml.indexOf('<', i);
    const text = xml.slice(i, lt < 0 ? xml.length : lt);
    if (stack.length === 0 && text.trim() !== '')
      throw new Error(`text outside the root element: ${JSON.stringify(text.slice(0, 40))}`);
    checkChars(text, 'text');
    if (lt < 0) break;
    if (xml.startsWith('<!--', lt)) {
      const e = xml.indexOf('-->', lt + 4);
      if (e < 0) throw new Error('unterminated comment');
      i = e + 3;
      continue;
    }
    if (xml.startsWith('<?', lt) || xml.startsWith('<!', lt)) throw new Error(`unexpected markup at ${lt}`);
    // Find the tag's end, skipping quoted attribute values.
    let j = lt + 1;
    let quote = null;
    for (; j < xml.length; j++) {
      const c = xml[j];
      if (quote) {
        if (c === quote) quote = null;
        else if (c === '<') throw new Error(`< inside an attribute value at ${j}`);
      } else if (c === '"' || c === "'") quote = c;
      else if (c === '>') break;
      else if (c === '<') throw new Error(`< inside a tag at ${j}`);
    }
    if (j >= xml.length) throw new Error(`unterminated tag at ${lt}`);
    let body = xml.slice(lt + 1, j);
    i = j + 1;
    if (body.startsWith('/')) {
      const name = body.slice(1).trim();
      const open = stack.pop();
      if (open !== name) throw new Error(`</${name}> closes <${open}>`);
      continue;
    }
    const selfClosing = body.endsWith('/');
    if (selfClosing) body = body.slice(0, -1);
    const m = NAME.exec(body);
    if (!m) throw new Error(`bad tag name in <${body.slice(0, 30)}>`);
    const name = m[0];
    let rest = body.slice(name.length);
    const seen = new Set();
    for (;;) {
      const ws = /^\s*/.exec(rest)[0];
      rest = rest.slice(ws.length);
      if (rest === '') break;
      if (ws === '') throw new Error(`attributes of <${name}> not separated by white space`);
      const a = /^([A-Za-z_:][-A-Za-z0-9_:.]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/.exec(rest);
      if (!a) throw new Error(`bad attribute in <${name}>: ${JSON.stringify(rest.slice(0, 40))}`);
      if (seen.has(a[1])) throw new Error(`duplicate attribute ${a[1]} in <${name}>`);
      seen.add(a[1]);
      checkChars(a[2] ?? a[3], `attribute ${a[1]}`);
      rest = rest.slice(a[0].length);
    }
    if (stack.length === 0) {
      if (root !== undefined) throw new Error('more than one root element');
      root = name;
    }
    elements += 1;
    if (!selfClosing) stack.push(name);
  }
  if (stack.length) throw new Error(`unclosed <${stack.at(-1)}>`);
  if (root === undefined) throw new Error('no root element');
  return { root, elements };
}

const sample = {
  title: 'bench <test> & co',
  subtitle: 'scale 0.1, reps 3 — "quoted"',
  flows: [
    {
      label: '3 steps\n×1 loop',
      seed: { rate: 120.5, serverCpuUsPerOp: 3800 },
      native: { rate: 310.2, serverCpuUsPerOp: 1500 },
    },
    { label: 'a & b <c>', seed: { rate: 50, serverCpuUsPerOp: NaN }, native: { rate: 200, serverCpuUsPerOp: 900 } },
    { label: 'failed one', seed: { error: 'boom' }, native: { rate: 12_345, serverCpuUsPerOp: 1 } },
  ],
};

test('the chart is well-formed SVG with values and ratios', () => {
  const svg = renderChart(sample);
  const { root, elements } = checkWellFormed(svg);
  assert.equal(root, 'svg');
  assert.ok(elements > 20);
  assert.match(svg, /xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  assert.match(svg, /2\.57×/); // 310.2 / 120.5
  assert.match(svg, /0\.39×/); // 1500 / 3800
  assert.match(svg, /4\.00×/); // 200 / 50
  assert.match(svg, /a &amp; b &lt;c&gt;/);
  assert.match(svg, /n\/a/);
  assert.match(svg, /12\.3k/);
});

test('edge cases stay well-formed', () => {
  for (const r of [
    {},
    { flows: [] },
    { flows: [{ name: 'x', native: { rate: 0, serverCpuUsPerOp: 0 } }] },
    { flows: [{ label: '\u0001bad', seed: { rate: 1e9 } }] },
  ]) {
    checkWellFormed(renderChart(r));
  }
});

test('the checker itself rejects broken XML', () => {
  for (const bad of [
    '<svg><g></svg>',
    '<svg a="1" a="2"/>',
    '<svg>&nope</svg>',
    '<svg/><svg/>',
    '<svg x=1/>',
    'text<svg/>',
    '<svg><rect y="<"/></svg>',
  ]) {
    assert.throws(() => checkWellFormed(bad), undefined, bad);
  }
  assert.equal(xmlEscape(`<&>"'`), '&lt;&amp;&gt;&quot;&apos;');
});

test('nice scales', () => {
  assert.deepEqual(niceScale(87), { max: 100, step: 20 });
  assert.deepEqual(niceScale(0), { max: 1, step: 0.2 });
  const s = niceScale(3456);
  assert.ok(s.max >= 3456 && s.max / s.step <= 10);
});

test('bench/results.svg, when present, is well-formed and matches bench/results.json', async (t) => {
  const { existsSync, readFileSync } = await import('node:fs');
  const svgPath = new URL('./results.svg', import.meta.url);
  const jsonPath = new URL('./results.json', import.meta.url);
  if (!existsSync(svgPath) || !existsSync(jsonPath))
    return t.skip('no bench/results.svg yet (npm run bench writes it)');
  const svg = readFileSync(svgPath, 'utf8');
  assert.equal(checkWellFormed(svg).root, 'svg');
  assert.equal(svg, renderChart(JSON.parse(readFileSync(jsonPath, 'utf8'))));
});
