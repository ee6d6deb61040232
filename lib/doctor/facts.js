'use strict';
// Collecting the facts (read-only): server variables and status, the tables, columns and keys from
// information_schema, the pending_work function, the account's grants, SKIP LOCKED and the
// isolation inside one rolled-back transaction, the replication role, and what each cluster kind
// of checks/cluster.js asks for. Nothing here judges; a fact
// that cannot be read is recorded in `errors` under its key.
const binding = require('../binding');
const { normType, isTextType, unquoteSql } = require('./ddl');
const { parseGrant } = require('./grants');
const { ALPHA2, BASES } = require('./names');

const SESSION_VARS = [
  'tx_isolation',
  'transaction_isolation',
  'binlog_format',
  'log_bin',
  'sql_log_bin',
  'max_allowed_packet',
  'time_zone',
  'system_time_zone',
  'wait_timeout',
  'innodb_lock_wait_timeout',
  'max_statement_time',
  'max_execution_time',
  'max_user_connections',
  'tx_read_only',
  'transaction_read_only',
  'lower_case_table_names',
  'wsrep_on',
  'wsrep_sync_wait',
];
const GLOBAL_VARS = [
  'tx_isolation',
  'transaction_isolation',
  'time_zone',
  'max_connections',
  'max_prepared_stmt_count',
  'read_only',
  'super_read_only',
  'log_bin',
  'binlog_format',
  'log_bin_trust_function_creators',
  'innodb_autoinc_lock_mode',
  'wsrep_on',
  'wsrep_sync_wait',
  'wsrep_provider',
  'aurora_version',
  'performance_schema',
];
const STATUS_VARS = [
  'Threads_connected',
  'Prepared_stmt_count',
  'Max_used_connections',
  'wsrep_cluster_size',
  'wsrep_local_state_comment',
  'wsrep_cluster_status',
  'wsrep_ready',
  'wsrep_connected',
];

const quoteList = (names) => names.map((n) => `'${n}'`).join(', ');

async function variables(sql, scope, names) {
  const rows = await sql.query(`SHOW ${scope} WHERE Variable_name IN (${quoteList(names)})`);
  const out = {};
  for (const r of rows) {
    const vals = Object.values(r);
    out[String(r.Variable_name ?? vals[0]).toLowerCase()] = String(r.Value ?? vals[1] ?? '');
  }
  return out;
}

function errorText(e) {
  if (!e) return 'unknown error';
  const code = e.code && !String(e.message || '').includes(e.code) ? ` (${e.code})` : '';
  return `${e.message || String(e)}${code}`;
}

const ROLLBACK = Symbol('doctor: roll back');

async function collect(sql, prefix, contract) {
  const f = { errors: {} };
  const attempt = async (key, fn) => {
    try {
      return await fn();
    } catch (e) {
      f.errors[key] = errorText(e);
      return undefined;
    }
  };

  const t0 = Date.now();
  const [who] = await sql.query(
    'SELECT VERSION() AS version, @@version_comment AS comment, CURRENT_USER() AS currentUser, DATABASE() AS db',
  );
  f.connectMs = Date.now() - t0;
  f.version = String(who.version);
  f.comment = who.comment == null ? '' : String(who.comment);
  f.currentUser = String(who.currentUser);
  f.database = who.db == null ? null : String(who.db);
  f.maria = /mariadb/i.test(f.version);
  f.role = await attempt('role', async () => {
    const [r] = await sql.query('SELECT CURRENT_ROLE() AS r');
    return r.r == null || r.r === 'NONE' ? null : String(r.r);
  });

  f.session = (await attempt('session', () => variables(sql, 'SESSION VARIABLES', SESSION_VARS))) || {};
  f.global = (await attempt('global', () => variables(sql, 'GLOBAL VARIABLES', GLOBAL_VARS))) || {};
  f.status = (await attempt('status', () => variables(sql, 'GLOBAL STATUS', STATUS_VARS))) || {};
  f.fold = f.session.lower_case_table_names !== undefined && f.session.lower_case_table_names !== '0';

  const names = binding.tableNames(prefix);
  const tableNames = BASES.map((b) => `${prefix}${b}`);

  // Tables, columns, keys.
  if (f.database !== null) {
    const all = await attempt('tables', () =>
      sql.query(
        'SELECT TABLE_NAME AS t, ENGINE AS engine, TABLE_TYPE AS type FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()',
      ),
    );
    if (all) {
      f.allTables = all.map((r) => String(r.t));
      const byName = new Map(all.map((r) => [f.fold ? String(r.t).toLowerCase() : String(r.t), r]));
      const cols =
        (await attempt('columns', () =>
          sql.query(
            'SELECT TABLE_NAME AS t, COLUMN_NAME AS name, COLUMN_TYPE AS type, IS_NULLABLE AS nullable, ' +
              'COLUMN_DEFAULT AS def, EXTRA AS extra, CHARACTER_SET_NAME AS charset FROM information_schema.COLUMNS ' +
              'WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (?) ORDER BY TABLE_NAME, ORDINAL_POSITION',
            [tableNames],
          ),
        )) || [];
      const stats =
        (await attempt('indexes', () =>
          sql.query(
            'SELECT TABLE_NAME AS t, INDEX_NAME AS name, NON_UNIQUE AS nonUnique, COLUMN_NAME AS col, SUB_PART AS sub ' +
              'FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (?) ' +
              'ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX',
            [tableNames],
          ),
        )) || [];
      const key = (t) => (f.fold ? String(t).toLowerCase() : String(t));
      f.tables = {};
      BASES.forEach((base, i) => {
        const row = byName.get(key(tableNames[i]));
        if (!row) {
          f.tables[base] = null;
          return;
        }
        const columns = new Map();
        for (const r of cols.filter((r) => key(r.t) === key(tableNames[i]))) {
          const type = normType(r.type);
          columns.set(String(r.name).toLowerCase(), {
            name: String(r.name).toLowerCase(),
            type,
            nullable: String(r.nullable).toUpperCase() === 'YES',
            default: actualDefault(r.def, f.maria),
            autoIncrement: /auto_increment/i.test(String(r.extra || '')),
            generated: /GENERATED|VIRTUAL|PERSISTENT|STORED/i.test(String(r.extra || '')),
            charset: r.charset == null ? null : String(r.charset),
            text: isTextType(type),
          });
        }
        const indexes = new Map();
        for (const r of stats.filter((r) => key(r.t) === key(tableNames[i]))) {
          const name = String(r.name);
          if (!indexes.has(name))
            indexes.set(name, { name, unique: Number(r.nonUnique) === 0, columns: [], prefixed: false });
          const ix = indexes.get(name);
          ix.columns.push(String(r.col).toLowerCase());
          if (r.sub != null) ix.prefixed = true;
        }
        f.tables[base] = {
          name: tableNames[i],
          engine: row.engine == null ? null : String(row.engine),
          type: String(row.type || ''),
          columns,
          indexes: [...indexes.values()],
        };
      });
    }

    f.routine = await attempt('routine', async () => {
      const rows = await sql.query(
        'SELECT ROUTINE_TYPE AS type, DATA_TYPE AS dt, ROUTINE_DEFINITION AS body FROM information_schema.ROUTINES ' +
          'WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME = ?',
        [`${prefix}pending_work`],
      );
      const fn = rows.find((r) => String(r.type).toUpperCase() === 'FUNCTION');
      return fn
        ? { exists: true, returns: String(fn.dt || ''), body: fn.body == null ? null : String(fn.body) }
        : { exists: false };
    });

    // Signals a 3.0 backend marked consumed: alpha.2 code would deliver them again.
    const signal = f.tables && f.tables.signal;
    if (contract === ALPHA2 && signal && signal.columns.has('consumed')) {
      f.consumedSignals = await attempt('consumed', async () => {
        const [r] = await sql.query(
          `SELECT COUNT(*) AS n FROM (SELECT 1 AS x FROM ${names.signal} WHERE consumed <> 0 LIMIT 1000) s`,
        );
        return Number(r.n);
      });
    }
  }

  // Privileges.
  f.grants = await attempt('grants', async () => {
    let text = 'SHOW GRANTS';
    if (!f.maria && f.role) text = `SHOW GRANTS FOR CURRENT_USER() USING ${f.role}`; // MySQL: expand active roles
    let rows;
    try {
      rows = await sql.query(text);
    } catch (e) {
      if (text === 'SHOW GRANTS') throw e;
      rows = await sql.query('SHOW GRANTS');
    }
    const parsed = rows.map((r) => parseGrant(Object.values(r)[0])).filter(Boolean);
    return { source: 'SHOW GRANTS', list: parsed };
  });
  if (!f.grants) {
    const viaSchema = await attempt('grantsSchema', () => grantsFromSchema(sql, f.currentUser));
    if (viaSchema) f.grants = viaSchema;
  }

  // SKIP LOCKED and the isolation a transaction gets, inside one transaction that is rolled back.
  if (typeof sql.tx === 'function') {
    await attempt('tx', () =>
      sql
        .tx(async (t) => {
          f.txIsolation = isolationOf(
            await variables(t, 'SESSION VARIABLES', ['tx_isolation', 'transaction_isolation']),
          );
          f.skipLocked = await probeSkipLocked(t, f.tables && f.tables.job ? names.job : null);
          throw ROLLBACK;
        })
        .catch((e) => {
          if (e !== ROLLBACK) throw e;
        }),
    );
  }

  // Replication role: is this server a replica? (Needs a monitoring privilege; silently unknown without.)
  f.replica = await attempt('replica', async () => {
    let rows;
    try {
      rows = await sql.query('SHOW REPLICA STATUS');
    } catch {
      rows = await sql.query('SHOW SLAVE STATUS');
    }
    if (!rows.length) return null;
    const r = rows[0];
    return {
      source: [r.Source_Host ?? r.Master_Host, r.Source_Port ?? r.Master_Port].filter((x) => x != null).join(':'),
      io: r.Replica_IO_Running ?? r.Slave_IO_Running,
      sqlThread: r.Replica_SQL_Running ?? r.Slave_SQL_Running,
    };
  });

  // Facts only a cluster kind needs (required here, not above: the kinds read isOn from this file).
  await require('./checks/cluster').collectCluster(sql, f, attempt);
  return f;
}

/** information_schema's view of the current account's privileges (no roles, no column grants). */
async function grantsFromSchema(sql, currentUser) {
  const at = currentUser.lastIndexOf('@');
  const grantee = `'${currentUser.slice(0, at)}'@'${currentUser.slice(at + 1)}'`;
  const list = [];
  for (const r of await sql.query(
    'SELECT PRIVILEGE_TYPE AS p FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = ?',
    [grantee],
  )) {
    list.push({ revoke: false, privs: new Set([String(r.p).toUpperCase()]), level: 'global' });
  }
  for (const r of await sql.query(
    'SELECT TABLE_SCHEMA AS db, PRIVILEGE_TYPE AS p FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = ?',
    [grantee],
  )) {
    list.push({ revoke: false, privs: new Set([String(r.p).toUpperCase()]), level: 'db', db: String(r.db) });
  }
  for (const r of await sql.query(
    'SELECT TABLE_SCHEMA AS db, TABLE_NAME AS t, PRIVILEGE_TYPE AS p FROM information_schema.TABLE_PRIVILEGES WHERE GRANTEE = ?',
    [grantee],
  )) {
    list.push({
      revoke: false,
      privs: new Set([String(r.p).toUpperCase()]),
      level: 'table',
      db: String(r.db),
      object: String(r.t),
    });
  }
  return { source: 'information_schema', list };
}

/** A locking read that matches no row: on the job table when it is there, else on DUAL. */
async function probeSkipLocked(t, jobTable) {
  const probes = [];
  if (jobTable) probes.push(`SELECT run_id FROM ${jobTable} WHERE 1 = 0 FOR UPDATE SKIP LOCKED`);
  probes.push('SELECT 1 AS x FROM DUAL FOR UPDATE SKIP LOCKED');
  let firstError;
  for (const text of probes) {
    try {
      await t.query(text);
      return { supported: true, on: text.includes('DUAL') ? 'DUAL' : 'job', firstError };
    } catch (e) {
      if (e && e.errno === 1064) return { supported: false, error: errorText(e) };
      firstError = firstError || errorText(e);
    }
  }
  return { supported: null, error: firstError };
}

function actualDefault(v, maria) {
  if (v === null || v === undefined) return null;
  const s = String(v);
  if (!maria) return s;
  if (s === 'NULL') return null; // MariaDB spells "no default / NULL" as the keyword
  return unquoteSql(s);
}

const isolationOf = (vars) => (vars.transaction_isolation || vars.tx_isolation || '').toUpperCase() || null;
const isOn = (v) => v !== undefined && /^(ON|1|YES|TRUE)$/i.test(String(v));

module.exports = { collect, errorText, isolationOf, isOn };
