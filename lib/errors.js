'use strict';
// Server errors from the native side carry "(errno N, sqlstate S)" in their message; this adds
// mysql2-style `errno`, `sqlState` and a symbolic `code` so callers can branch on them.

const CODES = {
  1022: 'ER_DUP_KEY',
  1040: 'ER_CON_COUNT_ERROR',
  1044: 'ER_DBACCESS_DENIED_ERROR',
  1045: 'ER_ACCESS_DENIED_ERROR',
  1046: 'ER_NO_DB_ERROR',
  1049: 'ER_BAD_DB_ERROR',
  1050: 'ER_TABLE_EXISTS_ERROR',
  1051: 'ER_BAD_TABLE_ERROR',
  1054: 'ER_BAD_FIELD_ERROR',
  1062: 'ER_DUP_ENTRY',
  1064: 'ER_PARSE_ERROR',
  1146: 'ER_NO_SUCH_TABLE',
  1153: 'ER_NET_PACKET_TOO_LARGE',
  1205: 'ER_LOCK_WAIT_TIMEOUT',
  1213: 'ER_LOCK_DEADLOCK',
  1264: 'ER_WARN_DATA_OUT_OF_RANGE',
  1292: 'ER_TRUNCATED_WRONG_VALUE',
  1317: 'ER_QUERY_INTERRUPTED',
  1366: 'ER_TRUNCATED_WRONG_VALUE_FOR_FIELD',
  1406: 'ER_DATA_TOO_LONG',
  1451: 'ER_ROW_IS_REFERENCED_2',
  1452: 'ER_NO_REFERENCED_ROW_2',
  3024: 'ER_QUERY_TIMEOUT',
};

const SERVER = /\(errno (\d+), sqlstate ([0-9A-Z]{5})\)$/;

/** Adds errno/sqlState/code to a native server error (in place); returns the error. */
function decorate(e) {
  if (e && typeof e.message === 'string' && e.errno === undefined) {
    const m = SERVER.exec(e.message);
    if (m) {
      const errno = Number(m[1]);
      try {
        e.errno = errno;
        e.sqlState = m[2];
        e.code = CODES[errno] || `ER_${errno}`;
      } catch {
        // a frozen error object: leave it as it is
      }
    }
  }
  return e;
}

module.exports = { decorate };
