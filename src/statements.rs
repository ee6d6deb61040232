//! Statements shared by the ports — the run insert, the queue and timer upserts, the outbox — and
//! the guarded-write machinery that applies an outbox only when its guarding write won.
//!
//! Natively a guarded unit is one batch: the guard (`@ifw_won = 1`) is captured from the guarding
//! write's row count in the same transaction, so a losing checkpoint or a guarded status write
//! applies nothing; the capture also hands the row count it saw back to the client, which aborts
//! the unit when that is not the count the write reported. On a wrapped `Sql` (statements may
//! run on different sessions) the plain statements follow the write only once it is known to
//! have won — the statements the JavaScript package sends.

use crate::args::{OutboxArg, SpecArg};
use crate::codec::{i, int, opt_s, s};
use crate::error::{Error, Result};
use crate::exec::{Exec, Outcome, Stmt};
use crate::literal::holes;
use crate::schema::Tables;

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

const RUN_COLS: &str = "(id, name, version, status, input, idempotency_key, tags, parent_run_id, parent_cursor_key, depth, created_at)";

/// Parameters of a new `pending` run row, in `RUN_COLS` order after `status`.
pub fn run_params(run_id: &str, spec: &SpecArg) -> Vec<mysql_async::Value> {
    vec![
        s(run_id),
        s(&spec.name),
        i(spec.version),
        opt_s(spec.input.as_deref()),
        opt_s(spec.idempotency_key.as_deref()),
        opt_s(spec.tags.as_deref()),
        opt_s(spec.parent_run_id.as_deref()),
        opt_s(spec.parent_cursor_key.as_deref()),
        i(spec.depth),
        i(spec.created_at),
    ]
}

/// `INSERT [IGNORE] INTO run … VALUES (…)` for a new pending run.
pub fn insert_run(t: &Tables, ignore: bool, run_id: &str, spec: &SpecArg) -> Stmt {
    let verb = if ignore { "INSERT IGNORE" } else { "INSERT" };
    Stmt::exec(
        format!(
            "{verb} INTO {} {RUN_COLS} VALUES (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?)",
            t.run
        ),
        run_params(run_id, spec),
    )
}

const ENQUEUE_CONFLICT: &str =
    "ON DUPLICATE KEY UPDATE run_at = VALUES(run_at), priority = VALUES(priority), version = version + 1";

/// The queue upsert (an active lease is never touched; a re-enqueue bumps `version`), unguarded.
pub fn enqueue(t: &Tables, run_id: &str, run_at: i64, priority: i64) -> Stmt {
    Stmt::exec(
        format!("INSERT INTO {} (run_id, run_at, priority, version) VALUES (?, ?, ?, 1) {ENQUEUE_CONFLICT}", t.job),
        vec![s(run_id), i(run_at), i(priority)],
    )
}

/// The queue upsert, guarded (applied only when the won flag holds) or plain.
pub fn enqueue_guarded(
    t: &Tables,
    run_id: &str,
    run_at: i64,
    priority: i64,
    guarded: bool,
) -> Stmt {
    if !guarded {
        return enqueue(t, run_id, run_at, priority);
    }
    Stmt::exec(
        format!(
            "INSERT INTO {} (run_id, run_at, priority, version) SELECT ?, ?, ?, 1 FROM DUAL WHERE {WON} = 1 {ENQUEUE_CONFLICT}",
            t.job
        ),
        vec![s(run_id), i(run_at), i(priority)],
    )
}

/// The timer upsert (the latest deadline wins), unguarded.
pub fn schedule(t: &Tables, run_id: &str, fire_at: i64) -> Stmt {
    Stmt::exec(
        format!("INSERT INTO {} (run_id, fire_at) VALUES (?, ?) ON DUPLICATE KEY UPDATE fire_at = VALUES(fire_at)", t.timer),
        vec![s(run_id), i(fire_at)],
    )
}

/// All statements of `fx`, in the contract's order (spawns with their enqueues, enqueues,
/// timers, cancelled timers, consumed signals, join target). `guarded` adds the won-flag condition to each
/// (one-batch path); unguarded they are exactly the plain statements, sent only after the
/// guarding write is known to have won (wrapped path).
pub fn outbox(t: &Tables, fx: &OutboxArg, guarded: bool) -> Vec<Stmt> {
    let (from_dual, and_won) = if guarded {
        (
            format!(" FROM DUAL WHERE {WON} = 1"),
            format!(" AND {WON} = 1"),
        )
    } else {
        (String::new(), String::new())
    };
    let mut out = Vec::new();
    for sp in fx.spawn.iter().flatten() {
        out.push(if guarded {
            Stmt::exec(
                format!(
                    "INSERT IGNORE INTO {} {RUN_COLS} SELECT ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?{from_dual}",
                    t.run
                ),
                run_params(&sp.run_id, &sp.spec),
            )
        } else {
            insert_run(t, true, &sp.run_id, &sp.spec)
        });
        out.push(enqueue_guarded(
            t,
            &sp.run_id,
            sp.run_at,
            sp.priority,
            guarded,
        ));
    }
    for e in fx.enqueue.iter().flatten() {
        out.push(enqueue_guarded(t, &e.run_id, e.run_at, e.priority, guarded));
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
        out.push(Stmt::exec(
            format!(
                "DELETE FROM {} WHERE id IN {}{and_won}",
                t.signal,
                holes(ids.len())
            ),
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

/// Runs `write`, then the statements of `effects` only if the write won, then `tail` (reads that
/// always run), as one unit (see module docs for how each executor does it). `effects(guarded)`
/// builds the statements with or without the SQL guard. Returns whether the write won and the
/// outcomes of `tail`.
pub async fn guarded_write<E: Exec>(
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

/// Runs `write` and, in the same unit, enqueues `run_id` only if it changed exactly one row;
/// answers whether it did.
pub async fn write_then_enqueue<E: Exec>(
    e: &mut E,
    t: &Tables,
    write: Stmt,
    run_id: &str,
) -> Result<bool> {
    let (won, _) = guarded_write(
        e,
        write,
        Won::ExactlyOne,
        |guarded| vec![enqueue_guarded(t, run_id, 0, 0, guarded)],
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
