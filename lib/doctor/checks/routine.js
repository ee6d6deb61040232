'use strict';
// The pending_work check: the stored function of 3.0.0 (present, its return type, its body).
const { expectedFunctionBody, squash } = require('../ddl');
const { runSchema } = require('../fix');
const { V3 } = require('../names');
const { check } = require('../verdict');

function routineCheck(f, t, canSee) {
  const fn = `${t.prefix}pending_work`;
  const r = f.routine;
  if (!r) return check('pending_work', 'warn', `could not look for ${fn}: ${f.errors.routine || 'unknown error'}`);
  if (t.contract !== V3) {
    return check(
      'pending_work',
      'ok',
      `not part of 2.0.0-alpha.2 (${r.exists ? 'present: created by 3.0 applySchema' : 'absent'})`,
      { exists: r.exists },
    );
  }
  if (!r.exists) {
    if (!t.pendingWork) return check('pending_work', 'ok', `${fn} absent (pendingWork: false)`, { exists: false });
    if (t.layoutName === 'missing' || t.layoutName === 'incomplete') {
      // The layout line's command creates it with the tables: one cause, one line.
      return check('pending_work', 'ok', `${fn} absent, like the tables: schema apply creates both`, {
        exists: false,
      });
    }
    if (!canSee) {
      return check(
        'pending_work',
        'warn',
        `function ${fn} is not visible to this account (no EXECUTE / CREATE ROUTINE / ALTER ROUTINE here): it may exist — check as its owner`,
        { exists: null },
      );
    }
    return check(
      'pending_work',
      'warn',
      `function ${fn} is missing (the backend does not call it; an autoscaler polling the backlog does) — to create it, ${runSchema(t)}`,
      { exists: false },
    );
  }
  if (!/bigint/i.test(r.returns)) {
    return check(
      'pending_work',
      'warn',
      `function ${fn} returns ${r.returns}, expected BIGINT — to replace it, ${runSchema(t)}`,
      { exists: true },
    );
  }
  const same = r.body === null ? null : squash(r.body) === squash(expectedFunctionBody(t.prefix));
  const note =
    same === null
      ? ' (its body is not visible to this account)'
      : same
        ? ''
        : " (its body differs from this version's: created by the JavaScript package or another version; applySchema replaces it)";
  return check('pending_work', 'ok', `function ${fn}(flow_names, as_of) present${note}`, {
    exists: true,
    sameBody: same,
  });
}

module.exports = { routineCheck };
