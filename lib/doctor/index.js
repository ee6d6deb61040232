'use strict';
// checkDatabase(sql, prefix?, opts?): a read-only health check of one database for this package,
// the library side of `npx iterativeflow-mysql-native doctor <url>` (bin/). It reports, one check
// per line with a verdict (ok / warn / fail):
//   the connection; server kind and version; SKIP LOCKED (probed with a locking read that matches
//   no row, inside a transaction that is rolled back); the isolation the package's sessions get
//   and the server default; privileges (SHOW GRANTS, information_schema as a fallback — never by
//   trying writes); the six tables column by column and key by key against the 2.0.0-alpha.2 and
//   3.0.0 layouts (from information_schema.TABLES / COLUMNS / STATISTICS; the expected layout is
//   parsed from ddl(), so it cannot drift from what applySchema creates) and `pending_work`;
//   max_allowed_packet; time zones; binlog; Galera; read-only / replica role; pool limits.
// Nothing is written. The result is `{ verdict, checks: [{ name, verdict, detail, value? }] }`;
// an unreachable server gives one failing `connection` check, never a rejection.
const binding = require('./binding');
const c = require('./check');
const { CONTRACTS } = require('./shapes');
const { mysqlPool, configOf, isNative } = require('./sql');

const ALPHA2 = '2.0.0-alpha.2';
const V3 = '3.0.0';
const BASES = ['run', 'step', 'job', 'timer', 'signal', 'cron'];
const RANK = { ok: 0, warn: 1, fail: 2 };

/** mysqlPool's defaults (src/config.rs), reported when a pool's own settings are not known. */
const POOL_DEFAULTS = { connectionLimit: 10, acquireTimeoutMs: 10_000, queryTimeoutMs: 60_000, statementCacheSize: 16 };
/** Idle connections are dropped by the pool after this long (src/config.rs), ms. */
const POOL_IDLE_TTL_MS = 60_000;
/** The doctor's own pool (when it is handed a URL or options): bounds on connecting / a query. */
const DOCTOR_CONNECT_MS = 5_000;
const DOCTOR_QUERY_MS = 15_000;
/** Below this max_allowed_packet, ordinary payloads start to be refused. */
const SMALL_PACKET = 4 * 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// The expected layouts, parsed from the DDL applySchema runs (src/schema.rs).

const INT_TYPES = /^(tinyint|smallint|mediumint|int|integer|bigint)\(\d+\)/;

/** Lower-case column type without integer display widths (`int(11)` = `int`, `tinyint(1)` = `tinyint`). */
function normType(t) {
  return String(t)
    .trim()
    .toLowerCase()
    .replace(INT_TYPES, '$1')
    .replace(/^integer\b/, 'int');
}

const isTextType = (t) => /^(var)?char\b|text$|^enum\b|^set\b/.test(t);

function splitCols(s) {
  return s.split(',').map((x) => x.trim().replace(/^`|`$/g, '').toLowerCase());
}

/** `{ table, engine, columns: Map, indexes: [] }` of one `CREATE TABLE IF NOT EXISTS` statement. */
function parseCreateTable(stmt) {
  const head = /^CREATE TABLE IF NOT EXISTS `([^`]+)` \(\n([\s\S]*)\n\s*\) ENGINE=(\w+)/.exec(stmt);
  if (!head) throw new Error(`doctor: cannot read the expected layout from ${stmt.slice(0, 60)}`);
  const columns = new Map();
  const indexes = [];
  for (const raw of head[2].split('\n')) {
    const line = raw.trim().replace(/,$/, '');
    if (!line) continue;
    let m;
    if ((m = /^PRIMARY KEY \(([^)]+)\)$/.exec(line))) {
      indexes.push({ name: 'PRIMARY', unique: true, columns: splitCols(m[1]) });
    } else if ((m = /^UNIQUE KEY (\w+) \(([^)]+)\)$/.exec(line))) {
      indexes.push({ name: m[1], unique: true, columns: splitCols(m[2]) });
    } else if ((m = /^KEY (\w+) \(([^)]+)\)$/.exec(line))) {
      indexes.push({ name: m[1], unique: false, columns: splitCols(m[2]) });
    } else if ((m = /^(\w+)\s+([A-Za-z]+(?:\(\d+\))?)(.*)$/.exec(line))) {
      const [, name, type, rest] = m;
      const def = /\bDEFAULT\s+('(?:[^']|'')*'|\S+)/i.exec(rest);
      const primary = /\bPRIMARY KEY\b/i.test(rest);
      const col = {
        name: name.toLowerCase(),
        type: normType(type),
        nullable: !(/\bNOT NULL\b/i.test(rest) || primary),
        default: def ? unquoteSql(def[1]) : null,
        autoIncrement: /\bAUTO_INCREMENT\b/i.test(rest),
      };
      col.text = isTextType(col.type);
      columns.set(col.name, col);
      if (primary) indexes.push({ name: 'PRIMARY', unique: true, columns: [col.name] });
      else if (/\bUNIQUE\b/i.test(rest)) indexes.push({ name: col.name, unique: true, columns: [col.name] });
    } else {
      throw new Error(`doctor: unexpected line in the expected layout: ${line}`);
    }
  }
  return { table: head[1], engine: head[3], columns, indexes };
}

function unquoteSql(v) {
  const m = /^'((?:[^']|'')*)'$/s.exec(v);
  return m ? m[1].replace(/''/g, "'") : v;
}

/** The six tables of `contract` for `prefix`, by base name. */
function expectedLayout(prefix, contract) {
  const stmts = binding.ddl(prefix, contract).filter((s) => s.startsWith('CREATE TABLE'));
  const out = {};
  BASES.forEach((base, i) => (out[base] = parseCreateTable(stmts[i])));
  return out;
}

/** The body of `pending_work` as this version creates it (what information_schema stores). */
function expectedFunctionBody(prefix) {
  const text = binding.schemaPlan(prefix, V3).createFunction || '';
  const at = text.indexOf('READS SQL DATA');
  return at < 0 ? text : text.slice(at + 'READS SQL DATA'.length);
}

const squash = (s) => String(s).replace(/\s+/g, ' ').trim();

// ---------------------------------------------------------------------------------------------
// Privileges: SHOW GRANTS lines (or information_schema rows) as a small model.

const IDENT = '(?:`(?:[^`]|``)*`|\\*|[^\\s.`@]+)';
const GRANT_RE = new RegExp(
  `^(GRANT|REVOKE)\\s+(.+?)\\s+ON\\s+(?:(TABLE|FUNCTION|PROCEDURE|PACKAGE BODY|PACKAGE)\\s+)?(${IDENT})(?:\\.(${IDENT}))?\\s+(?:TO|FROM)\\s`,
  'i',
);

const unquoteIdent = (id) => (id.startsWith('`') ? id.slice(1, -1).replace(/``/g, '`') : id);

/** Privilege names of a grant's list; column-level ones (`SELECT (a, b)`) are left out. */
function privileges(list) {
  const out = new Set();
  let depth = 0;
  let cur = '';
  const flush = () => {
    const p = cur.trim().toUpperCase().replace(/\s+/g, ' ');
    cur = '';
    if (!p || p.includes('(')) return; // column-level: not enough for a whole table
    out.add(p === 'ALL' || p === 'ALL PRIVILEGES' ? 'ALL' : p);
  };
  for (const ch of list) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) flush();
    else cur += ch;
  }
  flush();
  return out;
}

/** One SHOW GRANTS line as `{ revoke, privs, level, db, object }`, or null (roles, PROXY, …). */
function parseGrant(line) {
  const m = GRANT_RE.exec(String(line).trim());
  if (!m) return null;
  const [, verb, list, type, first, second] = m;
  const privs = privileges(list);
  let level;
  let db;
  let object;
  if (first === '*' && (second === undefined || second === '*')) level = 'global';
  else if (second === undefined)
    return null; // `ON tbl` relative to a default database: not shown by servers
  else {
    db = unquoteIdent(first);
    if (second === '*') level = 'db';
    else {
      object = unquoteIdent(second);
      level = type && /FUNCTION|PROCEDURE|PACKAGE/i.test(type) ? 'routine' : 'table';
    }
  }
  return { revoke: /^REVOKE$/i.test(verb), privs, level, db, object };
}

/** A database-level grant's name matches `name` (`%` and `_` are wildcards there, `\` escapes). */
function dbMatches(pattern, name, fold) {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === '\\' && i + 1 < pattern.length) re += escapeRe(pattern[++i]);
    else if (ch === '%') re += '.*';
    else if (ch === '_') re += '.';
    else re += escapeRe(ch);
  }
  return new RegExp(`^${re}$`, fold ? 'is' : 's').test(name);
}

const escapeRe = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Privileges that exist only at the global level (`ALL ON db.*` does not include them). */
const GLOBAL_ONLY = new Set([
  'SUPER',
  'PROCESS',
  'RELOAD',
  'SHUTDOWN',
  'FILE',
  'REPLICATION CLIENT',
  'REPLICATION SLAVE',
  'CREATE USER',
  'BINLOG MONITOR',
  'SLAVE MONITOR',
  'READ_ONLY ADMIN',
]);

/** `has(priv, { table?, routine? })` over parsed grants, for database `db`. */
function privilegeModel(grants, db, fold) {
  const eq = (a, b) => (fold ? a.toLowerCase() === b.toLowerCase() : a === b);
  const gives = (g, priv) => !g.revoke && (g.privs.has(priv) || g.privs.has('ALL'));
  const revokedHere = (priv) => grants.some((g) => g.revoke && g.level === 'db' && eq(g.db, db) && g.privs.has(priv));
  return (priv, where = {}) => {
    for (const g of grants) {
      if (!gives(g, priv)) continue;
      if (g.level === 'global' && !revokedHere(priv)) return 'global';
      if (GLOBAL_ONLY.has(priv)) continue;
      if (g.level === 'db' && dbMatches(g.db, db, fold)) return 'database';
      if (g.level === 'table' && where.table && eq(g.db, db) && eq(g.object, where.table)) return 'table';
      if (
        g.level === 'routine' &&
        where.routine &&
        eq(g.db, db) &&
        g.object.toLowerCase() === where.routine.toLowerCase()
      ) {
        return 'routine';
      }
    }
    return null;
  };
}

// ---------------------------------------------------------------------------------------------
// Collecting the facts (read-only).

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

// ---------------------------------------------------------------------------------------------
// Judging the facts.

function check(name, verdict, detail, value) {
  const out = { name, verdict, detail };
  if (value !== undefined) out.value = value;
  return out;
}

const worst = (verdicts) => verdicts.reduce((a, b) => (RANK[b] > RANK[a] ? b : a), 'ok');

function parseVersion(v) {
  const m = /^(?:5\.5\.5-)?(\d+)\.(\d+)\.(\d+)/.exec(v);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

const below = (have, want) => {
  for (let i = 0; i < want.length; i++) {
    if (have[i] !== want[i]) return have[i] < want[i];
  }
  return false;
};

function serverCheck(f) {
  const ver = parseVersion(f.version);
  const plain = ver ? ver.join('.') : f.version;
  const tidb = /tidb/i.test(f.version);
  const flavour = f.maria
    ? 'MariaDB'
    : tidb
      ? 'TiDB'
      : f.global.aurora_version
        ? 'MySQL (Aurora)'
        : /percona/i.test(f.comment)
          ? 'MySQL (Percona Server)'
          : 'MySQL';
  const value = { kind: f.maria ? 'mariadb' : tidb ? 'tidb' : 'mysql', version: f.version };
  const label = `${flavour} ${plain}${f.comment ? ` (${f.comment})` : ''}`;
  if (tidb)
    return check(
      'server',
      'warn',
      `${label}: not a supported server (MariaDB ≥ 10.6 or MySQL ≥ 8.0.1); untested`,
      value,
    );
  if (!ver) return check('server', 'warn', `${label}: cannot read the version number`, value);
  if (f.maria) {
    if (below(ver, [10, 6, 0])) {
      return check(
        'server',
        'fail',
        `${label}: MariaDB below 10.6 has no SKIP LOCKED — upgrade to 10.6 or later`,
        value,
      );
    }
    const tested = ver[0] === 10 && ver[1] === 11;
    return check(
      'server',
      'ok',
      `${label}${tested ? ': tested with this package' : ': supported (≥ 10.6), not tested here (10.11 is)'}`,
      value,
    );
  }
  if (below(ver, [8, 0, 1])) {
    return check('server', 'fail', `${label}: MySQL below 8.0.1 has no SKIP LOCKED — upgrade to 8.0.1 or later`, value);
  }
  return check('server', 'ok', `${label}: supported (≥ 8.0.1), not tested here`, value);
}

function skipLockedCheck(f) {
  const s = f.skipLocked;
  if (!s) return check('skip-locked', 'warn', `could not probe SKIP LOCKED${f.errors.tx ? `: ${f.errors.tx}` : ''}`);
  if (s.supported === false) {
    return check('skip-locked', 'fail', `SELECT … FOR UPDATE SKIP LOCKED is refused (${s.error}): claims cannot work`, {
      supported: false,
    });
  }
  if (s.supported === null)
    return check('skip-locked', 'warn', `could not probe SKIP LOCKED: ${s.error}`, { supported: null });
  const where =
    s.on === 'job'
      ? 'a locking read on the job table'
      : `a locking read on DUAL${s.firstError ? ` (the job-table probe failed: ${s.firstError})` : ''}`;
  return check('skip-locked', 'ok', `supported (probed with ${where}, rolled back)`, { supported: true });
}

function isolationChecks(f, t) {
  const out = [];
  const session = f.txIsolation || isolationOf(f.session);
  const server = isolationOf(f.global);
  const RC = 'READ-COMMITTED';
  const pretty = (v) => (v ? v.replace(/-/g, ' ') : 'unknown');
  if (!session) out.push(check('isolation', 'warn', 'could not read the session isolation level'));
  else if (session === RC) {
    const how =
      t.setIsolation === false
        ? 'with setIsolation: false, from the server default'
        : "set by mysqlPool's connection setup";
    out.push(
      check(
        'isolation',
        'ok',
        `transactions run READ COMMITTED (${t.native || t.own ? how : 'as this Sql runs them'})`,
        { session },
      ),
    );
  } else if (!t.native && !t.own) {
    out.push(
      check(
        'isolation',
        'warn',
        `this Sql's sessions run ${pretty(session)}; the package needs READ COMMITTED — make sure its tx() sets it (a wrapped Sql may set it per transaction, which the session does not show)`,
        { session },
      ),
    );
  } else {
    out.push(
      check(
        'isolation',
        'fail',
        `transactions run ${pretty(session)}: the package needs READ COMMITTED (its first-writer-wins re-read) — ` +
          (t.setIsolation === false
            ? 'with setIsolation: false the server default must be READ COMMITTED (transaction_isolation = READ-COMMITTED)'
            : "mysqlPool's setup did not take effect"),
        { session },
      ),
    );
  }
  if (!server) out.push(check('isolation.default', 'warn', 'could not read the server default isolation level'));
  else if (server === RC)
    out.push(
      check('isolation.default', 'ok', 'server default READ COMMITTED (also right for setIsolation: false)', {
        server,
      }),
    );
  else {
    out.push(
      check(
        'isolation.default',
        'warn',
        `server default ${pretty(server)}: fine while mysqlPool sets READ COMMITTED on each connection (the default), ` +
          'but with mysqlPool(x, { setIsolation: false }) (servers that pin connections) the default must be READ COMMITTED',
        { server },
      ),
    );
  }
  return out;
}

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

const fmtCol = (c) =>
  `${c.type}${c.nullable ? '' : ' NOT NULL'}${c.default !== null ? ` DEFAULT ${/^-?\d+(\.\d+)?$/.test(c.default) ? c.default : `'${c.default}'`}` : ''}${c.autoIncrement ? ' AUTO_INCREMENT' : ''}`;
const fmtIdx = (i) =>
  `${i.unique ? (i.name === 'PRIMARY' ? 'PRIMARY KEY' : 'UNIQUE') : 'KEY'} (${i.columns.join(', ')})`;

/** Differences of an actual table from an expected one: `[{ severity: fail|warn|note, text }]`. */
function compareTable(actual, expected) {
  const diffs = [];
  const add = (severity, text) => diffs.push({ severity, text });
  if (String(actual.type).toUpperCase() === 'VIEW') add('fail', 'is a view, not a table');
  else if (!actual.engine || actual.engine.toLowerCase() !== 'innodb')
    add('fail', `engine ${actual.engine || 'unknown'}, expected InnoDB (transactions, row locks)`);
  for (const want of expected.columns.values()) {
    const have = actual.columns.get(want.name);
    if (!have) {
      add('fail', `missing column ${want.name} ${fmtCol(want)}`);
      continue;
    }
    const bad = [];
    if (have.type !== want.type) bad.push('type');
    if (have.nullable !== want.nullable && !want.autoIncrement) bad.push('nullability');
    if ((have.default ?? null) !== (want.default ?? null) && !want.autoIncrement) bad.push('default');
    if (have.autoIncrement !== want.autoIncrement) bad.push('auto_increment');
    if (bad.length) add('fail', `column ${want.name} is ${fmtCol(have)}, expected ${fmtCol(want)}`);
    if (want.text && have.charset && have.charset.toLowerCase() !== 'utf8mb4') {
      add('fail', `column ${want.name} uses character set ${have.charset}, expected utf8mb4`);
    }
  }
  for (const have of actual.columns.values()) {
    if (expected.columns.has(have.name)) continue;
    const blocksInserts = !have.nullable && have.default === null && !have.autoIncrement && !have.generated;
    add(
      blocksInserts ? 'fail' : 'warn',
      `extra column ${have.name} ${fmtCol(have)}${blocksInserts ? " (NOT NULL without a default: the package's inserts fail)" : ' (not used by the package)'}`,
    );
  }
  const same = (a, b) =>
    a.unique === b.unique &&
    a.columns.length === b.columns.length &&
    a.columns.every((x, i) => x === b.columns[i]) &&
    !a.prefixed;
  const used = new Set();
  for (const want of expected.indexes) {
    const byName = actual.indexes.find((i) => i.name.toLowerCase() === want.name.toLowerCase());
    if (byName && same(byName, want)) {
      used.add(byName);
      continue;
    }
    const other = actual.indexes.find((i) => !used.has(i) && same(i, want));
    if (other) {
      used.add(other);
      add('note', `key ${want.name} present as ${other.name}`);
      continue;
    }
    if (byName) {
      used.add(byName);
      add(
        want.unique || byName.unique ? 'fail' : 'warn',
        `key ${want.name} is ${fmtIdx(byName)}${byName.prefixed ? ' on column prefixes' : ''}, expected ${fmtIdx(want)}`,
      );
    } else {
      const what = want.name === 'PRIMARY' ? fmtIdx(want) : `key ${want.name} ${fmtIdx(want)}`;
      add(want.unique ? 'fail' : 'warn', `missing ${what}${want.unique ? '' : ' (slower queries)'}`);
    }
  }
  for (const have of actual.indexes) {
    if (used.has(have)) continue;
    add(
      have.unique ? 'warn' : 'note',
      `extra key ${have.name} ${fmtIdx(have)}${have.unique ? ' (may refuse rows the package writes)' : ''}`,
    );
  }
  return diffs;
}

const matches = (diffs) => diffs.every((d) => d.severity === 'note');

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

/** 'missing' | 'incomplete' | '3.0.0' | '2.0.0-alpha.2' | 'mixed' | 'drifted'. */
function layoutName(layouts) {
  const vals = BASES.map((b) => layouts[b]);
  if (vals.every((v) => v === null)) return 'missing';
  if (vals.some((v) => v === null)) return 'incomplete';
  if (vals.every((v) => v.includes(V3))) return V3;
  if (vals.every((v) => v.includes(ALPHA2))) return ALPHA2;
  if (vals.every((v) => v.length > 0)) return 'mixed';
  return 'drifted';
}

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

function layoutCheck(f, t, layout) {
  const apply = `applySchema(sql, ${JSON.stringify(t.prefix)}${t.contract === V3 ? ", { contract: '3.0.0' }" : ''})`;
  const value = { layout, contract: t.contract };
  if (layout === 'missing') {
    const others = otherPrefixes(f, t.prefix);
    const hint = others.length
      ? ` — found the tables with prefix ${others.map((p) => JSON.stringify(p)).join(', ')} (wrong --prefix?)`
      : '';
    return check(
      'layout',
      'fail',
      `no tables with prefix ${JSON.stringify(t.prefix)} in \`${f.database}\`: run ${apply}${hint}`,
      value,
    );
  }
  if (layout === 'incomplete') {
    const gone = BASES.filter((b) => f.tables[b] === null).map((b) => `${t.prefix}${b}`);
    return check('layout', 'fail', `tables missing: ${gone.join(', ')} — ${apply} creates them`, value);
  }
  if (layout === 'drifted') {
    return check(
      'layout',
      'fail',
      'the tables match neither the 2.0.0-alpha.2 nor the 3.0.0 layout (see the table lines): fix them by hand — applySchema does not repair existing tables',
      value,
    );
  }
  if (layout === t.contract) return check('layout', 'ok', `the ${layout} layout`, value);
  if (t.contract === V3) {
    return check(
      'layout',
      'fail',
      `${layout === 'mixed' ? 'a partly upgraded layout (some tables 2.0.0-alpha.2, some 3.0.0)' : 'the 2.0.0-alpha.2 layout'}: the 3.0.0 backend needs run.priority and signal.consumed — ` +
        `run ${apply}, which upgrades in place and keeps every row`,
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
      `function ${fn} is missing: ${"applySchema(sql, prefix, { contract: '3.0.0' })"} creates it (needs CREATE ROUTINE); the backend does not call it, an autoscaler polling the backlog does`,
      { exists: false },
    );
  }
  if (!/bigint/i.test(r.returns)) {
    return check(
      'pending_work',
      'warn',
      `function ${fn} returns ${r.returns}, expected BIGINT — re-run applySchema to replace it`,
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

const mib = (n) => `${(n / 1048576).toFixed(n % 1048576 === 0 ? 0 : 1)} MiB`;

function packetCheck(f) {
  const n = Number(f.session.max_allowed_packet);
  if (!Number.isFinite(n) || n <= 0) return check('max_allowed_packet', 'warn', 'could not read max_allowed_packet');
  if (n < SMALL_PACKET) {
    return check(
      'max_allowed_packet',
      'warn',
      `${mib(n)}: inputs, step results and outbox batches larger than this are refused — raise it (16 MiB or more)`,
      { bytes: n },
    );
  }
  return check('max_allowed_packet', 'ok', `${mib(n)}: no single value, step result or outbox batch may exceed it`, {
    bytes: n,
  });
}

function timeZoneCheck(f) {
  const value = {
    system: f.session.system_time_zone || null,
    global: f.global.time_zone || null,
    session: f.session.time_zone || null,
  };
  return check(
    'time_zone',
    'ok',
    `system ${value.system || '?'}, global ${value.global || '?'}, session ${value.session || '?'} — informational: the package stores times as epoch milliseconds`,
    value,
  );
}

function binlogCheck(f) {
  const on = isOn(f.session.log_bin ?? f.global.log_bin);
  const format = (f.session.binlog_format || f.global.binlog_format || '').toUpperCase() || null;
  const value = { logBin: on, format };
  if (!on) return check('binlog', 'ok', `binary log off${format ? ` (binlog_format ${format})` : ''}`, value);
  if (format === 'STATEMENT' && isOn(f.session.sql_log_bin ?? 'ON')) {
    return check(
      'binlog',
      'fail',
      'binlog_format = STATEMENT with READ COMMITTED: InnoDB refuses every write (error 1665) — use ROW (or MIXED)',
      value,
    );
  }
  return check('binlog', 'ok', `binary log on, binlog_format ${format || '?'}`, value);
}

function galeraChecks(f) {
  const wsrep = isOn(f.session.wsrep_on ?? f.global.wsrep_on);
  if (!wsrep) {
    return [
      check('galera', 'ok', `not a Galera node (wsrep_on ${f.global.wsrep_on || f.session.wsrep_on || 'absent'})`, {
        galera: false,
      }),
    ];
  }
  const size = Number(f.status.wsrep_cluster_size);
  const state = f.status.wsrep_local_state_comment || 'unknown';
  const status = f.status.wsrep_cluster_status || 'unknown';
  const ready = isOn(f.status.wsrep_ready);
  const node = { galera: true, clusterSize: Number.isFinite(size) ? size : null, state, clusterStatus: status, ready };
  const out = [];
  if (!ready || !/^primary$/i.test(status)) {
    out.push(
      check(
        'galera',
        'fail',
        `Galera node not ready (wsrep_ready ${f.status.wsrep_ready || '?'}, cluster status ${status}, state ${state}): it refuses queries`,
        node,
      ),
    );
  } else if (!/^synced$/i.test(state)) {
    out.push(check('galera', 'warn', `Galera node in state ${state} (not Synced), cluster of ${size}`, node));
  } else if (!(size >= 3)) {
    const why =
      size === 1 ? 'a single-node cluster has no redundancy' : `with ${size} nodes, losing one leaves no quorum`;
    out.push(
      check('galera', 'warn', `Galera node Synced, cluster Primary, but ${why} (3 or more nodes recommended)`, node),
    );
  } else {
    out.push(check('galera', 'ok', `Galera node Synced, cluster of ${size}, Primary`, node));
  }
  const problems = [];
  const notes = [];
  const format = (f.global.binlog_format || '').toUpperCase();
  if (format !== 'ROW') problems.push(`binlog_format ${format || '?'} (Galera needs ROW)`);
  const autoinc = f.global.innodb_autoinc_lock_mode;
  if (autoinc !== '2') problems.push(`innodb_autoinc_lock_mode ${autoinc || '?'} (Galera needs 2)`);
  const syncWait = Number(f.session.wsrep_sync_wait ?? f.global.wsrep_sync_wait);
  notes.push(
    `wsrep_sync_wait ${Number.isFinite(syncWait) ? syncWait : '?'}${syncWait === 0 ? ' (a read on one node right after a write on another may miss it; the port methods do not rely on that, applications reading back across nodes should set 1)' : ''}`,
  );
  const settings = {
    binlogFormat: format || null,
    innodbAutoincLockMode: autoinc ?? null,
    wsrepSyncWait: Number.isFinite(syncWait) ? syncWait : null,
  };
  out.push(
    problems.length
      ? check('galera.settings', 'fail', `${problems.join('; ')}; ${notes.join('; ')}`, settings)
      : check('galera.settings', 'ok', `binlog_format ROW, innodb_autoinc_lock_mode 2, ${notes.join('; ')}`, settings),
  );
  return out;
}

function replicationCheck(f) {
  const ro = isOn(f.global.read_only);
  const sro = isOn(f.global.super_read_only);
  const txro = isOn(f.session.transaction_read_only ?? f.session.tx_read_only);
  const value = {
    readOnly: ro,
    superReadOnly: sro,
    sessionReadOnly: txro,
    replicaOf: f.replica ? f.replica.source : null,
  };
  const of = f.replica ? ` (a replica of ${f.replica.source || 'another server'})` : '';
  if (ro || sro || txro) {
    const which = [ro && 'read_only', sro && 'super_read_only', txro && 'transaction_read_only (session)']
      .filter(Boolean)
      .join(', ');
    return check(
      'replication',
      'fail',
      `the server is read-only (${which} ON)${of}: every write fails — point the backend at the primary`,
      value,
    );
  }
  if (f.replica) {
    return check(
      'replication',
      'warn',
      `writable, but this server replicates${of.replace(' (', ' — ').replace(')', '')} (IO ${f.replica.io}, SQL ${f.replica.sqlThread}): writes here can conflict with the primary's`,
      value,
    );
  }
  return check('replication', 'ok', `writable (read_only OFF${f.errors.replica ? '' : ', not a replica'})`, value);
}

function poolChecks(f, t) {
  const p = t.pool;
  const src = p.source;
  const out = [];
  const max = Number(f.global.max_connections);
  const inUse = Number(f.status.threads_connected);
  const perUser = Number(f.session.max_user_connections);
  const conn = {
    connectionLimit: p.connectionLimit,
    maxConnections: Number.isFinite(max) ? max : null,
    threadsConnected: Number.isFinite(inUse) ? inUse : null,
    maxUserConnections: Number.isFinite(perUser) ? perUser : null,
  };
  if (!Number.isFinite(max))
    out.push(
      check(
        'pool.connections',
        'warn',
        `connectionLimit ${p.connectionLimit} (${src}); could not read max_connections`,
        conn,
      ),
    );
  else if (p.connectionLimit > max) {
    out.push(
      check(
        'pool.connections',
        'fail',
        `connectionLimit ${p.connectionLimit} (${src}) exceeds max_connections ${max}: under load calls fail with "Too many connections"`,
        conn,
      ),
    );
  } else if (perUser > 0 && p.connectionLimit > perUser) {
    out.push(
      check(
        'pool.connections',
        'fail',
        `connectionLimit ${p.connectionLimit} (${src}) exceeds this account's max_user_connections ${perUser}`,
        conn,
      ),
    );
  } else {
    const free = Number.isFinite(inUse) ? max - inUse : max;
    const fit = Math.floor(free / p.connectionLimit);
    const detail = `connectionLimit ${p.connectionLimit} (${src}) of max_connections ${max}${Number.isFinite(inUse) ? `, ${inUse} connected now` : ''}`;
    out.push(
      fit < 1
        ? check('pool.connections', 'warn', `${detail}: not enough headroom for one more such pool`, conn)
        : check('pool.connections', 'ok', `${detail}: room for ${fit} process(es) with this pool`, conn),
    );
  }

  const wait = Number(f.session.wait_timeout);
  const lockWait = Number(f.session.innodb_lock_wait_timeout);
  const stmt = Number(f.session.max_statement_time || 0) * 1000 || Number(f.session.max_execution_time || 0);
  const timeouts = {
    acquireTimeoutMs: p.acquireTimeoutMs,
    queryTimeoutMs: p.queryTimeoutMs,
    waitTimeoutS: Number.isFinite(wait) ? wait : null,
    lockWaitTimeoutS: Number.isFinite(lockWait) ? lockWait : null,
  };
  const warns = [];
  const notes = [];
  if (Number.isFinite(wait) && wait * 1000 <= POOL_IDLE_TTL_MS) {
    warns.push(
      `wait_timeout ${wait} s closes idle connections before the pool retires them (${POOL_IDLE_TTL_MS / 1000} s): the first call after a pause may fail — raise it above ${POOL_IDLE_TTL_MS / 1000} s`,
    );
  } else if (Number.isFinite(wait)) notes.push(`wait_timeout ${wait} s`);
  if (p.queryTimeoutMs > 0 && Number.isFinite(lockWait) && p.queryTimeoutMs <= lockWait * 1000) {
    warns.push(
      `queryTimeoutMs ${p.queryTimeoutMs} is not above innodb_lock_wait_timeout ${lockWait} s: a lock wait ends in a killed session instead of error 1205`,
    );
  } else
    notes.push(
      `queryTimeoutMs ${p.queryTimeoutMs === 0 ? '0 (no bound: a silent network blocks calls for minutes)' : p.queryTimeoutMs}${Number.isFinite(lockWait) ? ` vs innodb_lock_wait_timeout ${lockWait} s` : ''}`,
    );
  notes.push(`acquireTimeoutMs ${p.acquireTimeoutMs}`);
  if (stmt > 0) notes.push(`the server stops statements after ${stmt} ms (max_statement_time / max_execution_time)`);
  out.push(
    warns.length
      ? check('pool.timeouts', 'warn', `${warns.join('; ')}; ${notes.join(', ')} (${src})`, timeouts)
      : check('pool.timeouts', 'ok', `${notes.join(', ')} (${src})`, timeouts),
  );
  out.push(preparedCheck(f, p));
  return out;
}

/**
 * Prepared statements: each connection keeps up to `statementCacheSize` of them, and the server
 * counts all clients' against one `max_prepared_stmt_count`; past it, prepares fail (error 1461).
 */
function preparedCheck(f, p) {
  const cache = p.statementCacheSize ?? POOL_DEFAULTS.statementCacheSize;
  const max = Number(f.global.max_prepared_stmt_count);
  const inUse = Number(f.status.prepared_stmt_count);
  const need = cache * p.connectionLimit;
  const value = {
    statementCacheSize: cache,
    perPool: need,
    maxPreparedStmtCount: Number.isFinite(max) ? max : null,
    preparedStmtCount: Number.isFinite(inUse) ? inUse : null,
  };
  if (cache === 0)
    return check('pool.prepared', 'ok', `statementCacheSize 0: every statement as text (${p.source})`, value);
  if (!Number.isFinite(max))
    return check(
      'pool.prepared',
      'warn',
      `statementCacheSize ${cache} (${p.source}); could not read max_prepared_stmt_count`,
      value,
    );
  const free = Number.isFinite(inUse) ? max - inUse : max;
  const detail = `statementCacheSize ${cache} × connectionLimit ${p.connectionLimit} = up to ${need} prepared statements per pool (${p.source}), max_prepared_stmt_count ${max}${Number.isFinite(inUse) ? `, ${inUse} in use now` : ''}`;
  return need > free
    ? check(
        'pool.prepared',
        'warn',
        `${detail}: not enough room for one more such pool — prepares would fail with error 1461; lower statementCacheSize (0 = text only) or raise max_prepared_stmt_count`,
        value,
      )
    : check('pool.prepared', 'ok', `${detail}: room for ${Math.floor(free / need)} such pool(s)`, value);
}

/** Every check from the collected facts. `t`: { prefix, contract, pendingWork, pool, native, own, setIsolation }. */
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
  );
  return checks;
}

// ---------------------------------------------------------------------------------------------
// The entry point.

const isSqlLike = (x) => x && typeof x === 'object' && typeof x.query === 'function' && typeof x.tx === 'function';

function intOpt(v, name) {
  if (c.absent(v)) return undefined;
  if (!Number.isSafeInteger(v) || v < 0) throw c.typeError(`checkDatabase: ${name} must be a non-negative integer`);
  return v;
}

function optionsOf(opts, fallback) {
  if (c.absent(opts)) opts = {};
  c.obj(opts, 'opts');
  const contract = c.absent(opts.contract) ? fallback : opts.contract;
  if (!CONTRACTS.includes(contract))
    throw c.typeError(`checkDatabase: opts.contract must be one of ${CONTRACTS.join(', ')}`);
  if (!c.absent(opts.pendingWork) && typeof opts.pendingWork !== 'boolean')
    throw c.typeError('checkDatabase: opts.pendingWork must be a boolean');
  if (!c.absent(opts.setIsolation) && typeof opts.setIsolation !== 'boolean')
    throw c.typeError('checkDatabase: opts.setIsolation must be a boolean');
  const pool = c.absent(opts.pool) ? undefined : opts.pool;
  if (pool !== undefined) c.obj(pool, 'opts.pool');
  return {
    contract,
    pendingWork: opts.pendingWork !== false,
    setIsolation: opts.setIsolation,
    timeoutMs: intOpt(opts.timeoutMs, 'opts.timeoutMs') || DOCTOR_CONNECT_MS,
    pool: pool && {
      connectionLimit: intOpt(pool.connectionLimit, 'opts.pool.connectionLimit'),
      acquireTimeoutMs: intOpt(pool.acquireTimeoutMs, 'opts.pool.acquireTimeoutMs'),
      queryTimeoutMs: intOpt(pool.queryTimeoutMs, 'opts.pool.queryTimeoutMs'),
      statementCacheSize: intOpt(pool.statementCacheSize, 'opts.pool.statementCacheSize'),
      setIsolation: typeof pool.setIsolation === 'boolean' ? pool.setIsolation : undefined,
    },
  };
}

/** Replaces every occurrence of `secret` in the strings of `v` (deeply). */
function scrub(v, secret) {
  if (!secret || secret.length < 4) return v;
  const forms = [...new Set([secret, encodeURIComponent(secret)])];
  const clean = (s) => forms.reduce((acc, x) => acc.split(x).join('***'), s);
  const walk = (x) => {
    if (typeof x === 'string') return clean(x);
    if (Array.isArray(x)) return x.map(walk);
    if (x && typeof x === 'object') return Object.fromEntries(Object.entries(x).map(([k, y]) => [k, walk(y)]));
    return x;
  };
  return walk(v);
}

/** `user@host:port/database` of connection settings (never the password). */
function describeTarget(x) {
  let cfg;
  try {
    cfg = isSqlLike(x) ? null : configOf(x);
  } catch {
    return 'the server';
  }
  if (!cfg) return 'the server';
  const where = cfg.socketPath ? cfg.socketPath : `${cfg.host || 'localhost'}:${cfg.port || 3306}`;
  return `${cfg.user || 'root'}@${where}/${cfg.database || ''}`;
}

/**
 * `checkDatabase(sql, prefix?, opts?)` with `fallback` as the contract an absent `opts.contract`
 * means. `sql`: an Sql (mysqlPool(...) or any object with query/tx), a mysql:// URL, a mysqlPool
 * options object or a mysql2 pool (then the doctor opens, and closes, a small pool of its own).
 */
async function checkDatabaseOf(sql, prefix, opts, fallback) {
  if (prefix === undefined || prefix === null) prefix = '';
  if (typeof prefix !== 'string') throw c.typeError('checkDatabase: prefix must be a string');
  binding.tableNames(prefix); // validates the prefix (TypeError naming the rule)
  const o = optionsOf(opts, fallback);

  const given = sql;
  let own = null;
  let password;
  let pool;
  let native = false;
  if (isSqlLike(sql)) {
    native = isNative(sql);
    const given = o.pool || {};
    pool = {
      connectionLimit: given.connectionLimit ?? POOL_DEFAULTS.connectionLimit,
      acquireTimeoutMs: given.acquireTimeoutMs ?? POOL_DEFAULTS.acquireTimeoutMs,
      queryTimeoutMs: given.queryTimeoutMs ?? POOL_DEFAULTS.queryTimeoutMs,
      statementCacheSize: given.statementCacheSize ?? POOL_DEFAULTS.statementCacheSize,
      setIsolation: given.setIsolation ?? o.setIsolation,
      source: o.pool ? 'opts.pool' : 'package defaults; pass opts.pool to check your own',
    };
  } else {
    if (sql === null || sql === undefined || (typeof sql !== 'string' && typeof sql !== 'object')) {
      throw c.typeError('checkDatabase: sql must be an Sql, a mysql:// URL, mysqlPool options or a mysql2 pool');
    }
    const cfg = configOf(sql); // TypeError for a bad URL / options, before anything connects
    password = cfg.password;
    const setIsolation = o.setIsolation ?? cfg.setIsolation;
    pool = {
      connectionLimit: o.pool?.connectionLimit ?? cfg.connectionLimit ?? POOL_DEFAULTS.connectionLimit,
      acquireTimeoutMs: o.pool?.acquireTimeoutMs ?? cfg.acquireTimeoutMs ?? POOL_DEFAULTS.acquireTimeoutMs,
      queryTimeoutMs: o.pool?.queryTimeoutMs ?? cfg.queryTimeoutMs ?? POOL_DEFAULTS.queryTimeoutMs,
      statementCacheSize: o.pool?.statementCacheSize ?? cfg.statementCacheSize ?? POOL_DEFAULTS.statementCacheSize,
      setIsolation,
      source:
        cfg.connectionLimit !== undefined ||
        cfg.acquireTimeoutMs !== undefined ||
        cfg.queryTimeoutMs !== undefined ||
        cfg.statementCacheSize !== undefined
          ? 'as configured'
          : 'mysqlPool defaults',
    };
    own = mysqlPool(
      { ...cfg, connectionLimit: 2, acquireTimeoutMs: o.timeoutMs, queryTimeoutMs: DOCTOR_QUERY_MS },
      setIsolation === undefined ? undefined : { setIsolation },
    );
    sql = own;
  }
  const target = {
    prefix,
    contract: o.contract,
    pendingWork: o.pendingWork,
    pool,
    native,
    own: own !== null,
    setIsolation: pool.setIsolation,
  };

  let result;
  try {
    let facts;
    try {
      facts = await collect(sql, prefix, o.contract);
    } catch (e) {
      const whom = own ? ` ${describeTarget(given)}` : '';
      const checks = [
        check('connection', 'fail', `cannot connect to or query${whom || ' the server'}: ${errorText(e)}`, {
          code: e && e.code,
          errno: e && e.errno,
        }),
      ];
      result = { verdict: 'fail', checks };
    }
    if (!result) {
      const checks = judge(facts, target);
      result = { verdict: worst(checks.map((x) => x.verdict)), checks };
    }
  } finally {
    if (own) await own.close().catch(() => undefined);
  }
  return scrub(result, password);
}

/** `checkDatabase(sql, prefix?, { contract?, pendingWork?, pool?, setIsolation?, timeoutMs? })`, default contract 2.0.0-alpha.2. */
const checkDatabase = (sql, prefix, opts) => checkDatabaseOf(sql, prefix, opts, ALPHA2);

/** The report as text: one line per check, then a summary. */
function formatReport(result, { header } = {}) {
  const tag = { ok: 'ok  ', warn: 'WARN', fail: 'FAIL' };
  const width = Math.max(12, ...result.checks.map((x) => x.name.length));
  const lines = [];
  if (header) lines.push(header);
  for (const x of result.checks) lines.push(`  ${tag[x.verdict] || x.verdict}  ${x.name.padEnd(width)}  ${x.detail}`);
  const n = (v) => result.checks.filter((x) => x.verdict === v).length;
  lines.push(`verdict: ${result.verdict.toUpperCase()} (${n('ok')} ok, ${n('warn')} warn, ${n('fail')} fail)`);
  return lines.join('\n');
}

module.exports = {
  checkDatabase,
  checkDatabaseOf,
  formatReport,
  describeTarget,
  // for tests
  _internal: { judge, collect, parseGrant, privilegeModel, dbMatches, expectedLayout, compareTable, normType },
};
