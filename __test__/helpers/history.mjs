// A database with a long finished history and a little live work, filled straight in SQL (no
// port call), for the scale benchmark (bench/scenarios/scale.mjs) and the plan tests
// (__test__/sql/history-plans.test.mjs).
//
//   await fillHistory(conn, tables(prefix), { runs: 1_000_000, now });
//
// Run i (1-based) gets its shape from k = i % 100, so every hundred runs hold (the mix of the
// issue this was written for: 93 % finished, 7 % live):
//
//   k 0–79, 97, 99 done; 80–89 failed; 94 canceled                ← history (93 %)
//   k 90–92 pending, with a due job (3 %)
//   k 93, 98 running, with a leased job (2 %)
//   k 95 sleeping, with a timer (1 %: every other one due at `now`)
//   k 96 awaiting_signal (1 %)
//
// With `families`, k 97 is awaiting_child instead, the parent of run k 98, and run k 99 is a
// child of run k 0 (so 2 % of the runs have a parent, 1 % wait for a child).
//
// One step each. Tags: k % 10 = 0 → ["cron:nightly","team:a"] (pending runs carry it too),
// k % 10 = 1 below 90 → ["cron:hourly"] (finished runs only), the others ["team:b"], and every
// 7th run none. Names `flow-<i % 5>`, ids a UUID-shaped digest of i (in random order with
// respect to `seq`, as v4 ids are), `created_at` one second apart, the last one at `now`.

const BATCH = 20_000;

/** The id of run `i` (an SQL expression over the integer expression `i`). */
const idOf = (i) => {
  const h = `SHA2(CONCAT('run', ${i}), 256)`;
  return `CONCAT(SUBSTR(${h},1,8),'-',SUBSTR(${h},9,4),'-4',SUBSTR(${h},14,3),'-a',SUBSTR(${h},18,3),'-',SUBSTR(${h},21,12))`;
};

/** The status of run `i` by `k = i % 100` (see the header). */
const status = (families) => `CASE
  WHEN k < 80 THEN 'done' WHEN k < 90 THEN 'failed' WHEN k < 93 THEN 'pending'
  WHEN k IN (93, 98) THEN 'running' WHEN k = 94 THEN 'canceled' WHEN k = 95 THEN 'sleeping'
  WHEN k = 96 THEN 'awaiting_signal' WHEN k = 97 THEN '${families ? 'awaiting_child' : 'done'}'
  ELSE 'done' END`;

const TAGS = `CASE WHEN i % 7 = 0 THEN NULL
  WHEN k % 10 = 0 THEN '["cron:nightly","team:a"]' WHEN k % 10 = 1 AND k < 90 THEN '["cron:hourly"]'
  ELSE '["team:b"]' END`;

/**
 * Fills the run, step, job and timer tables of `t` (back-quoted names, as `tables(prefix)` gives
 * them) with `runs` runs as the header says, numbered from `first` (a later fill into the same
 * tables starts past the earlier ones' numbers); `conn` is a mysql2/promise connection (one
 * session: the fill uses a temporary table). `onBatch(done)` is told the runs written so far.
 * Steps, jobs and timers are added for the new runs only.
 */
export async function fillHistory(conn, t, { runs, now, first = 1, families = false, onBatch } = {}) {
  const T = Number(now);
  const last = first + runs - 1;
  const [[{ top_seq: topSeq }]] = await conn.query(`SELECT COALESCE(MAX(seq), 0) AS top_seq FROM ${t.run}`);
  const mine = `seq > ${Number(topSeq)}`;
  await conn.query('CREATE TEMPORARY TABLE IF NOT EXISTS ifw_fill_n (n INT PRIMARY KEY) ENGINE=InnoDB');
  await conn.query('DELETE FROM ifw_fill_n');
  const numbers = Array.from({ length: BATCH }, (_, n) => `(${n})`).join(',');
  await conn.query(`INSERT INTO ifw_fill_n VALUES ${numbers}`);
  for (let base = 0; base < runs; base += BATCH) {
    const top = Math.min(runs, base + BATCH);
    const parentOf = families
      ? `CASE WHEN k = 98 THEN ${idOf('i - 1')} WHEN k = 99 THEN ${idOf('i - 99')} END`
      : 'NULL';
    const child = families ? 'k IN (98, 99)' : 'FALSE';
    await conn.query(
      `INSERT INTO ${t.run} (id, name, version, status, input, output, error, attempts, tags,
         parent_run_id, parent_cursor_key, depth, join_remaining, created_at)
       SELECT ${idOf('i')}, CONCAT('flow-', i % 5), 1, ${status(families)}, CONCAT('{"n":', i, '}'),
         CASE WHEN k < 80 OR k = 99 OR (k = 97 AND NOT ${families}) THEN '{"ok":true}' END,
         CASE WHEN k >= 80 AND k < 90 THEN '{"code":"E","message":"boom"}' END,
         CASE WHEN k < 90 OR k IN (93, 98) THEN 1 ELSE 0 END, ${TAGS},
         ${parentOf}, CASE WHEN ${child} THEN 'invoke:0' END, CASE WHEN ${child} THEN 1 ELSE 0 END,
         CASE WHEN k = 97 AND ${families} THEN 1 ELSE 0 END, ${T} - (${last} - i) * 1000
       FROM (SELECT n + ${first + base} AS i, (n + ${first + base}) % 100 AS k FROM ifw_fill_n WHERE n < ${top - base}) x
       ORDER BY i`,
    );
    onBatch?.(top);
  }
  await conn.query(
    `INSERT INTO ${t.step} (run_id, cursor_key, status, result, attempts) SELECT id, 's0', 'ok', '1', 1 FROM ${t.run} WHERE ${mine}`,
  );
  await conn.query(
    `INSERT INTO ${t.job} (run_id, run_at, priority, version, lease_token, lease_expires)
     SELECT id, ${T} - 1000, 0, 1,
       CASE WHEN status = 'running' THEN CONCAT('lease:', id) END,
       CASE WHEN status = 'running' THEN ${T} + 3600000 END
     FROM ${t.run} WHERE ${mine} AND status IN ('pending', 'running')`,
  );
  await conn.query(
    `INSERT INTO ${t.timer} (run_id, fire_at)
     SELECT id, CASE WHEN seq % 2 = 0 THEN ${T} - 500 ELSE ${T} + 3600000 END FROM ${t.run} WHERE ${mine} AND status = 'sleeping'`,
  );
  await conn.query('DROP TEMPORARY TABLE ifw_fill_n');
  for (const table of [t.run, t.step, t.job, t.timer]) await conn.query(`ANALYZE TABLE ${table}`);
}
