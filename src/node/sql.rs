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

use crate::node::tx::NativeTx;
use crate::pool::charset;
use crate::pool::config::{self, PoolConfig};
use crate::pool::hosts::Hosts;
use crate::pool::literal;
use mysql_async::prelude::*;
use mysql_async::{Conn, Row};
use napi::bindgen_prelude::*;
use napi_derive::napi;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

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
    /// A Group Replication member's view at the pool's last probe of it (on a new connection,
    /// and after a failure): absent for a server that is no group member, or in a one-host pool.
    pub group: Option<HostGroupStats>,
}

/// What a Group Replication member said of itself and its group at its last probe.
#[napi(object)]
pub struct HostGroupStats {
    /// `ONLINE`, `RECOVERING`, `OFFLINE`, `ERROR`, …
    pub state: String,
    /// `PRIMARY` or `SECONDARY` (empty outside the group).
    pub role: String,
    pub single_primary: bool,
    /// The group's primary as the members report it (`host:port`), in single-primary mode.
    pub primary: Option<String>,
    /// Whether that primary is one of the pool's hosts (false: writes cannot reach it).
    pub primary_listed: Option<bool>,
    pub members: f64,
    pub online: f64,
    /// The view the member had installed (`<fixed>:<counter>`, the counter growing with each
    /// membership change): a member behind the newest view the pool has seen is set aside.
    pub view: Option<String>,
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

/// How `conn`'s session reads a quoted string right now (one bounded round trip).
async fn session_reading(handle: &Arc<PoolHandle>, conn: &mut Conn) -> Result<literal::Reading> {
    const READ: &str = "SELECT @@SESSION.sql_mode, @@SESSION.character_set_client, \
                        @@SESSION.character_set_connection";
    let row = handle
        .own_statement::<Row>(conn, READ)
        .await?
        .into_iter()
        .next();
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
    handle.after_user_statement(conn, sql);
    let outcome = handle.bounded(id, &tag, run_text(conn, sent)).await;
    if !charset::may_change(sql) || matches!(&outcome, Err(e) if e.is_connection()) {
        return outcome;
    }
    // The statement may have moved the session off utf8mb4 (see `pool::charset`): put it back
    // before anything else runs here. A session that cannot be put back is not used again (a
    // connection error discards it), and the statement's answer is lost with it.
    match handle.own_statement::<Row>(conn, charset::PIN).await {
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
pub(crate) fn spawn_statement<'env, T, R, Fut, F>(
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
    pub(crate) fn of(outcome: Outcome) -> Self {
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
                to_reset: Default::default(),
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
            Ok(NativeTx::open(conn, handle))
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
                    group: s.group.map(|g| HostGroupStats {
                        primary_listed: g.primary.as_ref().map(|(host, port)| {
                            h.hosts
                                .nodes()
                                .iter()
                                .any(|n| &n.host == host && n.port == *port)
                        }),
                        primary: g.primary.map(|(host, port)| format!("{host}:{port}")),
                        state: g.state,
                        role: g.role,
                        single_primary: g.single_primary,
                        members: f64::from(g.members),
                        online: f64::from(g.online),
                        view: g.view.map(|v| v.to_string()),
                    }),
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
