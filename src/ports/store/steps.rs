//! Step memos: the first-writer-wins checkpoint with its outbox (fenced by `requireVersion`
//! under 3.0), and a child's arrival at its parent's join.

use super::{first_row, handed_back, shifted};

use crate::error::{Error, Result};
use crate::exec::{Exec, Stmt};
use crate::model::codec::{self, i, int, opt_s, s, JsonOut};
use crate::model::schema::Schema;
use crate::ports::args::{CheckpointArg, OutboxArg};
use crate::ports::statements::{self, guarded_write, Won};
use mysql_async::Value;

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
pub(super) fn memo(t: &Schema, c: &CheckpointArg, row: Option<&Vec<Value>>) -> Result<String> {
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
pub(super) async fn fenced_checkpoint<E: Exec>(
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
pub(super) fn echo_step(t: &Schema, c: &CheckpointArg) -> Result<String> {
    let row = [
        s(&c.status),
        opt_s(c.result.as_deref()),
        opt_s(c.error.as_deref()),
        i(c.attempts),
        opt_s(c.shape.as_deref()),
    ];
    memo(t, c, Some(&row.to_vec()))
}
