'use strict';
// Judging the facts: every check, in the order of the report, from what facts.js collected.
// The report is a list of families, each `(facts, target) => check[]`; to add one (say, the push
// listener's facts), write it in checks/, collect its facts in facts.js (a cluster kind collects
// its own: checks/cluster.js) and put it in FAMILIES where its lines belong. The target `t` is
// { prefix, contract, pendingWork, pool, native, own, setIsolation, hosts, commandTarget } plus
// what earlier families found (`layoutName`).
const { binlogCheck } = require('./checks/binlog');
const { clusterChecks } = require('./checks/cluster');
const { hostChecks } = require('./checks/hosts');
const { isolationChecks } = require('./checks/isolation');
const { layoutCheck } = require('./checks/layout');
const { packetCheck } = require('./checks/packet');
const { poolChecks } = require('./checks/pool');
const { privilegeChecks } = require('./checks/privileges');
const { pushChecks } = require('./checks/push');
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

const connectionCheck = (f) =>
  check('connection', 'ok', `connected as ${f.currentUser} in ${f.connectMs} ms`, {
    user: f.currentUser,
    ms: f.connectMs,
  });

const databaseCheck = (f) =>
  f.database === null
    ? check('database', 'fail', 'no database selected: put it in the URL path (mysql://user@host:3306/<database>)')
    : check('database', 'ok', `\`${f.database}\``, { name: f.database });

/** The six tables and what they add up to; records `t.layoutName` for the families after it. */
function schemaChecks(f, t) {
  if (f.database === null) return [];
  if (!f.tables)
    return [check('tables', 'warn', `could not read information_schema: ${f.errors.tables || 'unknown error'}`)];
  const expected = { [ALPHA2]: expectedLayout(t.prefix, ALPHA2), [V3]: expectedLayout(t.prefix, V3) };
  const r = tableChecks(f, t, expected);
  t.layoutName = layoutName(r.layouts);
  const out = [...r.checks];
  const layout = layoutCheck(f, t, t.layoutName);
  if (layout) out.push(layout);
  if (f.errors.columns || f.errors.indexes) {
    const what = [f.errors.columns, f.errors.indexes].filter(Boolean).join('; ');
    out.push(check('tables', 'warn', `parts of information_schema could not be read: ${what}`));
  }
  return out;
}

function routineChecks(f, t) {
  if (f.database === null) return [];
  // information_schema.ROUTINES lists only routines the account holds some privilege on.
  const has = f.grants ? privilegeModel(f.grants.list, f.database, f.fold) : null;
  const where = { routine: `${t.prefix}pending_work` };
  const canSee = !has || ['EXECUTE', 'CREATE ROUTINE', 'ALTER ROUTINE'].some((p) => has(p, where));
  return [routineCheck(f, t, canSee)];
}

/** The report's families, in report order. */
const FAMILIES = [
  { name: 'connection', lines: (f) => [connectionCheck(f)] },
  { name: 'server', lines: (f) => [serverCheck(f)] },
  { name: 'database', lines: (f) => [databaseCheck(f)] },
  { name: 'skip-locked', lines: (f) => [skipLockedCheck(f)] },
  { name: 'isolation', lines: isolationChecks },
  { name: 'privileges', lines: privilegeChecks },
  { name: 'schema', lines: schemaChecks },
  { name: 'routine', lines: routineChecks },
  { name: 'server settings', lines: (f) => [packetCheck(f), timeZoneCheck(f), binlogCheck(f)] },
  { name: 'cluster', lines: clusterChecks },
  { name: 'replication', lines: (f) => [replicationCheck(f)] },
  { name: 'pool', lines: poolChecks },
  { name: 'push', lines: pushChecks },
  { name: 'hosts', lines: (f, t) => hostChecks(t) },
];

/** Every check from the collected facts, in report order. */
function judge(f, target) {
  const t = { ...target };
  const lines = new Map();
  // The schema family is judged first (the privileges read the layout it found), printed in its place.
  for (const fam of [...FAMILIES].sort((a, b) => (a.name === 'schema' ? -1 : b.name === 'schema' ? 1 : 0))) {
    lines.set(fam.name, fam.lines(f, t));
  }
  return FAMILIES.flatMap((fam) => lines.get(fam.name));
}

module.exports = { judge, FAMILIES };
