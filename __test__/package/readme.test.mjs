// The front page and the docs pages as a reader finds them (no database): README.md's figures
// table is the one bench/summary.mjs renders from the committed bench/results.json (the bench
// writes both; an edited README or a results.json committed without its table fails here), and
// every relative link in the Markdown pages leads to a file and, for `#…`, to a heading there.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { SUMMARY_END, SUMMARY_START, readSummary, renderSummary, replaceSummary } from '../../bench/summary.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const read = (rel) => fs.readFileSync(path.join(root, rel), 'utf8');

test("README's figures table is the one bench/results.json renders", () => {
  const block = readSummary(read('README.md'));
  assert.ok(block !== undefined, `README.md has no ${SUMMARY_START} … ${SUMMARY_END} block`);
  const results = JSON.parse(read('bench/results.json'));
  assert.ok(results.flows?.length > 0, 'bench/results.json holds no flow');
  assert.equal(
    block,
    renderSummary(results),
    "README.md's figures differ from bench/results.json: rewrite them with `node bench/summary.mjs`",
  );
});

test('the figures table: one row per drain, submission and flow, three sides, failed and missing sides marked, the run conditions said', () => {
  const side = (rate) => ({ rate, stmtsPerOp: 10, rtPerOp: 5, mainCpuUsPerOp: 1234.4, serverCpuUsPerOp: 99 });
  const results = {
    generatedAt: '2031-02-03T04:05:06.000Z',
    scale: 0.1,
    flowReps: 2,
    flowRuns: 80,
    only: ['flow'],
    machine: { cpus: 4, model: 'Test CPU', node: 'v22.0.0', server: 'MariaDB 11.4.2' },
    scenarios: [
      { name: 'micro op', kind: 'micro', seed: side(1), native: side(2) },
      { name: 'drain x1', kind: 'drain', seed: side(10), native: side(30), floor: side(40) },
    ],
    flows: [
      { name: 'a', chartLabel: 'two | parts\n1 loop', ratio: 2.5, seed: side(40), native: side(100), floor: side(50) },
      { name: 'native only', native: side(12.34) },
      { name: 'seed failed', seed: { error: 'boom' }, native: side(2000) },
    ],
  };
  const lines = renderSummary(results).split('\n');
  const rows = lines.filter((l) => l.startsWith('| ') && !l.startsWith('| work'));
  assert.equal(rows.length, 4, lines.join('\n'));
  assert.match(rows[0], /^\| drain x1 \| 10\.0 \| 30\.0 \| 40\.0 \| \*\*3\.00×\*\* \| \*\*0\.75×\*\* \| 4\.00× \|/);
  assert.equal(
    rows[1],
    '| two \\| parts, 1 loop | 40.0 | 100 | 50.0 | **2.50×** | **2.00×** | 1.25× | 10.0 / 10.0 / 10.0 | 5.0 / 5.0 / 5.0 | ' +
      '1,234 / 1,234 / 1,234 | 99 / 99 / 99 |',
  );
  assert.match(rows[2], /^\| native only \| — \| 12\.3 \| — \| n\/a \| n\/a \| n\/a \| — \/ 10\.0 \/ — \|/);
  assert.match(rows[3], /^\| seed failed \| FAILED \| 2,000 \| — \| n\/a \| n\/a \| n\/a \| FAILED \/ 10\.0 \/ — \|/);
  const caption = lines.at(-1);
  for (const part of [
    '2031-02-03',
    '4 CPU (Test CPU)',
    'MariaDB 11.4.2',
    '80 root runs',
    '2 interleaved',
    'scale 0.1',
    '"flow"',
  ])
    assert.ok(caption.includes(part), `caption names ${part}: ${caption}`);
  assert.match(renderSummary({ flows: [] }), /no flow scenario/);
});

test('the figures block is replaced between its markers and nowhere else', () => {
  const text = `head\n${SUMMARY_START}\nold\nlines\n${SUMMARY_END}\ntail\n`;
  const out = replaceSummary(text, 'new');
  assert.equal(out, `head\n${SUMMARY_START}\nnew\n${SUMMARY_END}\ntail\n`);
  assert.equal(readSummary(out), 'new');
  assert.equal(replaceSummary(out, 'new'), out, 'rewriting the same block changes nothing');
  assert.throws(() => replaceSummary('no markers', 'x'), /no <!-- bench:summary:start -->/);
  assert.throws(() => replaceSummary(`${SUMMARY_END}\n${SUMMARY_START}`, 'x'), /no <!-- bench:summary:start -->/);
});

// ---- links ----

/** The Markdown pages a reader of the repository moves between. */
function pages() {
  const docs = fs
    .readdirSync(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`);
  return ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md', 'bench/README.md', ...docs];
}

/** `text` without fenced code blocks, whose `#` lines and brackets are not Markdown. */
const withoutFences = (text) => text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');

/** GitHub's anchor for a heading: its text, lowercased, punctuation dropped, spaces as hyphens. */
function slug(heading) {
  const text = heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** Every anchor a page offers: its headings' slugs, repeats numbered as GitHub numbers them. */
function anchorsOf(text) {
  const seen = new Map();
  const anchors = new Set();
  for (const [, heading] of withoutFences(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(heading);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** The relative link targets of a page (inline links; code spans and fences left out). */
function linksOf(text) {
  const prose = withoutFences(text).replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1])
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

test('the slugs are GitHub’s', () => {
  assert.equal(slug('Health check (`doctor`)'), 'health-check-doctor');
  assert.equal(slug('Schema upgrades (3.0)'), 'schema-upgrades-30');
  assert.equal(slug('Transactional enqueue: `inTx`'), 'transactional-enqueue-intx');
  assert.equal(slug('Set up (newcomer)'), 'set-up-newcomer');
  assert.deepEqual([...anchorsOf('# A\n## A\n```\n# not a heading\n```\n## B b\n')], ['a', 'a-1', 'b-b']);
  assert.deepEqual(linksOf('[a](x.md) `[b](y.md)` [c](https://e.org) [d](#e)\n```\n[f](z.md)\n```\n'), ['x.md', '#e']);
});

test('every relative link in README.md and docs/*.md leads to a file and a heading', () => {
  const broken = [];
  for (const page of pages()) {
    const links = linksOf(read(page));
    for (const target of links) {
      const [file, anchor] = target.split('#');
      const resolved = file ? path.join(path.dirname(page), decodeURIComponent(file)) : page;
      if (!fs.existsSync(path.join(root, resolved))) {
        broken.push(`${page}: ${target} (no file ${resolved})`);
        continue;
      }
      if (anchor === undefined) continue;
      if (!resolved.endsWith('.md')) broken.push(`${page}: ${target} (an anchor into a file that is not Markdown)`);
      else if (!anchorsOf(read(resolved)).has(anchor))
        broken.push(`${page}: ${target} (no such heading in ${resolved})`);
    }
  }
  assert.deepEqual(broken, []);
});
