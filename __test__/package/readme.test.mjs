// The front page and the docs pages as a reader finds them (no database): every table of figures
// in README.md and docs/ is the block bench/figures.mjs renders from the results file it came from
// (bench/results.json, and one file per further server), each naming its server, date and host;
// the README starts with what the package is, how to install and use it, keeps the commands CI and
// newcomers run, and shows no measured figure outside those blocks; no page speaks of our issues;
// and every relative link in the Markdown pages leads to a file and, for `#…`, to a heading there.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { BLOCKS, PAGES, blocksOf, loadSources, renderBlock, renderPage } from '../../bench/figures.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const read = (rel) => fs.readFileSync(path.join(root, rel), 'utf8');

test('every figures block in README.md and docs/ is what its results files render', () => {
  const sources = loadSources(root);
  assert.ok(sources.length > 0 && sources[0].file === 'bench/results.json', 'bench/results.json is there');
  const seen = new Set();
  for (const page of PAGES) {
    const blocks = blocksOf(read(page), page);
    assert.ok(blocks.length > 0, `${page} has figures blocks`);
    for (const b of blocks) {
      seen.add(b.name);
      assert.equal(
        b.body,
        renderBlock(b.name, sources, page),
        `${page}: the ${b.name} figures differ from their results files — rewrite them with \`node bench/figures.mjs\``,
      );
    }
  }
  assert.deepEqual([...seen].sort(), Object.keys(BLOCKS).sort(), 'every kind of figure is shown somewhere');
});

/** A results file as the bench writes it, for `server`, with every kind of figure. */
function results(server, rate) {
  const side = (r) => ({ rate: r, stmtsPerOp: 10, rtPerOp: 5, mainCpuUsPerOp: 1234.4, serverCpuUsPerOp: 99 });
  return {
    generatedAt: '2031-02-03T04:05:06.000Z',
    scale: 0.1,
    reps: 3,
    flowReps: 2,
    flowRuns: 80,
    only: ['flow'],
    machine: { cpus: 4, model: 'Test CPU', node: 'v22.0.0', server },
    scenarios: [
      { name: 'op seq', kind: 'micro', conc: 1, seed: side(rate), native: side(2 * rate) },
      { name: 'op x16', kind: 'micro', conc: 16, seed: side(rate), native: side(3 * rate) },
      { name: 'drain x1', kind: 'drain', conc: 1, seed: side(10), native: side(30), floor: side(40) },
    ],
    flows: [
      { name: 'a', chartLabel: 'two | parts\n1 loop', seed: side(40), native: side(100), floor: side(50) },
      { name: 'native only', native: side(12.34) },
      { name: 'seed failed', seed: { error: 'boom' }, native: side(2000) },
    ],
    push: {
      samples: 7,
      workers: 2,
      tickMs: 200,
      variants: [{ variant: 'native, push on', dispatch: { p50: 7, p99: 12 }, completion: { p50: 6, p99: 9 } }],
      idle: {
        windowMs: 6000,
        baselineMsPerS: 1.5,
        rows: [{ procs: 10, push: true, perProcMsPerS: 0.5, connectionsPerProc: 1 }],
      },
    },
  };
}

test('a second server renders beside the first: every figure names its server, date and host', () => {
  const sources = [
    { file: 'bench/results.json', results: results('MariaDB 11.4.2', 100) },
    { file: 'bench/results-mysql.json', results: results('MySQL 9.7.4', 50) },
  ];
  // Every block of the per-server files (a block with a results file of its own is not one).
  for (const name of Object.keys(BLOCKS).filter((n) => !BLOCKS[n].source)) {
    const text = renderBlock(name, sources, 'docs/benchmarks.md');
    const maria = text.indexOf('MariaDB 11.4.2');
    const mysql = text.indexOf('MySQL 9.7.4');
    assert.ok(maria >= 0 && mysql > maria, `${name}: both servers, MariaDB first:\n${text}`);
    for (const part of ['2031-02-03', '4 CPU (Test CPU)'])
      assert.ok(text.split(part).length - 1 >= 2, `${name} names ${part} for each`);
    assert.ok(text.includes('(../bench/results-mysql.json)') || name === 'headline', `${name} links its file`);
  }
  // A page in the root links without ../; one server alone renders alone.
  assert.match(renderBlock('headline', sources.slice(0, 1), 'README.md'), /\[all figures\]\(docs\/benchmarks\.md\)/);
  assert.doesNotMatch(renderBlock('bench-summary', sources.slice(0, 1), 'README.md'), /MySQL/);
});

test('the flows table: one row per drain, submission and flow, three sides, failed and missing sides marked', () => {
  const text = renderBlock(
    'bench-summary',
    [{ file: 'bench/results.json', results: results('MariaDB 11.4.2', 100) }],
    'README.md',
  );
  const rows = text.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| work'));
  assert.equal(rows.length, 4, text);
  assert.match(rows[0], /^\| drain x1 \| 10\.0 \| 30\.0 \| 40\.0 \| \*\*3\.00×\*\* \| \*\*0\.75×\*\* \| 4\.00× \|/);
  assert.match(rows[1], /^\| two \\\| parts, 1 loop \| 40\.0 \| 100 \| 50\.0 \| \*\*2\.50×\*\* \|/);
  assert.match(rows[2], /^\| native only \| — \| 12\.3 \| — \| n\/a \| n\/a \| n\/a \| — \/ 10\.0 \/ — \|/);
  assert.match(rows[3], /^\| seed failed \| FAILED \| 2,000 \| — \| n\/a \|/);
  for (const part of ['80 root runs', '2 interleaved', 'scale 0.1', '"flow"']) assert.ok(text.includes(part), part);
});

test('figures blocks are replaced between their markers and nowhere else; a broken block is an error', () => {
  const sources = [{ file: 'bench/results.json', results: results('MariaDB 11.4.2', 100) }];
  const text = 'head\n<!-- figures:headline -->\nold\nlines\n<!-- /figures:headline -->\ntail\n';
  const out = renderPage(text, sources, 'README.md');
  assert.equal(
    out,
    `head\n<!-- figures:headline -->\n${renderBlock('headline', sources, 'README.md')}\n<!-- /figures:headline -->\ntail\n`,
  );
  assert.equal(renderPage(out, sources, 'README.md'), out, 'rendering again changes nothing');
  assert.throws(
    () => renderPage('<!-- figures:nope -->\n<!-- /figures:nope -->', sources, 'x.md'),
    /unknown figures block "nope"/,
  );
  assert.throws(
    () => renderPage('<!-- figures:headline -->\nno end', sources, 'x.md'),
    /has no <!-- \/figures:headline -->/,
  );
});

/** `text` without fenced code blocks, whose `#` lines and brackets are not Markdown. */
const withoutFences = (text) => text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
/** `text` without its figures blocks. */
const withoutFigures = (text) => text.replace(/<!-- figures:([a-z-]+) -->\n[\s\S]*?<!-- \/figures:\1 -->/g, '');

test('README: what it is, then install and use; the set-up and main-job commands; no figure outside a block', () => {
  const readme = read('README.md');
  const h2 = [...withoutFences(readme).matchAll(/^## (.+)$/gm)].map((m) => m[1]);
  assert.deepEqual(h2.slice(0, 2), ['Install', 'Use'], 'install and use come first');
  const intro = readme.slice(readme.indexOf('\n'), readme.indexOf('\n## '));
  assert.match(intro, /drop-in for \[`@iterativeflow\/mysql`\]/);
  const use = readme.slice(readme.indexOf('## Use'), readme.indexOf('\n## ', readme.indexOf('## Use') + 1));
  const snippet = /```js\n([\s\S]*?)```/.exec(use)[1].trim().split('\n');
  assert.ok(
    snippet.some((l) => l.includes('mysqlPool(')) && snippet.some((l) => l.includes('createMysqlBackend(sql)')),
  );
  // The commands newcomers and CI (.ci/run) run, as shell lines.
  const shell = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) =>
    m[1].split('\n').map((l) => l.replace(/\s+#.*$/, '').trim()),
  );
  for (const cmd of ['npm ci', 'npm test', 'npm run example', 'npm install iterativeflow-mysql-native']) {
    assert.ok(shell.includes(cmd), `README runs \`${cmd}\``);
  }
  for (const cmd of ['doctor', 'schema apply', 'schema print']) {
    assert.ok(
      shell.some((l) => l.startsWith(`npx iterativeflow-mysql-native ${cmd}`)),
      cmd,
    );
  }
  // Measured figures live in the blocks only (settings such as "500 ms" are not measurements).
  const prose = withoutFigures(withoutFences(readme)).replace(
    /<!-- classify:table:start -->[\s\S]*?<!-- classify:table:end -->/,
    '',
  );
  const loose = prose.match(/\d[\d.,]*\s?(×|µs|ms\/s|runs\/s|per s\b)/g);
  assert.equal(loose, null, `figures outside a figures block: ${loose}`);
  // The contract for each published version of @iterativeflow/mysql.
  const contract = readme.slice(readme.indexOf('## Choosing the contract'));
  for (const v of ['2.0.0-alpha.2', '2.5.0', '3.0.0'])
    assert.ok(contract.includes(`\`@iterativeflow/mysql\` ${v}`) || contract.includes(`${v}`), v);
  assert.match(contract, /@iterativeflow\/mysql` 2\.5\.0/);
  assert.match(readme, /schema print[\s\S]*migration tool/i);
  assert.match(readme, /dashboard/);
});

test('user docs speak to users: no issue numbers, no sessions of ours', () => {
  for (const page of [
    'README.md',
    ...fs
      .readdirSync(path.join(root, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ]) {
    const found = read(page).match(/issue #?\d+|issue's|last session|this session|an earlier session/gi);
    assert.equal(found, null, `${page}: ${found}`);
  }
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
