'use strict';
// The pool checks: connections against the server's limits, timeouts against the server's, and
// prepared statements against max_prepared_stmt_count.
const { check } = require('../verdict');

/** mysqlPool's defaults (src/pool/config.rs), reported when a pool's own settings are not known. */
const POOL_DEFAULTS = { connectionLimit: 10, acquireTimeoutMs: 10_000, queryTimeoutMs: 60_000, statementCacheSize: 16 };
/** Idle connections are dropped by the pool after this long (src/pool/config.rs), ms. */
const POOL_IDLE_TTL_MS = 60_000;

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

module.exports = { POOL_DEFAULTS, poolChecks };
