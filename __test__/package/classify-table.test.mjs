// The errno → class tables a reader finds for mysqlClassify — README.md's (between its
// classify:table markers) and docs/classify.md's — walked against the function itself (no
// database), so that neither can drift from lib/classify.js: every row's errors get the row's
// class, and every server error number from 1000 to 4999 that no permanent row names is transient.
// __test__/push/classify.test.mjs produces the errors for real.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import m from '../../index.js';

const { mysqlClassify } = m;

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const read = (rel) => fs.readFileSync(path.join(root, rel), 'utf8');

const CLASSES = ['permanent', 'transient'];

/** The cells of a Markdown table row (no leading or trailing pipe), trimmed. */
const cellsOf = (line) =>
  line
    .trim()
    .replace(/^\||\|$/g, '')
    .split('|')
    .map((c) => c.trim());

/**
 * The body rows of the first Markdown table in `text` as `{ line, errnos, probes, cls }`:
 * `errnos` are the 4-digit numbers of the `errnoCol` cell, `probes` the error objects the row
 * names in code spans (`kind: '…'`, `code: '…'`, `fatal: true`), `cls` the first cell that is a class.
 */
function tableRows(text, errnoCol) {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l.startsWith('|'));
  assert.ok(start >= 0, 'a table is there');
  const rows = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    const cells = cellsOf(line);
    const cls = cells.find((c) => CLASSES.includes(c));
    assert.ok(cls, `a class (${CLASSES.join(' / ')}) in: ${line}`);
    const errnos = [...cells[errnoCol].matchAll(/\b(\d{4})\b/g)].map((x) => Number(x[1]));
    const probes = [...line.matchAll(/kind: '(\w+)'/g)].map((x) => ({ kind: x[1] }));
    probes.push(...[...line.matchAll(/code: '(\w+)'/g)].map((x) => ({ code: x[1] })));
    if (/fatal: true/.test(line)) probes.push({ fatal: true });
    rows.push({ line, errnos, probes, cls });
  }
  return rows;
}

/** README.md's table: between its markers, columns errors | errno | class. */
function readmeRows() {
  const text = read('README.md');
  const start = text.indexOf('<!-- classify:table:start -->');
  const end = text.indexOf('<!-- classify:table:end -->');
  assert.ok(start >= 0 && end > start, 'README.md has its classify:table markers');
  return tableRows(text.slice(start, end), 1);
}

/** docs/classify.md's table: under `## Table`, columns class | errno (code) | verdict | why. */
function docsRows() {
  const text = read('docs/classify.md');
  const start = text.indexOf('\n## Table');
  assert.ok(start >= 0, 'docs/classify.md has a Table section');
  return tableRows(text.slice(start), 1);
}

/** Every row agrees with mysqlClassify; the permanent rows name exactly the permanent numbers. */
function walk(rows, page) {
  const permanent = new Set();
  const named = new Set();
  let rest = 0;
  for (const { line, errnos, probes, cls } of rows) {
    for (const errno of errnos) {
      assert.ok(!named.has(errno), `${page}: ${errno} is in one row only`);
      named.add(errno);
      if (cls === 'permanent') permanent.add(errno);
      const e = Object.assign(new Error('from the table'), { errno });
      assert.equal(mysqlClassify(e), cls, `${page}: errno ${errno} is ${cls}, as in: ${line}`);
    }
    for (const probe of probes) {
      const e = Object.assign(new Error('from the table'), probe);
      assert.equal(mysqlClassify(e), cls, `${page}: ${JSON.stringify(probe)} is ${cls}, as in: ${line}`);
    }
    if (errnos.length === 0 && probes.length === 0) {
      rest++;
      assert.equal(cls, 'transient', `${page}: the row for everything else is transient: ${line}`);
    }
  }
  assert.equal(rest, 1, `${page}: one row for everything else`);
  const wrong = [];
  for (let errno = 1000; errno < 5000; errno++) {
    const expected = permanent.has(errno) ? 'permanent' : 'transient';
    if (mysqlClassify({ errno }) !== expected) wrong.push(`${errno}: ${mysqlClassify({ errno })}`);
  }
  assert.deepEqual(wrong, [], `${page}: server errors the table calls otherwise`);
}

test("README.md's mysqlClassify table is what mysqlClassify does", () => {
  walk(readmeRows(), 'README.md');
});

test("docs/classify.md's table is what mysqlClassify does", () => {
  walk(docsRows(), 'docs/classify.md');
});

test('the README and docs/classify.md name the same numbers with the same classes', () => {
  const byErrno = (rows) => new Map(rows.flatMap(({ errnos, cls }) => errnos.map((n) => [n, cls])));
  const sorted = (map) => [...map].sort(([a], [b]) => a - b);
  assert.deepEqual(sorted(byErrno(readmeRows())), sorted(byErrno(docsRows())));
});
