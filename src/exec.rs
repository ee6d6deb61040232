//! Statement executors: the one seam between port logic and a database connection.
//!
//! Port logic builds lists of statements (`Stmt`) and hands them to an `Exec` in batches. The
//! native executor renders a batch into one multi-statement text query — a whole transaction is
//! usually ONE round trip, with `BEGIN` folded into the first batch and `COMMIT` into the last.
//! The wrapped executor (`jsexec.rs`) sends the very same statements one by one through a user's
//! JS `Sql` object.

use crate::error::{Error, Result};
use crate::literal;
use mysql_async::prelude::*;
use mysql_async::{Conn, Pool, Row, Value};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// One SQL statement with positional `?` parameters.
pub struct Stmt {
    pub text: String,
    pub params: Vec<Value>,
    /// Column names in select-list order when the statement returns rows (used by the wrapped
    /// executor to pick values out of row objects); empty for writes.
    pub cols: &'static [&'static str],
}

impl Stmt {
    /// A write (affected-rows matters, no rows come back).
    pub fn exec(text: impl Into<String>, params: Vec<Value>) -> Self {
        Stmt {
            text: text.into(),
            params,
            cols: &[],
        }
    }
    /// A read returning `cols`.
    pub fn query(
        text: impl Into<String>,
        params: Vec<Value>,
        cols: &'static [&'static str],
    ) -> Self {
        Stmt {
            text: text.into(),
            params,
            cols,
        }
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

/// Runs batches of statements. `last` marks the final batch of a unit of work, letting a
/// transactional executor append its `COMMIT` to the same round trip.
pub trait Exec: Send {
    /// Whether consecutive statements of one batch run in the same session even outside a
    /// transaction (true for the native executor; a wrapped JS pool may switch connections),
    /// which lets a statement read `ROW_COUNT()` of the one before it.
    fn one_session(&self) -> bool {
        true
    }

    fn batch(
        &mut self,
        stmts: Vec<Stmt>,
        last: bool,
    ) -> impl Future<Output = Result<Vec<Outcome>>> + Send;
}

/// Shared pool state: the driver pool plus settings and counters.
pub struct PoolHandle {
    pub pool: Pool,
    pub acquire_timeout: Duration,
    pub password: Option<String>,
    /// Transactions retried after a deadlock or lock-wait timeout.
    pub retries: AtomicU64,
    /// Round trips sent by backend executors (for benchmarks and tests).
    pub round_trips: AtomicU64,
    pub max_packet: AtomicU64,
}

/// How many times a transaction is re-run after a deadlock before the error surfaces.
pub const MAX_TX_ATTEMPTS: u32 = 8;

impl PoolHandle {
    /// Checks out a connection, bounded by the acquire timeout.
    pub async fn acquire(&self) -> Result<Conn> {
        let checkout = async {
            let mut conn = self.pool.get_conn().await?;
            if self.max_packet.load(Ordering::Relaxed) == 0 {
                let max: Option<u64> = conn.query_first("SELECT @@max_allowed_packet").await?;
                self.max_packet
                    .store(max.unwrap_or(u64::MAX), Ordering::Relaxed);
            }
            Ok::<Conn, mysql_async::Error>(conn)
        };
        match tokio::time::timeout(self.acquire_timeout, checkout).await {
            Ok(Ok(conn)) => Ok(conn),
            Ok(Err(e)) => Err(self.redact(e.into())),
            Err(_) => Err(Error::Connection(format!(
                "timed out after {} ms waiting for a connection (acquireTimeoutMs)",
                self.acquire_timeout.as_millis()
            ))),
        }
    }

    /// Replaces any occurrence of the password in an error message.
    pub fn redact(&self, e: Error) -> Error {
        let Some(pw) = self.password.as_deref() else {
            return e;
        };
        let clean = |m: String| {
            if m.contains(pw) {
                m.replace(pw, "***")
            } else {
                m
            }
        };
        match e {
            Error::Server {
                code,
                state,
                message,
            } => Error::Server {
                code,
                state,
                message: clean(message),
            },
            Error::Connection(m) => Error::Connection(clean(m)),
            Error::Invalid(m) => Error::Invalid(clean(m)),
            Error::Contract(m) => Error::Contract(clean(m)),
            Error::Js(m) => Error::Js(clean(m)),
        }
    }
}

/// Renders each statement (with the optional `BEGIN`/`COMMIT` around them) into its own text.
fn render(
    prefix: Option<&str>,
    stmts: &[Stmt],
    suffix: Option<&str>,
    mode: literal::Escaping,
) -> Result<Vec<String>> {
    let mut parts = Vec::with_capacity(stmts.len() + 2);
    parts.extend(prefix.map(str::to_string));
    for s in stmts {
        let mut text = String::with_capacity(s.text.len() + 16 * s.params.len());
        literal::interpolate(&s.text, &s.params, &mut text, mode).map_err(Error::Invalid)?;
        parts.push(text);
    }
    parts.extend(suffix.map(str::to_string));
    Ok(parts)
}

/// Groups statement texts into multi-statement packets no larger than `limit` bytes (usually
/// one packet; a large `startManyRuns` may need several). A single statement over the limit is
/// refused before anything is sent.
fn pack(parts: Vec<String>, limit: usize) -> Result<Vec<(String, usize)>> {
    let mut packets: Vec<(String, usize)> = Vec::new();
    for part in parts {
        if part.len() > limit {
            return Err(Error::Invalid(format!(
                "a statement of {} bytes exceeds the server's max_allowed_packet; reduce the size of the values passed",
                part.len()
            )));
        }
        match packets.last_mut() {
            Some((text, count)) if text.len() + 1 + part.len() <= limit => {
                text.push(';');
                text.push_str(&part);
                *count += 1;
            }
            _ => packets.push((part, 1)),
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
pub struct NativeExec<'a> {
    conn: &'a mut Conn,
    handle: &'a PoolHandle,
    in_tx: bool,
    begun: bool,
    committed: bool,
}

impl NativeExec<'_> {
    async fn run_batch(&mut self, stmts: Vec<Stmt>, last: bool) -> Result<Vec<Outcome>> {
        let begin = self.in_tx && !self.begun;
        let commit = self.in_tx && last;
        if stmts.is_empty() && !begin && !commit {
            return Ok(Vec::new());
        }
        let n = stmts.len();
        let mode = literal::escaping_of(self.conn);
        let parts = render(
            begin.then_some("BEGIN"),
            &stmts,
            commit.then_some("COMMIT"),
            mode,
        )?;
        let max = self.handle.max_packet.load(Ordering::Relaxed);
        // Leave room for the packet header and the server's own bookkeeping.
        let limit = if max > 0 {
            max.saturating_sub(1024).min(usize::MAX as u64) as usize
        } else {
            usize::MAX
        };
        let packets = pack(parts, limit)?;
        if begin {
            self.begun = true;
        }
        let mut sets = Vec::with_capacity(n + 2);
        for (text, count) in packets {
            self.handle.round_trips.fetch_add(1, Ordering::Relaxed);
            sets.extend(send(self.conn, text, count).await?);
        }
        if commit {
            self.committed = true;
            sets.pop();
        }
        if begin && !sets.is_empty() {
            sets.remove(0);
        }
        if sets.len() != n {
            return Err(Error::Connection(format!(
                "expected {n} results, got {}",
                sets.len()
            )));
        }
        Ok(sets)
    }
}

impl Exec for NativeExec<'_> {
    fn batch(
        &mut self,
        stmts: Vec<Stmt>,
        last: bool,
    ) -> impl Future<Output = Result<Vec<Outcome>>> + Send {
        self.run_batch(stmts, last)
    }
}

/// Boxed future type for transaction bodies.
pub type BoxFut<'a, T> = std::pin::Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// Runs `body` on one connection without a transaction (autocommit statements).
pub async fn autocommit<T, F>(handle: &Arc<PoolHandle>, body: F) -> Result<T>
where
    F: for<'a, 'b> FnOnce(&'a mut NativeExec<'b>) -> BoxFut<'a, T>,
{
    let mut conn = handle.acquire().await?;
    let mut exec = NativeExec {
        conn: &mut conn,
        handle,
        in_tx: false,
        begun: false,
        committed: false,
    };
    let out = body(&mut exec).await;
    out.map_err(|e| handle.redact(e))
}

/// Runs `body` as one READ COMMITTED transaction, re-running it after deadlocks (bounded).
/// `BEGIN` rides on the body's first batch and `COMMIT` on its last, so a body that sends one
/// batch marked `last` costs exactly one round trip.
pub async fn transaction<T, F>(handle: &Arc<PoolHandle>, mut body: F) -> Result<T>
where
    F: for<'a, 'b> FnMut(&'a mut NativeExec<'b>) -> BoxFut<'a, T>,
{
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut conn = handle.acquire().await?;
        let result = {
            let mut exec = NativeExec {
                conn: &mut conn,
                handle,
                in_tx: true,
                begun: false,
                committed: false,
            };
            let r = body(&mut exec).await;
            let (begun, committed) = (exec.begun, exec.committed);
            match r {
                Ok(v) if committed || !begun => Ok(v),
                Ok(v) => {
                    handle.round_trips.fetch_add(1, Ordering::Relaxed);
                    conn.query_drop("COMMIT")
                        .await
                        .map(|_| v)
                        .map_err(Error::from)
                }
                Err(e) => {
                    if begun {
                        handle.round_trips.fetch_add(1, Ordering::Relaxed);
                        // A failed rollback means a broken connection; the pool discards it.
                        let _ = conn.query_drop("ROLLBACK").await;
                    }
                    Err(e)
                }
            }
        };
        match result {
            Err(e) if e.is_transient() && attempt < MAX_TX_ATTEMPTS => {
                handle.retries.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(u64::from(attempt) * 2)).await;
            }
            other => return other.map_err(|e| handle.redact(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::pack;

    #[test]
    fn packs_statements_under_the_limit() {
        let parts = vec!["aaaa".to_string(), "bb".to_string(), "cccc".to_string()];
        let packets = pack(parts, 8).unwrap();
        assert_eq!(
            packets,
            vec![("aaaa;bb".to_string(), 2), ("cccc".to_string(), 1)]
        );
        assert!(pack(vec!["x".repeat(9)], 8).is_err());
    }
}
