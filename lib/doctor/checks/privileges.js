'use strict';
// The privilege checks: data (the backend), schema (applySchema) and routine (pending_work),
// from the grant model of grants.js — never by trying writes. A missing privilege comes with the
// GRANT to copy (fix.js). What only `schema apply` needs warns only while the schema still has to
// be applied: workers need neither CREATE nor CREATE ROUTINE once the tables and function exist.
const { isOn } = require('../facts');
const { runGrant } = require('../fix');
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
  if (f.database === null) return []; // the database line fails; nothing to check privileges on
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
          `${f.currentUser} lacks ${data.join('; ')} in \`${f.database}\`: the backend reads and writes every table${via} — ` +
            runGrant(['SELECT', 'INSERT', 'UPDATE', 'DELETE'], f),
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
    const privs = ['CREATE', ...(needAlter && alter.length ? ['ALTER'] : [])];
    out.push(
      check(
        'privileges.schema',
        'warn',
        `schema apply (applySchema) needs CREATE${t.contract === V3 ? ' (and ALTER to upgrade an alpha.2 layout)' : ''}: ${f.currentUser} lacks ${schemaProblems.join('; ')} — ` +
          `workers do not need it once the tables exist; to apply the schema as this account, ${runGrant(privs, f)}`,
        { missing: schemaProblems },
      ),
    );
  } else {
    const note = alter.length ? ' (ALTER is missing, but only an alpha.2 → 3.0 upgrade needs it)' : '';
    out.push(
      check(
        'privileges.schema',
        'ok',
        `CREATE${t.contract === V3 && !alter.length ? ', ALTER' : ''} for schema apply${note}`,
      ),
    );
  }
  out.push(routinePrivileges(f, t, has));
  return out;
}

/** What creating `pending_work` (3.0's applySchema) needs: CREATE / ALTER ROUTINE, and SUPER with a binary log. */
function routinePrivileges(f, t, has) {
  if (t.contract !== V3) return check('privileges.routine', 'ok', 'no stored function under 2.0.0-alpha.2');
  if (!t.pendingWork)
    return check('privileges.routine', 'ok', 'not checked (pendingWork: false — schema apply skips the function)');
  const fn = `${t.prefix}pending_work`;
  const problems = [];
  if (!has('CREATE ROUTINE')) problems.push('CREATE ROUTINE');
  if (!has('ALTER ROUTINE', { routine: fn }) && f.routine && f.routine.exists)
    problems.push('ALTER ROUTINE (to replace the existing function)');
  const binlog = isOn(f.global.log_bin) && !isOn(f.global.log_bin_trust_function_creators) && !has('SUPER');
  const skip = 'or skip the function (--no-pending-work / { pendingWork: false }: the backend itself does not call it)';
  if (problems.length) {
    return check(
      'privileges.routine',
      'warn',
      `schema apply --contract 3.0.0 creates the function ${fn}: ${f.currentUser} lacks ${problems.join(', ')}, so it ` +
        `rejects with ER_NO_CREATE_ROUTINE — ${runGrant(['CREATE ROUTINE', 'ALTER ROUTINE'], f)} ${skip}`,
      { missing: problems },
    );
  }
  if (binlog) {
    const set = f.maria
      ? 'SET GLOBAL log_bin_trust_function_creators = ON (and in the server configuration)'
      : 'SET PERSIST log_bin_trust_function_creators = ON';
    return check(
      'privileges.routine',
      'warn',
      `binary logging is on and log_bin_trust_function_creators is OFF: creating ${fn} needs SUPER (error 1419) — ` +
        `as an administrator, run: ${set}; or run schema apply as an account with SUPER; ${skip}`,
      { missing: ['SUPER'] },
    );
  }
  return check(
    'privileges.routine',
    'ok',
    `CREATE ROUTINE${f.routine && f.routine.exists ? ', ALTER ROUTINE' : ''} for ${fn}`,
  );
}

module.exports = { privilegeChecks };
