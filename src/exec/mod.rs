//! Statement executors: the one seam between port logic and a database connection.
//!
//! Port logic builds lists of statements (`Stmt`) and hands them to an `Exec` in batches. The
//! native executor renders a batch into one multi-statement text query (one round trip), with
//! `BEGIN` folded into a transaction's first batch and `COMMIT` sent on its own once every
//! statement was seen to succeed. The wrapped executor (`wrapped.rs`) sends statements one by one
//! through a user's JS `Sql` object. The pool the native one runs on — round-trip bounds, the
//! session killer — is `handle.rs`; a checkout, and the choice of host when there are several,
//! `acquire.rs`.

mod acquire;
mod handle;
pub(crate) mod wrapped;

pub use handle::{discard, tagged, PoolHandle};

use crate::error::{Error, Result};
use crate::observe::trace;
use crate::pool::charset;
use crate::pool::group;
use crate::pool::literal;
use mysql_async::prelude::*;
use mysql_async::{Conn, Row, Value};
use std::borrow::Cow;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// One SQL statement with positional `?` parameters.
pub struct Stmt {
    pub text: String,
    pub params: Vec<Value>,
    /// Column names in select-list order when the statement returns rows (used by the wrapped
    /// executor to pick values out of row objects); empty for writes.
    pub cols: Cow<'static, [&'static str]>,
    /// Sent as text even alone: a statement whose shape varies from call to call (a coalesced
    /// multi-row upsert of any number of rows) would only fill the prepared-statement cache.
    pub text_only: bool,
}

impl Stmt {
    /// A write (affected-rows matters, no rows come back).
    pub fn exec(text: impl Into<String>, params: Vec<Value>) -> Self {
        Stmt {
            text: text.into(),
            params,
            cols: Cow::Borrowed(&[]),
            text_only: false,
        }
    }
    /// A read returning `cols`.
    pub fn query(
        text: impl Into<String>,
        params: Vec<Value>,
        cols: impl Into<Cow<'static, [&'static str]>>,
    ) -> Self {
        Stmt {
            text: text.into(),
            params,
            cols: cols.into(),
            text_only: false,
        }
    }

    /// The same statement, never prepared (see `text_only`).
    pub fn never_prepared(mut self) -> Self {
        self.text_only = true;
        self
    }
}

/// What one statement produced.
#[derive(Default, Debug)]
pub struct Outcome {
    pub rows: Vec<Vec<Value>>,
    pub affected: u64,
    /// The OK packet's last-insert id (also set by `LAST_INSERT_ID(expr)` in an UPDATE).
    pub insert_id: u64,
}

/// Runs batches of statements; each batch is one round trip on the native executor.
pub trait Exec: Send {
    /// Whether consecutive statements of one batch run in the same session even outside a
    /// transaction (true for the native executor; a wrapped JS pool may switch connections),
    /// which lets a statement read `ROW_COUNT()` of the one before it.
    fn one_session(&self) -> bool {
        true
    }

    /// Whether the unit runs inside a caller's transaction, on the session the caller's own
    /// statements use (`inTx`): it must then leave that session's state — `LAST_INSERT_ID()` —
    /// as the caller's last statement left it.
    fn in_callers_session(&self) -> bool {
        false
    }

    /// Whether a result column that merges several tables' columns (`UNION ALL`) still reads
    /// as each table's own: true natively, where a cell arrives as bytes or as an integer and the
    /// row codec takes either; a wrapped JS driver converts each cell by the merged column's
    /// type instead.
    fn reads_merged_columns(&self) -> bool {
        true
    }

    fn batch(&mut self, stmts: Vec<Stmt>) -> impl Future<Output = Result<Vec<Outcome>>> + Send;

    /// Like `batch`, but before the unit's transaction opens (an autocommit read that may show
    /// the unit has nothing to do, so it never opens one). Only valid as the first batch.
    fn batch_before_tx(
        &mut self,
        stmts: Vec<Stmt>,
    ) -> impl Future<Output = Result<Vec<Outcome>>> + Send;
}

/// How many times a unit of work is run at least before a transient error surfaces.
pub const MIN_TX_ATTEMPTS: u32 = 8;

/// How long since its first attempt a unit still runs again after a transient error, past
/// `MIN_TX_ATTEMPTS`: on a multi-primary group or a Galera cluster, writers on every member race
/// for the rows at the head of the queue, and while a member dies the conflicts come in a burst
/// that eight attempts (under a second) did not outlast — the caller then saw a conflict that a
/// later attempt would have cured.
pub const CONFLICT_BUDGET: Duration = Duration::from_secs(5);

/// Whether a unit whose `attempt`-th run failed transiently, first run at `started`, runs again.
fn may_rerun(attempt: u32, started: std::time::Instant) -> bool {
    attempt < MIN_TX_ATTEMPTS || started.elapsed() < CONFLICT_BUDGET
}

/// Renders each statement (with an optional opening `BEGIN` / savepoint) into its own text.
fn render(prefix: Option<&str>, stmts: &[Stmt]) -> Result<Vec<String>> {
    let mut parts = Vec::with_capacity(stmts.len() + 1);
    parts.extend(prefix.map(str::to_string));
    for s in stmts {
        let mut text = String::with_capacity(s.text.len() + 16 * s.params.len());
        literal::render(&s.text, &s.params, &mut text).map_err(Error::Invalid)?;
        parts.push(text);
    }
    Ok(parts)
}

/// The largest packet to send: the server's `max_allowed_packet`, less room for the packet
/// header and the server's own bookkeeping.
pub fn packet_limit(handle: &PoolHandle) -> usize {
    let max = handle.max_packet.load(Ordering::Relaxed);
    if max > 0 {
        max.saturating_sub(1024).min(usize::MAX as u64) as usize
    } else {
        usize::MAX
    }
}

/// Refuses, before anything is sent, a statement whose text (with its `tag`) is over `limit`
/// bytes: its values would not fit in a packet either as text or prepared, and the server
/// would close the connection on it. The caller's values are too large — an argument error.
pub fn fits(parts: &[String], tag: &str, limit: usize) -> Result<()> {
    match parts.iter().find(|p| p.len() + tag.len() > limit) {
        Some(part) => Err(Error::Range(format!(
            "a statement of {} bytes exceeds the server's max_allowed_packet ({} bytes); reduce the size of the values passed",
            part.len(),
            limit.saturating_add(1024)
        ))),
        None => Ok(()),
    }
}

/// Groups statement texts, each starting with `tag`, into multi-statement packets no larger
/// than `limit` bytes (usually one packet; a large `startManyRuns` may need several). A single
/// statement over the limit is refused before anything is sent.
fn pack(parts: Vec<String>, tag: &str, limit: usize) -> Result<Vec<(String, usize)>> {
    fits(&parts, tag, limit)?;
    let mut packets: Vec<(String, usize)> = Vec::new();
    for part in parts {
        match packets.last_mut() {
            Some((text, count)) if text.len() + 1 + tag.len() + part.len() <= limit => {
                text.push(';');
                text.push_str(tag);
                text.push_str(&part);
                *count += 1;
            }
            _ => packets.push((tagged(tag, &part), 1)),
        }
    }
    Ok(packets)
}

/// Sends one multi-statement text and collects exactly `expect` result sets in order.
///
/// The OK packet of a row-less statement is read while the previous set is being finished, so
/// its affected-rows count is taken before `collect` moves on to the next set.
async fn send(conn: &mut Conn, text: String, expect: usize) -> Result<Vec<Outcome>> {
    let mut result = conn.query_iter(text).await?;
    let mut out = Vec::with_capacity(expect);
    for _ in 0..expect {
        if let Some(cols) = result.columns() {
            charset::check_columns(&cols)?;
        }
        let affected = result.affected_rows();
        let insert_id = result.last_insert_id().unwrap_or(0);
        let rows: Vec<Row> = result.collect().await?;
        out.push(Outcome {
            rows: rows.into_iter().map(Row::unwrap).collect(),
            affected,
            insert_id,
        });
    }
    drop(result);
    Ok(out)
}

/// Native executor over one pooled connection, optionally inside a transaction.
///
/// Inside a transaction `BEGIN` rides on the first batch, but `COMMIT` never rides on any:
/// `transaction` sends it alone, only after every batch was seen to succeed. A COMMIT folded
/// into the writes' packet would be executed by the server even when the client never sees the
/// results (a reset connection, a killed worker), and on Galera a certification abort inside
/// such a packet was reported as success.
pub struct NativeExec<'a> {
    conn: &'a mut Conn,
    handle: &'a Arc<PoolHandle>,
    /// What the first batch opens with: `BEGIN` for a transaction, a savepoint for a unit joined
    /// to a caller's transaction (`inTx`), nothing for autocommit statements.
    opening: Option<&'static str>,
    /// Whether `opening` was sent.
    begun: bool,
}

/// The savepoint a unit joined to a caller's transaction starts with, and how a failing unit
/// goes back to it, so that it leaves nothing of itself behind in that transaction.
pub const UNIT_SAVEPOINT: &str = "SAVEPOINT ifw_unit";
pub const UNIT_UNDO: &str = "ROLLBACK TO SAVEPOINT ifw_unit";

impl<'a> NativeExec<'a> {
    /// An executor for a unit joined to the transaction open on `conn` (see `opening`).
    pub fn joined(conn: &'a mut Conn, handle: &'a Arc<PoolHandle>) -> Self {
        NativeExec {
            conn,
            handle,
            opening: Some(UNIT_SAVEPOINT),
            begun: false,
        }
    }

    /// Whether the opening statement (BEGIN or the savepoint) went to the server.
    pub fn begun(&self) -> bool {
        self.begun
    }
}

impl NativeExec<'_> {
    async fn run_batch(&mut self, stmts: Vec<Stmt>) -> Result<Vec<Outcome>> {
        if stmts.is_empty() {
            return Ok(Vec::new());
        }
        let begin = self.opening.is_some() && !self.begun;
        let n = stmts.len();
        let parts = render(self.opening.filter(|_| begin), &stmts)?;
        let limit = packet_limit(self.handle);
        // Only outside transactions: a transaction's statements stay one text stream, so that
        // each of its round trips is what the fault tests (and the process list) see.
        if self.opening.is_none() && self.handle.prepared && one_statement(&stmts) {
            fits(&parts, &self.handle.tags.connection(self.conn.id()), limit)?;
            if let Some(stmt) = stmts.into_iter().next() {
                return self.execute(stmt, parts).await;
            }
            return Ok(Vec::new());
        }
        let id = self.conn.id();
        let tag = self.handle.tags.round_trip(id);
        // Placeholder texts for a traced call, in packet order (the opening statement first).
        let mut texts = trace::active().then(|| {
            self.opening
                .filter(|_| begin)
                .map(str::to_string)
                .into_iter()
                .chain(stmts.iter().map(|s| s.text.clone()))
                .collect::<Vec<_>>()
                .into_iter()
        });
        let packets = pack(parts, &tag, limit)?;
        if begin {
            self.begun = true;
        }
        self.handle
            .metrics
            .statements
            .fetch_add(n as u64, Ordering::Relaxed);
        let mut sets = Vec::with_capacity(n + 1);
        for (text, count) in packets {
            self.handle.round_trips.fetch_add(1, Ordering::Relaxed);
            let round_trip = send(self.conn, text, count);
            let started = trace::start();
            let sent = self.handle.bounded(id, &tag, round_trip).await;
            let carried = texts
                .as_mut()
                .map(|t| t.by_ref().take(count).collect::<Vec<_>>());
            trace::round_trip(started, carried.into_iter().flatten(), false, &sent);
            sets.extend(sent?);
        }
        if begin && !sets.is_empty() {
            sets.remove(0);
        }
        if sets.len() != n {
            return Err(Error::connection(format!(
                "expected {n} results, got {}",
                sets.len()
            )));
        }
        Ok(sets)
    }

    /// Runs one statement as a prepared statement (binary protocol): the server skips parsing
    /// it, about a fifth of a point write's cost. The connection caches the handle (prepared on
    /// first use), so later executions are one round trip. Rows come back typed (integers as
    /// integers, text and JSON as bytes), which the row codec reads as it reads text rows.
    /// `rendered` (the same statement as text) is sent instead when the server refuses to
    /// prepare it because the server-wide `max_prepared_stmt_count` is used up (by anyone):
    /// the text path needs no server-side statement.
    async fn execute(&mut self, stmt: Stmt, rendered: Vec<String>) -> Result<Vec<Outcome>> {
        let id = self.conn.id();
        self.handle
            .metrics
            .statements
            .fetch_add(1, Ordering::Relaxed);
        self.handle.round_trips.fetch_add(1, Ordering::Relaxed);
        let tag = self.handle.tags.connection(id);
        let text = tagged(&tag, &stmt.text);
        let handle = self.handle;
        let started = trace::start();
        let traced = started.map(|_| stmt.text.clone());
        let conn = &mut *self.conn;
        let fallback_tag = tag.as_str();
        let round_trip = async move {
            let prepared = conn
                .exec_iter(text.as_str(), mysql_async::Params::Positional(stmt.params))
                .await;
            let mut result = match prepared {
                Err(e) if is_out_of_statements(&e) => {
                    handle.prepared_fallbacks.fetch_add(1, Ordering::Relaxed);
                    handle.round_trips.fetch_add(1, Ordering::Relaxed);
                    let text = rendered.concat();
                    return send(conn, tagged(fallback_tag, &text), 1).await;
                }
                other => other?,
            };
            if let Some(cols) = result.columns() {
                charset::check_columns(&cols)?;
            }
            let affected = result.affected_rows();
            let insert_id = result.last_insert_id().unwrap_or(0);
            let rows: Vec<Row> = result.collect().await?;
            drop(result);
            Ok(vec![Outcome {
                rows: rows.into_iter().map(Row::unwrap).collect(),
                affected,
                insert_id,
            }])
        };
        let sent = self.handle.bounded(id, &tag, round_trip).await;
        trace::round_trip(started, traced, true, &sent);
        sent
    }
}

/// The server's "Can't create more than max_prepared_stmt_count statements" (1461): nothing
/// was executed, and the connection is fine.
fn is_out_of_statements(e: &mysql_async::Error) -> bool {
    matches!(e, mysql_async::Error::Server(s) if s.code == 1461)
}

/// Whether a batch is one statement, which `NativeExec::execute` sends prepared; batches of
/// several statements stay one multi-statement text round trip.
fn one_statement(stmts: &[Stmt]) -> bool {
    stmts.len() == 1 && !stmts[0].text_only
}

impl Exec for NativeExec<'_> {
    fn in_callers_session(&self) -> bool {
        self.opening == Some(UNIT_SAVEPOINT)
    }

    fn batch(&mut self, stmts: Vec<Stmt>) -> impl Future<Output = Result<Vec<Outcome>>> + Send {
        self.run_batch(stmts)
    }

    async fn batch_before_tx(&mut self, stmts: Vec<Stmt>) -> Result<Vec<Outcome>> {
        let opening = self.opening.take();
        let out = self.run_batch(stmts).await;
        self.opening = opening;
        out
    }
}

/// Whether a unit of work runs as one transaction or as autocommit statements: decided once per
/// port method (`backend.rs`), honoured by both executors (`run` here, `wrapped::run`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Autocommit,
    Transaction,
}

impl Mode {
    /// A transaction exactly when `cond` holds (an outbox to apply with its guarding write).
    pub fn transaction_if(cond: bool) -> Mode {
        if cond {
            Mode::Transaction
        } else {
            Mode::Autocommit
        }
    }
}

/// Runs `body` on one pooled connection in `mode`, re-running it after deadlocks, certification
/// failures and aborts (bounded). Autocommit bodies are safe to re-run: a statement that fails with a deadlock was not
/// applied, and the statements before it in the body are idempotent reads or writes. In a
/// transaction `BEGIN` rides on the body's first batch, and `COMMIT` follows as its own round
/// trip once every statement was seen to succeed, so a body of one batch costs two round trips.
pub async fn run<T, F>(handle: &Arc<PoolHandle>, mode: Mode, mut body: F) -> Result<T>
where
    F: for<'a, 'b> FnMut(&'a mut NativeExec<'b>) -> BoxFut<'a, T>,
{
    let opening = match mode {
        Mode::Autocommit => None,
        Mode::Transaction => Some("BEGIN"),
    };
    let mut attempt = 0;
    let started = std::time::Instant::now();
    loop {
        attempt += 1;
        let mut conn = handle.acquire().await?;
        let mut exec = NativeExec {
            conn: &mut conn,
            handle,
            opening,
            begun: false,
        };
        let result = body(&mut exec).await;
        let begun = exec.begun;
        let result = match result {
            Ok(v) if begun => finish(handle, &mut conn, "COMMIT").await.map(|_| v),
            Ok(v) => Ok(v),
            Err(e) => {
                if begun && !e.is_connection() {
                    // A failed rollback means a broken connection; the pool discards it.
                    let _ = finish(handle, &mut conn, "ROLLBACK").await;
                }
                Err(e)
            }
        };
        // A certification failure is a rollback on every member only if the member that
        // answered is still in its group; one that has just left it answers its waiting commits
        // the same way, and the group may have committed them: then the unit must not run again.
        let left_group = match &result {
            Err(e) if e.is_certification_failure() => !group::still_member(&mut conn).await,
            _ => false,
        };
        if left_group {
            if let Some(node) = handle.hosts.node_of(&conn).filter(|_| handle.hosts.multi()) {
                node.set_aside(
                    "a Group Replication member that left its group during a commit".into(),
                    None,
                );
            }
            discard(conn).await;
        } else {
            handle.release(conn, &result).await;
        }
        match result {
            // Not a conflict: the group may have taken the commit, so the caller learns that
            // the outcome is unknown, as after a connection lost at COMMIT.
            Err(_) if left_group => {
                return Err(Error::connection(
                    "the Group Replication member left its group during COMMIT: the unit's \
                     outcome is unknown (it may have been committed)",
                ))
            }
            Err(e) if e.is_transient() && may_rerun(attempt, started) => {
                backoff(handle, attempt).await
            }
            // A node that refuses every write (read-only, not synced) applied nothing of the
            // unit: with another host to go to, the whole unit runs again there.
            Err(e) if e.node_unfit() && handle.hosts.multi() && may_rerun(attempt, started) => {
                backoff(handle, attempt).await
            }
            other => return other.map_err(|e| handle.redact(e)),
        }
    }
}

/// Boxed future type for unit bodies.
pub type BoxFut<'a, T> = std::pin::Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// Sends one transaction-control statement (`BEGIN`, `COMMIT`, `ROLLBACK`, a savepoint's),
/// tagged and bounded like every round trip.
pub async fn finish(handle: &Arc<PoolHandle>, conn: &mut Conn, statement: &str) -> Result<()> {
    handle.round_trips.fetch_add(1, Ordering::Relaxed);
    let id = conn.id();
    let tag = handle.tags.round_trip(id);
    let text = tagged(&tag, statement);
    let sent = async { conn.query_drop(text).await.map_err(Error::from) };
    let started = trace::start();
    let done = handle.bounded(id, &tag, sent).await;
    trace::round_trip(started, [statement.to_string()], false, &done);
    done
}

/// Counts a re-run and waits a random time, up to twice as long each attempt (capped), so that
/// contenders spread out instead of colliding again in step — on Galera, writers on every node
/// race for the same rows at the head of the queue.
async fn backoff(handle: &PoolHandle, attempt: u32) {
    handle.retries.fetch_add(1, Ordering::Relaxed);
    let ceiling = (2u64 << attempt.min(6)).min(MAX_BACKOFF_MS);
    let jitter = (uuid::Uuid::new_v4().as_u128() % u128::from(ceiling)) as u64;
    let started = trace::start();
    tokio::time::sleep(Duration::from_millis(1 + jitter)).await;
    trace::step("retry", started, &Ok::<(), Error>(()));
}

/// The longest wait between two attempts of a unit, ms.
const MAX_BACKOFF_MS: u64 = 100;

#[cfg(test)]
mod tests {
    use super::pack;

    #[test]
    fn packs_statements_under_the_limit() {
        let parts = vec!["aaaa".to_string(), "bb".to_string(), "cccc".to_string()];
        let packets = pack(parts, "", 8).unwrap();
        assert_eq!(
            packets,
            vec![("aaaa;bb".to_string(), 2), ("cccc".to_string(), 1)]
        );
        assert!(pack(vec!["x".repeat(9)], "", 8).is_err());
        let tagged = pack(vec!["a".into(), "b".into(), "c".into()], "/**/", 11).unwrap();
        assert_eq!(
            tagged,
            vec![("/**/a;/**/b".to_string(), 2), ("/**/c".to_string(), 1)]
        );
    }
}
