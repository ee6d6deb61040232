//! Outbox statements (CONTRACT §7), each guarded by a SQL condition so the whole unit can be sent
//! in one batch: the guard (`@ifw_won = 1`) is set from the guarding write's row count in the same
//! transaction, so a losing checkpoint or a guarded status write applies nothing. The capture
//! also hands the row count it saw back to the client, which aborts the unit when that is not
//! the count the write reported (see `store::guarded_write`).

use crate::args::{OutboxArg, SpecArg};
use crate::codec::{i, opt_s, s};
use crate::exec::Stmt;
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

/// The queue upsert (§4.1), unguarded.
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

/// The timer upsert (§5), unguarded.
pub fn schedule(t: &Tables, run_id: &str, fire_at: i64) -> Stmt {
    Stmt::exec(
        format!("INSERT INTO {} (run_id, fire_at) VALUES (?, ?) ON DUPLICATE KEY UPDATE fire_at = VALUES(fire_at)", t.timer),
        vec![s(run_id), i(fire_at)],
    )
}

/// All statements of `fx`, in the contract's order. `guarded` adds the won-flag condition to each
/// (one-batch path); unguarded they are exactly the plain statements, sent only after the
/// guarding write is known to have won (wrapped path).
pub fn statements(t: &Tables, fx: &OutboxArg, guarded: bool) -> Vec<Stmt> {
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
