'use strict';
// What push needs to know about the server behind a pool, read once (docs/push.md): which server
// it is, how it lists running statements and how a KILL names one, the database and account the
// pool works as, whether that account's rings reach other accounts' parks, and whether the server
// is one node of a cluster (a ring reaches the parks of its own server only).
const { parseGrant } = require('../doctor/grants');

/**
 * How each server lists statements and ends one: MariaDB's `KILL QUERY ID` names a statement;
 * MySQL has no query ids, and its `KILL QUERY <connection id>` ends whatever that connection runs,
 * so MySQL parks run on a connection that runs nothing else (the pool's park connection).
 */
const KINDS = {
  mariadb: { processlist: 'information_schema.PROCESSLIST', id: 'QUERY_ID', kill: 'query-id' },
  mysql: { processlist: 'performance_schema.processlist', id: 'ID', kill: 'connection' },
};

/**
 * The global privileges with which an account sees (PROCESS) and ends (one of the others) other
 * accounts' statements: MariaDB names the second CONNECTION ADMIN (10.5+), MySQL CONNECTION_ADMIN.
 */
const SEE = ['PROCESS'];
const END = ['SUPER', 'CONNECTION ADMIN', 'CONNECTION_ADMIN'];

/**
 * Whose parks a ring of this account reaches, from its grants (lib/doctor/grants.js `parseGrant`
 * of each `SHOW GRANTS` line): `'server'` with the global privileges to see and end every
 * account's statements, `'account'` otherwise (a user sees and ends its own sessions without any
 * privilege). Privileges held through a role are not counted (a role must be set to be in force;
 * the pool sets none).
 */
function reachOf(grants) {
  const global = new Set(grants.filter((g) => g && !g.revoke && g.level === 'global').flatMap((g) => [...g.privs]));
  const has = (p) => global.has('ALL') || global.has(p);
  return SEE.some(has) && END.some(has) ? 'server' : 'account';
}

/** The privileges to grant an account whose rings should reach every account's parks, per server. */
const reachPrivileges = (mariadb) => (mariadb ? 'PROCESS, CONNECTION ADMIN' : 'PROCESS, CONNECTION_ADMIN');

/** A Galera node's cluster: its size when it has several nodes (a ring reaches one of them). */
async function galeraOf(sql) {
  const rows = await sql.query(
    "SELECT VARIABLE_VALUE AS n FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_CLUSTER_SIZE'",
  );
  const n = Number(rows[0]?.n ?? 0);
  return n > 1 ? { nodes: n, kind: 'galera' } : { nodes: 0, kind: null };
}

/**
 * A Group Replication member's group. Single-primary: every write, park and ring goes to the one
 * primary (a pool's probe sets the secondaries aside), so the doorbell reaches every park as on
 * one server (`nodes` 0). Multi-primary: parks sit on every member, and a ring reaches the
 * members of the ringer's own pool only — as on Galera. Without the plugin, or without SELECT on
 * performance_schema: no group known.
 */
async function groupOf(sql) {
  const mode = await sql.query("SHOW GLOBAL VARIABLES WHERE Variable_name = 'group_replication_single_primary_mode'");
  const value = mode[0] ? String(Object.values(mode[0])[1]) : undefined;
  if (value === undefined) return { nodes: 0, kind: null };
  let online = 0;
  try {
    const [r] = await sql.query(
      "SELECT COUNT(*) AS n FROM performance_schema.replication_group_members WHERE MEMBER_STATE = 'ONLINE'",
    );
    online = Number(r.n);
  } catch {
    return { nodes: 0, kind: null };
  }
  if (online === 0) return { nodes: 0, kind: null };
  const single = /^(ON|1)$/i.test(value);
  return {
    nodes: single || online < 2 ? 0 : online,
    kind: single ? 'group-replication single-primary' : 'group-replication multi-primary',
  };
}

/**
 * `{ kind, version, db, account, reach, processlist, id, kill, cluster }` of the server behind
 * `sql`: `db` is LOWER(HEX(DATABASE())) (what park marks carry), `cluster` the number of nodes
 * when it is one node of several that a ring may not all reach (Galera, a multi-primary group),
 * else 0, and `clusterKind` what kind of cluster it is a node of (or null).
 */
async function serverFacts(sql) {
  const [r] = await sql.query(
    'SELECT VERSION() AS v, LOWER(HEX(DATABASE())) AS db, CURRENT_USER() AS account, @@performance_schema AS ps',
  );
  const kind = /mariadb/i.test(String(r.v)) ? 'mariadb' : 'mysql';
  const shape = { ...KINDS[kind] };
  // Without performance_schema its processlist table is empty; the older table still lists.
  if (kind === 'mysql' && Number(r.ps) !== 1) shape.processlist = 'information_schema.PROCESSLIST';
  const { nodes: cluster, kind: clusterKind } = kind === 'mariadb' ? await galeraOf(sql) : await groupOf(sql);
  const grants = (await sql.query('SHOW GRANTS')).map((row) => parseGrant(Object.values(row)[0]));
  return {
    kind,
    version: String(r.v),
    db: r.db === null || r.db === undefined ? '' : String(r.db),
    account: String(r.account),
    reach: reachOf(grants),
    cluster,
    clusterKind,
    ...shape,
  };
}

module.exports = { serverFacts, reachOf, reachPrivileges };
