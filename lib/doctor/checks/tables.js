'use strict';
// The table checks: one line per table, its differences from the target contract (layout.js) and
// which contracts it matches.
const { CONTRACTS } = require('../../shapes');
const { privilegeModel } = require('../grants');
const { compareTable, matches } = require('../layout');
const { BASES } = require('../names');
const { check, worst } = require('../verdict');

function tableChecks(f, t, expected) {
  const out = [];
  const layouts = {};
  for (const base of BASES) {
    const name = `${t.prefix}${base}`;
    const actual = f.tables[base];
    if (!actual) {
      const hidden = f.grants && !privilegeModel(f.grants.list, f.database, f.fold)('SELECT', { table: name });
      out.push(
        check(
          `table.${base}`,
          'fail',
          `\`${name}\` ${hidden ? 'is not visible (missing, or this account has no privilege on it)' : 'does not exist'} in \`${f.database}\``,
          { exists: false },
        ),
      );
      layouts[base] = null;
      continue;
    }
    const vsTarget = compareTable(actual, expected[t.contract][base]);
    const fits = CONTRACTS.filter((k) => matches(compareTable(actual, expected[k][base])));
    layouts[base] = fits;
    const notes = vsTarget.map((d) => d.text);
    const verdict = worst(vsTarget.map((d) => (d.severity === 'note' ? 'ok' : d.severity)));
    const other = fits.filter((k) => k !== t.contract);
    let detail;
    if (!vsTarget.some((d) => d.severity !== 'note')) {
      detail = `matches ${t.contract}${notes.length ? ` (${notes.join('; ')})` : ''}`;
    } else {
      detail = `${notes.join('; ')}${other.length ? ` — this is the ${other.join(' / ')} layout of the table` : ''}`;
    }
    out.push(
      check(`table.${base}`, verdict, detail, {
        exists: true,
        layouts: fits,
        differences: vsTarget.filter((d) => d.severity !== 'note').map((d) => d.text),
      }),
    );
  }
  return { checks: out, layouts };
}

module.exports = { tableChecks };
