//! Timer port (CONTRACT §5): one durable deadline per run.

use crate::codec::{i, s, string, JsonOut};
use crate::error::Result;
use crate::exec::{Exec, Stmt};
use crate::literal::holes;
use crate::outbox;
use crate::schema::Tables;

/// Upsert: the latest call wins.
pub async fn schedule<E: Exec>(
    e: &mut E,
    t: &Tables,
    run_id: &str,
    fire_at: i64,
) -> Result<String> {
    e.batch(vec![outbox::schedule(t, run_id, fire_at)]).await?;
    Ok("null".into())
}

/// Lock due deadlines (skipping ones another worker holds), delete them, return their ids.
pub async fn due_batch<E: Exec>(e: &mut E, t: &Tables, now: i64, limit: i64) -> Result<String> {
    let picked = e
        .batch(
            vec![Stmt::query(
                format!("SELECT run_id FROM {} WHERE fire_at <= ? ORDER BY fire_at LIMIT ? FOR UPDATE SKIP LOCKED", t.timer),
                vec![i(now), i(limit)],
                &["run_id"],
            )])
        .await?;
    let ids: Vec<String> = picked[0]
        .rows
        .iter()
        .filter_map(|r| string(&r[0]))
        .collect();
    let mut j = JsonOut::new();
    j.open_arr();
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
        for id in &ids {
            j.str(id);
        }
    }
    j.close_arr();
    Ok(j.finish())
}

/// Remove a deadline; no-op when there is none.
pub async fn cancel<E: Exec>(e: &mut E, t: &Tables, run_id: &str) -> Result<String> {
    e.batch(vec![Stmt::exec(
        format!("DELETE FROM {} WHERE run_id = ?", t.timer),
        vec![s(run_id)],
    )])
    .await?;
    Ok("null".into())
}
