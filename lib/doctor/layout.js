'use strict';
// The layout differ: an actual table (facts.js) against an expected one (ddl.js), difference by
// difference with a severity, and the name of the layout the six tables add up to.
const { ALPHA2, BASES, V3 } = require('./names');

const fmtCol = (c) =>
  `${c.type}${c.nullable ? '' : ' NOT NULL'}${c.default !== null ? ` DEFAULT ${/^-?\d+(\.\d+)?$/.test(c.default) ? c.default : `'${c.default}'`}` : ''}${c.autoIncrement ? ' AUTO_INCREMENT' : ''}`;
const fmtIdx = (i) =>
  `${i.unique ? (i.name === 'PRIMARY' ? 'PRIMARY KEY' : 'UNIQUE') : 'KEY'} (${i.columns.join(', ')})`;

/** Differences of an actual table from an expected one: `[{ severity: fail|warn|note, text }]`. */
function compareTable(actual, expected) {
  const diffs = [];
  const add = (severity, text) => diffs.push({ severity, text });
  if (String(actual.type).toUpperCase() === 'VIEW') add('fail', 'is a view, not a table');
  else if (!actual.engine || actual.engine.toLowerCase() !== 'innodb')
    add('fail', `engine ${actual.engine || 'unknown'}, expected InnoDB (transactions, row locks)`);
  for (const want of expected.columns.values()) {
    const have = actual.columns.get(want.name);
    if (!have) {
      add('fail', `missing column ${want.name} ${fmtCol(want)}`);
      continue;
    }
    const bad = [];
    if (have.type !== want.type) bad.push('type');
    if (have.nullable !== want.nullable && !want.autoIncrement) bad.push('nullability');
    if ((have.default ?? null) !== (want.default ?? null) && !want.autoIncrement) bad.push('default');
    if (have.autoIncrement !== want.autoIncrement) bad.push('auto_increment');
    if (bad.length) add('fail', `column ${want.name} is ${fmtCol(have)}, expected ${fmtCol(want)}`);
    if (want.text && have.charset && have.charset.toLowerCase() !== 'utf8mb4') {
      add('fail', `column ${want.name} uses character set ${have.charset}, expected utf8mb4`);
    }
  }
  for (const have of actual.columns.values()) {
    if (expected.columns.has(have.name)) continue;
    const blocksInserts = !have.nullable && have.default === null && !have.autoIncrement && !have.generated;
    add(
      blocksInserts ? 'fail' : 'warn',
      `extra column ${have.name} ${fmtCol(have)}${blocksInserts ? " (NOT NULL without a default: the package's inserts fail)" : ' (not used by the package)'}`,
    );
  }
  const same = (a, b) =>
    a.unique === b.unique &&
    a.columns.length === b.columns.length &&
    a.columns.every((x, i) => x === b.columns[i]) &&
    !a.prefixed;
  const used = new Set();
  for (const want of expected.indexes) {
    const byName = actual.indexes.find((i) => i.name.toLowerCase() === want.name.toLowerCase());
    if (byName && same(byName, want)) {
      used.add(byName);
      continue;
    }
    const other = actual.indexes.find((i) => !used.has(i) && same(i, want));
    if (other) {
      used.add(other);
      add('note', `key ${want.name} present as ${other.name}`);
      continue;
    }
    if (byName) {
      used.add(byName);
      add(
        want.unique || byName.unique ? 'fail' : 'warn',
        `key ${want.name} is ${fmtIdx(byName)}${byName.prefixed ? ' on column prefixes' : ''}, expected ${fmtIdx(want)}`,
      );
    } else {
      const what = want.name === 'PRIMARY' ? fmtIdx(want) : `key ${want.name} ${fmtIdx(want)}`;
      add(want.unique ? 'fail' : 'warn', `missing ${what}${want.unique ? '' : ' (slower queries)'}`);
    }
  }
  for (const have of actual.indexes) {
    if (used.has(have)) continue;
    add(
      have.unique ? 'warn' : 'note',
      `extra key ${have.name} ${fmtIdx(have)}${have.unique ? ' (may refuse rows the package writes)' : ''}`,
    );
  }
  return diffs;
}

const matches = (diffs) => diffs.every((d) => d.severity === 'note');

/** 'missing' | 'incomplete' | '3.0.0' | '2.0.0-alpha.2' | 'mixed' | 'drifted'. */
function layoutName(layouts) {
  const vals = BASES.map((b) => layouts[b]);
  if (vals.every((v) => v === null)) return 'missing';
  if (vals.some((v) => v === null)) return 'incomplete';
  if (vals.every((v) => v.includes(V3))) return V3;
  if (vals.every((v) => v.includes(ALPHA2))) return ALPHA2;
  if (vals.every((v) => v.length > 0)) return 'mixed';
  return 'drifted';
}

module.exports = { compareTable, matches, layoutName };
