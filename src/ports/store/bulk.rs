//! Retention and the 3.0 bulk operations by filter: several tables in one unit.

use super::{first_row, retry_set, tag_params, TAG_FILTER, TERMINAL};

use crate::error::Result;
use crate::exec::{Exec, Stmt};
use crate::model::codec::{i, int, s, string};
use crate::model::schema::Schema;
use crate::pool::literal::holes;
use crate::ports::args::RunSetArg;
use crate::ports::statements::{self};
use mysql_async::Value;

/// `deleteRunsOlderThan`: pick terminal runs older than `before`, delete them and their rows
/// (the caller makes it one transaction).
pub async fn delete_runs_older_than<E: Exec>(
    e: &mut E,
    t: &Schema,
    before: i64,
    limit: i64,
) -> Result<i64> {
    let picked = e
        .batch(vec![Stmt::query(
            format!(
                "SELECT id FROM {} WHERE status IN {TERMINAL} AND created_at < ? ORDER BY seq LIMIT ?",
                t.run
            ),
            vec![i(before), i(limit)],
            &["id"],
        )])
        .await?;
    let ids: Vec<Value> = picked[0].rows.iter().map(|r| r[0].clone()).collect();
    if !ids.is_empty() {
        delete_ids(e, t, &ids).await?;
    }
    Ok(ids.len() as i64)
}

/// The one number a `SELECT COUNT(*) AS n …` answers.
pub async fn count<E: Exec>(e: &mut E, sql: String, params: Vec<Value>) -> Result<i64> {
    let out = e.batch(vec![Stmt::query(sql, params, &["n"])]).await?;
    Ok(first_row(&out, 0).and_then(|r| int(&r[0])).unwrap_or(0))
}

/// The WHERE clause of a 3.0 bulk operation's filter (see `RunSetArg`).
pub(super) fn run_set_where(f: &RunSetArg) -> (String, Vec<Value>) {
    let mut wh = vec![format!("status IN {}", holes(f.statuses.len()))];
    let mut params: Vec<Value> = f.statuses.iter().map(|x| s(x)).collect();
    if let Some(b) = f.before {
        wh.push("created_at < ?".into());
        params.push(i(b));
    }
    if let Some(n) = &f.name {
        wh.push("name = ?".into());
        params.push(s(n));
    }
    if let Some(v) = f.version {
        wh.push("version = ?".into());
        params.push(i(v));
    }
    if let Some(tag) = &f.tag {
        wh.push(TAG_FILTER.into());
        params.extend(tag_params(tag));
    }
    (wh.join(" AND "), params)
}

/// The ids of up to `limit` runs matching `f` (`suffix`: ordering or locking).
pub(super) async fn pick_runs<E: Exec>(
    e: &mut E,
    t: &Schema,
    f: &RunSetArg,
    limit: i64,
    suffix: &str,
) -> Result<Vec<Value>> {
    let (wh, mut params) = run_set_where(f);
    params.push(i(limit));
    let out = e
        .batch(vec![Stmt::query(
            format!("SELECT id FROM {} WHERE {wh}{suffix}", t.run),
            params,
            &["id"],
        )])
        .await?;
    Ok(out[0].rows.iter().map(|r| r[0].clone()).collect())
}

/// Deletes the runs `ids` and every row that belongs to them, their timeline events too when
/// the opt-in event table exists. Asked in the same unit, every time: a database without the
/// table gets today's deletes (one cheap `information_schema` read more), and one whose table
/// was created after the backend started is never left with events of deleted runs.
pub(super) async fn delete_ids<E: Exec>(e: &mut E, t: &Schema, ids: &[Value]) -> Result<()> {
    let h = holes(ids.len());
    let delete = |table: &str, key: &str| {
        Stmt::exec(
            format!("DELETE FROM {table} WHERE {key} IN {h}"),
            ids.to_vec(),
        )
    };
    let mut deletes = vec![
        delete(&t.step, "run_id"),
        delete(&t.signal, "run_id"),
        delete(&t.job, "run_id"),
        delete(&t.timer, "run_id"),
    ];
    if has_event_table(e, t).await? {
        deletes.push(delete(&t.event, "run_id"));
    }
    deletes.push(delete(&t.run, "id"));
    e.batch(deletes).await?;
    Ok(())
}

/// Whether this database has the prefix's opt-in event table.
async fn has_event_table<E: Exec>(e: &mut E, t: &Schema) -> Result<bool> {
    let n = count(
        e,
        "SELECT COUNT(*) AS n FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?"
            .into(),
        vec![s(&t.event_name)],
    )
    .await?;
    Ok(n > 0)
}

/// `deleteRuns` (3.0): up to `limit` terminal runs matching the filter, oldest first when it
/// has `before`, deleted with all their rows (the caller makes it one transaction).
pub async fn delete_runs<E: Exec>(e: &mut E, t: &Schema, f: &RunSetArg, limit: i64) -> Result<i64> {
    let order = if f.before.is_some() {
        " ORDER BY seq"
    } else {
        ""
    };
    let ids = pick_runs(e, t, f, limit, &format!("{order} LIMIT ?")).await?;
    if !ids.is_empty() {
        delete_ids(e, t, &ids).await?;
    }
    Ok(ids.len() as i64)
}

/// `cancelRuns` (3.0): up to `limit` live runs matching the filter, locked, their timers
/// removed, set `canceled` (no error, no cascade; their jobs stay and are acked when claimed).
pub async fn cancel_runs<E: Exec>(e: &mut E, t: &Schema, f: &RunSetArg, limit: i64) -> Result<i64> {
    let ids = pick_runs(e, t, f, limit, " LIMIT ? FOR UPDATE").await?;
    if ids.is_empty() {
        return Ok(0);
    }
    let h = holes(ids.len());
    e.batch(vec![
        Stmt::exec(
            format!("DELETE FROM {} WHERE run_id IN {h}", t.timer),
            ids.clone(),
        ),
        Stmt::exec(
            format!("UPDATE {} SET status = 'canceled' WHERE id IN {h}", t.run),
            ids.clone(),
        ),
    ])
    .await?;
    Ok(ids.len() as i64)
}

/// `retryRuns` (3.0): up to `limit` failed runs matching the filter, locked, retried as
/// `retryRun` does and enqueued together.
pub async fn retry_runs<E: Exec>(e: &mut E, t: &Schema, f: &RunSetArg, limit: i64) -> Result<i64> {
    let ids = pick_runs(e, t, f, limit, " LIMIT ? FOR UPDATE").await?;
    if ids.is_empty() {
        return Ok(0);
    }
    let names: Vec<String> = ids.iter().filter_map(string).collect();
    let requests = names.iter().map(|id| statements::Enqueue {
        run_id: id,
        run_at: 0,
        priority: None,
    });
    let mut stmts = vec![Stmt::exec(
        format!(
            "UPDATE {} SET {} WHERE id IN {}",
            t.run,
            retry_set(t),
            holes(ids.len())
        ),
        ids.clone(),
    )];
    stmts.extend(statements::enqueue_many(
        t,
        &statements::distinct(requests),
        false,
    ));
    e.batch(stmts).await?;
    Ok(ids.len() as i64)
}
