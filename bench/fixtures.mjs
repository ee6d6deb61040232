// Fixture helpers: the six table names of a prefix, and rows inserted directly (untimed set-up).

export const tableNames = (prefix) =>
  Object.fromEntries(['run', 'step', 'job', 'timer', 'signal', 'cron'].map((t) => [t, `\`${prefix}${t}\``]));

/**
 * Fixture rows, inserted directly. ANALYZE afterwards: right after a bulk insert the optimizer's
 * statistics can be stale enough to pick a full scan + filesort for the claim / dueBatch queries,
 * which locks every row and starves concurrent SKIP LOCKED callers - a set-up artefact, not
 * something either implementation controls.
 */
export async function bulkInsert(conn, table, columns, rows, chunk = 1000) {
  for (let i = 0; i < rows.length; i += chunk) {
    await conn.query(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ?`, [rows.slice(i, i + chunk)]);
  }
  await conn.query(`ANALYZE TABLE ${table}`);
}

/** `ids.length` run rows of flow `name` in `status`, input `{ i }`, as the drains and the timer drain set them up. */
export function insertRuns(conn, t, ids, name, status, now) {
  return bulkInsert(
    conn,
    t.run,
    ['id', 'name', 'version', 'status', 'input', 'tags', 'created_at'],
    ids.map((id, i) => [id, name, 1, status, JSON.stringify({ i }), '["bench"]', now]),
  );
}
