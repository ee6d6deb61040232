//! Store port: runs, step memos, signals, crons (behaviour: docs/contract.md, "Store").
//!
//! Every function is generic over `Exec`, so the native pool and a wrapped JS `Sql` share the
//! port logic; where `Exec::one_session` allows it, the native path sends fewer statements (a
//! lookup only when an insert was ignored, a read only when a write matched nothing). Which
//! calls are transactions is decided once, in `backend.rs`. Rows come back as JSON text (see
//! `codec.rs`); scalars as plain values.

use crate::args::{CheckpointArg, CronArg, ListArg, OutboxArg, SpecArg};
use crate::codec::{
    i, int, opt_s, req_int, s, string, JsonOut, StartResult, CRON, RUN, SIGNAL, STEP,
};
use crate::error::{Error, Result};
use crate::exec::{Exec, Outcome, Stmt};
use crate::literal::holes;
use crate::schema::Tables;
use crate::statements::{self, guarded_write, write_then_enqueue, Won};
use mysql_async::Value;

// Status writes by id say `FORCE INDEX (PRIMARY)`: without it the optimizer also weighs the
// `run_status` index for the status condition (range analysis with index dives), measured at
// about 15 µs of server CPU per statement for nothing — the primary key always wins.

/// Terminal statuses as a SQL tuple.
pub const TERMINAL: &str = "('done','failed','canceled')";
const NON_SUCCESS_TERMINAL: &str = "('failed','canceled')";
const RECONCILABLE: &str = "('pending','running','sleeping','retrying')";

fn select_runs(t: &Tables, condition: &str, params: Vec<Value>) -> Stmt {
    Stmt::query(
        format!("SELECT {} FROM {} WHERE {condition}", RUN.select, t.run),
        params,
        RUN.names,
    )
}

fn first_row(outcomes: &[Outcome], idx: usize) -> Option<&Vec<Value>> {
    outcomes.get(idx).and_then(|o| o.rows.first())
}

/// Statements of one `startRun`: keyed ⇒ INSERT IGNORE + lookup, else plain INSERT. In one
/// session the lookup only runs when the insert was ignored (`ROW_COUNT() = 0`), so a new key
/// costs no index read.
fn start_stmts(t: &Tables, run_id: &str, spec: &SpecArg, one_session: bool) -> Vec<Stmt> {
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
fn start_result(run_id: &str, outcomes: &[Outcome]) -> Result<StartResult> {
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
    Ok(StartResult {
        run_id: string(&row[0]).unwrap_or_default(),
        created: false,
        status: string(&row[1]).unwrap_or_default(),
    })
}

/// `startRun`: the insert and the key lookup ride one round trip.
pub async fn start_run<E: Exec>(
    e: &mut E,
    t: &Tables,
    run_id: &str,
    spec: &SpecArg,
) -> Result<StartResult> {
    let stmts = start_stmts(t, run_id, spec, e.one_session());
    let outcomes = e.batch(stmts).await?;
    start_result(run_id, &outcomes)
}

/// `startManyRuns`: all specs in order, in chunks of bounded size (the caller makes it one
/// transaction).
pub async fn start_many_runs<E: Exec>(
    e: &mut E,
    t: &Tables,
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
            results.push(start_result(id, &outcomes[at..at + n])?);
            at += n;
        }
    }
    Ok(results)
}

/// `loadRun`: run, steps and signals in one round trip; `None` when the run is missing.
pub async fn load_run<E: Exec>(e: &mut E, t: &Tables, run_id: &str) -> Result<Option<String>> {
    let stmts = vec![
        select_runs(t, "id = ?", vec![s(run_id)]),
        Stmt::query(
            format!(
                "SELECT cursor_key, {} FROM {} WHERE run_id = ?",
                STEP.select, t.step
            ),
            vec![s(run_id)],
            [&["cursor_key"], STEP.names].concat(),
        ),
        Stmt::query(
            format!(
                "SELECT {} FROM {} WHERE run_id = ? ORDER BY seq",
                SIGNAL.select, t.signal
            ),
            vec![s(run_id)],
            SIGNAL.names,
        ),
    ];
    let out = e.batch(stmts).await?;
    let Some(run) = first_row(&out, 0) else {
        return Ok(None);
    };
    let mut j = JsonOut::new();
    j.open_obj();
    j.key("run");
    RUN.write(&mut j, run);
    j.key("steps");
    j.open_arr();
    for r in &out[1].rows {
        j.open_arr();
        j.str(&string(&r[0]).unwrap_or_default());
        STEP.write(&mut j, &r[1..]);
        j.close_arr();
    }
    j.close_arr();
    j.key("signals");
    j.raw(&SIGNAL.write_all(&out[2].rows));
    j.close_obj();
    Ok(Some(j.finish()))
}

/// `loadRunRow`: one run row, `None` when missing.
pub async fn load_run_row<E: Exec>(e: &mut E, t: &Tables, run_id: &str) -> Result<Option<String>> {
    let out = e
        .batch(vec![select_runs(t, "id = ?", vec![s(run_id)])])
        .await?;
    Ok(first_row(&out, 0).map(|r| {
        let mut j = JsonOut::new();
        RUN.write(&mut j, r);
        j.finish()
    }))
}

/// `loadRunRows`: the rows of `ids`, in any order (JS realigns them to the input order).
pub async fn load_run_rows<E: Exec>(e: &mut E, t: &Tables, ids: &[String]) -> Result<String> {
    if ids.is_empty() {
        return Ok("[]".into());
    }
    let condition = format!("id IN {}", holes(ids.len()));
    let stmt = select_runs(t, &condition, ids.iter().map(|x| s(x)).collect());
    let out = e.batch(vec![stmt]).await?;
    Ok(RUN.write_all(&out[0].rows))
}

/// `arriveAtJoin`: decrement and re-read (the caller makes it one transaction); `None` for an
/// unknown run.
pub async fn arrive_at_join<E: Exec>(e: &mut E, t: &Tables, parent: &str) -> Result<Option<i64>> {
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
        return Ok(None);
    }
    Ok(first_row(&out, 1).and_then(|r| int(&r[0])))
}

/// `postSignal`: store the signal; enqueue the run in the same unit only if it was new.
pub async fn post_signal<E: Exec>(
    e: &mut E,
    t: &Tables,
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

/// `LAST_INSERT_ID()` is unsigned: the new attempt count travels shifted by 2^31, which keeps
/// every INT value (also a negative count someone else wrote) representable and above zero.
const ATTEMPTS_SHIFT: i64 = 1 << 31;

/// `markRunning`: bump attempts unless terminal, without a transaction. The UPDATE is atomic and
/// hands its new `attempts` back through `LAST_INSERT_ID(expr)` in its OK packet, so no other
/// writer can slip in between write and read. Only when it matched nothing (terminal or unknown
/// run) is the current row read — natively as a second round trip, so the common case is one
/// statement.
pub async fn mark_running<E: Exec>(e: &mut E, t: &Tables, run_id: &str) -> Result<i64> {
    let update = Stmt::exec(
        format!(
            "UPDATE {} FORCE INDEX (PRIMARY) SET status = 'running', \
             attempts = CAST(LAST_INSERT_ID(attempts + 1 + {ATTEMPTS_SHIFT}) AS SIGNED) - {ATTEMPTS_SHIFT} \
             WHERE id = ? AND status NOT IN {TERMINAL}",
            t.run
        ),
        vec![s(run_id)],
    );
    let read = Stmt::query(
        format!("SELECT attempts FROM {} WHERE id = ?", t.run),
        vec![s(run_id)],
        &["attempts"],
    );
    let (count, rows) = if e.one_session() {
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
        return Ok(n);
    }
    let row = first_row(&rows, 0)
        .ok_or_else(|| Error::Contract(format!("markRunning: run {run_id} not found")))?;
    req_int(&row[0], "attempts")
}

/// The new attempt count when the markRunning UPDATE (first outcome) bumped the run.
fn bumped(out: &[Outcome]) -> Option<i64> {
    out.first()
        .filter(|o| o.affected == 1 && o.insert_id > 0)
        .and_then(|o| i64::try_from(o.insert_id).ok())
        .map(|shifted| shifted - ATTEMPTS_SHIFT)
}

/// `checkpointStep`: first-writer-wins step insert plus its outbox.
///
/// The insert selects its values FROM the run row, so a missing run inserts nothing. When the
/// insert wins, the stored memo is exactly the one sent (every column was validated to fit), so
/// without an outbox the native path answers from the insert's OK packet alone: one statement,
/// one round trip. Only a lost race (or an unknown run) reads the winner back. With an outbox
/// the read rides in the same batch as the guarded writes.
pub async fn checkpoint_step<E: Exec>(
    e: &mut E,
    t: &Tables,
    c: &CheckpointArg,
    fx: Option<&OutboxArg>,
) -> Result<String> {
    let insert = Stmt::exec(
        format!(
            "INSERT IGNORE INTO {} (run_id, cursor_key, {}) SELECT ?, ?, ?, ?, ?, ?, ? FROM {} WHERE id = ?",
            t.step, STEP.select, t.run
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
                "SELECT {} FROM {} s JOIN {} r ON r.id = s.run_id WHERE s.run_id = ? AND s.cursor_key = ?",
                STEP.select_as("s"),
                t.step,
                t.run
            ),
            vec![s(&c.run_id), s(&c.cursor_key)],
            STEP.names,
        )
    };
    let out = if fx.is_none() && e.one_session() {
        let first = e.batch(vec![insert]).await?;
        if first.first().is_some_and(|o| o.affected == 1) {
            return Ok(echo_step(c));
        }
        e.batch(vec![read()]).await?
    } else {
        let effects = |guarded| {
            fx.map(|fx| statements::outbox(t, fx, guarded))
                .unwrap_or_default()
        };
        guarded_write(e, insert, Won::ExactlyOne, effects, vec![read()])
            .await?
            .1
    };
    // No step row after the insert: the run does not exist (or was deleted meanwhile).
    let row = first_row(&out, out.len().saturating_sub(1))
        .ok_or_else(|| Error::Contract(format!("checkpointStep: run {} not found", c.run_id)))?;
    let mut j = JsonOut::new();
    STEP.write(&mut j, row);
    Ok(j.finish())
}

/// The step memo a winning insert stored, written from the checkpoint itself.
fn echo_step(c: &CheckpointArg) -> String {
    let row = [
        s(&c.status),
        opt_s(c.result.as_deref()),
        opt_s(c.error.as_deref()),
        i(c.attempts),
        opt_s(c.shape.as_deref()),
    ];
    let mut j = JsonOut::new();
    STEP.write(&mut j, &row);
    j.finish()
}

/// A status write whose outbox applies only if it matched (found rows).
async fn status_write<E: Exec>(
    e: &mut E,
    t: &Tables,
    update: Stmt,
    fx: Option<&OutboxArg>,
) -> Result<()> {
    let effects = |guarded| {
        fx.map(|fx| statements::outbox(t, fx, guarded))
            .unwrap_or_default()
    };
    guarded_write(e, update, Won::Any, effects, Vec::new()).await?;
    Ok(())
}

/// `suspendRun`: park a live run; the outbox applies only if the guarded UPDATE matched.
pub async fn suspend_run<E: Exec>(
    e: &mut E,
    t: &Tables,
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

/// `markTerminal`: terminal write guarded only by `status <> 'canceled'`.
pub async fn mark_terminal<E: Exec>(
    e: &mut E,
    t: &Tables,
    run_id: &str,
    status: &str,
    output: Option<&str>,
    error: Option<&str>,
    fx: Option<&OutboxArg>,
) -> Result<()> {
    let update = Stmt::exec(
        format!(
            "UPDATE {} FORCE INDEX (PRIMARY) SET status = ?, output = ?, error = ? WHERE id = ? AND status <> 'canceled'",
            t.run
        ),
        vec![s(status), opt_s(output), opt_s(error), s(run_id)],
    );
    status_write(e, t, update, fx).await
}

/// `listRuns`: newest-inserted first; `{ runs, cursor }` with the cursor (the last row's `seq`)
/// only when the page is full.
pub async fn list_runs<E: Exec>(e: &mut E, t: &Tables, a: &ListArg) -> Result<String> {
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
                "SELECT {}, seq FROM {} {clause} ORDER BY seq DESC LIMIT ?",
                RUN.select, t.run
            ),
            params,
            [RUN.names, &["seq"]].concat(),
        )])
        .await?;
    let rows = &out[0].rows;
    let mut j = JsonOut::new();
    j.open_obj();
    j.key("runs");
    j.raw(&RUN.write_all(rows));
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
pub async fn children_of<E: Exec>(e: &mut E, t: &Tables, run_id: &str) -> Result<String> {
    let out = e
        .batch(vec![select_runs(t, "parent_run_id = ?", vec![s(run_id)])])
        .await?;
    Ok(RUN.write_all(&out[0].rows))
}

/// `runStats`: counts per status present (JS overlays them on all-zero stats).
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

/// `orphanedRuns`: the three orphan cases as one UNION, oldest inserted first.
pub async fn orphaned_runs<E: Exec>(e: &mut E, t: &Tables, limit: i64) -> Result<Vec<String>> {
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
    t: &Tables,
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
    if ids.is_empty() {
        return Ok(0);
    }
    let h = holes(ids.len());
    let delete = |table: &str, key: &str| {
        Stmt::exec(
            format!("DELETE FROM {table} WHERE {key} IN {h}"),
            ids.clone(),
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
    Ok(ids.len() as i64)
}

/// `retryRun`: failed ⇒ pending and enqueue, atomically.
pub async fn retry_run<E: Exec>(e: &mut E, t: &Tables, run_id: &str) -> Result<bool> {
    let update = Stmt::exec(
        format!(
            "UPDATE {} FORCE INDEX (PRIMARY) SET status = 'pending', error = NULL WHERE id = ? AND status = 'failed'",
            t.run
        ),
        vec![s(run_id)],
    );
    write_then_enqueue(e, t, update, run_id).await
}

/// `upsertCron`: insert or overwrite the definition, keeping the schedule state.
pub async fn upsert_cron<E: Exec>(e: &mut E, t: &Tables, c: &CronArg) -> Result<()> {
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
    Ok(())
}

/// `dueCrons`: due crons, earliest first.
pub async fn due_crons<E: Exec>(e: &mut E, t: &Tables, now: i64, limit: i64) -> Result<String> {
    let out = e
        .batch(vec![Stmt::query(
            format!(
                "SELECT {} FROM {} WHERE next_run_at <= ? ORDER BY next_run_at LIMIT ?",
                CRON.select, t.cron
            ),
            vec![i(now), i(limit)],
            CRON.names,
        )])
        .await?;
    Ok(CRON.write_all(&out[0].rows))
}

/// `advanceCron`: compare-and-set on `next_run_at` (found-rows semantics).
pub async fn advance_cron<E: Exec>(
    e: &mut E,
    t: &Tables,
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
