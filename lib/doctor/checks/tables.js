'use strict';
// The table checks: one line per table that exists, its differences from the target contract
// (layout.js) and which contracts it matches. A missing table has no line of its own, and a table
// in another contract's layout (an upgrade to run, the downgrade hazard) is ok here: the layout
// check says what to do about either, once for all six tables. Only a difference that fits no
// contract's layout — drift — fails or warns here.
const { CONTRACTS } = require('../../shapes');
const { compareTable, matches } = require('../layout');
const { BASES } = require('../names');
const { check, worst } = require('../verdict');

const HAND_FIX = 'schema apply does not change existing tables: ALTER it by hand';

function tableChecks(f, t, expected) {
  const out = [];
  const layouts = {};
  for (const base of BASES) {
    const actual = f.tables[base];
    if (!actual) {
      layouts[base] = null;
      continue;
    }
    const vsTarget = compareTable(actual, expected[t.contract][base]);
    const fits = CONTRACTS.filter((k) => matches(compareTable(actual, expected[k][base])));
    layouts[base] = fits;
    const notes = vsTarget.map((d) => d.text);
    const value = {
      exists: true,
      layouts: fits,
      differences: vsTarget.filter((d) => d.severity !== 'note').map((d) => d.text),
    };
    if (!vsTarget.some((d) => d.severity !== 'note')) {
      out.push(
        check(`table.${base}`, 'ok', `matches ${t.contract}${notes.length ? ` (${notes.join('; ')})` : ''}`, value),
      );
    } else if (fits.length) {
      out.push(
        check(`table.${base}`, 'ok', `the ${fits.join(' / ')} layout of the table (${notes.join('; ')})`, value),
      );
    } else {
      const verdict = worst(vsTarget.map((d) => (d.severity === 'note' ? 'ok' : d.severity)));
      out.push(
        check(`table.${base}`, verdict, `${notes.join('; ')}${verdict === 'fail' ? ` — ${HAND_FIX}` : ''}`, value),
      );
    }
  }
  return { checks: out, layouts };
}

module.exports = { tableChecks };
