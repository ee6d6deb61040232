//! The pool a backend runs on (`PoolHandle`): checking connections out — over every host, bounded
//! by the acquire timeout, failures shaped as the caller reads them — giving them back or
//! discarding them, bounding each round trip and killing the session of one that timed out, and
//! the tags that identify our statements in the server's process list.

use crate::error::{connect, Error, Result};
use crate::pool::auth;
use crate::pool::hosts::Hosts;
use crate::pool::literal;
use crate::pool::session;
use mysql_async::prelude::*;
use mysql_async::{Conn, Value};
use std::collections::HashSet;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Shared pool state: the driver pool plus settings and counters.
pub struct PoolHandle {
    /// The driver pool of each host, and each host's health (one host unless a list was given).
    pub hosts: Hosts,
    pub acquire_timeout: Duration,
    /// Bound on every round trip of an established connection (`queryTimeoutMs`; None = none).
    pub query_timeout: Option<Duration>,
    /// Whether single-statement units run prepared (`statementCacheSize` > 0).
    pub prepared: bool,
    pub password: Option<String>,
    /// Units of work re-run after a deadlock, lock-wait timeout or certification failure.
    pub retries: AtomicU64,
    /// Round trips sent by backend executors (for benchmarks and tests).
    pub round_trips: AtomicU64,
    /// Per port method calls, errors and latencies; statements sent.
    pub metrics: crate::observe::metrics::Metrics,
    pub max_packet: AtomicU64,
    /// What identifies our statements to the session killer.
    pub tags: Tags,
    /// Single statements sent as text because the server could not prepare more statements.
    pub prepared_fallbacks: AtomicU64,
    /// Reset every connection a user call used, not only those it may have changed
    /// (`resetOnRelease`, `pool::session`).
    pub reset_on_release: bool,
    /// Ids of the checked-out connections a user statement may have changed: each is reset,
    /// bounded, as it is released (`after_user_statement`).
    pub to_reset: Mutex<HashSet<u32>>,
}

/// The comments that identify our statements in the server's process list.
///
/// Every statement we send starts with `/*ifw:<pool>:<connection>[:<round trip>]*/`, which
/// `information_schema.PROCESSLIST.INFO` shows as sent (MariaDB shows each statement of a
/// multi-statement text on its own, MySQL the text from the current statement on; both keep a
/// leading comment). The session killer kills a session only when its statement starts with the
/// tag of the round trip that timed out: the pool's random nonce makes it ours beyond doubt
/// (another client's session with the same id on another server behind a load balancer never
/// carries it), the round-trip number makes it this round trip (not another of our
/// connections that happens to have the same id on another server). Prepared statements carry
/// the connection's tag without a round-trip number, so that each connection prepares a
/// statement once: behind a load balancer a timed-out prepared call may therefore kill another
/// of this pool's sessions that has the same id on another server (its call then fails as on a
/// lost connection) — never another client's. A `CALL` is never matched (the process list shows
/// the statement running inside it), so a timed-out procedure is not killed. Nothing else (user
/// variables, connection attributes) is visible to another session on every MariaDB and MySQL
/// server.
pub struct Tags {
    nonce: u64,
    next: AtomicU64,
}

impl Default for Tags {
    fn default() -> Self {
        Tags {
            nonce: uuid::Uuid::new_v4().as_u64_pair().0,
            next: AtomicU64::new(0),
        }
    }
}

impl Tags {
    /// The tag of one text round trip on connection `conn_id`.
    pub fn round_trip(&self, conn_id: u32) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("/*ifw:{:016x}:{conn_id}:{n}*/ ", self.nonce)
    }

    /// The tag of the prepared statements of connection `conn_id`.
    pub fn connection(&self, conn_id: u32) -> String {
        format!("/*ifw:{:016x}:{conn_id}*/ ", self.nonce)
    }
}

/// `text` as sent: starting with `tag`.
pub fn tagged(tag: &str, text: &str) -> String {
    let mut out = String::with_capacity(tag.len() + text.len());
    out.push_str(tag);
    out.push_str(text);
    out
}

/// How long closing a discarded connection may take (its socket may be black-holed).
const DISCARD_BOUND: Duration = Duration::from_millis(200);

impl PoolHandle {
    /// Gives `conn` back to the pool (by dropping it), reset first where a user statement may
    /// have changed its session, or closes it when `outcome` is a failure that leaves the
    /// connection unusable or its node unable to serve it (`Error::leaves_pool`); in a
    /// multi-host pool such a failure also sets the connection's host aside.
    pub async fn release<T>(&self, conn: Conn, outcome: &Result<T>) {
        if let Err(e) = outcome {
            self.note(&conn, e);
            if matches!(e, Error::Connection { code, .. } if *code == crate::error::PACKET_TOO_LARGE)
            {
                // The server's limit went down: read it again on the next checkout.
                self.max_packet.store(0, Ordering::Relaxed);
            }
        }
        let reset = self.take_reset(&conn);
        if matches!(outcome, Err(e) if e.leaves_pool()) {
            discard(conn).await;
        } else if reset {
            self.reset_later(conn);
        }
    }

    /// Marks `conn` for a reset when it is released if user statement `sql` may have changed
    /// its session (`pool::session`), or whatever it ran under `resetOnRelease`. The driver's
    /// own reset-on-return is set too, as a fallback for a connection dropped without
    /// `release`: it is unbounded, so `release` turns it off and bounds its own.
    pub fn after_user_statement(&self, conn: &mut Conn, sql: &str) {
        if self.reset_on_release || session::may_change(sql) {
            conn.reset_connection(true);
            if let Ok(mut ids) = self.to_reset.lock() {
                ids.insert(conn.id());
            }
        }
    }

    /// Whether `conn` was marked for a reset, forgetting the mark (also for a connection
    /// discarded without `release`).
    pub fn take_reset(&self, conn: &Conn) -> bool {
        self.to_reset
            .lock()
            .map(|mut ids| ids.remove(&conn.id()))
            .unwrap_or(false)
    }

    /// Resets `conn` in the background (`COM_RESET_CONNECTION`, then the setup statements), bounded
    /// like a round trip (`queryTimeoutMs`, else the acquire timeout), and gives it back to the
    /// pool; a reset that fails or does not answer in time discards the connection, so that a
    /// silent network costs one connection for one bound, never the pool for as long as the OS
    /// keeps the socket.
    fn reset_later(&self, mut conn: Conn) {
        conn.reset_connection(false);
        let limit = self.query_timeout.unwrap_or(self.acquire_timeout);
        tokio::spawn(async move {
            match tokio::time::timeout(limit, conn.reset()).await {
                // Dropped: back to the pool.
                Ok(Ok(true)) => {}
                // A failure, no answer in time, or a server too old to reset (MariaDB < 10.2.4).
                _ => discard(conn).await,
            }
        });
    }

    /// Sets `conn`'s host aside after failure `e`, where that applies (see `release`).
    pub fn note(&self, conn: &Conn, e: &Error) {
        if self.hosts.multi() && e.leaves_pool() {
            if let Some(node) = self.hosts.node_of(conn) {
                node.set_aside(self.redact(e.clone()).message(), None);
            }
        }
    }

    /// Awaits one round trip on connection `conn_id` whose statements start with `tag` (see
    /// `Tags`), bounded by `queryTimeoutMs`. On expiry the server is asked (best effort) to kill
    /// that session, so that it stops working and releases its locks — a statement waiting on a
    /// lock would otherwise apply once it gets it, after the caller was told it failed; the
    /// caller must discard the connection.
    pub async fn bounded<T>(
        self: &Arc<Self>,
        conn_id: u32,
        tag: &str,
        round_trip: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        let Some(limit) = self.query_timeout else {
            return round_trip.await;
        };
        match tokio::time::timeout(limit, round_trip).await {
            Ok(r) => r,
            Err(_) => {
                self.kill_later(conn_id, tag.trim_end().to_string());
                Err(Error::Timeout(format!(
                    "no answer from the server within {} ms (queryTimeoutMs); the connection was closed",
                    limit.as_millis()
                )))
            }
        }
    }

    /// One small statement of ours on `conn` (a session read, a ring's lookup or KILL), tagged
    /// and bounded like every round trip: its rows as `T`.
    pub async fn own_statement<T: FromRow + Send + 'static>(
        self: &Arc<Self>,
        conn: &mut Conn,
        text: &str,
    ) -> Result<Vec<T>> {
        let id = conn.id();
        let tag = self.tags.round_trip(id);
        let sent = crate::exec::tagged(&tag, text);
        let run = async { conn.query::<T, _>(sent).await.map_err(Error::from) };
        self.bounded(id, &tag, run).await
    }

    /// Kills session `conn_id` in the background, bounded, from a connection of its own (a
    /// pooled one would wait behind the same silent network and hold a pool slot). Only a
    /// session that is ours beyond doubt is killed — same user, running a statement that starts
    /// with `tag` — since behind a load balancer a new connection may reach another server,
    /// where the same id belongs to someone else.
    fn kill_later(self: &Arc<Self>, conn_id: u32, tag: String) {
        // The session is on one of the hosts; the tag check finds it on that one only.
        for node in self.hosts.nodes() {
            self.kill_on(node.opts().clone(), conn_id, tag.clone());
        }
    }

    fn kill_on(self: &Arc<Self>, opts: mysql_async::Opts, conn_id: u32, tag: String) {
        let handle = self.clone();
        tokio::spawn(async move {
            let bound = handle
                .acquire_timeout
                .min(handle.query_timeout.unwrap_or(handle.acquire_timeout));
            let kill = async {
                let mut conn = Conn::new(opts).await.map_err(Error::from)?;
                let server: Option<(String, u8)> = conn
                    .query_first("SELECT VERSION(), @@performance_schema")
                    .await
                    .map_err(Error::from)?;
                let mut check = String::new();
                literal::render(
                    &format!(
                        "SELECT ID FROM {} WHERE ID = ? \
                         AND USER = SUBSTRING_INDEX(USER(), '@', 1) AND LEFT(INFO, ?) = ?",
                        process_list(server.as_ref())
                    ),
                    &[
                        Value::UInt(u64::from(conn_id)),
                        Value::UInt(tag.len() as u64),
                        Value::from(tag.as_str()),
                    ],
                    &mut check,
                )
                .map_err(Error::Invalid)?;
                let ours: Option<u64> = conn.query_first(check).await.map_err(Error::from)?;
                if ours.is_some() {
                    conn.query_drop(format!("KILL CONNECTION {conn_id}"))
                        .await
                        .map_err(Error::from)?;
                }
                conn.disconnect().await.map_err(Error::from)
            };
            // Failure is fine: the server ends the session itself once it sees the socket close.
            let _ = tokio::time::timeout(bound, kill).await;
        });
    }

    /// Replaces any occurrence of the password in an error message.
    pub fn redact(&self, e: Error) -> Error {
        match self.password.as_deref() {
            Some(pw) => e.map_message(|m| {
                if m.contains(pw) {
                    m.replace(pw, "***")
                } else {
                    m
                }
            }),
            None => e,
        }
    }
}

/// The table that lists a server's running statements, by its `(VERSION(), @@performance_schema)`:
/// MariaDB's `information_schema.PROCESSLIST`; on MySQL `performance_schema.processlist`, whose
/// `INFO` is utf8mb4 — reading the older table there fails for every row as soon as any session
/// runs a statement with a 4-byte character (errno 3854), and it is deprecated. (The doorbell's
/// lookup makes the same choice, lib/push/server.js.)
fn process_list(server: Option<&(String, u8)>) -> &'static str {
    match server {
        Some((version, 1)) if !version.to_ascii_lowercase().contains("mariadb") => {
            "performance_schema.processlist"
        }
        _ => "information_schema.PROCESSLIST",
    }
}

/// What a caller learns from `e`, the failure to open a connection with `opts`: where it was
/// going and why, in mysql2's terms (`error::connect`) — or, where the driver gave up on a
/// login MySQL answers with a decoy plugin, the server's own answer (`pool::auth`).
pub(super) async fn connect_failure(e: mysql_async::Error, opts: &mysql_async::Opts) -> Error {
    let place = connect::Place::of(opts);
    let decoy = matches!(&e, mysql_async::Error::Driver(mysql_async::DriverError::UnknownAuthPlugin { name })
        if name == auth::DECOY_PLUGIN);
    if decoy && opts.ssl_opts().is_none() {
        let user = opts.user().unwrap_or_default();
        if let Some(answer) = auth::verdict(&place, user, opts.pass()).await {
            return answer;
        }
    }
    connect::shape(e, &place)
}

/// Closes a connection that must not go back to the pool (after a connection failure or a
/// timeout), without waiting on a silent network for more than `DISCARD_BOUND`.
pub async fn discard(conn: Conn) {
    // Dropping the future mid-way drops the connection marked disconnected: the pool discards it.
    let _ = tokio::time::timeout(DISCARD_BOUND, conn.disconnect()).await;
}
