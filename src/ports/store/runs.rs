//! Runs: starting them (one or many, keyed or not), their rows, status changes (running,
//! suspended, terminal, retried) and the listings of runs (`listRuns`, `childrenOf`,
//! `runStats`, `orphanedRuns`).

use super::{
    first_row, handed_back, is_live, retry_set, select_runs, shifted, tag_params, ACTIVE,
    NON_SUCCESS_TERMINAL, RECONCILABLE, TAG_FILTER, TERMINAL,
};

use crate::error::{Error, Result};
use crate::exec::{Exec, Outcome, Stmt};
use crate::model::codec::{self, i, int, opt_s, req_int, s, string, JsonOut, StartResult, RUN};
use crate::model::schema::Schema;
use crate::pool::literal::holes;
use crate::ports::args::{ListArg, OutboxArg, SpecArg};
use crate::ports::statements::{self, guarded_write, write_then_enqueue, Won};
use mysql_async::Value;

/// Statements of one `startRun`: keyed ⇒ INSERT IGNORE + lookup, else plain INSERT. In one
/// session the lookup only runs when the insert was ignored (`ROW_COUNT() = 0`), so a new key
/// costs no index read.
pub(super) fn start_stmts(
    t: &Schema,
    run_id: &str,
    spec: &SpecArg,
    one_session: bool,
) -> Vec<Stmt> {
    let only_if_ignored = if one_session {
        "ROW_COUNT() = 0 AND "
    } else {
        ""
    };
    match spec.idempotency_key.as_deref().filter(|k| !k.is_empty()) {
        Some(key) => vec![
            statements::insert_run(t, true, run_id, spec),
            Stmt::query(
                format!(
                    "SELECT id, status FROM {} WHERE {only_if_ignored}name = ? AND version = ? AND idempotency_key = ?",
                    t.run
                ),
                vec![s(&spec.name), i(spec.version), s(key)],
                &["id", "status"],
            ),
        ],
        None => {
            let mut plain = spec.clone();
            plain.idempotency_key = None;
            vec![statements::insert_run(t, false, run_id, &plain)]
        }
    }
}

/// Reads the `StartResult` of one spec out of its statements' outcomes.
pub(super) fn start_result(t: &Schema, run_id: &str, outcomes: &[Outcome]) -> Result<StartResult> {
    if outcomes.first().is_some_and(|o| o.affected == 1) {
        return Ok(StartResult {
            run_id: run_id.to_string(),
            created: true,
            status: "pending".into(),
        });
    }
    let row = first_row(outcomes, 1).ok_or_else(|| {
        Error::Contract("startRun: the idempotency key was neither inserted nor found".into())
    })?;
    if t.contract.is_v3() {
        let id = string(&row[0]).unwrap_or_default();
        codec::check_status(&row[1]).map_err(|e| e.map_message(|m| format!("run {id}: {m}")))?;
    }
    Ok(StartResult {
        run_id: string(&row[0]).unwrap_or_default(),
        created: false,
        status: string(&row[1]).unwrap_or_default(),
    })
}

/// `startRun`: the insert and the key lookup ride one round trip.
pub async fn start_run<E: Exec>(
    e: &mut E,
    t: &Schema,
    run_id: &str,
    spec: &SpecArg,
) -> Result<StartResult> {
    let stmts = start_stmts(t, run_id, spec, e.one_session());
    let outcomes = e.batch(stmts).await?;
    start_result(t, run_id, &outcomes)
}

/// Specs `start_many_runs` sends in one statement group at most.
const MANY_CHUNK: usize = 400;

/// Whether `startManyRuns(specs)` is one statement: a single chunk of runs without an
/// idempotency key, i.e. one multi-row INSERT. A single autocommit statement is all or nothing
/// by itself (InnoDB rolls a failed statement back whole), so such a unit needs no transaction
/// around it: one round trip instead of two (`BEGIN` + INSERT, `COMMIT`).
pub fn many_runs_in_one_statement(specs: &[SpecArg]) -> bool {
    !specs.is_empty()
        && specs.len() <= MANY_CHUNK
        && specs
            .iter()
            .all(|s| s.idempotency_key.as_deref().is_none_or(str::is_empty))
}

/// `startManyRuns`: all specs in order, in chunks of bounded size (the caller makes it one
/// transaction, unless `many_runs_in_one_statement`). Runs without an idempotency key that
/// stand next to each other go as one multi-row INSERT (`statements::insert_runs`): bulk
/// submission costs one statement per chunk instead of one per run; a keyed spec keeps its own
/// INSERT IGNORE and lookup.
pub async fn start_many_runs<E: Exec>(
    e: &mut E,
    t: &Schema,
    run_ids: &[String],
    specs: &[SpecArg],
) -> Result<Vec<StartResult>> {
    const CHUNK: usize = MANY_CHUNK;
    let mut results = Vec::with_capacity(specs.len());
    let pairs: Vec<(&str, SpecArg)> = run_ids
        .iter()
        .zip(specs)
        .map(|(id, spec)| (id.as_str(), unkeyed(spec)))
        .collect();
    for chunk in pairs.chunks(CHUNK) {
        let mut stmts = Vec::new();
        // Per statement group: `Some(n)` = a multi-row insert of n plain runs, `None` = one
        // keyed spec's own statements (their count in `spans`).
        let mut groups: Vec<(usize, Option<usize>)> = Vec::new();
        let mut plain: Vec<(&str, &SpecArg)> = Vec::new();
        let flush = |plain: &mut Vec<(&str, &SpecArg)>,
                     stmts: &mut Vec<Stmt>,
                     groups: &mut Vec<(usize, Option<usize>)>| {
            if !plain.is_empty() {
                stmts.push(statements::insert_runs(t, plain));
                groups.push((1, Some(plain.len())));
                plain.clear();
            }
        };
        for (id, spec) in chunk {
            if spec.idempotency_key.is_none() {
                plain.push((id, spec));
                continue;
            }
            flush(&mut plain, &mut stmts, &mut groups);
            let st = start_stmts(t, id, spec, e.one_session());
            groups.push((st.len(), None));
            stmts.extend(st);
        }
        flush(&mut plain, &mut stmts, &mut groups);
        let outcomes = e.batch(stmts).await?;
        let mut at = 0;
        let mut specs_at = chunk.iter();
        for (n, rows) in groups {
            match rows {
                Some(count) => {
                    if outcomes.get(at).map(|o| o.affected) != Some(count as u64) {
                        return Err(Error::Contract(format!(
                            "startManyRuns: a multi-row insert of {count} runs reported {} rows",
                            outcomes.get(at).map_or(0, |o| o.affected)
                        )));
                    }
                    for (id, _) in specs_at.by_ref().take(count) {
                        results.push(StartResult {
                            run_id: id.to_string(),
                            created: true,
                            status: "pending".into(),
                        });
                    }
                }
                None => {
                    if let Some((id, _)) = specs_at.next() {
                        results.push(start_result(t, id, &outcomes[at..at + n])?);
                    }
                }
            }
            at += n;
        }
    }
    Ok(results)
}

/// A spec whose empty idempotency key counts as none (a plain insert, as `start_stmts` does).
fn unkeyed(spec: &SpecArg) -> SpecArg {
    let mut spec = spec.clone();
    if spec.idempotency_key.as_deref().is_some_and(str::is_empty) {
        spec.idempotency_key = None;
    }
    spec
}

/// `loadRunRow`: one run row, `None` when missing.
pub async fn load_run_row<E: Exec>(e: &mut E, t: &Schema, run_id: &str) -> Result<Option<String>> {
    let out = e
        .batch(vec![select_runs(t, "id = ?", vec![s(run_id)])])
        .await?;
    first_row(&out, 0).map(|r| run_json(t, r)).transpose()
}

/// `loadRunRows`: the rows of `ids`, in any order (JS realigns them to the input order).
pub async fn load_run_rows<E: Exec>(e: &mut E, t: &Schema, ids: &[String]) -> Result<String> {
    if ids.is_empty() {
        return Ok("[]".into());
    }
    let condition = format!("id IN {}", holes(ids.len()));
    let stmt = select_runs(t, &condition, ids.iter().map(|x| s(x)).collect());
    let out = e.batch(vec![stmt]).await?;
    RUN.write_all(&out[0].rows, t.contract)
}

/// `markRunning`: bump attempts unless terminal, without a transaction. The UPDATE is atomic and
/// hands its new `attempts` back through `LAST_INSERT_ID(expr)` in its OK packet, so no other
/// writer can slip in between write and read. Only when it matched nothing (terminal or unknown
/// run) is the current row read — natively as a second round trip, so the common case is one
/// statement. Inside a caller's transaction the row is always read, in the same round trip
/// (see `handed_back`).
pub async fn mark_running<E: Exec>(e: &mut E, t: &Schema, run_id: &str) -> Result<i64> {
    // 3.0 reads rows strictly: a run whose status is not a known one is not bumped (the read
    // below then reports it).
    let live = if t.contract.is_v3() {
        format!("status IN {ACTIVE}")
    } else {
        format!("status NOT IN {TERMINAL}")
    };
    let update = Stmt::exec(
        format!(
            "UPDATE {} FORCE INDEX (PRIMARY) SET status = 'running', attempts = {} \
             WHERE id = ? AND {live}",
            t.run,
            handed_back(e, "attempts + 1")
        ),
        vec![s(run_id)],
    );
    let read = Stmt::query(
        format!("SELECT attempts, status FROM {} WHERE id = ?", t.run),
        vec![s(run_id)],
        &["attempts", "status"],
    );
    let (count, rows) = if e.one_session() && !e.in_callers_session() {
        let out = e.batch(vec![update]).await?;
        match shifted(e, &out) {
            Some(n) => (Some(n), Vec::new()),
            None => (None, e.batch(vec![read]).await?),
        }
    } else {
        let mut out = e.batch(vec![update, read]).await?;
        (shifted(e, &out), out.split_off(1))
    };
    if let Some(n) = count {
        return Ok(n);
    }
    let row = first_row(&rows, 0)
        .ok_or_else(|| Error::Contract(format!("markRunning: run {run_id} not found")))?;
    if t.contract.is_v3() {
        codec::check_status(&row[1])
            .map_err(|e| e.map_message(|m| format!("run {run_id}: {m}")))?;
    }
    req_int(&row[0], "attempts")
}

/// `suspendRun`: park a live run; the outbox applies only if the guarded UPDATE matched.
pub async fn suspend_run<E: Exec>(
    e: &mut E,
    t: &Schema,
    run_id: &str,
    status: &str,
    fx: Option<&OutboxArg>,
) -> Result<()> {
    let reset = if status == "retrying" {
        ""
    } else {
        ", attempts = 0"
    };
    let update = Stmt::exec(
        format!(
            "UPDATE {} FORCE INDEX (PRIMARY) SET status = ?{reset} WHERE id = ? AND status NOT IN {TERMINAL}",
            t.run
        ),
        vec![s(status), s(run_id)],
    );
    status_write(e, t, update, fx).await
}

/// `markTerminal`: under 2.0.0-alpha.2 guarded only by `status <> 'canceled'` (a `done` run can
/// still fail); under 3.0 every terminal state is sticky (the first terminal write wins).
pub async fn mark_terminal<E: Exec>(
    e: &mut E,
    t: &Schema,
    run_id: &str,
    status: &str,
    output: Option<&str>,
    error: Option<&str>,
    fx: Option<&OutboxArg>,
) -> Result<()> {
    let guard = if t.contract.is_v3() {
        format!("status NOT IN {TERMINAL}")
    } else {
        "status <> 'canceled'".to_string()
    };
    let update = Stmt::exec(
        format!(
            "UPDATE {} FORCE INDEX (PRIMARY) SET status = ?, output = ?, error = ? WHERE id = ? AND {guard}",
            t.run
        ),
        vec![s(status), opt_s(output), opt_s(error), s(run_id)],
    );
    status_write(e, t, update, fx).await
}

/// `listRuns`: newest-inserted first; `{ runs, cursor }` with the cursor (the last row's `seq`)
/// only when the page is full.
///
/// A tag with only live statuses (the cron overlap check: every live status and `cron:<name>`)
/// reads the `run_status` index: the optimizer cannot tell how few rows the tag matches, and
/// would otherwise walk `seq` from the newest run, through the whole finished history when no
/// live run has the tag. The live runs are a bounded set; without a tag, or with a finished
/// status, the optimizer's estimate is sound and its choice stays.
pub async fn list_runs<E: Exec>(e: &mut E, t: &Schema, a: &ListArg) -> Result<String> {
    let mut wh = Vec::new();
    let mut params = Vec::new();
    if let Some(st) = &a.statuses {
        wh.push(format!("status IN {}", holes(st.len())));
        params.extend(st.iter().map(|x| s(x)));
    }
    if let Some(n) = a.name.as_deref().filter(|n| !n.is_empty()) {
        wh.push("name = ?".to_string());
        params.push(s(n));
    }
    if let Some(v) = a.version.filter(|_| t.contract.is_v3()) {
        wh.push("version = ?".to_string());
        params.push(i(v));
    }
    let tag = a.tag.as_deref().filter(|n| !n.is_empty());
    if let Some(tag) = tag {
        wh.push(TAG_FILTER.to_string());
        params.extend(tag_params(tag));
    }
    if let Some(c) = a.cursor {
        wh.push("seq < ?".to_string());
        params.push(i(c));
    }
    params.push(i(a.limit));
    let clause = if wh.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", wh.join(" AND "))
    };
    let live_only = a
        .statuses
        .as_ref()
        .is_some_and(|st| st.iter().all(|x| is_live(x)));
    let hint = if tag.is_some() && live_only {
        " FORCE INDEX (run_status)"
    } else {
        ""
    };
    let out = e
        .batch(vec![Stmt::query(
            format!(
                "SELECT {}, seq FROM {}{hint} {clause} ORDER BY seq DESC LIMIT ?",
                RUN.select(),
                t.run
            ),
            params,
            [RUN.names(), &["seq"]].concat(),
        )])
        .await?;
    let rows = &out[0].rows;
    let mut j = JsonOut::new();
    j.open_obj();
    j.key("runs");
    j.raw(&RUN.write_all(rows, t.contract)?);
    let full = i64::try_from(rows.len()).is_ok_and(|n| n == a.limit);
    if let Some(seq) = rows
        .last()
        .filter(|_| full)
        .and_then(|r| r.get(RUN.cols.len()))
    {
        j.key("cursor");
        j.str(&string(seq).unwrap_or_default());
    }
    j.close_obj();
    Ok(j.finish())
}

/// `childrenOf`: direct children.
pub async fn children_of<E: Exec>(e: &mut E, t: &Schema, run_id: &str) -> Result<String> {
    let out = e
        .batch(vec![select_runs(t, "parent_run_id = ?", vec![s(run_id)])])
        .await?;
    RUN.write_all(&out[0].rows, t.contract)
}

/// `runStats`: counts per status present (JS overlays them on all-zero stats).
pub async fn run_stats<E: Exec>(e: &mut E, t: &Schema) -> Result<String> {
    let out = e
        .batch(vec![Stmt::query(
            format!(
                "SELECT status, COUNT(*) AS n FROM {} GROUP BY status",
                t.run
            ),
            vec![],
            &["status", "n"],
        )])
        .await?;
    let mut j = JsonOut::new();
    j.open_obj();
    for r in &out[0].rows {
        if t.contract.is_v3() {
            codec::check_status(&r[0])?;
        }
        if let (Some(st), Some(n)) = (string(&r[0]), int(&r[1])) {
            j.key(&st);
            j.num(n);
        }
    }
    j.close_obj();
    Ok(j.finish())
}

/// `orphanedRuns`: the three orphan cases as one UNION, oldest inserted first.
///
/// Each case finds run ids from a secondary index without reading a run row for every live
/// run — `run_status` holds (status, id), `run_parent` (parent, id), and a job or timer is
/// looked up by its primary key — and only the orphans found are joined back for their `seq`.
/// A live run's row read costs a primary-key descent (a few µs each, most of the statement's
/// time when every live run paid one); the finished history is never walked:
/// - stranded: reconcilable runs (`run_status`) with neither a job nor a timer;
/// - lost wake-up: `awaiting_child` runs (`run_status`) without a job whose children
///   (`run_parent`) all ended, or one of them failed — one correlated count per such run, so
///   the children are read only for these parents (as `EXISTS` under an `OR`, MariaDB
///   materialises the subqueries over every run instead);
/// - abandoned: live runs whose parent failed or was canceled, found from `run_parent` (the
///   runs that have a parent) or from `run_status` (the live runs), whichever range the
///   optimizer estimates smaller, never by a table scan; each then reads its parent by key.
pub async fn orphaned_runs<E: Exec>(e: &mut E, t: &Schema, limit: i64) -> Result<Vec<String>> {
    let (run, job, timer) = (&t.run, &t.job, &t.timer);
    let no_job = format!("NOT EXISTS (SELECT 1 FROM {job} j WHERE j.run_id = s.id)");
    let sql = format!(
        "SELECT r.id FROM (\
         SELECT s.id FROM {run} s FORCE INDEX (run_status) WHERE s.status IN {RECONCILABLE} \
           AND {no_job} AND NOT EXISTS (SELECT 1 FROM {timer} tm WHERE tm.run_id = s.id) \
         UNION \
         SELECT s.id FROM {run} s FORCE INDEX (run_status) WHERE s.status = 'awaiting_child' \
           AND {no_job} \
           AND (SELECT COUNT(*) > 0 AND (SUM(c.status IN {NON_SUCCESS_TERMINAL}) > 0 \
                  OR SUM(c.status NOT IN {TERMINAL}) = 0) \
                FROM {run} c WHERE c.parent_run_id = s.id) \
         UNION \
         SELECT STRAIGHT_JOIN c.id FROM {run} c FORCE INDEX (run_parent, run_status) \
           JOIN {run} p ON p.id = c.parent_run_id \
           WHERE c.parent_run_id IS NOT NULL AND c.status NOT IN {TERMINAL} \
             AND p.status IN {NON_SUCCESS_TERMINAL}\
         ) o STRAIGHT_JOIN {run} r ON r.id = o.id ORDER BY r.seq LIMIT ?"
    );
    let out = e
        .batch(vec![Stmt::query(sql, vec![i(limit)], &["id"])])
        .await?;
    Ok(out[0].rows.iter().filter_map(|r| string(&r[0])).collect())
}

/// `retryRun`: failed ⇒ pending and enqueue, atomically.
pub async fn retry_run<E: Exec>(e: &mut E, t: &Schema, run_id: &str) -> Result<bool> {
    let update = Stmt::exec(
        format!(
            "UPDATE {} FORCE INDEX (PRIMARY) SET {} WHERE id = ? AND status = 'failed'",
            t.run,
            retry_set(t)
        ),
        vec![s(run_id)],
    );
    write_then_enqueue(e, t, update, run_id).await
}

/// One run row as JSON.
fn run_json(t: &Schema, row: &[Value]) -> Result<String> {
    let mut j = JsonOut::new();
    RUN.write(&mut j, row, t.contract)?;
    Ok(j.finish())
}

/// A status write whose outbox applies only if it matched (found rows).
async fn status_write<E: Exec>(
    e: &mut E,
    t: &Schema,
    update: Stmt,
    fx: Option<&OutboxArg>,
) -> Result<()> {
    let effects = |guarded| {
        fx.map(|fx| statements::outbox(t, fx, guarded))
            .unwrap_or_default()
    };
    guarded_write(e, Vec::new(), update, Won::Any, effects, Vec::new()).await?;
    Ok(())
}
