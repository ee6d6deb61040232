'use strict';
// The privilege checks: data (the backend), schema (applySchema) and routine (pending_work),
// from the grant model of grants.js — never by trying writes.
const { isOn } = require('../facts');
const { privilegeModel } = require('../grants');
const { BASES, V3 } = require('../names');
const { check } = require('../verdict');

function privilegeChecks(f, t) {
  if (!f.grants) {
    return [
      check(
        'privileges',
        'warn',
        `could not read this account's privileges (${f.errors.grants || 'SHOW GRANTS failed'}${f.errors.grantsSchema ? `; information_schema: ${f.errors.grantsSchema}` : ''})`,
      ),
    ];
  }
  if (f.database === null)
    return [check('privileges', 'warn', 'no database selected: cannot check the privileges on the tables')];
  const has = privilegeModel(f.grants.list, f.database, f.fold);
  const via = f.grants.source === 'SHOW GRANTS' ? '' : ' (from information_schema: roles not included)';
  const tableNames = BASES.map((b) => `${t.prefix}${b}`);
  const missing = (privs, tables) => {
    const out = [];
    for (const p of privs) {
      const lacking = tables.filter((tn) => !has(p, { table: tn }));
      if (lacking.length)
        out.push(`${p} on ${lacking.length === tables.length ? 'the six tables' : lacking.join(', ')}`);
    }
    return out;
  };
  const out = [];
  const data = missing(['SELECT', 'INSERT', 'UPDATE', 'DELETE'], tableNames);
  out.push(
    data.length
      ? check(
          'privileges.data',
          'fail',
          `${f.currentUser} lacks ${data.join('; ')} in \`${f.database}\`: the backend reads and writes every table${via}`,
          { missing: data },
        )
      : check('privileges.data', 'ok', `SELECT, INSERT, UPDATE, DELETE on the six tables${via}`),
  );

  const layout = t.layoutName;
  const needAlter = t.contract === V3 && layout !== V3;
  const schema = missing(['CREATE'], tableNames);
  const alter = t.contract === V3 ? missing(['ALTER'], tableNames) : [];
  const schemaProblems = [...schema, ...(needAlter ? alter : [])];
  if (schemaProblems.length) {
    out.push(
      check(
        'privileges.schema',
        'warn',
        `applySchema needs CREATE${t.contract === V3 ? ' (and ALTER to upgrade an alpha.2 layout)' : ''}: ${f.currentUser} lacks ${schemaProblems.join('; ')} — ` +
          'run applySchema as another user, or grant it; workers do not need it once the tables exist',
        { missing: schemaProblems },
      ),
    );
  } else {
    const note = alter.length ? ' (ALTER is missing, but only an alpha.2 → 3.0 upgrade needs it)' : '';
    out.push(
      check(
        'privileges.schema',
        'ok',
        `CREATE${t.contract === V3 && !alter.length ? ', ALTER' : ''} for applySchema${note}`,
      ),
    );
  }

  if (t.contract !== V3) {
    out.push(check('privileges.routine', 'ok', 'no stored function under 2.0.0-alpha.2'));
  } else if (!t.pendingWork) {
    out.push(check('privileges.routine', 'ok', 'not checked (pendingWork: false — applySchema skips the function)'));
  } else {
    const fn = `${t.prefix}pending_work`;
    const problems = [];
    if (!has('CREATE ROUTINE')) problems.push('CREATE ROUTINE');
    if (!has('ALTER ROUTINE', { routine: fn }) && f.routine && f.routine.exists)
      problems.push('ALTER ROUTINE (to replace the existing function)');
    const binlog = isOn(f.global.log_bin) && !isOn(f.global.log_bin_trust_function_creators) && !has('SUPER');
    if (problems.length) {
      out.push(
        check(
          'privileges.routine',
          'warn',
          `applySchema(sql, prefix, { contract: '3.0.0' }) creates the function ${fn}: ${f.currentUser} lacks ${problems.join(', ')}, so it ` +
            `rejects with ER_NO_CREATE_ROUTINE — GRANT CREATE ROUTINE, ALTER ROUTINE ON \`${f.database}\`.* or pass { pendingWork: false } (the backend itself does not call the function)`,
          { missing: problems },
        ),
      );
    } else if (binlog) {
      out.push(
        check(
          'privileges.routine',
          'warn',
          'binary logging is on and log_bin_trust_function_creators is OFF: creating pending_work needs SUPER (error 1419) — set log_bin_trust_function_creators = 1 or run applySchema as a SUPER user',
        ),
      );
    } else {
      out.push(
        check(
          'privileges.routine',
          'ok',
          `CREATE ROUTINE${f.routine && f.routine.exists ? ', ALTER ROUTINE' : ''} for ${fn}`,
        ),
      );
    }
  }
  return out;
}

module.exports = { privilegeChecks };
