//! Statements shared by the ports — the run insert, the queue and timer upserts, the outbox — and
//! the guarded-write machinery that applies an outbox only when its guarding write won.
//!
//! Natively a guarded unit is one batch: the guard (`@ifw_won = 1`) is captured from the guarding
//! write's row count in the same transaction, so a losing checkpoint or a guarded status write
//! applies nothing; the capture also hands the row count it saw back to the client, which aborts
//! the unit when that is not the count the write reported. On a wrapped `Sql` (statements may
//! run on different sessions) the plain statements follow the write only once it is known to
//! have won — the statements the JavaScript package sends.

use crate::error::{Error, Result};
use crate::exec::{Exec, Outcome, Stmt};
use crate::model::codec::{i, int, opt_s, s};
use crate::model::schema::Schema;
use crate::pool::literal::holes;
use crate::ports::args::{EnqueueArg, OutboxArg, SpawnArg, SpecArg};
use mysql_async::Value;

/// The session variable that carries "the guarding write won" between statements.
pub const WON: &str = "@ifw_won";

/// Captures `@ifw_won := (ROW_COUNT() <op>)` right after the guarding write, and answers the
/// `ROW_COUNT()` it was computed from (one row, one column).
pub fn capture_won(condition: &str) -> Stmt {
    Stmt::query(
        format!("SELECT ROW_COUNT() AS n, {WON} := (ROW_COUNT() {condition}) AS won"),
        vec![],
        &["n", "won"],
    )
}

/// The columns of a new run row; the 3.0 layout adds `priority`.
fn run_cols(t: &Schema) -> &'static str {
    if t.contract.is_v3() {
        "(id, name, version, status, input, idempotency_key, tags, parent_run_id, parent_cursor_key, depth, priority, created_at)"
    } else {
        "(id, name, version, status, input, idempotency_key, tags, parent_run_id, parent_cursor_key, depth, created_at)"
    }
}

/// Parameters of a new `pending` run row, in `run_cols` order after `status`.
fn run_params(t: &Schema, run_id: &str, spec: &SpecArg) -> Vec<Value> {
    let mut p = vec![
        s(run_id),
        s(&spec.name),
        i(spec.version),
        opt_s(spec.input.as_deref()),
        opt_s(spec.idempotency_key.as_deref()),
        opt_s(spec.tags.as_deref()),
        opt_s(spec.parent_run_id.as_deref()),
        opt_s(spec.parent_cursor_key.as_deref()),
        i(spec.depth),
    ];
    if t.contract.is_v3() {
        p.push(i(spec.priority));
    }
    p.push(i(spec.created_at));
    p
}

/// `?` holes for the values of a new run after its literal `'pending'` status.
fn run_holes(t: &Schema) -> &'static str {
    if t.contract.is_v3() {
        "?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?"
    } else {
        "?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?"
    }
}

/// `INSERT [IGNORE] INTO run … VALUES (…)` for a new pending run.
pub fn insert_run(t: &Schema, ignore: bool, run_id: &str, spec: &SpecArg) -> Stmt {
    let verb = if ignore { "INSERT IGNORE" } else { "INSERT" };
    Stmt::exec(
        format!(
            "{verb} INTO {} {} VALUES ({})",
            t.run,
            run_cols(t),
            run_holes(t)
        ),
        run_params(t, run_id, spec),
    )
}

/// One multi-row `INSERT INTO run … VALUES (…), (…)` of new pending runs without an
/// idempotency key (`startManyRuns`): a plain INSERT inserts every row or fails as a whole, as
/// the same rows one statement each would inside the caller's transaction. Sent as text, so
/// that each row count does not leave a prepared statement behind.
pub fn insert_runs(t: &Schema, runs: &[(&str, &SpecArg)]) -> Stmt {
    let row = format!("({})", run_holes(t));
    let rows = vec![row.as_str(); runs.len()].join(", ");
    let params = runs
        .iter()
        .flat_map(|(id, spec)| run_params(t, id, spec))
        .collect();
    Stmt::exec(
        format!("INSERT INTO {} {} VALUES {rows}", t.run, run_cols(t)),
        params,
    )
    .never_prepared()
}

const ENQUEUE_CONFLICT: &str =
    "ON DUPLICATE KEY UPDATE run_at = VALUES(run_at), priority = VALUES(priority), version = version + 1";

/// How many rows one multi-row queue upsert carries at most.
pub const ENQUEUE_ROWS: usize = 1000;

/// One queue upsert request: run, due time, priority (`None` = the default of the contract).
#[derive(Clone, Copy)]
pub struct Enqueue<'a> {
    pub run_id: &'a str,
    pub run_at: i64,
    pub priority: Option<i64>,
}

/// One request per run: in order of first appearance, each holding its run's LAST request
/// (a multi-row upsert naming a run twice would bump its job version twice).
pub fn distinct<'a>(requests: impl IntoIterator<Item = Enqueue<'a>>) -> Vec<Enqueue<'a>> {
    let mut out: Vec<Enqueue<'a>> = Vec::new();
    let mut at = std::collections::HashMap::new();
    for r in requests {
        match at.get(r.run_id) {
            Some(&n) => out[n] = r,
            None => {
                at.insert(r.run_id, out.len());
                out.push(r);
            }
        }
    }
    out
}

/// The priority expression of one request and its parameters: 2.0.0-alpha.2 stores the given
/// priority (0 when absent); 3.0 inherits the run's own priority when none is given.
fn priority_of(t: &Schema, e: &Enqueue) -> (String, Vec<Value>) {
    if !t.contract.is_v3() {
        return ("?".into(), vec![i(e.priority.unwrap_or(0))]);
    }
    match e.priority {
        Some(p) => ("?".into(), vec![i(p)]),
        None => (
            format!("COALESCE((SELECT priority FROM {} WHERE id = ?), 0)", t.run),
            vec![s(e.run_id)],
        ),
    }
}

/// The queue upserts for `requests` (an active lease is never touched; a re-enqueue bumps
/// `version`): one multi-row statement per `ENQUEUE_ROWS` requests, each applied only when the
/// won flag holds if `guarded`. A run named twice is upserted twice, in row order (its version
/// bumped twice), as two calls one after the other would: callers wanting one upsert per run
/// pass `distinct` requests.
pub fn enqueue_many(t: &Schema, requests: &[Enqueue], guarded: bool) -> Vec<Stmt> {
    requests
        .chunks(ENQUEUE_ROWS)
        .map(|chunk| {
            let mut params = Vec::with_capacity(chunk.len() * 3);
            let mut rows = Vec::with_capacity(chunk.len());
            for e in chunk {
                let (priority, mut p) = priority_of(t, e);
                params.push(s(e.run_id));
                params.push(i(e.run_at));
                params.append(&mut p);
                rows.push(priority);
            }
            let text = if guarded && chunk.len() == 1 {
                // One row needs no derived table (which the server materialises): the row is
                // selected from DUAL only when the guard holds, and `version` below, with no
                // column of that name selected, means the job's.
                format!(
                    "INSERT INTO {} (run_id, run_at, priority, version) SELECT ?, ?, {}, 1 FROM DUAL WHERE {WON} = 1 {ENQUEUE_CONFLICT}",
                    t.job, rows[0]
                )
            } else if guarded {
                // A derived table of the rows, kept only when the guard holds; its columns are
                // named apart from the job's so that `version` below means the job's.
                let select = rows
                    .iter()
                    .enumerate()
                    .map(|(n, p)| {
                        if n == 0 {
                            format!("SELECT ? AS q_run, ? AS q_at, {p} AS q_priority")
                        } else {
                            format!("SELECT ?, ?, {p}")
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(" UNION ALL ");
                format!(
                    "INSERT INTO {} (run_id, run_at, priority, version) SELECT q_run, q_at, q_priority, 1 FROM ({select}) q WHERE {WON} = 1 {ENQUEUE_CONFLICT}",
                    t.job
                )
            } else {
                let values = rows
                    .iter()
                    .map(|p| format!("(?, ?, {p}, 1)"))
                    .collect::<Vec<_>>()
                    .join(", ");
                format!(
                    "INSERT INTO {} (run_id, run_at, priority, version) VALUES {values} {ENQUEUE_CONFLICT}",
                    t.job
                )
            };
            Stmt::exec(text, params)
        })
        .collect()
}

/// The queue upsert of one run, unguarded.
pub fn enqueue(t: &Schema, run_id: &str, run_at: i64, priority: Option<i64>) -> Stmt {
    let one = Enqueue {
        run_id,
        run_at,
        priority,
    };
    enqueue_many(t, &[one], false).remove(0)
}

/// The timer upsert (the latest deadline wins), unguarded.
pub fn schedule(t: &Schema, run_id: &str, fire_at: i64) -> Stmt {
    Stmt::exec(
        format!("INSERT INTO {} (run_id, fire_at) VALUES (?, ?) ON DUPLICATE KEY UPDATE fire_at = VALUES(fire_at)", t.timer),
        vec![s(run_id), i(fire_at)],
    )
}

fn spawn_enqueue(sp: &SpawnArg) -> Enqueue<'_> {
    Enqueue {
        run_id: &sp.run_id,
        run_at: sp.run_at,
        priority: sp.priority,
    }
}

fn plain_enqueue(e: &EnqueueArg) -> Enqueue<'_> {
    Enqueue {
        run_id: &e.run_id,
        run_at: e.run_at,
        priority: e.priority,
    }
}

/// All statements of `fx`, in the contract's order. `guarded` adds the won-flag condition to
/// each (one-batch path); unguarded they are exactly the plain statements, sent only after the
/// guarding write is known to have won (wrapped path).
///
/// 2.0.0-alpha.2: each spawn's insert then its enqueue, the enqueues, timers, cancelled timers,
/// consumed signals (deleted), join target. 3.0: all spawn inserts, then ONE combined upsert of
/// the spawns' and the outbox's enqueues (distinct runs), then the same tail, with consumed
/// signals only marked.
pub fn outbox(t: &Schema, fx: &OutboxArg, guarded: bool) -> Vec<Stmt> {
    let (from_dual, and_won) = if guarded {
        (
            format!(" FROM DUAL WHERE {WON} = 1"),
            format!(" AND {WON} = 1"),
        )
    } else {
        (String::new(), String::new())
    };
    let spawn_insert = |sp: &SpawnArg| {
        if guarded {
            Stmt::exec(
                format!(
                    "INSERT IGNORE INTO {} {} SELECT {}{from_dual}",
                    t.run,
                    run_cols(t),
                    run_holes(t)
                ),
                run_params(t, &sp.run_id, &sp.spec),
            )
        } else {
            insert_run(t, true, &sp.run_id, &sp.spec)
        }
    };
    let spawns = fx.spawn.iter().flatten();
    let enqueues = fx.enqueue.iter().flatten();
    let mut out = Vec::new();
    if t.contract.is_v3() {
        out.extend(spawns.clone().map(spawn_insert));
        let all = spawns.map(spawn_enqueue).chain(enqueues.map(plain_enqueue));
        out.extend(enqueue_many(t, &distinct(all), guarded));
    } else {
        for sp in spawns {
            out.push(spawn_insert(sp));
            out.extend(enqueue_many(t, &[spawn_enqueue(sp)], guarded));
        }
        for e in enqueues {
            out.extend(enqueue_many(t, &[plain_enqueue(e)], guarded));
        }
    }
    for tm in fx.timers.iter().flatten() {
        out.push(if guarded {
            Stmt::exec(
                format!(
                    "INSERT INTO {} (run_id, fire_at) SELECT ?, ?{from_dual} ON DUPLICATE KEY UPDATE fire_at = VALUES(fire_at)",
                    t.timer
                ),
                vec![s(&tm.run_id), i(tm.fire_at)],
            )
        } else {
            schedule(t, &tm.run_id, tm.fire_at)
        });
    }
    if let Some(ids) = fx.cancel_timers.as_ref().filter(|v| !v.is_empty()) {
        out.push(Stmt::exec(
            format!(
                "DELETE FROM {} WHERE run_id IN {}{and_won}",
                t.timer,
                holes(ids.len())
            ),
            ids.iter().map(|x| s(x)).collect(),
        ));
    }
    if let Some(ids) = fx.consume_signals.as_ref().filter(|v| !v.is_empty()) {
        let verb = if t.contract.is_v3() {
            format!("UPDATE {} SET consumed = 1", t.signal)
        } else {
            format!("DELETE FROM {}", t.signal)
        };
        out.push(Stmt::exec(
            format!("{verb} WHERE id IN {}{and_won}", holes(ids.len())),
            ids.iter().map(|x| s(x)).collect(),
        ));
    }
    if let Some(j) = &fx.join_target {
        out.push(Stmt::exec(
            format!(
                "UPDATE {} SET join_remaining = ? WHERE id = ?{and_won}",
                t.run
            ),
            vec![i(j.count), s(&j.run_id)],
        ));
    }
    out
}

/// When a guarding write counts as won.
#[derive(Clone, Copy)]
pub enum Won {
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

/// Runs `head` (statements that must come first, e.g. a locking read), `write`, then the
/// statements of `effects` only if the write won, then `tail` (reads that always run), as one
/// unit (see module docs for how each executor does it). `effects(guarded)` builds the
/// statements with or without the SQL guard. Returns whether the write won and the outcomes of
/// `head` and of `tail`.
pub async fn guarded_write<E: Exec>(
    e: &mut E,
    head: Vec<Stmt>,
    write: Stmt,
    won: Won,
    effects: impl FnOnce(bool) -> Vec<Stmt>,
    tail: Vec<Stmt>,
) -> Result<(bool, Vec<Outcome>, Vec<Outcome>)> {
    let (n_head, n_tail) = (head.len(), tail.len());
    if e.one_session() {
        let effects = effects(true);
        let guarded = !effects.is_empty();
        let mut stmts = head;
        stmts.push(write);
        if guarded {
            stmts.push(capture_won(won.sql()));
            stmts.extend(effects);
        }
        stmts.extend(tail);
        let mut out = e.batch(stmts).await?;
        let affected = out.get(n_head).map_or(0, |o| o.affected);
        if guarded {
            check_guard(affected, out.get(n_head + 1))?;
        }
        let tail_out = out.split_off(out.len().saturating_sub(n_tail));
        out.truncate(n_head);
        return Ok((won.holds(affected), out, tail_out));
    }
    let head_out = e.batch(head).await?;
    let first = e.batch(vec![write]).await?;
    let did_win = won.holds(first.first().map_or(0, |o| o.affected));
    if did_win {
        e.batch(effects(false)).await?;
    }
    let tail_out = e.batch(tail).await?;
    Ok((did_win, head_out, tail_out))
}

/// Runs `write` and, in the same unit, enqueues `run_id` only if it changed exactly one row;
/// answers whether it did.
pub async fn write_then_enqueue<E: Exec>(
    e: &mut E,
    t: &Schema,
    write: Stmt,
    run_id: &str,
) -> Result<bool> {
    let (won, _, _) = guarded_write(
        e,
        Vec::new(),
        write,
        Won::ExactlyOne,
        |guarded| {
            let one = Enqueue {
                run_id,
                run_at: 0,
                priority: None,
            };
            enqueue_many(t, &[one], guarded)
        },
        Vec::new(),
    )
    .await?;
    Ok(won)
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
        assert!(
            e.is_transient(),
            "the unit may be re-run: nothing was committed"
        );
        assert!(check_guard(1, Some(&capture(Some(0)))).is_err());
        assert!(check_guard(1, Some(&capture(None))).is_err());
        assert!(check_guard(1, None).is_err());
    }
}
