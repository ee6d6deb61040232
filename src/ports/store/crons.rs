//! Crons: definitions, due crons, and the compare-and-set that advances a schedule.

use super::count;

use crate::error::Result;
use crate::exec::{Exec, Stmt};
use crate::model::codec::{i, opt_s, s, CRON};
use crate::model::schema::Schema;
use crate::pool::literal::holes;
use crate::ports::args::CronArg;

/// `upsertCron`: insert or overwrite the definition, keeping the schedule state — under 3.0
/// only while the schedule is unchanged (a new schedule takes the new `nextRunAt`; the
/// assignments run left to right, so the comparison comes before `schedule` is overwritten).
pub async fn upsert_cron<E: Exec>(e: &mut E, t: &Schema, c: &CronArg) -> Result<()> {
    let next = if t.contract.is_v3() {
        "next_run_at = IF(schedule <> VALUES(schedule), VALUES(next_run_at), next_run_at), "
    } else {
        ""
    };
    let sql = format!(
        "INSERT INTO {} (name, schedule, flow_name, flow_version, input, overlap, next_run_at) VALUES (?, ?, ?, ?, ?, ?, ?) \
         ON DUPLICATE KEY UPDATE {next}schedule = VALUES(schedule), flow_name = VALUES(flow_name), flow_version = VALUES(flow_version), \
         input = VALUES(input), overlap = VALUES(overlap)",
        t.cron
    );
    let params = vec![
        s(&c.name),
        s(&c.schedule),
        s(&c.flow_name),
        i(c.flow_version),
        opt_s(c.input.as_deref()),
        s(&c.overlap),
        i(c.next_run_at),
    ];
    e.batch(vec![Stmt::exec(sql, params)]).await?;
    Ok(())
}

/// `dueCrons`: due crons, earliest first.
pub async fn due_crons<E: Exec>(e: &mut E, t: &Schema, now: i64, limit: i64) -> Result<String> {
    let out = e
        .batch(vec![Stmt::query(
            format!(
                "SELECT {} FROM {} WHERE next_run_at <= ? ORDER BY next_run_at LIMIT ?",
                CRON.select(),
                t.cron
            ),
            vec![i(now), i(limit)],
            CRON.names(),
        )])
        .await?;
    CRON.write_all(&out[0].rows, t.contract)
}

/// `listCrons` (3.0): every cron, by name.
pub async fn list_crons<E: Exec>(e: &mut E, t: &Schema) -> Result<String> {
    let out = e
        .batch(vec![Stmt::query(
            format!("SELECT {} FROM {} ORDER BY name", CRON.select(), t.cron),
            vec![],
            CRON.names(),
        )])
        .await?;
    CRON.write_all(&out[0].rows, t.contract)
}

/// `removeCron` (3.0): whether a cron of that name was removed.
pub async fn remove_cron<E: Exec>(e: &mut E, t: &Schema, name: &str) -> Result<bool> {
    let out = e
        .batch(vec![Stmt::exec(
            format!("DELETE FROM {} WHERE name = ?", t.cron),
            vec![s(name)],
        )])
        .await?;
    Ok(out[0].affected > 0)
}

/// `dueCronCount` (3.0): crons due at `now`, of the flows `names` when given (JS answers 0 for
/// an empty list without asking).
pub async fn due_cron_count<E: Exec>(
    e: &mut E,
    t: &Schema,
    now: i64,
    names: Option<&[String]>,
) -> Result<i64> {
    let mut params = vec![i(now)];
    let mut sql = format!(
        "SELECT COUNT(*) AS n FROM {} WHERE next_run_at <= ?",
        t.cron
    );
    if let Some(names) = names {
        sql.push_str(&format!(" AND flow_name IN {}", holes(names.len())));
        params.extend(names.iter().map(|n| s(n)));
    }
    count(e, sql, params).await
}

/// `advanceCron`: compare-and-set on `next_run_at` (found-rows semantics).
pub async fn advance_cron<E: Exec>(
    e: &mut E,
    t: &Schema,
    name: &str,
    expected: i64,
    next: i64,
    last: i64,
) -> Result<bool> {
    let out = e
        .batch(vec![Stmt::exec(
            format!(
                "UPDATE {} SET next_run_at = ?, last_run_at = ? WHERE name = ? AND next_run_at = ?",
                t.cron
            ),
            vec![i(next), i(last), s(name), i(expected)],
        )])
        .await?;
    Ok(out[0].affected == 1)
}
