'use strict';
// Judging the facts: every check, in the order of the report, from what facts.js collected.
// The connection and database lines are judged here; every other family has its file in checks/.
const { binlogCheck } = require('./checks/binlog');
const { galeraChecks } = require('./checks/galera');
const { hostChecks } = require('./checks/hosts');
const { isolationChecks } = require('./checks/isolation');
const { layoutCheck } = require('./checks/layout');
const { packetCheck } = require('./checks/packet');
const { poolChecks } = require('./checks/pool');
const { privilegeChecks } = require('./checks/privileges');
const { replicationCheck } = require('./checks/replication');
const { routineCheck } = require('./checks/routine');
const { serverCheck } = require('./checks/server');
const { skipLockedCheck } = require('./checks/skip-locked');
const { tableChecks } = require('./checks/tables');
const { timeZoneCheck } = require('./checks/time-zone');
const { expectedLayout } = require('./ddl');
const { privilegeModel } = require('./grants');
const { layoutName } = require('./layout');
const { ALPHA2, V3 } = require('./names');
const { check } = require('./verdict');

/** Every check from the collected facts. `t`: { prefix, contract, pendingWork, pool, native, own, setIsolation, hosts }. */
function judge(f, t) {
  const checks = [];
  checks.push(
    check('connection', 'ok', `connected as ${f.currentUser} in ${f.connectMs} ms`, {
      user: f.currentUser,
      ms: f.connectMs,
    }),
  );
  checks.push(serverCheck(f));
  checks.push(
    f.database === null
      ? check('database', 'fail', 'no database selected: put it in the URL path (mysql://user@host:3306/<database>)')
      : check('database', 'ok', `\`${f.database}\``, { name: f.database }),
  );
  checks.push(skipLockedCheck(f));
  checks.push(...isolationChecks(f, t));
  let layout = null;
  let tableLines = [];
  if (f.database !== null) {
    if (!f.tables) {
      tableLines = [
        check('tables', 'warn', `could not read information_schema: ${f.errors.tables || 'unknown error'}`),
      ];
    } else {
      const expected = { [ALPHA2]: expectedLayout(t.prefix, ALPHA2), [V3]: expectedLayout(t.prefix, V3) };
      const r = tableChecks(f, t, expected);
      layout = layoutName(r.layouts);
      tableLines = [...r.checks, layoutCheck(f, t, layout)];
      if (f.errors.columns || f.errors.indexes) {
        tableLines.push(
          check(
            'tables',
            'warn',
            `parts of information_schema could not be read: ${[f.errors.columns, f.errors.indexes].filter(Boolean).join('; ')}`,
          ),
        );
      }
    }
  }
  checks.push(...privilegeChecks(f, { ...t, layoutName: layout }));
  checks.push(...tableLines);
  if (f.database !== null) {
    // information_schema.ROUTINES lists only routines the account holds some privilege on.
    const has = f.grants ? privilegeModel(f.grants.list, f.database, f.fold) : null;
    const where = { routine: `${t.prefix}pending_work` };
    const canSee = !has || ['EXECUTE', 'CREATE ROUTINE', 'ALTER ROUTINE'].some((p) => has(p, where));
    checks.push(routineCheck(f, t, canSee));
  }
  checks.push(
    packetCheck(f),
    timeZoneCheck(f),
    binlogCheck(f),
    ...galeraChecks(f),
    replicationCheck(f),
    ...poolChecks(f, t),
    ...hostChecks(t),
  );
  return checks;
}

module.exports = { judge };
