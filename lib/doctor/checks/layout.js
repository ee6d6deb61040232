'use strict';
// The layout check: what the six tables add up to against the target contract — missing,
// incomplete, an upgrade to run, or the alpha.2-on-3.0 downgrade hazard — as the one line that
// says what to run. Drift (tables that fit no contract) is told table by table (tables.js), so it
// gets no line here.
const { privilegeModel } = require('../grants');
const { runSchema } = require('../fix');
const { BASES, V3 } = require('../names');
const { check } = require('../verdict');

function otherPrefixes(f, prefix) {
  if (!f.allTables) return [];
  const names = new Set(f.allTables);
  const out = [];
  for (const n of f.allTables) {
    if (!n.endsWith('run')) continue;
    const p = n.slice(0, -3);
    if (p !== prefix && BASES.every((b) => names.has(`${p}${b}`))) out.push(p);
  }
  return out;
}

/** Whether the account may not even see the tables (then "missing" may be "hidden"). */
function hidden(f, t) {
  if (!f.grants) return false;
  const has = privilegeModel(f.grants.list, f.database, f.fold);
  return BASES.some((b) => !has('SELECT', { table: `${t.prefix}${b}` }));
}

/** The layout line, or null (drift: the table lines say it). */
function layoutCheck(f, t, layout) {
  const value = { layout, contract: t.contract };
  if (layout === 'drifted') return null;
  if (layout === 'missing') {
    if (hidden(f, t)) {
      return check(
        'layout',
        'warn',
        `no tables with prefix ${JSON.stringify(t.prefix)} visible to this account in \`${f.database}\` (see privileges.data); if they are missing, ${runSchema(t)}`,
        value,
      );
    }
    const others = otherPrefixes(f, t.prefix);
    const hint = others.length
      ? `; found the tables with prefix ${others.map((p) => JSON.stringify(p)).join(', ')} — wrong --prefix?`
      : '';
    return check(
      'layout',
      'fail',
      `no tables with prefix ${JSON.stringify(t.prefix)} in \`${f.database}\`: to create them, ${runSchema(t)}${hint}`,
      value,
    );
  }
  if (layout === 'incomplete') {
    const gone = BASES.filter((b) => f.tables[b] === null).map((b) => `${t.prefix}${b}`);
    return check('layout', 'fail', `tables missing: ${gone.join(', ')} — to create them, ${runSchema(t)}`, value);
  }
  if (layout === t.contract) return check('layout', 'ok', `the ${layout} layout`, value);
  if (t.contract === V3) {
    return check(
      'layout',
      'fail',
      `${layout === 'mixed' ? 'a partly upgraded layout (some tables 2.0.0-alpha.2, some 3.0.0)' : 'the 2.0.0-alpha.2 layout'}: the 3.0.0 backend needs run.priority and signal.consumed — ` +
        `to upgrade in place (every row kept), ${runSchema(t)}`,
      value,
    );
  }
  // contract alpha.2 on a 3.0 (or partly 3.0) layout: the downgrade hazard.
  if (f.consumedSignals > 0) {
    value.consumedSignals = f.consumedSignals;
    return check(
      'layout',
      'fail',
      `the ${layout === 'mixed' ? 'partly upgraded' : '3.0.0'} layout with ${f.consumedSignals >= 1000 ? '1000 or more' : f.consumedSignals} signal(s) marked consumed by 3.0 code: ` +
        '2.0.0-alpha.2 code would deliver them again — keep using the 3.0.0 contract on this database (--contract 3.0.0)',
      value,
    );
  }
  return check(
    'layout',
    'warn',
    `the ${layout === 'mixed' ? 'partly upgraded' : '3.0.0'} layout, checked against 2.0.0-alpha.2: alpha.2 code runs on it, but once 3.0 code has run here do not go back to alpha.2 (downgrade hazard; pass --contract 3.0.0 / { contract: '3.0.0' } if you run 3.0)`,
    value,
  );
}

module.exports = { layoutCheck };
