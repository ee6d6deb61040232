//! A transaction of the user's pool (`sql.tx(fn)` in lib/sql.js): its calls run in the order
//! they were issued, on its one connection, and it commits only when none of them ended it.

use crate::error::{Error, Result};
use crate::exec::{self, PoolHandle};
use crate::node::params::Param;
use crate::node::promise;
use crate::node::rows::UserRows;
use crate::node::sql::{run_bounded, spawn_statement, Outcome, WriteResult};
use crate::node::turns::{Turn, Turns};
use mysql_async::Conn;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use std::sync::Arc;
use tokio::sync::Mutex;

/// One open transaction on one connection; `lib/sql.js` wraps it as the `Sql` given to `tx(fn)`.
///
/// Its calls reach the connection in the order they were issued (`Turns`), whether or not the
/// caller awaited each one before issuing the next. `COMMIT` is sent only after every statement
/// issued before it has finished, and only when none
/// of them ended the transaction (a deadlock or Galera abort rolls the whole transaction back on
/// the server, a lost connection or a timeout leaves it unknown): committing then would store
/// the statements that followed on their own, so `commit()` rolls back and rejects instead.
#[napi]
pub struct NativeTx {
    pub(crate) inner: Arc<TxInner>,
}

pub struct TxInner {
    state: Mutex<TxState>,
    /// The order calls were issued in, which is the order they run in.
    turns: Turns,
    handle: Arc<PoolHandle>,
}

struct TxState {
    /// `None` once the transaction has finished or its connection was discarded.
    conn: Option<Conn>,
    /// The error that ended the transaction early, if one did.
    ended_by: Option<Error>,
    /// Whether a statement was refused because the node can no longer serve this connection
    /// (`Error::node_unfit`: read-only, not synced): the connection is closed when the
    /// transaction ends, not given back to the pool.
    node_unfit: bool,
}

/// A call issued in a transaction: its place in the transaction's queue.
pub struct Issued {
    tx: Arc<TxInner>,
    turn: Turn,
}

impl Issued {
    /// The transaction it was issued in.
    pub fn tx(&self) -> &Arc<TxInner> {
        &self.tx
    }

    /// Runs a backend unit in its turn (see `TxInner::joined`).
    pub async fn joined<T, F>(self, body: F) -> Result<T>
    where
        F: for<'a, 'b> FnOnce(&'a mut exec::NativeExec<'b>) -> exec::BoxFut<'a, T>,
    {
        self.turn.wait().await;
        self.tx.joined(body).await
    }
}

impl TxInner {
    /// The pool this transaction's connection came from.
    pub fn handle(&self) -> Arc<PoolHandle> {
        self.handle.clone()
    }

    /// A call issued now (on the JS thread): it runs after every call issued before it, and the
    /// calls issued after it (`commit()` too) wait until it is done.
    pub fn issue(self: &Arc<Self>) -> Issued {
        Issued {
            tx: self.clone(),
            turn: self.turns.take(),
        }
    }

    /// Runs a backend unit inside this transaction (`inTx`), in its turn (`Issued::joined`): on
    /// its connection, after the calls issued before it, opening with a savepoint. A unit that fails goes back to
    /// its savepoint, so the caller's transaction holds nothing of it and may still commit;
    /// one whose failure ended the transaction (a deadlock, a lost connection) ends it here too.
    async fn joined<T, F>(&self, body: F) -> Result<T>
    where
        F: for<'a, 'b> FnOnce(&'a mut exec::NativeExec<'b>) -> exec::BoxFut<'a, T>,
    {
        let mut st = self.state.lock().await;
        if let Some(e) = &st.ended_by {
            return Err(ended_early(e));
        }
        let c = st.conn.as_mut().ok_or_else(finished)?;
        let mut ex = exec::NativeExec::joined(c, &self.handle);
        let result = body(&mut ex).await;
        let begun = ex.begun();
        if let Err(e) = &result {
            self.after_failure(&mut st, e).await;
            if begun && st.ended_by.is_none() {
                if let Some(c) = st.conn.as_mut() {
                    let undone = exec::finish(&self.handle, c, exec::UNIT_UNDO).await;
                    if let Err(u) = undone {
                        self.after_failure(&mut st, &u).await;
                    }
                }
            }
        }
        result.map_err(|e| self.handle.redact(e))
    }

    /// Records a failure that ended the transaction, discarding a connection it left unusable.
    async fn after_failure(&self, st: &mut TxState, e: &Error) {
        st.node_unfit |= e.node_unfit();
        if let Some(conn) = st.conn.as_ref() {
            self.handle.note(conn, e);
        }
        if e.ends_transaction() {
            st.ended_by = Some(e.clone());
            if e.is_connection() {
                if let Some(conn) = st.conn.take() {
                    exec::discard(conn).await;
                }
            }
        }
    }

    async fn run(&self, turn: Turn, sql: String, params: Vec<Param>) -> Result<Outcome> {
        turn.wait().await;
        let mut st = self.state.lock().await;
        if let Some(e) = &st.ended_by {
            return Err(ended_early(e));
        }
        let c = st.conn.as_mut().ok_or_else(finished)?;
        let result = run_bounded(&self.handle, c, &sql, &params).await;
        if let Err(e) = &result {
            self.after_failure(&mut st, e).await;
        }
        result.map_err(|e| self.handle.redact(e))
    }

    /// Ends the transaction with `want` (`COMMIT` / `ROLLBACK`) in its turn, once the calls
    /// issued before it are done; a transaction an earlier failure ended is rolled back instead,
    /// and a commit of it rejects.
    async fn finish(&self, turn: Turn, want: &str) -> Result<()> {
        turn.wait().await;
        let mut st = self.state.lock().await;
        let ended_by = st.ended_by.take();
        let committing = want == "COMMIT";
        let Some(mut conn) = st.conn.take() else {
            return match ended_by {
                Some(e) if committing => Err(ended_early(&e)),
                Some(_) => Ok(()),
                None => Err(finished()),
            };
        };
        let statement = if ended_by.is_some() { "ROLLBACK" } else { want };
        let result = exec::finish(&self.handle, &mut conn, statement).await;
        if std::mem::take(&mut st.node_unfit) {
            self.handle.take_reset(&conn);
            exec::discard(conn).await;
        } else {
            self.handle.release(conn, &result).await;
        }
        match ended_by {
            Some(e) if committing => Err(ended_early(&e)),
            _ => result.map_err(|e| self.handle.redact(e)),
        }
    }
}

fn finished() -> Error {
    Error::Contract("this transaction has already finished".into())
}

/// The error a later statement or `commit()` gets after `first` ended the transaction: the same
/// kind and codes (a caller retrying on errno 1213 still can), saying nothing was committed.
fn ended_early(first: &Error) -> Error {
    first.clone().map_message(|m| {
        format!("the transaction was rolled back by an earlier failure, nothing was committed: {m}")
    })
}

impl NativeTx {
    /// The transaction begun on `conn` (its `BEGIN` already answered).
    pub(crate) fn open(conn: Conn, handle: Arc<PoolHandle>) -> Self {
        NativeTx {
            inner: Arc::new(TxInner {
                state: Mutex::new(TxState {
                    conn: Some(conn),
                    ended_by: None,
                    node_unfit: false,
                }),
                turns: Turns::default(),
                handle,
            }),
        }
    }

    /// Runs a user statement on this transaction's connection, in the turn it takes when it is
    /// issued (on the JS thread).
    fn runner(
        &self,
    ) -> impl FnOnce(
        String,
        Vec<Param>,
    )
        -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Outcome>> + Send>> {
        let inner = self.inner.clone();
        // Called by `spawn_statement` on the JS thread once the parameters were accepted.
        move |text, params| {
            let turn = inner.turns.take();
            Box::pin(async move { inner.run(turn, text, params).await })
        }
    }

    fn finishing<'env>(
        &self,
        env: &'env Env,
        want: &'static str,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        let inner = self.inner.clone();
        // Taken now, so that it waits for exactly the calls issued before it.
        let turn = inner.turns.take();
        promise::promise(env, async move { inner.finish(turn, want).await })
    }
}

#[napi]
impl NativeTx {
    /// `query` inside the transaction.
    #[napi]
    pub fn query<'env>(
        &self,
        env: &'env Env,
        text: String,
        params: Option<Vec<Unknown>>,
    ) -> napi::Result<PromiseRaw<'env, UserRows>> {
        spawn_statement(env, text, params, self.runner(), |(rows, _)| rows)
    }

    /// `exec` inside the transaction.
    #[napi]
    pub fn exec<'env>(
        &self,
        env: &'env Env,
        text: String,
        params: Option<Vec<Unknown>>,
    ) -> napi::Result<PromiseRaw<'env, WriteResult>> {
        spawn_statement(env, text, params, self.runner(), WriteResult::of)
    }

    /// Commits (after every issued statement has finished) and returns the connection to the
    /// pool; rolls back and rejects when an earlier failure ended the transaction.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn commit<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        self.finishing(env, "COMMIT")
    }

    /// Rolls back and returns the connection to the pool.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn rollback<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        self.finishing(env, "ROLLBACK")
    }
}
