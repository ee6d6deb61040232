'use strict';
// mysqlClassify(): a `StepPolicy.classify` preset (the core calls it as `classify(error,
// attempt)` and fails the step at once on 'permanent'). A MySQL/MariaDB error that fails the same
// way on every retry is permanent; everything else — and anything not recognised — is transient,
// so a wrong guess costs retries, never a run that could have succeeded. docs/classify.md has the
// table and the reasons.

/**
 * Server error numbers that a retry cannot cure: the statement, the schema or the privileges are
 * wrong, or the values do not fit. Duplicate keys (1062), foreign keys (1451/1452), deadlocks,
 * lock waits, read-only servers and unsynced Galera nodes are absent on purpose: races and
 * failovers that a later attempt may get past.
 */
const PERMANENT = new Map([
  [1064, 'syntax'], // ER_PARSE_ERROR
  [1149, 'syntax'], // ER_SYNTAX_ERROR
  [1049, 'unknown object'], // ER_BAD_DB_ERROR
  [1051, 'unknown object'], // ER_BAD_TABLE_ERROR
  [1054, 'unknown object'], // ER_BAD_FIELD_ERROR
  [1146, 'unknown object'], // ER_NO_SUCH_TABLE
  [1305, 'unknown object'], // ER_SP_DOES_NOT_EXIST
  [1044, 'privilege'], // ER_DBACCESS_DENIED_ERROR
  [1045, 'privilege'], // ER_ACCESS_DENIED_ERROR
  [1142, 'privilege'], // ER_TABLEACCESS_DENIED_ERROR
  [1143, 'privilege'], // ER_COLUMNACCESS_DENIED_ERROR
  [1227, 'privilege'], // ER_SPECIFIC_ACCESS_DENIED_ERROR
  [1370, 'privilege'], // ER_PROCACCESS_DENIED_ERROR
  [1406, 'data too long'], // ER_DATA_TOO_LONG
  [1264, 'incorrect value'], // ER_WARN_DATA_OUT_OF_RANGE
  [1265, 'incorrect value'], // WARN_DATA_TRUNCATED
  [1292, 'incorrect value'], // ER_TRUNCATED_WRONG_VALUE
  [1365, 'incorrect value'], // ER_DIVISION_BY_ZERO
  [1366, 'incorrect value'], // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD
  [1367, 'incorrect value'], // ER_ILLEGAL_VALUE_FOR_TYPE
  [1411, 'incorrect value'], // ER_WRONG_VALUE_FOR_TYPE
  [3140, 'incorrect value'], // ER_INVALID_JSON_TEXT (MySQL)
  [1048, 'not null'], // ER_BAD_NULL_ERROR
  [1364, 'not null'], // ER_NO_DEFAULT_FOR_FIELD
  [4025, 'check'], // ER_CONSTRAINT_FAILED (MariaDB)
  [3819, 'check'], // ER_CHECK_CONSTRAINT_VIOLATED (MySQL)
]);

/**
 * Codes of connection failures that are the configuration's, not the network's: the same
 * connection fails the same way until someone changes the pool or the server (TLS required
 * but not offered — this package's and mysql2's code alike — and, from this package, an
 * authentication plugin the driver lacks).
 */
const PERMANENT_CODES = new Set([
  'HANDSHAKE_NO_SSL_SUPPORT',
  'ER_NOT_SUPPORTED_AUTH_MODE',
  'MYSQL_CLEAR_PASSWORD_NOT_ENABLED',
]);

/** How deep `.cause` is followed: wrappers nest a few levels; a cycle must not loop. */
const MAX_DEPTH = 8;

/** The server error number an error object carries (ours and mysql2's both set `errno`). */
function serverErrno(e) {
  const n = e.errno;
  // mysql2 also puts a Node system errno (negative, e.g. -104 for ECONNRESET) there.
  return Number.isInteger(n) && n >= 1000 ? n : undefined;
}

/** 'permanent' or 'transient' for one link of the chain, or undefined when it says nothing. */
function verdictOf(e) {
  const errno = serverErrno(e);
  if (errno !== undefined) return PERMANENT.has(errno) ? 'permanent' : 'transient';
  // This package's own argument checks (lib/check.js, src/error/mod.rs) and pool options the
  // server cannot work with: the same call fails the same way every time.
  if (e.kind === 'argument' || PERMANENT_CODES.has(e.code)) return 'permanent';
  // A lost, refused or timed-out connection (ours: kind 'connection'; mysql2: fatal).
  if (e.kind === 'connection' || e.fatal === true) return 'transient';
  return undefined;
}

/**
 * `'permanent'` when `cause` (or an error on its `.cause` chain) is a MySQL/MariaDB error that
 * fails identically on every retry, else `'transient'`. Never throws.
 */
function mysqlClassify(cause) {
  try {
    let e = cause;
    for (let depth = 0; e !== null && typeof e === 'object' && depth < MAX_DEPTH; depth++) {
      const verdict = verdictOf(e);
      if (verdict !== undefined) return verdict;
      e = e.cause;
    }
  } catch {
    // A getter that throws (a Proxy, an odd wrapper) tells nothing: retrying is the safe side.
  }
  return 'transient';
}

module.exports = { mysqlClassify, PERMANENT, PERMANENT_CODES };
