//! Queue port: leased jobs with `FOR UPDATE SKIP LOCKED` claims (docs/contract.md, "Queue").

use crate::error::{Error, Result};
use crate::exec::wrapped::JsIds;
use crate::exec::{Exec, Stmt};
use crate::model::codec::{i, int, req_int, s, string, JsonOut};
use crate::model::schema::Schema;
use crate::pool::literal::holes;
use crate::ports::args::EnqueueArg;
use crate::ports::statements;
use std::sync::atomic::{AtomicBool, Ordering};

/// `enqueue`: upsert; an active lease is never touched. Without a priority, 2.0.0-alpha.2
/// stores 0 and 3.0 the run's own priority.
pub async fn enqueue<E: Exec>(
    e: &mut E,
    t: &Schema,
    run_id: &str,
    run_at: i64,
    priority: Option<i64>,
) -> Result<()> {
    e.batch(vec![statements::enqueue(t, run_id, run_at, priority)])
        .await?;
    Ok(())
}

/// `enqueueMany` (3.0): one upsert per distinct run (its last request), in multi-row statements.
pub async fn enqueue_many<E: Exec>(e: &mut E, t: &Schema, requests: &[EnqueueArg]) -> Result<()> {
    let distinct = statements::distinct(requests.iter().map(|r| statements::Enqueue {
        run_id: &r.run_id,
        run_at: r.run_at,
        priority: r.priority,
    }));
    e.batch(statements::enqueue_many(t, &distinct, false))
        .await?;
    Ok(())
}

/// Independent `enqueue` calls made together (`node/coalesce.rs`) as one multi-row upsert of at
/// most `statements::ENQUEUE_ROWS` requests, with the same rows on disk as the calls one by one
/// (rows apply in statement order), in `lock_order`.
pub async fn enqueue_together<E: Exec>(
    e: &mut E,
    t: &Schema,
    requests: &[statements::Enqueue<'_>],
) -> Result<()> {
    let mut sorted = requests.to_vec();
    lock_order(&mut sorted);
    let own = run_priorities(e, t, &sorted).await?;
    for r in sorted.iter_mut().filter(|r| r.priority.is_none()) {
        r.priority = own.get(r.run_id).copied();
    }
    let stmts = statements::enqueue_many(t, &sorted, false)
        .into_iter()
        .map(Stmt::never_prepared)
        .collect();
    e.batch(stmts).await?;
    Ok(())
}

/// Sorts requests by run id so that two batches (of two processes) lock their job rows in the
/// same order and never deadlock each other. Requests naming one job row must keep their call
/// order, and under a case-insensitive collation `A` and `a` are one row: ids of printable ASCII
/// without spaces (UUIDs, the usual ids) are compared case-folded, in a stable sort. Other ids
/// may be equal under the collation in ways no byte order knows (accents, trailing spaces), so
/// a batch holding one keeps call order; deadlocks are then left to `exec::run`'s re-run.
fn lock_order(requests: &mut [statements::Enqueue<'_>]) {
    let plain = |id: &str| id.bytes().all(|b| (0x21..=0x7e).contains(&b));
    if requests.iter().all(|r| plain(r.run_id)) {
        let folded = |id: &str| {
            id.bytes()
                .map(|b| b.to_ascii_lowercase())
                .collect::<Vec<u8>>()
        };
        requests.sort_by_cached_key(|r| folded(r.run_id));
    }
}

/// 3.0: the stored priority of each run a request without a priority names, read in one
/// statement before the upsert. A row's `COALESCE((SELECT priority …), 0)` costs the server a
/// subquery per row (a 2,000-row upsert took 3× as long as with literal priorities); a run's
/// priority is written only when the run is created, so reading it first gives the same value.
/// Only ids found exactly as requested are answered: a request whose id matches no run, or
/// matches one only under the column's collation (`A` for `a`), keeps its subquery.
async fn run_priorities<'a, E: Exec>(
    e: &mut E,
    t: &Schema,
    requests: &[statements::Enqueue<'a>],
) -> Result<std::collections::HashMap<&'a str, i64>> {
    let mut own = std::collections::HashMap::new();
    if !t.contract.is_v3() {
        return Ok(own);
    }
    let mut wanted: Vec<&str> = requests
        .iter()
        .filter(|r| r.priority.is_none())
        .map(|r| r.run_id)
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    if wanted.is_empty() {
        return Ok(own);
    }
    let out = e
        .batch(vec![Stmt::query(
            format!(
                "SELECT id, priority FROM {} WHERE id IN {}",
                t.run,
                holes(wanted.len())
            ),
            wanted.iter().map(|id| s(id)).collect(),
            &["id", "priority"],
        )
        .never_prepared()])
        .await?;
    let found: std::collections::HashMap<String, i64> = out[0]
        .rows
        .iter()
        .filter_map(|r| Some((string(&r[0])?, int(&r[1])?)))
        .collect();
    for id in wanted {
        if let Some(p) = found.get(id) {
            own.insert(id, *p);
        }
    }
    Ok(own)
}

/// `AND` a job's run is one of the flows `names` — or has no run row (3.0's `names` filter).
/// A subquery rather than a join: a locking read does not lock the rows of its subqueries, so
/// only job rows are locked (the form MySQL writes as `FOR UPDATE OF j`).
fn of_flows(
    t: &Schema,
    alias: &str,
    names: Option<&[String]>,
) -> (String, Vec<mysql_async::Value>) {
    match names {
        None => (String::new(), Vec::new()),
        Some(names) => (
            format!(
                " AND NOT EXISTS (SELECT 1 FROM {} r WHERE r.id = {alias}.run_id AND r.name NOT IN {})",
                t.run,
                holes(names.len())
            ),
            names.iter().map(|n| s(n)).collect(),
        ),
    }
}

/// `claim`: lock up to `limit` due jobs, then lease them all with ONE set-based UPDATE (the
/// caller makes it one transaction). `idle` says the last claim found nothing (then a probe
/// goes first), and is updated with what this one finds.
/// Token first halves come from the user's `id` option when given (one JS call for exactly the
/// rows picked), otherwise v4 UUIDs are made here.
#[allow(clippy::too_many_arguments)]
pub async fn claim<E: Exec>(
    e: &mut E,
    t: &Schema,
    at: i64,
    lease_ms: i64,
    limit: i64,
    names: Option<&[String]>,
    ids: Option<&JsIds>,
    idle: &AtomicBool,
) -> Result<String> {
    let (flows, flow_params) = of_flows(t, "j", names);
    if idle.load(Ordering::Relaxed) {
        // The last claim found nothing: ask without a transaction first, and open one only if
        // something is claimable now (an idle worker's claim is then one statement, not three).
        let mut params = vec![i(at), i(at)];
        params.extend(flow_params.iter().cloned());
        let any = e
            .batch_before_tx(vec![Stmt::query(
                format!(
                    "SELECT 1 AS any FROM {} j WHERE run_at <= ? AND (lease_expires IS NULL OR lease_expires <= ?){flows} LIMIT 1",
                    t.job
                ),
                params,
                &["any"],
            )])
            .await?;
        if any[0].rows.is_empty() {
            return Ok("[]".into());
        }
    }
    let mut params = vec![i(at), i(at)];
    params.extend(flow_params);
    params.push(i(limit));
    let picked = e
        .batch(vec![Stmt::query(
            format!(
                "SELECT run_id, version FROM {} j WHERE run_at <= ? AND (lease_expires IS NULL OR lease_expires <= ?){flows} \
                 ORDER BY priority, run_at LIMIT ? FOR UPDATE SKIP LOCKED",
                t.job
            ),
            params,
            &["run_id", "version"],
        )])
        .await?;
    let rows = &picked[0].rows;
    idle.store(rows.is_empty(), Ordering::Relaxed);
    let mut j = JsonOut::new();
    j.open_arr();
    if rows.is_empty() {
        j.close_arr();
        return Ok(j.finish());
    }
    let custom = match ids {
        Some(source) => Some(source.take(rows.len()).await?),
        None => None,
    };
    let mut case = String::from("CASE run_id");
    let mut params = Vec::with_capacity(rows.len() * 3 + 1);
    let mut leases = Vec::with_capacity(rows.len());
    for (n, r) in rows.iter().enumerate() {
        let run_id = string(&r[0]).unwrap_or_default();
        let first_half = match custom.as_ref().and_then(|ids| ids.get(n)) {
            Some(id) => id.clone(),
            None => uuid::Uuid::new_v4().to_string(),
        };
        let token = lease_token(&first_half, &run_id);
        case.push_str(" WHEN ? THEN ?");
        params.push(s(&run_id));
        params.push(s(&token));
        leases.push((run_id, token, req_int(&r[1], "version")?));
    }
    case.push_str(" END");
    params.push(i(at + lease_ms));
    params.extend(leases.iter().map(|l| s(&l.0)));
    e.batch(vec![Stmt::exec(
        format!(
            "UPDATE {} SET lease_token = {case}, lease_expires = ? WHERE run_id IN {}",
            t.job,
            holes(leases.len())
        ),
        params,
    )])
    .await?;
    for (run_id, token, version) in &leases {
        j.open_obj();
        j.key("runId");
        j.str(run_id);
        j.key("token");
        j.str(token);
        j.key("version");
        j.num(*version);
        j.close_obj();
    }
    j.close_arr();
    Ok(j.finish())
}

/// `<id>:<runId>`, cut to the column's 191 characters: the id half alone keeps tokens unique, so
/// a long run id must not make its lease unwritable (which would wedge every later claim).
fn lease_token(first_half: &str, run_id: &str) -> String {
    const MAX: usize = 191;
    let mut token = format!("{first_half}:{run_id}");
    if let Some((cut, _)) = token.char_indices().nth(MAX) {
        token.truncate(cut);
    }
    token
}

/// `heartbeat`: extend a live lease; a lost or expired lease is an error.
pub async fn heartbeat<E: Exec>(
    e: &mut E,
    t: &Schema,
    run_id: &str,
    token: &str,
    at: i64,
    lease_ms: i64,
) -> Result<()> {
    let out = e
        .batch(
            vec![Stmt::exec(
                format!("UPDATE {} SET lease_expires = ? WHERE run_id = ? AND lease_token = ? AND lease_expires > ?", t.job),
                vec![i(at + lease_ms), s(run_id), s(token), i(at)],
            )])
        .await?;
    if out[0].affected == 0 {
        return Err(Error::Contract(format!(
            "heartbeat: lease for {run_id} is no longer held"
        )));
    }
    Ok(())
}

/// `ack`: delete the job if it was untouched during the lease, else release it. Never an error.
pub async fn ack<E: Exec>(
    e: &mut E,
    t: &Schema,
    run_id: &str,
    token: &str,
    version: i64,
    at: i64,
) -> Result<()> {
    let params = vec![s(run_id), s(token), i(at), i(version)];
    // The two writes exclude each other (version = / <>): natively the release is only sent when
    // the delete removed nothing (the job was re-enqueued during the lease), so a plain ack is
    // one statement.
    let delete = Stmt::exec(
        format!("DELETE FROM {} WHERE run_id = ? AND lease_token = ? AND lease_expires > ? AND version = ?", t.job),
        params.clone(),
    );
    let release = Stmt::exec(
        format!(
            "UPDATE {} SET lease_token = NULL, lease_expires = NULL, run_at = 0 \
             WHERE run_id = ? AND lease_token = ? AND lease_expires > ? AND version <> ?",
            t.job
        ),
        params,
    );
    if e.one_session() {
        let out = e.batch(vec![delete]).await?;
        if out.first().map_or(0, |o| o.affected) == 0 {
            e.batch(vec![release]).await?;
        }
    } else {
        e.batch(vec![delete, release]).await?;
    }
    Ok(())
}

/// `depth`: claimable / leased counts and the oldest claimable age, aggregated in SQL; with
/// `names` (3.0) over the jobs of those flows. Only jobs due or leased count, so only theirs
/// are read (with `names`, each costs a look-up of its run's name).
pub async fn depth<E: Exec>(
    e: &mut E,
    t: &Schema,
    now: i64,
    names: Option<&[String]>,
) -> Result<String> {
    let (flows, flow_params) = of_flows(t, "j", names);
    let claimable = "run_at <= ? AND (lease_expires IS NULL OR lease_expires <= ?)";
    let out = e
        .batch(vec![Stmt::query(
            format!(
                "SELECT COALESCE(SUM(CASE WHEN {claimable} THEN 1 ELSE 0 END), 0) AS claimable, \
                     COALESCE(SUM(CASE WHEN lease_expires > ? THEN 1 ELSE 0 END), 0) AS leased, \
                     MIN(CASE WHEN {claimable} THEN run_at END) AS oldest FROM {} j \
                     WHERE (run_at <= ? OR lease_expires > ?){flows}",
                t.job
            ),
            [vec![i(now); 7], flow_params].concat(),
            &["claimable", "leased", "oldest"],
        )])
        .await?;
    let row = out[0].rows.first();
    let get = |k: usize| row.and_then(|r| int(&r[k]));
    let mut j = JsonOut::new();
    j.open_obj();
    j.key("claimable");
    j.num(get(0).unwrap_or(0));
    j.key("leased");
    j.num(get(1).unwrap_or(0));
    j.key("oldestClaimableAgeMs");
    match get(2) {
        Some(oldest) => j.num(now - oldest),
        None => j.null(),
    }
    j.close_obj();
    Ok(j.finish())
}

#[cfg(test)]
mod tests {
    use super::{lease_token, lock_order};
    use crate::ports::statements::Enqueue;

    fn ids(requests: &[Enqueue]) -> Vec<(String, i64)> {
        requests
            .iter()
            .map(|r| (r.run_id.to_string(), r.run_at))
            .collect()
    }

    fn requests<'a>(of: &[(&'a str, i64)]) -> Vec<Enqueue<'a>> {
        of.iter()
            .map(|&(run_id, run_at)| Enqueue {
                run_id,
                run_at,
                priority: None,
            })
            .collect()
    }

    #[test]
    fn plain_ids_sort_case_folded_and_keep_call_order_within_a_row() {
        let mut r = requests(&[("b", 1), ("A", 2), ("a", 3), ("B", 4), ("a", 5), ("c", 6)]);
        lock_order(&mut r);
        let want = [("A", 2), ("a", 3), ("a", 5), ("b", 1), ("B", 4), ("c", 6)];
        assert_eq!(ids(&r), ids(&requests(&want)));
    }

    #[test]
    fn other_ids_keep_call_order() {
        let calls = [("e1", 1), ("b", 2), ("É1", 3), ("a ", 4), ("a", 5)];
        let mut r = requests(&calls);
        lock_order(&mut r);
        assert_eq!(ids(&r), ids(&requests(&calls)));
    }

    #[test]
    fn lease_tokens_fit_the_column() {
        assert_eq!(lease_token("abc", "r1"), "abc:r1");
        let long = "é".repeat(191);
        let t = lease_token("0123", &long);
        assert_eq!(t.chars().count(), 191);
        assert!(t.starts_with("0123:é"));
    }
}
