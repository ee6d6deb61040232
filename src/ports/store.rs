//! Store port: runs, step memos, signals, crons (behaviour: docs/contract.md, "Store").
//!
//! Every function is generic over `Exec`, so the native pool and a wrapped JS `Sql` share the
//! port logic; where `Exec::one_session` allows it, the native path sends fewer statements (a
//! lookup only when an insert was ignored, a read only when a write matched nothing). Which
//! calls are transactions is decided once, in `backend.rs`. Rows come back as JSON text (see
//! `codec.rs`); scalars as plain values.

use crate::args::{CheckpointArg, CronArg, ListArg, OutboxArg, RunSetArg, SpecArg};
use crate::codec::{
    self, i, int, opt_s, req_int, s, string, JsonOut, StartResult, CRON, RUN, SIGNAL,
};
use crate::error::{Error, Result};
use crate::exec::{Exec, Outcome, Stmt};
use crate::literal::holes;
use crate::schema::Schema;
use crate::statements::{self, guarded_write, write_then_enqueue, Won};
use mysql_async::Value;

// Status writes by id say `FORCE INDEX (PRIMARY)`: without it the optimizer also weighs the
// `run_status` index for the status condition (range analysis with index dives), measured at
// about 15 µs of server CPU per statement for nothing — the primary key always wins.

/// The tag predicate (`tags` holds a JSON array of strings).
const TAG_FILTER: &str = "JSON_CONTAINS(tags, JSON_QUOTE(?))";

/// Terminal statuses as a SQL tuple.
pub const TERMINAL: &str = "('done','failed','canceled')";
const NON_SUCCESS_TERMINAL: &str = "('failed','canceled')";
const RECONCILABLE: &str = "('pending','running','sleeping','retrying')";
const ACTIVE: &str =
    "('pending','running','sleeping','awaiting_signal','awaiting_child','retrying')";

fn select_runs(t: &Schema, condition: &str, params: Vec<Value>) -> Stmt {
    Stmt::query(
        format!("SELECT {} FROM {} WHERE {condition}", RUN.select(), t.run),
        params,
        RUN.names(),
    )
}

/// One run row as JSON.
fn run_json(t: &Schema, row: &[Value]) -> Result<String> {
    let mut j = JsonOut::new();
    RUN.write(&mut j, row, t.contract)?;
    Ok(j.finish())
}

fn first_row(outcomes: &[Outcome], idx: usize) -> Option<&Vec<Value>> {
    outcomes.get(idx).and_then(|o| o.rows.first())
}

/// Statements of one `startRun`: keyed ⇒ INSERT IGNORE + lookup, else plain INSERT. In one
/// session the lookup only runs when the insert was ignored (`ROW_COUNT() = 0`), so a new key
/// costs no index read.
fn start_stmts(t: &Schema, run_id: &str, spec: &SpecArg, one_session: bool) -> Vec<Stmt> {
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
fn start_result(t: &Schema, run_id: &str, outcomes: &[Outcome]) -> Result<StartResult> {
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

/// `startManyRuns`: all specs in order, in chunks of bounded size (the caller makes it one
/// transaction).
pub async fn start_many_runs<E: Exec>(
    e: &mut E,
    t: &Schema,
    run_ids: &[String],
    specs: &[SpecArg],
) -> Result<Vec<StartResult>> {
    const CHUNK: usize = 400;
    let mut results = Vec::with_capacity(specs.len());
    let pairs: Vec<(&String, &SpecArg)> = run_ids.iter().zip(specs).collect();
    for chunk in pairs.chunks(CHUNK) {
        let mut stmts = Vec::new();
        let mut spans = Vec::new();
        for (id, spec) in chunk {
            let st = start_stmts(t, id, spec, e.one_session());
            spans.push(st.len());
            stmts.extend(st);
        }
        let outcomes = e.batch(stmts).await?;
        let mut at = 0;
        for ((id, _), n) in chunk.iter().zip(spans) {
            results.push(start_result(t, id, &outcomes[at..at + n])?);
            at += n;
        }
    }
    Ok(results)
}

/// `loadRun`: run, steps and signals in one round trip; `None` when the run is missing.
///
/// Natively one statement (`snapshot_union`): the server's cost per statement is about a fifth
/// of a loadRun's, and a run is loaded at least once per lease. A wrapped `Sql` gets three
/// plain SELECTs instead, since its driver would type the union's merged columns by their
/// merged type rather than by each table's own.
pub async fn load_run<E: Exec>(e: &mut E, t: &Schema, run_id: &str) -> Result<Option<String>> {
    let step = codec::step(t.contract);
    // 3.0 soft-consumes signals: only the unconsumed ones are delivered.
    let unconsumed = if t.contract.is_v3() {
        " AND consumed = 0"
    } else {
        ""
    };
    if e.reads_merged_columns() {
        let out = e.batch(vec![snapshot_union(t, run_id, unconsumed)]).await?;
        let rows = out.into_iter().next().map(|o| o.rows).unwrap_or_default();
        return snapshot_of_union(t, rows);
    }
    let stmts = vec![
        select_runs(t, "id = ?", vec![s(run_id)]),
        Stmt::query(
            format!(
                "SELECT cursor_key, {} FROM {} WHERE run_id = ?",
                step.select(),
                t.step
            ),
            vec![s(run_id)],
            [&["cursor_key"], step.names()].concat(),
        ),
        Stmt::query(
            format!(
                "SELECT {} FROM {} WHERE run_id = ?{unconsumed} ORDER BY seq",
                SIGNAL.select(),
                t.signal
            ),
            vec![s(run_id)],
            SIGNAL.names(),
        ),
    ];
    let mut out = e.batch(stmts).await?.into_iter().map(|o| o.rows);
    let (runs, steps, signals) = (
        out.next().unwrap_or_default(),
        out.next().unwrap_or_default(),
        out.next().unwrap_or_default(),
    );
    match runs.first() {
        Some(run) => snapshot_json(t, run, &steps, &signals).map(Some),
        None => Ok(None),
    }
}

/// Which table a row of `snapshot_union` comes from (its first column).
const ROW_RUN: &str = "0";
const ROW_STEP: &str = "1";
const ROW_SIGNAL: &str = "2";

/// The run row, its steps and its signals as one `UNION ALL`, each row tagged with its table,
/// padded with NULLs to the run's width. The steps' and signals' text columns are cast to
/// binary, so the answer never depends on how a server reconciles two tables' collations in one
/// result column (tables created under different server defaults differ; MariaDB 10.11 accepts
/// the mix, not every server need); a binary cell carries the same bytes as the text one.
/// Signals carry their `seq`, since a union part's ORDER BY is not kept.
fn snapshot_union(t: &Schema, run_id: &str, unconsumed: &str) -> Stmt {
    let step = codec::step(t.contract);
    let width = RUN.names().len();
    let bin = |cols: &[&str]| {
        cols.iter()
            .map(|c| format!("CAST({c} AS BINARY)"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let pad = |used: usize| ", NULL".repeat(width.saturating_sub(used));
    let step_cols: Vec<&str> = [&["cursor_key"], step.names()].concat();
    let signal_cols = SIGNAL.names();
    let text = format!(
        "SELECT {ROW_RUN} AS k, {} FROM {} WHERE id = ? \
         UNION ALL SELECT {ROW_STEP}, {}{} FROM {} WHERE run_id = ? \
         UNION ALL SELECT {ROW_SIGNAL}, {}, seq{} FROM {} WHERE run_id = ?{unconsumed}",
        RUN.select(),
        t.run,
        bin(&step_cols),
        pad(step_cols.len()),
        t.step,
        bin(signal_cols),
        pad(signal_cols.len() + 1),
        t.signal,
    );
    let cols: Vec<&'static str> = [&["k"], RUN.names()].concat();
    Stmt::query(text, vec![s(run_id), s(run_id), s(run_id)], cols)
}

/// A `RunSnapshot` from the rows of `snapshot_union`; `None` without a run row.
fn snapshot_of_union(t: &Schema, rows: Vec<Vec<Value>>) -> Result<Option<String>> {
    let step_width = 1 + codec::step(t.contract).names().len();
    let signal_width = SIGNAL.names().len();
    let mut run = None;
    let mut steps = Vec::new();
    let mut signals: Vec<(i64, Vec<Value>)> = Vec::new();
    for mut row in rows {
        if row.is_empty() {
            continue;
        }
        let tag = string(&row[0]).unwrap_or_default();
        let mut cols = row.split_off(1);
        match tag.as_str() {
            ROW_RUN => run = Some(cols),
            ROW_STEP => {
                cols.truncate(step_width);
                steps.push(cols);
            }
            ROW_SIGNAL => {
                let seq = req_int(cols.get(signal_width).unwrap_or(&Value::NULL), "seq")?;
                cols.truncate(signal_width);
                signals.push((seq, cols));
            }
            other => {
                return Err(Error::connection(format!(
                    "loadRun: unexpected row tag {other:?}"
                )))
            }
        }
    }
    let Some(run) = run else {
        return Ok(None);
    };
    signals.sort_by_key(|(seq, _)| *seq);
    let signals: Vec<Vec<Value>> = signals.into_iter().map(|(_, row)| row).collect();
    snapshot_json(t, &run, &steps, &signals).map(Some)
}

/// `{ run, steps: [[cursorKey, memo]…], signals }` as JSON.
fn snapshot_json(
    t: &Schema,
    run: &[Value],
    steps: &[Vec<Value>],
    signals: &[Vec<Value>],
) -> Result<String> {
    let step = codec::step(t.contract);
    // A step or signal that does not decode names its run.
    let of_run = |e: Error| {
        let id = run.first().and_then(string).unwrap_or_default();
        e.map_message(|m| format!("run {id}: {m}"))
    };
    let mut j = JsonOut::new();
    j.open_obj();
    j.key("run");
    RUN.write(&mut j, run, t.contract)?;
    j.key("steps");
    j.open_arr();
    for r in steps {
        j.open_arr();
        j.str(&r.first().and_then(string).unwrap_or_default());
        step.write(&mut j, r.get(1..).unwrap_or_default(), t.contract)
            .map_err(of_run)?;
        j.close_arr();
    }
    j.close_arr();
    j.key("signals");
    j.raw(&SIGNAL.write_all(signals, t.contract).map_err(of_run)?);
    j.close_obj();
    Ok(j.finish())
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

/// `arriveAtJoin`: decrement and answer the new count; `None` for an unknown run. One atomic
/// UPDATE that hands its result back through `LAST_INSERT_ID(expr)` (shifted, as in
/// `markRunning`), so no transaction and no re-read are needed natively; a wrapped `Sql` runs
/// the re-read too, in the same transaction, for when its driver does not report `insertId`.
/// Inside a caller's transaction only the re-read answers (see `handed_back`).
pub async fn arrive_at_join<E: Exec>(e: &mut E, t: &Schema, parent: &str) -> Result<Option<i64>> {
    let update = Stmt::exec(
        format!(
            "UPDATE {} FORCE INDEX (PRIMARY) SET join_remaining = {} WHERE id = ?",
            t.run,
            handed_back(e, "join_remaining - 1")
        ),
        vec![s(parent)],
    );
    let read = || {
        Stmt::query(
            format!("SELECT join_remaining FROM {} WHERE id = ?", t.run),
            vec![s(parent)],
            &["join_remaining"],
        )
    };
    let mut out = if e.one_session() && !e.in_callers_session() {
        e.batch(vec![update]).await?
    } else {
        e.batch(vec![update, read()]).await?
    };
    if out[0].affected == 0 {
        return Ok(None);
    }
    if let Some(n) = shifted(e, &out) {
        return Ok(Some(n));
    }
    // No id in the OK packet (a driver that does not report it): the re-read answers.
    if out.len() < 2 {
        out.extend(e.batch(vec![read()]).await?);
    }
    Ok(first_row(&out, 1).and_then(|r| int(&r[0])))
}

/// `postSignal`: store the signal; enqueue the run in the same unit only if it was new.
pub async fn post_signal<E: Exec>(
    e: &mut E,
    t: &Schema,
    signal_id: &str,
    run_id: &str,
    name: &str,
    payload: Option<&str>,
    idem_key: Option<&str>,
) -> Result<bool> {
    let insert = Stmt::exec(
        format!(
            "INSERT IGNORE INTO {} (id, run_id, name, payload, idem_key) VALUES (?, ?, ?, ?, ?)",
            t.signal
        ),
        vec![
            s(signal_id),
            s(run_id),
            s(name),
            opt_s(payload),
            opt_s(idem_key),
        ],
    );
    write_then_enqueue(e, t, insert, run_id).await
}

/// `LAST_INSERT_ID()` is unsigned and 0 means "none": a new INT value read back through it
/// travels shifted by 2^32, which keeps every INT value (also a negative one, down to -2^31)
/// representable and above zero.
const SHIFT: i64 = 1 << 32;

/// The SQL that sets a column to `expr` and hands the new value back through the OK packet
/// (`LAST_INSERT_ID(expr)`, shifted) — except inside a caller's transaction (`inTx`), whose
/// session's `LAST_INSERT_ID()` belongs to the caller: there it is plain `expr`, and the unit
/// reads the row back instead (its UPDATE holds the row lock until the caller's transaction
/// ends, so no other writer can slip in between).
fn handed_back(e: &impl Exec, expr: &str) -> String {
    if e.in_callers_session() {
        expr.to_string()
    } else {
        format!("CAST(LAST_INSERT_ID({expr} + {SHIFT}) AS SIGNED) - {SHIFT}")
    }
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

/// The value a shifted `LAST_INSERT_ID(expr)` UPDATE (first outcome) wrote, when it matched
/// one row and its OK packet carried the id; never inside a caller's transaction, whose UPDATE
/// hands nothing back (`handed_back`).
fn shifted(e: &impl Exec, out: &[Outcome]) -> Option<i64> {
    if e.in_callers_session() {
        return None;
    }
    out.first()
        .filter(|o| o.affected == 1 && o.insert_id > 0)
        .and_then(|o| i64::try_from(o.insert_id).ok())
        .map(|v| v - SHIFT)
}

/// `checkpointStep`: first-writer-wins step insert plus its outbox.
///
/// The insert selects its values FROM the run row, so a missing run inserts nothing. When the
/// insert wins, the stored memo is exactly the one sent (every column was validated to fit), so
/// without an outbox the native path answers from the insert's OK packet alone: one statement,
/// one round trip. Only a lost race (or an unknown run) reads the winner back. With an outbox
/// the read rides in the same batch as the guarded writes.
///
/// 3.0 fencing (`requireVersion`): the run's job row is locked first, and the insert only
/// happens while the job still has that version; a fenced call writes nothing and answers
/// `{ status, attempts, committed: false }` — unless the step was already stored, which answers
/// its memo as usual.
pub async fn checkpoint_step<E: Exec>(
    e: &mut E,
    t: &Schema,
    c: &CheckpointArg,
    fx: Option<&OutboxArg>,
) -> Result<String> {
    let step = codec::step(t.contract);
    let fence = fx
        .and_then(|fx| fx.require_version)
        .filter(|_| t.contract.is_v3());
    let (fence_sql, fence_params) = match fence {
        Some(v) => (
            format!(
                " AND EXISTS (SELECT 1 FROM {} WHERE run_id = ? AND version = ?)",
                t.job
            ),
            vec![s(&c.run_id), i(v)],
        ),
        None => (String::new(), Vec::new()),
    };
    let mut insert_params = vec![
        s(&c.run_id),
        s(&c.cursor_key),
        s(&c.status),
        opt_s(c.result.as_deref()),
        opt_s(c.error.as_deref()),
        i(c.attempts),
        opt_s(c.shape.as_deref()),
        s(&c.run_id),
    ];
    insert_params.extend(fence_params);
    let insert = Stmt::exec(
        format!(
            "INSERT IGNORE INTO {} (run_id, cursor_key, {}) SELECT ?, ?, ?, ?, ?, ?, ? FROM {} WHERE id = ?{fence_sql}",
            t.step,
            step.select(),
            t.run
        ),
        insert_params,
    );
    // The winner, joined to its run so that a step left behind by a deleted run never answers
    // for it (two primary-key lookups).
    let read = || {
        Stmt::query(
            format!(
                "SELECT {} FROM {} s JOIN {} r ON r.id = s.run_id WHERE s.run_id = ? AND s.cursor_key = ?",
                step.select_as("s"),
                t.step,
                t.run
            ),
            vec![s(&c.run_id), s(&c.cursor_key)],
            step.names(),
        )
    };
    if fence.is_some() {
        return fenced_checkpoint(e, t, c, fx, insert, read()).await;
    }
    let effects = |guarded| {
        fx.map(|fx| statements::outbox(t, fx, guarded))
            .unwrap_or_default()
    };
    // A winning insert stored exactly what was asked, so it answers from the arguments; only a
    // loser (or a run that is gone) reads what is there.
    let (won, _, _) =
        guarded_write(e, Vec::new(), insert, Won::ExactlyOne, effects, Vec::new()).await?;
    if won {
        return echo_step(t, c);
    }
    let out = e.batch(vec![read()]).await?;
    memo(t, c, first_row(&out, 0))
}

/// The answer of a checkpoint from its winner read: the stored memo, or "run not found".
fn memo(t: &Schema, c: &CheckpointArg, row: Option<&Vec<Value>>) -> Result<String> {
    // No step row after the insert: the run does not exist (or was deleted meanwhile).
    let row =
        row.ok_or_else(|| Error::Contract(format!("checkpointStep: run {} not found", c.run_id)))?;
    let mut j = JsonOut::new();
    codec::step(t.contract)
        .write(&mut j, row, t.contract)
        .map_err(|e| e.map_message(|m| format!("run {}: {m}", c.run_id)))?;
    Ok(j.finish())
}

/// A fenced 3.0 checkpoint, one batch: lock the run's job (so no re-enqueue can bump its
/// version before COMMIT), see whether the run exists, then the version-guarded insert with its
/// outbox and the winner read.
async fn fenced_checkpoint<E: Exec>(
    e: &mut E,
    t: &Schema,
    c: &CheckpointArg,
    fx: Option<&OutboxArg>,
    insert: Stmt,
    read: Stmt,
) -> Result<String> {
    let head = vec![
        Stmt::query(
            format!("SELECT version FROM {} WHERE run_id = ? FOR UPDATE", t.job),
            vec![s(&c.run_id)],
            &["version"],
        ),
        Stmt::query(
            format!("SELECT 1 AS found FROM {} WHERE id = ?", t.run),
            vec![s(&c.run_id)],
            &["found"],
        ),
    ];
    let effects = |guarded| {
        fx.map(|fx| statements::outbox(t, fx, guarded))
            .unwrap_or_default()
    };
    let (_, head_out, tail_out) =
        guarded_write(e, head, insert, Won::ExactlyOne, effects, vec![read]).await?;
    let winner = first_row(&tail_out, 0);
    let run_exists = first_row(&head_out, 1).is_some();
    if winner.is_some() || !run_exists {
        return memo(t, c, winner);
    }
    let mut j = JsonOut::new();
    j.open_obj();
    j.key("status");
    j.str(&c.status);
    j.key("attempts");
    j.num(c.attempts);
    j.key("committed");
    j.raw("false");
    j.close_obj();
    Ok(j.finish())
}

/// The step memo a winning insert stored, written from the checkpoint itself.
fn echo_step(t: &Schema, c: &CheckpointArg) -> Result<String> {
    let row = [
        s(&c.status),
        opt_s(c.result.as_deref()),
        opt_s(c.error.as_deref()),
        i(c.attempts),
        opt_s(c.shape.as_deref()),
    ];
    memo(t, c, Some(&row.to_vec()))
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
    if let Some(tag) = a.tag.as_deref().filter(|n| !n.is_empty()) {
        wh.push(TAG_FILTER.to_string());
        params.push(s(tag));
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
    let out = e
        .batch(vec![Stmt::query(
            format!(
                "SELECT {}, seq FROM {} {clause} ORDER BY seq DESC LIMIT ?",
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
pub async fn orphaned_runs<E: Exec>(e: &mut E, t: &Schema, limit: i64) -> Result<Vec<String>> {
    let (run, job, timer) = (&t.run, &t.job, &t.timer);
    let sql = format!(
        "SELECT o.id FROM (\
         SELECT r.id, r.seq FROM {run} r WHERE r.status IN {RECONCILABLE} \
           AND NOT EXISTS (SELECT 1 FROM {job} j WHERE j.run_id = r.id) \
           AND NOT EXISTS (SELECT 1 FROM {timer} tm WHERE tm.run_id = r.id) \
         UNION \
         SELECT r.id, r.seq FROM {run} r WHERE r.status = 'awaiting_child' \
           AND NOT EXISTS (SELECT 1 FROM {job} j WHERE j.run_id = r.id) \
           AND EXISTS (SELECT 1 FROM {run} c WHERE c.parent_run_id = r.id) \
           AND (EXISTS (SELECT 1 FROM {run} c WHERE c.parent_run_id = r.id AND c.status IN {NON_SUCCESS_TERMINAL}) \
             OR NOT EXISTS (SELECT 1 FROM {run} c WHERE c.parent_run_id = r.id AND c.status NOT IN {TERMINAL})) \
         UNION \
         SELECT r.id, r.seq FROM {run} r JOIN {run} p ON p.id = r.parent_run_id \
           WHERE r.status NOT IN {TERMINAL} AND p.status IN {NON_SUCCESS_TERMINAL}\
         ) o ORDER BY o.seq LIMIT ?"
    );
    let out = e
        .batch(vec![Stmt::query(sql, vec![i(limit)], &["id"])])
        .await?;
    Ok(out[0].rows.iter().filter_map(|r| string(&r[0])).collect())
}

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

/// What a retry sets: pending, no error; 3.0 also starts the attempt count over.
fn retry_set(t: &Schema) -> &'static str {
    if t.contract.is_v3() {
        "status = 'pending', error = NULL, attempts = 0"
    } else {
        "status = 'pending', error = NULL"
    }
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

/// The one number a `SELECT COUNT(*) AS n …` answers.
pub async fn count<E: Exec>(e: &mut E, sql: String, params: Vec<Value>) -> Result<i64> {
    let out = e.batch(vec![Stmt::query(sql, params, &["n"])]).await?;
    Ok(first_row(&out, 0).and_then(|r| int(&r[0])).unwrap_or(0))
}

/// The WHERE clause of a 3.0 bulk operation's filter (see `RunSetArg`).
fn run_set_where(f: &RunSetArg) -> (String, Vec<Value>) {
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
        params.push(s(tag));
    }
    (wh.join(" AND "), params)
}

/// The ids of up to `limit` runs matching `f` (`suffix`: ordering or locking).
async fn pick_runs<E: Exec>(
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

/// Deletes the runs `ids` and every row that belongs to them.
async fn delete_ids<E: Exec>(e: &mut E, t: &Schema, ids: &[Value]) -> Result<()> {
    let h = holes(ids.len());
    let delete = |table: &str, key: &str| {
        Stmt::exec(
            format!("DELETE FROM {table} WHERE {key} IN {h}"),
            ids.to_vec(),
        )
    };
    e.batch(vec![
        delete(&t.step, "run_id"),
        delete(&t.signal, "run_id"),
        delete(&t.job, "run_id"),
        delete(&t.timer, "run_id"),
        delete(&t.run, "id"),
    ])
    .await?;
    Ok(())
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
