'use strict';
// checkDatabase(sql, prefix?, opts?): a read-only health check of one database for this package,
// the library side of `npx iterativeflow-mysql-native doctor <url>` (lib/cli/). It reports, one check
// per line with a verdict (ok / warn / fail):
//   the connection; server kind and version; SKIP LOCKED (probed with a locking read that matches
//   no row, inside a transaction that is rolled back); the isolation the package's sessions get
//   and the server default; privileges (SHOW GRANTS, information_schema as a fallback — never by
//   trying writes); the six tables column by column and key by key against the 2.0.0-alpha.2 and
//   3.0.0 layouts (from information_schema.TABLES / COLUMNS / STATISTICS; the expected layout is
//   parsed from ddl(), so it cannot drift from what applySchema creates) and `pending_work`;
//   max_allowed_packet; time zones; binlog; the cluster (Galera); read-only / replica role; pool
//   limits. One cause gives one failing line, saying what to run (fix.js).
// Nothing is written. The result is `{ verdict, checks: [{ name, verdict, detail, value? }] }`;
// an unreachable server gives one failing `connection` check, never a rejection.
//
// The parts: facts.js collects, ddl.js and grants.js parse, layout.js diffs tables, checks/ holds
// one file per family of checks, judge.js runs them in order, verdict.js combines, fix.js words
// the commands and GRANTs, report.js prints. This file is the entry: argument checks, the
// doctor's own pool, how its commands name the server, the password scrub.
const binding = require('../binding');
const c = require('../check');
const { CONTRACTS } = require('../shapes');
const { mysqlPool, configOf, isNative } = require('../sql');
const { POOL_DEFAULTS } = require('./checks/pool');
const { expectedLayout, normType } = require('./ddl');
const { grantStatement } = require('./fix');
const { collect, errorText } = require('./facts');
const { dbMatches, parseGrant, privilegeModel } = require('./grants');
const { judge } = require('./judge');
const { compareTable } = require('./layout');
const { ALPHA2 } = require('./names');
const { formatReport } = require('./report');
const { check, worst } = require('./verdict');

/** The doctor's own pool (when it is handed a URL or options): bounds on connecting / a query. */
const DOCTOR_CONNECT_MS = 5_000;
const DOCTOR_QUERY_MS = 15_000;

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
  if (!c.absent(opts.commandTarget) && typeof opts.commandTarget !== 'string')
    throw c.typeError('checkDatabase: opts.commandTarget must be a string');
  return {
    commandTarget: c.absent(opts.commandTarget) ? undefined : opts.commandTarget,
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

/** `s` as one shell word (single-quoted unless it is plain). */
const shellWord = (s) => (/^[\w@%+=:,./-]*$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`);

/**
 * How the commands a report suggests name the server: the caller's choice (the CLI: nothing when
 * the URL came from MYSQL_URL, which the command reads too), else the URL of the settings with
 * `PASSWORD` standing for a password, else (an Sql handed in) "$MYSQL_URL".
 */
function commandTargetOf(cfg, chosen) {
  if (chosen !== undefined) return chosen;
  if (!cfg || cfg.hosts || cfg.socketPath) return '"$MYSQL_URL"';
  const auth = `${encodeURIComponent(cfg.user || 'root')}${cfg.password ? ':PASSWORD' : ''}`;
  const host = cfg.host && cfg.host.includes(':') ? `[${cfg.host}]` : cfg.host || 'localhost';
  return shellWord(`mysql://${auth}@${host}:${cfg.port || 3306}/${encodeURIComponent(cfg.database || '')}`);
}

/** What to run for the connection errors a statement fixes: an unknown database, a database not granted. */
function connectionFix(e, cfg) {
  const db = cfg && cfg.database;
  if (!db || !e) return '';
  const quoted = `\`${db.replace(/`/g, '``')}\``;
  if (e.errno === 1049)
    return ` — to create it, as an administrator, run: CREATE DATABASE ${quoted} CHARACTER SET utf8mb4;`;
  if (e.errno === 1044 && cfg.user) {
    return ` — as an account that may grant (e.g. root), run: ${grantStatement(['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'CREATE', 'ALTER'], db, `${cfg.user}@%`)} (with the account's own host part in place of %)`;
  }
  return '';
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
  const where = cfg.socketPath
    ? cfg.socketPath
    : cfg.hosts
      ? cfg.hosts.map((h) => `${h.host}:${h.port || 3306}`).join(',')
      : `${cfg.host || 'localhost'}:${cfg.port || 3306}`;
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
  let cfg;
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
    cfg = configOf(sql); // TypeError for a bad URL / options, before anything connects
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
    commandTarget: commandTargetOf(cfg, o.commandTarget),
  };

  let result;
  try {
    let facts;
    try {
      facts = await collect(sql, prefix, o.contract);
      // Each host's state as the doctor's own calls left it (native pools only).
      if (isNative(sql)) target.hosts = sql.stats().hosts;
    } catch (e) {
      const whom = own ? ` ${describeTarget(given)}` : '';
      const checks = [
        check(
          'connection',
          'fail',
          `cannot connect to or query${whom || ' the server'}: ${errorText(e)}${connectionFix(e, cfg)}`,
          {
            code: e && e.code,
            errno: e && e.errno,
          },
        ),
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

module.exports = {
  checkDatabase,
  checkDatabaseOf,
  formatReport,
  describeTarget,
  // for tests
  _internal: { judge, collect, parseGrant, privilegeModel, dbMatches, expectedLayout, compareTable, normType },
};
