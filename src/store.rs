//! Store port (CONTRACT §3): runs, step memos, signals, crons.
//!
//! Every function is generic over `Exec`, so the native pool and a wrapped JS `Sql` run the same
//! statements. Results are JSON text for `index.js` to parse once (see `codec.rs`).

use crate::args::{CheckpointArg, CronArg, ListArg, OutboxArg, SpecArg};
use crate::codec::{i, int, opt_s, req_int, s, string, JsonOut};
use crate::error::{Error, Result};
use crate::exec::{Exec, Outcome, Stmt};
use crate::literal::holes;
use crate::outbox::{self, capture_won};
use crate::schema::Tables;
use mysql_async::Value;

// Status writes by id say `FORCE INDEX (PRIMARY)`: without it the optimizer also weighs the
// `run_status` index for the status condition (range analysis with index dives), measured at
// about 15 µs of server CPU per statement for nothing — the primary key always wins.

/// Terminal statuses as a SQL tuple.
pub const TERMINAL: &str = "('done','failed','canceled')";
const NON_SUCCESS_TERMINAL: &str = "('failed','canceled')";
const RECONCILABLE: &str = "('pending','running','sleeping','retrying')";

/// Run columns in the order `write_run` reads them.
pub const RUN_SELECT: &str = "id, seq, name, version, status, input, output, error, attempts, idempotency_key, tags, parent_run_id, parent_cursor_key, depth, created_at";
const RUN_COLS: &[&str] = &[
    "id",
    "seq",
    "name",
    "version",
    "status",
    "input",
    "output",
    "error",
    "attempts",
    "idempotency_key",
    "tags",
    "parent_run_id",
    "parent_cursor_key",
    "depth",
    "created_at",
];
const STEP_COLS: &[&str] = &[
    "cursor_key",
    "status",
    "result",
    "error",
    "attempts",
    "shape",
];
const SIGNAL_COLS: &[&str] = &["id", "name", "payload"];
const CRON_COLS: &[&str] = &[
    "name",
    "schedule",
    "flow_name",
    "flow_version",
    "input",
    "overlap",
    "next_run_at",
    "last_run_at",
];

/// Writes one run row as a JSON object keyed by `RunRow` field names (NULL ⇒ key omitted).
fn write_run(j: &mut JsonOut, r: &[Value]) {
    j.open_obj();
    j.str_field("id", &r[0]);
    j.num_field("seq", &r[1]);
    j.str_field("name", &r[2]);
    j.num_field("version", &r[3]);
    j.str_field("status", &r[4]);
    j.json_field("input", &r[5]);
    j.json_field("output", &r[6]);
    j.json_field("error", &r[7]);
    j.num_field("attempts", &r[8]);
    j.str_field("idempotencyKey", &r[9]);
    j.json_field("tags", &r[10]);
    j.str_field("parentRunId", &r[11]);
    j.str_field("parentCursorKey", &r[12]);
    j.num_field("depth", &r[13]);
    j.num_field("createdAt", &r[14]);
    j.close_obj();
}

fn write_runs(rows: &[Vec<Value>]) -> String {
    let mut j = JsonOut::new();
    j.open_arr();
    for r in rows {
        write_run(&mut j, r);
    }
    j.close_arr();
    j.finish()
}

fn write_step(j: &mut JsonOut, r: &[Value]) {
    j.open_obj();
    j.str_field("status", &r[0]);
    j.json_field("result", &r[1]);
    j.json_field("error", &r[2]);
    j.num_field("attempts", &r[3]);
    j.str_field("shape", &r[4]);
    j.close_obj();
}

fn select_run_by_id(t: &Tables, id: &str) -> Stmt {
    Stmt::query(
        format!("SELECT {RUN_SELECT} FROM {} WHERE id = ?", t.run),
        vec![s(id)],
        RUN_COLS,
    )
}

fn first(outcomes: &mut [Outcome], idx: usize) -> Option<&Vec<Value>> {
    outcomes.get(idx).and_then(|o| o.rows.first())
}

/// Statements of one `startRun` (§3.1): keyed ⇒ INSERT IGNORE + lookup, else plain INSERT.
/// In one session the lookup only runs when the insert was ignored (`ROW_COUNT() = 0`), so a
/// new key costs no index read.
fn start_stmts(t: &Tables, run_id: &str, spec: &SpecArg, one_session: bool) -> Vec<Stmt> {
    let only_if_ignored = if one_session {
        "ROW_COUNT() = 0 AND "
    } else {
        ""
    };
    match spec.idempotency_key.as_deref().filter(|k| !k.is_empty()) {
        Some(key) => vec![
            outbox::insert_run(t, true, run_id, spec),
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
            vec![outbox::insert_run(t, false, run_id, &plain)]
        }
    }
}

/// Reads the `StartResult` of one spec out of its statements' outcomes.
fn start_result(j: &mut JsonOut, run_id: &str, outcomes: &[Outcome]) -> Result<()> {
    let created = outcomes[0].affected == 1;
    j.open_obj();
    if created {
        j.key("runId");
        j.str(run_id);
        j.key("created");
        j.bool(true);
        j.key("status");
        j.str("pending");
    } else {
        let row = outcomes.get(1).and_then(|o| o.rows.first()).ok_or_else(|| {
            Error::Contract(
                "startRun: the idempotency key was neither inserted nor found (keys longer than 191 characters are truncated by the server)".into(),
            )
        })?;
        j.key("runId");
        j.str(&string(&row[0]).unwrap_or_default());
        j.key("created");
        j.bool(false);
        j.key("status");
        j.str(&string(&row[1]).unwrap_or_default());
    }
    j.close_obj();
    Ok(())
}

/// §3.1 — one batch: INSERT IGNORE plus the key lookup ride one round trip.
pub async fn start_run<E: Exec>(
    e: &mut E,
    t: &Tables,
    run_id: &str,
    spec: &SpecArg,
) -> Result<String> {
    let stmts = start_stmts(t, run_id, spec, e.one_session());
    let outcomes = e.batch(stmts).await?;
    let mut j = JsonOut::new();
    start_result(&mut j, run_id, &outcomes)?;
    Ok(j.finish())
}

/// §3.2 — all specs in one transaction, in order, sent in chunks of bounded size.
pub async fn start_many_runs<E: Exec>(
    e: &mut E,
    t: &Tables,
    run_ids: &[String],
    specs: &[SpecArg],
) -> Result<String> {
    const CHUNK: usize = 400;
    let mut j = JsonOut::new();
    j.open_arr();
    let pairs: Vec<(&String, &SpecArg)> = run_ids.iter().zip(specs).collect();
    for chunk in pairs.chunks(CHUNK) {
        let mut stmts = Vec::new();
        let mut spans = Vec::new();
        for (id, spec) in chunk.iter() {
            let st = start_stmts(t, id, spec, e.one_session());
            spans.push(st.len());
            stmts.extend(st);
        }
        let outcomes = e.batch(stmts).await?;
        let mut at = 0;
        for ((id, _), n) in chunk.iter().zip(spans) {
            start_result(&mut j, id, &outcomes[at..at + n])?;
            at += n;
        }
    }
    j.close_arr();
    Ok(j.finish())
}

/// §3.3 — run, steps and signals in one round trip; `null` when the run is missing.
pub async fn load_run<E: Exec>(e: &mut E, t: &Tables, run_id: &str) -> Result<String> {
    let stmts = vec![
        select_run_by_id(t, run_id),
        Stmt::query(
            format!("SELECT cursor_key, status, result, error, attempts, shape FROM {} WHERE run_id = ?", t.step),
            vec![s(run_id)],
            STEP_COLS,
        ),
        Stmt::query(
            format!("SELECT id, name, payload FROM {} WHERE run_id = ? ORDER BY seq", t.signal),
            vec![s(run_id)],
            SIGNAL_COLS,
        ),
    ];
    let out = e.batch(stmts).await?;
    let Some(run) = out[0].rows.first() else {
        return Ok("null".into());
    };
    let mut j = JsonOut::new();
    j.open_obj();
    j.key("run");
    write_run(&mut j, run);
    j.key("steps");
    j.open_arr();
    for r in &out[1].rows {
        j.open_arr();
        j.str(&string(&r[0]).unwrap_or_default());
        write_step(&mut j, &r[1..]);
        j.close_arr();
    }
    j.close_arr();
    j.key("signals");
    j.open_arr();
    for r in &out[2].rows {
        j.open_obj();
        j.str_field("id", &r[0]);
        j.str_field("name", &r[1]);
        j.json_field("payload", &r[2]);
        j.close_obj();
    }
    j.close_arr();
    j.close_obj();
    Ok(j.finish())
}

/// §3.4 — one run row or `null`.
pub async fn load_run_row<E: Exec>(e: &mut E, t: &Tables, run_id: &str) -> Result<String> {
    let out = e.batch(vec![select_run_by_id(t, run_id)]).await?;
    Ok(match out[0].rows.first() {
        Some(r) => {
            let mut j = JsonOut::new();
            write_run(&mut j, r);
            j.finish()
        }
        None => "null".into(),
    })
}

/// §3.5 — the rows of `ids` (JS realigns them to the input order).
pub async fn load_run_rows<E: Exec>(e: &mut E, t: &Tables, ids: &[String]) -> Result<String> {
    if ids.is_empty() {
        return Ok("[]".into());
    }
    let stmt = Stmt::query(
        format!(
            "SELECT {RUN_SELECT} FROM {} WHERE id IN {}",
            t.run,
            holes(ids.len())
        ),
        ids.iter().map(|x| s(x)).collect(),
        RUN_COLS,
    );
    let out = e.batch(vec![stmt]).await?;
    Ok(write_runs(&out[0].rows))
}

/// §3.6 — decrement and re-read in one transaction; `null` for an unknown run.
pub async fn arrive_at_join<E: Exec>(e: &mut E, t: &Tables, parent: &str) -> Result<String> {
    let out = e
        .batch(vec![
            Stmt::exec(
                format!(
                    "UPDATE {} SET join_remaining = join_remaining - 1 WHERE id = ?",
                    t.run
                ),
                vec![s(parent)],
            ),
            Stmt::query(
                format!("SELECT join_remaining FROM {} WHERE id = ?", t.run),
                vec![s(parent)],
                &["join_remaining"],
            ),
        ])
        .await?;
    if out[0].affected == 0 {
        return Ok("null".into());
    }
    Ok(out[1]
        .rows
        .first()
        .and_then(|r| int(&r[0]))
        .map_or("null".into(), |n| n.to_string()))
}

/// §3.7 — store the signal; enqueue the run in the same transaction only if it was new.
pub async fn post_signal<E: Exec>(
    e: &mut E,
    t: &Tables,
    signal_id: &str,
    run_id: &str,
    name: &str,
    payload: Option<&str>,
    idem_key: Option<&str>,
) -> Result<String> {
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

/// Runs `write` and, in the same transaction, enqueues `run_id` only if it changed exactly one
/// row; answers `"true"`/`"false"` for that.
async fn write_then_enqueue<E: Exec>(
    e: &mut E,
    t: &Tables,
    write: Stmt,
    run_id: &str,
) -> Result<String> {
    let (won, _) = guarded_write(
        e,
        write,
        Won::ExactlyOne,
        |guarded| vec![outbox::enqueue_guarded(t, run_id, 0, 0, guarded)],
        Vec::new(),
    )
    .await?;
    Ok(flag(won))
}

/// When a guarding write counts as won.
#[derive(Clone, Copy)]
enum Won {
    /// Exactly one row inserted/changed (INSERT IGNORE, retry, signal).
    ExactlyOne,
    /// At least one row matched (status writes, found-rows semantics).
    Any,
}

impl Won {
    fn holds(self, affected: u64) -> bool {
        match self {
            Won::ExactlyOne => affected == 1,
            Won::Any => affected > 0,
        }
    }
    fn sql(self) -> &'static str {
        match self {
            Won::ExactlyOne => "= 1",
            Won::Any => "> 0",
        }
    }
}

/// Runs `write`, then the statements of `effects` only if the write won, then `tail` (reads that
/// always run), as one unit. In one session it is ONE batch: the win is captured in SQL and the
/// effects are guarded by it; the capture answers the row count it saw, and a count other than
/// the one the write reported (the guard could not be evaluated) aborts the unit instead of
/// letting it commit without its effects. Otherwise (a wrapped JS `Sql`) the write goes alone and
/// the plain effects follow only when it won — exactly the statements the JavaScript package
/// sends. Returns whether the write won and the outcomes of `tail`.
async fn guarded_write<E: Exec>(
    e: &mut E,
    write: Stmt,
    won: Won,
    effects: impl FnOnce(bool) -> Vec<Stmt>,
    tail: Vec<Stmt>,
) -> Result<(bool, Vec<Outcome>)> {
    let n_tail = tail.len();
    if e.one_session() {
        let effects = effects(true);
        let guarded = !effects.is_empty();
        let mut stmts = vec![write];
        if guarded {
            stmts.push(capture_won(won.sql()));
            stmts.extend(effects);
        }
        stmts.extend(tail);
        let mut out = e.batch(stmts).await?;
        let affected = out.first().map_or(0, |o| o.affected);
        if guarded {
            check_guard(affected, out.get(1))?;
        }
        let tail_out = out.split_off(out.len().saturating_sub(n_tail));
        return Ok((won.holds(affected), tail_out));
    }
    let first = e.batch(vec![write]).await?;
    let did_win = won.holds(first.first().map_or(0, |o| o.affected));
    if did_win {
        e.batch(effects(false)).await?;
    }
    let tail_out = e.batch(tail).await?;
    Ok((did_win, tail_out))
}

/// The guard's `ROW_COUNT()` must be the write's own affected-rows count; anything else (`-1`
/// when the server could not evaluate it) means the effects may have been skipped wrongly.
fn check_guard(affected: u64, capture: Option<&Outcome>) -> Result<()> {
    let seen = capture
        .and_then(|o| o.rows.first())
        .and_then(|r| r.first())
        .and_then(int);
    if seen == i64::try_from(affected).ok() {
        return Ok(());
    }
    Err(Error::Aborted(format!(
        "outbox guard saw ROW_COUNT() = {} after a write that affected {affected} rows; the unit was rolled back",
        seen.map_or("nothing".into(), |n| n.to_string())
    )))
}

/// A JSON boolean.
fn flag(b: bool) -> String {
    if b { "true" } else { "false" }.into()
}

/// §3.8 — bump attempts unless terminal, without a transaction: the UPDATE is atomic and hands
/// its new `attempts` back through `LAST_INSERT_ID(expr)` in its OK packet, so no other writer
/// can slip in between write and read. Only when it matched nothing (terminal or unknown run) is
/// the current row read — natively as a second round trip, so the common case is one statement.
pub async fn mark_running<E: Exec>(e: &mut E, t: &Tables, run_id: &str) -> Result<String> {
    let update = Stmt::exec(
        format!(
            "UPDATE {} FORCE INDEX (PRIMARY) SET status = 'running', attempts = LAST_INSERT_ID(attempts + 1) WHERE id = ? AND status NOT IN {TERMINAL}",
            t.run
        ),
        vec![s(run_id)],
    );
    let read = Stmt::query(
        format!("SELECT attempts FROM {} WHERE id = ?", t.run),
        vec![s(run_id)],
        &["attempts"],
    );
    let (count, mut rows) = if e.one_session() {
        let out = e.batch(vec![update]).await?;
        match bumped(&out) {
            Some(n) => (Some(n), Vec::new()),
            None => (None, e.batch(vec![read]).await?),
        }
    } else {
        let mut out = e.batch(vec![update, read]).await?;
        (bumped(&out), out.split_off(1))
    };
    if let Some(n) = count {
        return Ok(n.to_string());
    }
    let row = first(&mut rows, 0)
        .ok_or_else(|| Error::Contract(format!("markRunning: run {run_id} not found")))?;
    Ok(req_int(&row[0], "attempts")?.to_string())
}

/// The new attempt count when the markRunning UPDATE (first outcome) bumped the run.
fn bumped(out: &[Outcome]) -> Option<u64> {
    out.first()
        .filter(|o| o.affected == 1 && o.insert_id > 0)
        .map(|o| o.insert_id)
}

/// §3.9 — first-writer-wins step insert plus its outbox.
///
/// The insert selects its values FROM the run row, so a missing run inserts nothing. When the
/// insert wins, the stored memo is exactly the one sent (every column was validated to fit), so
/// without an outbox the native path answers from the insert's OK packet alone: one statement,
/// one round trip. Only a lost race (or an unknown run) reads the winner back. With an outbox
/// the caller runs it as a transaction and the read rides in the same batch.
pub async fn checkpoint_step<E: Exec>(
    e: &mut E,
    t: &Tables,
    c: &CheckpointArg,
    fx: Option<&OutboxArg>,
) -> Result<String> {
    let insert = Stmt::exec(
        format!(
            "INSERT IGNORE INTO {} (run_id, cursor_key, status, result, error, attempts, shape) \
             SELECT ?, ?, ?, ?, ?, ?, ? FROM {} WHERE id = ?",
            t.step, t.run
        ),
        vec![
            s(&c.run_id),
            s(&c.cursor_key),
            s(&c.status),
            opt_s(c.result.as_deref()),
            opt_s(c.error.as_deref()),
            i(c.attempts),
            opt_s(c.shape.as_deref()),
            s(&c.run_id),
        ],
    );
    // The winner, joined to its run so that a step left behind by a deleted run never answers
    // for it (two primary-key lookups).
    let read = || {
        Stmt::query(
            format!(
                "SELECT s.status, s.result, s.error, s.attempts, s.shape FROM {} s JOIN {} r ON r.id = s.run_id \
                 WHERE s.run_id = ? AND s.cursor_key = ?",
                t.step, t.run
            ),
            vec![s(&c.run_id), s(&c.cursor_key)],
            &STEP_COLS[1..],
        )
    };
    let mut out = if fx.is_none() && e.one_session() {
        let first = e.batch(vec![insert]).await?;
        if first.first().map_or(0, |o| o.affected) == 1 {
            return Ok(echo_step(c));
        }
        e.batch(vec![read()]).await?
    } else {
        let effects = |guarded| {
            fx.map(|fx| outbox::statements(t, fx, guarded))
                .unwrap_or_default()
        };
        guarded_write(e, insert, Won::ExactlyOne, effects, vec![read()])
            .await?
            .1
    };
    let last = out.len().saturating_sub(1);
    // No step row after the insert: the run does not exist (or was deleted meanwhile).
    let row = first(&mut out, last)
        .ok_or_else(|| Error::Contract(format!("checkpointStep: run {} not found", c.run_id)))?;
    let mut j = JsonOut::new();
    write_step(&mut j, row);
    Ok(j.finish())
}

/// The step memo a winning insert stored, written from the checkpoint itself.
fn echo_step(c: &CheckpointArg) -> String {
    let text = |v: Option<&str>| v.map_or(Value::NULL, |t| Value::Bytes(t.as_bytes().to_vec()));
    let row = [
        Value::Bytes(c.status.as_bytes().to_vec()),
        text(c.result.as_deref()),
        text(c.error.as_deref()),
        Value::Int(c.attempts),
        text(c.shape.as_deref()),
    ];
    let mut j = JsonOut::new();
    write_step(&mut j, &row);
    j.finish()
}

/// A status write whose outbox applies only if it matched (found rows).
async fn status_write<E: Exec>(
    e: &mut E,
    t: &Tables,
    update: Stmt,
    fx: Option<&OutboxArg>,
) -> Result<String> {
    let effects = |guarded| {
        fx.map(|fx| outbox::statements(t, fx, guarded))
            .unwrap_or_default()
    };
    guarded_write(e, update, Won::Any, effects, Vec::new()).await?;
    Ok("null".into())
}

/// §3.10 — park a live run; the outbox applies only if the guarded UPDATE matched.
pub async fn suspend_run<E: Exec>(
    e: &mut E,
    t: &Tables,
    run_id: &str,
    status: &str,
    fx: Option<&OutboxArg>,
) -> Result<String> {
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

/// §3.11 — terminal write guarded only by `status <> 'canceled'`.
pub async fn mark_terminal<E: Exec>(
    e: &mut E,
    t: &Tables,
    run_id: &str,
    status: &str,
    output: Option<&str>,
    error: Option<&str>,
    fx: Option<&OutboxArg>,
) -> Result<String> {
    let update = Stmt::exec(
        format!(
            "UPDATE {} FORCE INDEX (PRIMARY) SET status = ?, output = ?, error = ? WHERE id = ? AND status <> 'canceled'",
            t.run
        ),
        vec![s(status), opt_s(output), opt_s(error), s(run_id)],
    );
    status_write(e, t, update, fx).await
}

/// §3.12 — newest-inserted first; JS derives the cursor from `last`.
pub async fn list_runs<E: Exec>(e: &mut E, t: &Tables, a: &ListArg) -> Result<String> {
    let mut wh = Vec::new();
    let mut params = Vec::new();
    if let Some(st) = &a.statuses {
        if st.is_empty() {
            return Err(Error::Invalid(
                "listRuns: filter.status is an empty list".into(),
            ));
        }
        wh.push(format!("status IN {}", holes(st.len())));
        params.extend(st.iter().map(|x| s(x)));
    }
    if let Some(n) = a.name.as_deref().filter(|n| !n.is_empty()) {
        wh.push("name = ?".to_string());
        params.push(s(n));
    }
    if let Some(tag) = a.tag.as_deref().filter(|n| !n.is_empty()) {
        wh.push("JSON_CONTAINS(tags, JSON_QUOTE(?))".to_string());
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
                "SELECT {RUN_SELECT} FROM {} {clause} ORDER BY seq DESC LIMIT ?",
                t.run
            ),
            params,
            RUN_COLS,
        )])
        .await?;
    Ok(write_runs(&out[0].rows))
}

/// §3.13 — direct children.
pub async fn children_of<E: Exec>(e: &mut E, t: &Tables, run_id: &str) -> Result<String> {
    let out = e
        .batch(vec![Stmt::query(
            format!("SELECT {RUN_SELECT} FROM {} WHERE parent_run_id = ?", t.run),
            vec![s(run_id)],
            RUN_COLS,
        )])
        .await?;
    Ok(write_runs(&out[0].rows))
}

/// §3.14 — counts per status (JS overlays them on all-zero stats).
pub async fn run_stats<E: Exec>(e: &mut E, t: &Tables) -> Result<String> {
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
        if let (Some(st), Some(n)) = (string(&r[0]), int(&r[1])) {
            j.key(&st);
            j.num(n);
        }
    }
    j.close_obj();
    Ok(j.finish())
}

/// §3.15 / §8 — the three orphan cases as one UNION, oldest inserted first.
pub async fn orphaned_runs<E: Exec>(e: &mut E, t: &Tables, limit: i64) -> Result<String> {
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
    let mut j = JsonOut::new();
    j.open_arr();
    for r in &out[0].rows {
        j.str(&string(&r[0]).unwrap_or_default());
    }
    j.close_arr();
    Ok(j.finish())
}

/// §3.16 — pick terminal runs older than `before`, delete them and their rows.
pub async fn delete_runs_older_than<E: Exec>(
    e: &mut E,
    t: &Tables,
    before: i64,
    limit: i64,
) -> Result<String> {
    let picked = e
        .batch(
            vec![Stmt::query(
                format!("SELECT id FROM {} WHERE status IN {TERMINAL} AND created_at < ? ORDER BY seq LIMIT ?", t.run),
                vec![i(before), i(limit)],
                &["id"],
            )])
        .await?;
    let ids: Vec<Value> = picked[0].rows.iter().map(|r| r[0].clone()).collect();
    if ids.is_empty() {
        return Ok("0".into());
    }
    let h = holes(ids.len());
    let stmts = vec![
        Stmt::exec(
            format!("DELETE FROM {} WHERE run_id IN {h}", t.step),
            ids.clone(),
        ),
        Stmt::exec(
            format!("DELETE FROM {} WHERE run_id IN {h}", t.signal),
            ids.clone(),
        ),
        Stmt::exec(
            format!("DELETE FROM {} WHERE run_id IN {h}", t.job),
            ids.clone(),
        ),
        Stmt::exec(
            format!("DELETE FROM {} WHERE run_id IN {h}", t.timer),
            ids.clone(),
        ),
        Stmt::exec(
            format!("DELETE FROM {} WHERE id IN {h}", t.run),
            ids.clone(),
        ),
    ];
    e.batch(stmts).await?;
    Ok(ids.len().to_string())
}

/// §3.17 — failed ⇒ pending and enqueue, atomically.
pub async fn retry_run<E: Exec>(e: &mut E, t: &Tables, run_id: &str) -> Result<String> {
    let update = Stmt::exec(
        format!(
            "UPDATE {} FORCE INDEX (PRIMARY) SET status = 'pending', error = NULL WHERE id = ? AND status = 'failed'",
            t.run
        ),
        vec![s(run_id)],
    );
    write_then_enqueue(e, t, update, run_id).await
}

/// §3.18 — insert or overwrite the definition, keeping the schedule state.
pub async fn upsert_cron<E: Exec>(e: &mut E, t: &Tables, c: &CronArg) -> Result<String> {
    let sql = format!(
        "INSERT INTO {} (name, schedule, flow_name, flow_version, input, overlap, next_run_at) VALUES (?, ?, ?, ?, ?, ?, ?) \
         ON DUPLICATE KEY UPDATE schedule = VALUES(schedule), flow_name = VALUES(flow_name), flow_version = VALUES(flow_version), \
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
    Ok("null".into())
}

/// §3.19 — due crons, earliest first.
pub async fn due_crons<E: Exec>(e: &mut E, t: &Tables, now: i64, limit: i64) -> Result<String> {
    let out = e
        .batch(
            vec![Stmt::query(
                format!(
                    "SELECT name, schedule, flow_name, flow_version, input, overlap, next_run_at, last_run_at FROM {} WHERE next_run_at <= ? ORDER BY next_run_at LIMIT ?",
                    t.cron
                ),
                vec![i(now), i(limit)],
                CRON_COLS,
            )])
        .await?;
    let mut j = JsonOut::new();
    j.open_arr();
    for r in &out[0].rows {
        j.open_obj();
        j.str_field("name", &r[0]);
        j.str_field("schedule", &r[1]);
        j.str_field("flowName", &r[2]);
        j.num_field("flowVersion", &r[3]);
        j.json_field("input", &r[4]);
        j.str_field("overlap", &r[5]);
        j.num_field("nextRunAt", &r[6]);
        j.num_field("lastRunAt", &r[7]);
        j.close_obj();
    }
    j.close_arr();
    Ok(j.finish())
}

/// §3.20 — compare-and-set on `next_run_at` (found-rows semantics).
pub async fn advance_cron<E: Exec>(
    e: &mut E,
    t: &Tables,
    name: &str,
    expected: i64,
    next: i64,
    last: i64,
) -> Result<String> {
    let out = e
        .batch(vec![Stmt::exec(
            format!(
                "UPDATE {} SET next_run_at = ?, last_run_at = ? WHERE name = ? AND next_run_at = ?",
                t.cron
            ),
            vec![i(next), i(last), s(name), i(expected)],
        )])
        .await?;
    Ok(flag(out[0].affected == 1))
}

#[cfg(test)]
mod tests {
    use super::check_guard;
    use crate::exec::Outcome;
    use mysql_async::Value;

    fn capture(n: Option<i64>) -> Outcome {
        Outcome {
            rows: vec![vec![n.map_or(Value::NULL, Value::Int), Value::Int(1)]],
            ..Outcome::default()
        }
    }

    #[test]
    fn a_guard_that_saw_the_writes_count_passes() {
        assert!(check_guard(1, Some(&capture(Some(1)))).is_ok());
        assert!(check_guard(0, Some(&capture(Some(0)))).is_ok());
    }

    #[test]
    fn a_guard_that_could_not_be_evaluated_aborts_the_unit() {
        // ROW_COUNT() = -1 after a statement whose result could not be delivered.
        let e = check_guard(1, Some(&capture(Some(-1)))).unwrap_err();
        assert!(e.is_transient(), "the unit may be re-run: nothing was committed");
        assert!(check_guard(1, Some(&capture(Some(0)))).is_err());
        assert!(check_guard(1, Some(&capture(None))).is_err());
        assert!(check_guard(1, None).is_err());
    }
}
