// The floor's connections: one mysql2 pool (10 connections, as the seed's), multi-statement
// packets allowed so that a transaction's statements can share a round trip, every session at
// READ COMMITTED once when it opens (not per transaction), and the few helpers the ports share.
import mysql from 'mysql2/promise';

const TERMINAL = "('done', 'failed', 'canceled')";

/** The table names of `prefix` the floor touches (no cron), back-quoted. */
export const floorTables = (prefix) =>
  Object.fromEntries(['run', 'step', 'job', 'timer', 'signal'].map((t) => [t, `\`${prefix}${t}\``]));

export { TERMINAL };

/** A pool on `url`; `close()` ends it. */
export function openFloorPool(url) {
  const pool = mysql.createPool({ uri: url, connectionLimit: 10, multipleStatements: true });
  // Under REPEATABLE READ the locking reads of claim would take gap locks that block enqueues.
  pool.pool.on('connection', (conn) => conn.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED'));
  return pool;
}

/** JSON text of a value, or SQL NULL for `undefined` (§1.7). */
export const toJson = (v) => (v === undefined ? null : JSON.stringify(v));
/** The value of a JSON column; NULL reads back as `undefined`. */
export const fromJson = (text) => (text === null || text === undefined ? undefined : JSON.parse(text));

/**
 * One transaction on one connection: `first` (a statement) is sent with `START TRANSACTION` in one
 * packet; `then(result)` returns the statements to send with `COMMIT` in a second packet (none: a
 * bare `COMMIT`) and the call's answer. Rolled back on any error.
 */
export async function tx(pool, first, params, then) {
  const conn = await pool.getConnection();
  try {
    const [[, result]] = await conn.query(`START TRANSACTION; ${first}`, params);
    const { sql = [], params: more = [], value } = await then(result, conn);
    await conn.query([...sql, 'COMMIT'].join('; '), more);
    return value;
  } catch (e) {
    await conn.query('ROLLBACK').catch(() => {});
    throw e;
  } finally {
    conn.release();
  }
}

/**
 * The outbox of a write that took effect (docs/contract.md §7), as statements for the same
 * transaction, in the contract's order.
 */
export function outboxStatements(t, fx = {}) {
  const sql = [];
  const params = [];
  const now = Date.now();
  const enqueue = (runId, opts = {}) => {
    sql.push(
      `INSERT INTO ${t.job} (run_id, run_at, priority, version) VALUES (?, ?, ?, 1) ` +
        'ON DUPLICATE KEY UPDATE run_at = VALUES(run_at), priority = VALUES(priority), version = version + 1',
    );
    params.push(runId, opts.runAt ? new Date(opts.runAt).getTime() : 0, opts.priority ?? 0);
  };
  for (const { runId, spec, enqueue: opts } of fx.spawn ?? []) {
    sql.push(
      `INSERT IGNORE INTO ${t.run} (id, name, version, status, input, idempotency_key, tags, parent_run_id, ` +
        "parent_cursor_key, depth, created_at) VALUES (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?)",
    );
    params.push(
      runId,
      spec.name,
      spec.version,
      toJson(spec.input),
      spec.idempotencyKey ?? null,
      toJson(spec.tags),
      spec.parentRunId ?? null,
      spec.parentCursorKey ?? null,
      spec.depth ?? 0,
      spec.createdAt ? new Date(spec.createdAt).getTime() : now,
    );
    enqueue(runId, opts);
  }
  for (const e of fx.enqueue ?? []) enqueue(e.runId, e.opts);
  for (const { runId, fireAt } of fx.timers ?? []) {
    sql.push(
      `INSERT INTO ${t.timer} (run_id, fire_at) VALUES (?, ?) ON DUPLICATE KEY UPDATE fire_at = VALUES(fire_at)`,
    );
    params.push(runId, new Date(fireAt).getTime());
  }
  if (fx.cancelTimers?.length) {
    sql.push(`DELETE FROM ${t.timer} WHERE run_id IN (?)`);
    params.push(fx.cancelTimers);
  }
  if (fx.consumeSignals?.length) {
    sql.push(`DELETE FROM ${t.signal} WHERE id IN (?)`);
    params.push(fx.consumeSignals);
  }
  if (fx.joinTarget) {
    sql.push(`UPDATE ${t.run} SET join_remaining = ? WHERE id = ?`);
    params.push(fx.joinTarget.count, fx.joinTarget.runId);
  }
  return { sql, params };
}

/** True when the outbox holds nothing to write. */
export const emptyOutbox = (fx) =>
  !fx ||
  !(
    fx.spawn?.length ||
    fx.enqueue?.length ||
    fx.timers?.length ||
    fx.cancelTimers?.length ||
    fx.consumeSignals?.length ||
    fx.joinTarget
  );
