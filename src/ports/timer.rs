//! Timer port: one durable deadline per run (docs/contract.md, "Timer").

use crate::error::Result;
use crate::exec::{Exec, Stmt};
use crate::model::codec::{i, s, string};
use crate::model::schema::Schema;
use crate::pool::literal::holes;
use crate::ports::statements;
use std::sync::atomic::{AtomicBool, Ordering};

/// `schedule`: upsert; the latest call wins.
pub async fn schedule<E: Exec>(e: &mut E, t: &Schema, run_id: &str, fire_at: i64) -> Result<()> {
    e.batch(vec![statements::schedule(t, run_id, fire_at)])
        .await?;
    Ok(())
}

/// `dueBatch`: lock due deadlines (skipping ones another worker holds), delete them, return
/// their run ids (the caller makes it one transaction). `idle` as for `queue::claim`.
pub async fn due_batch<E: Exec>(
    e: &mut E,
    t: &Schema,
    now: i64,
    limit: i64,
    idle: &AtomicBool,
) -> Result<Vec<String>> {
    if idle.load(Ordering::Relaxed) {
        // Nothing was due last time: ask without a transaction first (see `queue::claim`).
        let any = e
            .batch_before_tx(vec![Stmt::query(
                format!(
                    "SELECT 1 AS any FROM {} WHERE fire_at <= ? LIMIT 1",
                    t.timer
                ),
                vec![i(now)],
                &["any"],
            )])
            .await?;
        if any[0].rows.is_empty() {
            return Ok(Vec::new());
        }
    }
    let picked = e
        .batch(vec![Stmt::query(
            format!(
                "SELECT run_id FROM {} WHERE fire_at <= ? ORDER BY fire_at LIMIT ? FOR UPDATE SKIP LOCKED",
                t.timer
            ),
            vec![i(now), i(limit)],
            &["run_id"],
        )])
        .await?;
    let ids: Vec<String> = picked[0]
        .rows
        .iter()
        .filter_map(|r| string(&r[0]))
        .collect();
    idle.store(ids.is_empty(), Ordering::Relaxed);
    if !ids.is_empty() {
        e.batch(vec![Stmt::exec(
            format!(
                "DELETE FROM {} WHERE run_id IN {}",
                t.timer,
                holes(ids.len())
            ),
            ids.iter().map(|x| s(x)).collect(),
        )])
        .await?;
    }
    Ok(ids)
}

/// `cancel`: remove a deadline; no-op when there is none.
pub async fn cancel<E: Exec>(e: &mut E, t: &Schema, run_id: &str) -> Result<()> {
    e.batch(vec![Stmt::exec(
        format!("DELETE FROM {} WHERE run_id = ?", t.timer),
        vec![s(run_id)],
    )])
    .await?;
    Ok(())
}

/// `dueCount` (3.0): timers due at `now`, of the flows `names` when given (or without a run
/// row); JS answers 0 for an empty list without asking.
pub async fn due_count<E: Exec>(
    e: &mut E,
    t: &Schema,
    now: i64,
    names: Option<&[String]>,
) -> Result<i64> {
    let mut params = vec![i(now)];
    let mut sql = format!(
        "SELECT COUNT(*) AS n FROM {} tm WHERE fire_at <= ?",
        t.timer
    );
    if let Some(names) = names {
        sql.push_str(&format!(
            " AND NOT EXISTS (SELECT 1 FROM {} r WHERE r.id = tm.run_id AND r.name NOT IN {})",
            t.run,
            holes(names.len())
        ));
        params.extend(names.iter().map(|n| s(n)));
    }
    crate::ports::store::count(e, sql, params).await
}

/// `nextDueAt` (3.0): the earliest deadline strictly after `now`, if any.
pub async fn next_due_at<E: Exec>(e: &mut E, t: &Schema, now: i64) -> Result<Option<i64>> {
    let out = e
        .batch(vec![Stmt::query(
            format!(
                "SELECT MIN(fire_at) AS at FROM {} WHERE fire_at > ?",
                t.timer
            ),
            vec![i(now)],
            &["at"],
        )])
        .await?;
    Ok(out[0]
        .rows
        .first()
        .and_then(|r| crate::model::codec::int(&r[0])))
}
