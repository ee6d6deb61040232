//! The user-facing native `Sql`: a pool with `query`, `exec`, transactions and `close`.
//!
//! User statements go over the text protocol with client-side parameter rendering, the same
//! model as mysql2's `pool.query` (which the JavaScript package used), so any statement —
//! DDL, multi-statement text, `SHOW` — works and values look the same.

use crate::error::{Error, Result};
use crate::exec::{self, PoolHandle};
use crate::node::params::{self, Param};
use crate::node::promise;
use crate::node::rows::UserRows;
use crate::node::turns::{Turn, Turns};
use crate::pool::charset;
use crate::pool::config::{self, PoolConfig};
use crate::pool::hosts::Hosts;
use crate::pool::literal;
use crate::pool::session;
use mysql_async::prelude::*;
use mysql_async::{Conn, Row};
use napi::bindgen_prelude::*;
use napi_derive::napi;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::Mutex;

/// `{ affectedRows, insertId }` of a write, with found-rows semantics (as mysql2); both keys
/// present but `undefined` for a statement that returned rows (mysql2 answers rows there, which
/// have neither).
pub struct WriteResult {
    pub affected_rows: Option<f64>,
    pub insert_id: Option<f64>,
}

impl TypeName for WriteResult {
    fn type_name() -> &'static str {
        "WriteResult"
    }
    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ToNapiValue for WriteResult {
    unsafe fn to_napi_value(
        env: napi::sys::napi_env,
        val: Self,
    ) -> napi::Result<napi::sys::napi_value> {
        let mut obj = std::ptr::null_mut();
        check_status!(napi::sys::napi_create_object(env, &mut obj))?;
        for (key, v) in [
            (c"affectedRows", val.affected_rows),
            (c"insertId", val.insert_id),
        ] {
            let value = match v {
                Some(n) => f64::to_napi_value(env, n)?,
                None => Undefined::to_napi_value(env, ())?,
            };
            check_status!(napi::sys::napi_set_named_property(
                env,
                obj,
                key.as_ptr(),
                value
            ))?;
        }
        Ok(obj)
    }
}

/// Counters for benchmarks, diagnostics and monitoring (`sql.stats()`).
#[napi(object)]
pub struct PoolStats {
    /// Round trips sent by the backend's executors.
    pub round_trips: f64,
    /// Units re-run after a deadlock, lock-wait timeout or Galera certification failure.
    pub deadlock_retries: f64,
    /// Statements sent by the backend's executors.
    pub statements: f64,
    /// Single statements sent as text instead of prepared because the server's
    /// `max_prepared_stmt_count` was used up (ER 1461).
    pub prepared_fallbacks: f64,
    /// `enqueue` calls sent together (issue #23, `node/coalesce.rs`).
    pub coalesced: CoalescedStats,
    /// Connections: open, idle in the pool, in use, and calls waiting for one.
    pub pool: ConnectionStats,
    /// Each host of the pool, in list order, with its state.
    pub hosts: Vec<HostStats>,
    /// Per port method called at least once: `{ calls, errors: { argument, server, connection,
    /// contract }, p50Ms, p90Ms, p99Ms }`.
    pub methods: serde_json::Value,
}

/// `enqueue` calls that arrived together and went as multi-row statements.
#[napi(object)]
pub struct CoalescedStats {
    /// Multi-row statements sent for calls that arrived while others were in flight.
    pub batches: f64,
    /// The calls those statements carried.
    pub calls: f64,
    /// Of those, calls sent again one by one because the server refused their batch.
    pub resent: f64,
}

/// One host of the pool right now: `healthy`, or `aside` (set aside after `reason`, tried
/// again after a backoff); `since` is when it entered that state (ms since the epoch).
#[napi(object)]
pub struct HostStats {
    pub host: String,
    pub port: f64,
    pub state: String,
    pub reason: Option<String>,
    pub since: f64,
}

/// The pool's connections right now.
#[napi(object)]
pub struct ConnectionStats {
    pub open: f64,
    pub idle: f64,
    pub in_use: f64,
    pub waiters: f64,
}

/// A native connection pool (see module docs).
#[napi]
pub struct NativeSql {
    pub(crate) handle: Arc<PoolHandle>,
    /// The doorbell's park connection, outside the pool (`node::bell`).
    pub(crate) parker: Arc<crate::node::bell::ParkConn>,
    closed: Arc<AtomicBool>,
    describe: String,
}

pub(crate) fn convert_params(params: Option<Vec<Unknown>>) -> Result<Vec<Param>> {
    let mut budget = params::MAX_VALUES;
    params
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(i, p)| params::convert(p, &format!("params[{i}]"), 0, &mut budget))
        .collect()
}

/// `sql` with its parameters rendered as literals: hex for strings that are not plain ASCII
/// (the same in every session state), or quoted for `conn`'s state read just now where the
/// statement may need plain quoted strings (see `pool::literal`).
async fn render(
    handle: &Arc<PoolHandle>,
    conn: &mut Conn,
    sql: &str,
    params: &[Param],
) -> Result<String> {
    let strings = if literal::plain_strings_needed(sql, params) {
        literal::Strings::QuotedFor(session_reading(handle, conn).await?)
    } else {
        literal::Strings::Hex
    };
    let mut text = String::with_capacity(sql.len() + 16 * params.len());
    literal::render_with(sql, params, &mut text, strings).map_err(Error::Invalid)?;
    Ok(text)
}

/// One small statement of ours about `conn`'s session (its first row, if any), tagged and bounded
/// like every round trip.
async fn session_statement(
    handle: &Arc<PoolHandle>,
    conn: &mut Conn,
    text: &str,
) -> Result<Option<Row>> {
    let id = conn.id();
    let tag = handle.tags.round_trip(id);
    let sent = exec::tagged(&tag, text);
    let run = async { conn.query_first(sent).await.map_err(Error::from) };
    handle.bounded(id, &tag, run).await
}

/// How `conn`'s session reads a quoted string right now (one bounded round trip).
async fn session_reading(handle: &Arc<PoolHandle>, conn: &mut Conn) -> Result<literal::Reading> {
    const READ: &str = "SELECT @@SESSION.sql_mode, @@SESSION.character_set_client, \
                        @@SESSION.character_set_connection";
    let row = session_statement(handle, conn, READ).await?;
    let (mode, client, connection): (String, String, String) = row
        .and_then(|r| mysql_async::from_row_opt(r).ok())
        .ok_or_else(|| Error::connection("the session's settings could not be read"))?;
    // Only utf8mb4 carries every character as it is (utf8mb3 has no 4-byte ones).
    let utf8 = |cs: &str| cs == "utf8mb4";
    Ok(literal::Reading {
        backslash_escapes: !mode
            .split(',')
            .any(|m| m.eq_ignore_ascii_case("NO_BACKSLASH_ESCAPES")),
        utf8: utf8(&client) && utf8(&connection),
    })
}

/// One bounded round trip of a user statement on `conn` (two where its strings are rendered
/// for the session's state).
pub(crate) async fn run_bounded(
    handle: &Arc<PoolHandle>,
    conn: &mut Conn,
    sql: &str,
    params: &[Param],
) -> Result<Outcome> {
    let text = render(handle, conn, sql, params).await?;
    let id = conn.id();
    let tag = handle.tags.round_trip(id);
    exec::fits(
        std::slice::from_ref(&text),
        &tag,
        exec::packet_limit(handle),
    )?;
    let sent = exec::tagged(&tag, &text);
    drop(text);
    session::after_user_statement(conn, sql, handle.reset_on_release);
    let outcome = handle.bounded(id, &tag, run_text(conn, sent)).await;
    if !charset::may_change(sql) || matches!(&outcome, Err(e) if e.is_connection()) {
        return outcome;
    }
    // The statement may have moved the session off utf8mb4 (see `pool::charset`): put it back
    // before anything else runs here. A session that cannot be put back is not used again (a
    // connection error discards it), and the statement's answer is lost with it.
    match session_statement(handle, conn, charset::PIN).await {
        Ok(_) => outcome,
        Err(e) if e.is_connection() => Err(e),
        Err(e) => Err(Error::connection(format!(
            "the session's character set could not be put back to utf8mb4 ({}); the connection was closed",
            e.message()
        ))),
    }
}

/// Runs one rendered user statement text and returns the first result set.
async fn run_text(conn: &mut Conn, text: String) -> Result<Outcome> {
    let mut result = conn.query_iter(text).await?;
    let columns = result.columns();
    if let Some(cols) = &columns {
        charset::check_columns(cols)?;
    }
    let wrote = columns.as_ref().is_none_or(|c| c.is_empty());
    let affected = result.affected_rows();
    let insert_id = result.last_insert_id().unwrap_or(0);
    let rows: Vec<Row> = result.collect().await?;
    // Later result sets of a multi-statement text are read and discarded; an error in any of
    // them rejects the call (as with mysql2) instead of surfacing on the next statement.
    result.drop_result().await?;
    let write = wrote.then(|| WriteResult::new(affected, insert_id));
    Ok((UserRows::new(columns, rows), write))
}

/// What one user statement produced: its rows, and its write counts when it returned no rows.
pub(crate) type Outcome = (UserRows, Option<WriteResult>);

/// Converts and checks parameters on the JS thread (JS values cannot cross to tokio), then runs
/// the statement with `run` (a pooled connection, or a transaction's) and shapes the outcome.
fn spawn_statement<'env, T, R, Fut, F>(
    env: &'env Env,
    text: String,
    params: Option<Vec<Unknown>>,
    run: R,
    shape: F,
) -> napi::Result<PromiseRaw<'env, T>>
where
    T: ToNapiValue + Send + 'static,
    R: FnOnce(String, Vec<Param>) -> Fut,
    Fut: std::future::Future<Output = Result<Outcome>> + Send + 'static,
    F: FnOnce(Outcome) -> T + Send + 'static,
{
    let params = promise::sync(env, convert_params(params))?;
    promise::sync(env, params::check_count(&text, &params))?;
    let pending = run(text, params);
    promise::promise(env, async move { pending.await.map(shape) })
}

impl WriteResult {
    fn new(affected: u64, insert_id: u64) -> Self {
        WriteResult {
            affected_rows: Some(affected as f64),
            insert_id: Some(insert_id as f64),
        }
    }

    /// What `exec` answers for `outcome`.
    fn of(outcome: Outcome) -> Self {
        outcome.1.unwrap_or(WriteResult {
            affected_rows: None,
            insert_id: None,
        })
    }
}

impl NativeSql {
    /// Runs a user statement on a pooled connection.
    fn runner(
        &self,
    ) -> impl FnOnce(
        String,
        Vec<Param>,
    )
        -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Outcome>> + Send>> {
        let handle = self.handle.clone();
        move |text, params| {
            Box::pin(async move {
                let mut conn = handle.acquire().await?;
                let result = run_bounded(&handle, &mut conn, &text, &params).await;
                handle.release(conn, &result).await;
                result.map_err(|e| handle.redact(e))
            })
        }
    }

    pub(crate) fn ensure_open(&self, env: &Env) -> napi::Result<()> {
        if self.closed.load(Ordering::Acquire) {
            promise::sync(env, Err(Error::closed()))
        } else {
            Ok(())
        }
    }
}

#[napi]
impl NativeSql {
    /// Builds a pool from normalised options; nothing connects until the first call.
    #[napi(constructor)]
    pub fn new(env: Env, cfg: PoolConfig) -> napi::Result<Self> {
        let settings = promise::sync(&env, config::build(&cfg))?;
        let hosts = Hosts::new(settings.hosts, settings.failover, settings.limit);
        let first = &hosts.nodes()[0];
        let describe = format!(
            "NativeSql {{ host: {:?}, port: {}{}, user: {:?}, database: {:?}, password: {} }}",
            first.host,
            first.port,
            match hosts.nodes().len() {
                1 => String::new(),
                n => format!(" (+{} more hosts)", n - 1),
            },
            cfg.user.as_deref().unwrap_or("root"),
            cfg.database.as_deref().unwrap_or(""),
            if cfg.password.as_deref().is_some_and(|p| !p.is_empty()) {
                "'***'"
            } else {
                "none"
            },
        );
        Ok(NativeSql {
            handle: Arc::new(PoolHandle {
                hosts,
                acquire_timeout: settings.acquire_timeout,
                query_timeout: settings.query_timeout,
                prepared: settings.prepared,
                password: settings.password,
                retries: AtomicU64::new(0),
                round_trips: AtomicU64::new(0),
                metrics: Default::default(),
                max_packet: AtomicU64::new(0),
                tags: Default::default(),
                prepared_fallbacks: AtomicU64::new(0),
                reset_on_release: settings.reset_on_release,
            }),
            parker: Default::default(),
            closed: Arc::new(AtomicBool::new(false)),
            describe,
        })
    }

    /// Runs a statement and resolves to its rows as plain objects.
    #[napi]
    pub fn query<'env>(
        &self,
        env: &'env Env,
        text: String,
        params: Option<Vec<Unknown>>,
    ) -> napi::Result<PromiseRaw<'env, UserRows>> {
        self.ensure_open(env)?;
        spawn_statement(env, text, params, self.runner(), |(rows, _)| rows)
    }

    /// Runs a statement and resolves to `{ affectedRows, insertId }`.
    #[napi]
    pub fn exec<'env>(
        &self,
        env: &'env Env,
        text: String,
        params: Option<Vec<Unknown>>,
    ) -> napi::Result<PromiseRaw<'env, WriteResult>> {
        self.ensure_open(env)?;
        spawn_statement(env, text, params, self.runner(), WriteResult::of)
    }

    /// Checks out one connection and starts a transaction on it (READ COMMITTED unless the
    /// pool was opened with `setIsolation: false`).
    #[napi(ts_return_type = "Promise<NativeTx>")]
    pub fn begin<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, NativeTx>> {
        self.ensure_open(env)?;
        let handle = self.handle.clone();
        promise::promise(env, async move {
            let mut conn = handle.acquire().await?;
            let begun = exec::finish(&handle, &mut conn, "BEGIN").await;
            if let Err(e) = begun {
                handle.release(conn, &Err::<(), _>(e.clone())).await;
                return Err(handle.redact(e));
            }
            Ok(NativeTx {
                inner: Arc::new(TxInner {
                    state: Mutex::new(TxState {
                        conn: Some(conn),
                        ended_by: None,
                        node_unfit: false,
                    }),
                    turns: Turns::default(),
                    handle,
                }),
            })
        })
    }

    /// Waits for in-flight work, closes every connection, and refuses later calls.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let already = self.closed.swap(true, Ordering::AcqRel);
        let pools = self.handle.hosts.pools();
        let parker = self.parker.clone();
        promise::promise(env, async move {
            if already {
                return Ok(());
            }
            parker.close().await;
            let mut first_error = Ok(());
            for pool in pools {
                if let Err(e) = pool.disconnect().await {
                    first_error = first_error.and(Err(Error::from(e)));
                }
            }
            first_error
        })
    }

    /// The error a call on this pool gets once `close()` was called (`lib/sql.js` refuses such
    /// calls itself, before they reach Rust).
    #[napi]
    pub fn closed_error(&self, env: &Env) -> napi::Result<Unknown<'static>> {
        Error::closed().to_js_value(env.raw())
    }

    /// Whether `close()` was called.
    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Round-trip and retry counters.
    #[napi]
    pub fn stats(&self) -> PoolStats {
        let h = &self.handle;
        let pools = h.hosts.pools();
        let gauge = |g: fn(&mysql_async::Metrics) -> &std::sync::atomic::AtomicUsize| {
            pools
                .iter()
                .map(|p| g(&p.metrics()).load(Ordering::Relaxed) as f64)
                .sum()
        };
        PoolStats {
            round_trips: h.round_trips.load(Ordering::Relaxed) as f64,
            deadlock_retries: h.retries.load(Ordering::Relaxed) as f64,
            statements: h.metrics.statements.load(Ordering::Relaxed) as f64,
            prepared_fallbacks: h.prepared_fallbacks.load(Ordering::Relaxed) as f64,
            coalesced: CoalescedStats {
                batches: h.metrics.coalesced_batches.load(Ordering::Relaxed) as f64,
                calls: h.metrics.coalesced_calls.load(Ordering::Relaxed) as f64,
                resent: h.metrics.resent_alone.load(Ordering::Relaxed) as f64,
            },
            pool: ConnectionStats {
                open: gauge(|m| &m.connection_count),
                idle: gauge(|m| &m.connections_in_pool),
                in_use: gauge(|m| &m.connections_in_use),
                waiters: gauge(|m| &m.active_wait_requests),
            },
            hosts: h
                .hosts
                .states()
                .into_iter()
                .map(|s| HostStats {
                    host: s.host,
                    port: f64::from(s.port),
                    state: s.state.into(),
                    reason: s.reason,
                    since: s.since,
                })
                .collect(),
            methods: h.metrics.methods(),
        }
    }

    /// A description without secrets (used by `util.inspect`).
    #[napi]
    pub fn describe(&self) -> String {
        self.describe.clone()
    }
}

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
