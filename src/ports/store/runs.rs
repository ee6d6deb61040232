//! Runs: starting them (one or many, keyed or not), their rows and status changes (running,
//! suspended, terminal, retried); the listings of runs are in `listing.rs`.

use super::{first_row, handed_back, retry_set, select_runs, shifted, ACTIVE, TERMINAL};

use crate::error::{Error, Result};
use crate::exec::{Exec, Outcome, Stmt};
use crate::model::codec::{self, i, opt_s, req_int, s, string, JsonOut, StartResult, RUN};
use crate::model::schema::Schema;
use crate::pool::literal::holes;
use crate::ports::args::{OutboxArg, SpecArg};
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
