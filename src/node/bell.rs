//! The doorbell's native side (lib/push/bell.js decides what to ring; docs/push.md says why).
//!
//! - A **ring** is one unit on ONE connection: the lookup of the parked statements and the KILL
//!   of each, on the same session, so both reach the same server. Query and connection ids are
//!   per-server counters: a lookup on one server and a KILL sent over another connection (a
//!   load-balanced pool, a TCP balancer) would interrupt whatever statement carries that id
//!   there. With several hosts the unit runs once per host, each on its own connection, so a
//!   park on any host of the pool hears the ring.
//! - The **park connection** is a connection of its own, outside the pool, that runs nothing but
//!   parks. Where a KILL names a connection instead of a statement (MySQL's `KILL QUERY <id>`),
//!   a KILL that arrives after the park it was meant for ended can then only end the next park
//!   early — never another statement.

use crate::error::{Error, Result};
use crate::exec::{self, PoolHandle};
use crate::node::params::Param;
use crate::node::promise;
use crate::node::rows::UserRows;
use crate::node::sql::{convert_params, run_bounded, NativeSql};
use mysql_async::Conn;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::Mutex;

/// What a ring did, over every host it reached.
#[napi(object)]
pub struct RingOutcome {
    /// Parked statements the lookups found.
    pub found: f64,
    /// Of those, the ones a KILL reached.
    pub killed: f64,
    /// Hosts whose lookup ran.
    pub hosts: f64,
    /// A KILL the server refused because the park belongs to another account (errno 1095), the
    /// first one's message; the listener reports it once.
    pub denied: Option<String>,
}

/// How a KILL names its target: MariaDB's `KILL QUERY ID <query id>` names one statement;
/// MySQL's `KILL QUERY <connection id>` names whatever that connection runs at that instant.
#[derive(Clone, Copy)]
enum Target {
    Statement,
    Connection,
}

impl Target {
    fn parse(kill: &str) -> Result<Self> {
        match kill {
            "query-id" => Ok(Target::Statement),
            "connection" => Ok(Target::Connection),
            other => Err(Error::Invalid(format!(
                "ring: kill must be 'query-id' or 'connection', got {other:?}"
            ))),
        }
    }

    fn statement(self, id: u64) -> String {
        match self {
            Target::Statement => format!("KILL QUERY ID {id}"),
            Target::Connection => format!("KILL QUERY {id}"),
        }
    }
}

/// "Unknown thread id" (1094), MariaDB's "Unknown query id" (1957): the park ended meanwhile.
const GONE: [u16; 2] = [1094, 1957];
/// "You are not owner of thread": the park belongs to another account.
const NOT_OWNER: u16 = 1095;

/// The dedicated park connection (see the module comment); `None` until the first park, and
/// again after a failure or `close`.
#[derive(Default)]
pub struct ParkConn {
    conn: Mutex<Option<Conn>>,
}

impl ParkConn {
    /// Closes the connection (after the park in flight, if any, has ended).
    pub async fn close(&self) {
        if let Some(conn) = self.conn.lock().await.take() {
            exec::discard(conn).await;
        }
    }
}

/// One host's part of a ring: the lookup, then each KILL, on one connection of that host.
async fn ring_host(
    handle: &Arc<PoolHandle>,
    node: &crate::pool::hosts::Node,
    lookup: &str,
    target: Target,
) -> Result<(u64, u64, Option<String>)> {
    let mut conn = handle.checkout_as_is(node).await?;
    let outcome = async {
        let ids: Vec<u64> = handle.own_statement(&mut conn, lookup).await?;
        let (mut killed, mut denied) = (0, None);
        // One at a time, never two in flight (docs/push.md, "One KILL at a time").
        for &id in &ids {
            match handle
                .own_statement::<u64>(&mut conn, &target.statement(id))
                .await
            {
                Ok(_) => killed += 1,
                Err(Error::Server { code, .. }) if GONE.contains(&code) => {}
                Err(
                    e @ Error::Server {
                        code: NOT_OWNER, ..
                    },
                ) => {
                    denied.get_or_insert(e.message());
                }
                Err(e) => return Err(e),
            }
        }
        Ok((ids.len() as u64, killed, denied))
    }
    .await;
    handle.release(conn, &outcome).await;
    outcome
}

impl NativeSql {
    /// The ring over every host that is not set aside, each host's part at once.
    async fn ring_hosts(
        handle: Arc<PoolHandle>,
        lookup: String,
        target: Target,
    ) -> Result<RingOutcome> {
        // Hosts set aside (a member that stopped being the primary, a host that failed) are rung
        // too — a park may still sleep there — but in the background, one ring at a time per host,
        // so that a dead one never holds this ring or the next.
        let all = handle.hosts.nodes();
        for i in (0..all.len()).filter(|&i| !all[i].ready()) {
            if all[i].ringing.swap(true, Ordering::AcqRel) {
                continue;
            }
            let handle = handle.clone();
            let lookup = lookup.clone();
            tokio::spawn(async move {
                let node = &handle.hosts.nodes()[i];
                let _ = ring_host(&handle, node, &lookup, target).await;
                node.ringing.store(false, Ordering::Release);
            });
        }
        let nodes: Vec<usize> = (0..all.len()).filter(|&i| all[i].ready()).collect();
        // Each host's part on a task of its own: they run at once. Each is bounded as any call
        // is (the checkout by acquireTimeoutMs, each statement by queryTimeoutMs), never cut
        // short: a part stopped between its KILLs would leave parks it found asleep. A host
        // that fails is set aside, and skipped by the rings that follow while it is.
        let parts: Vec<_> = nodes
            .into_iter()
            .map(|i| {
                let handle = handle.clone();
                let lookup = lookup.clone();
                tokio::spawn(async move {
                    let node = &handle.hosts.nodes()[i];
                    ring_host(&handle, node, &lookup, target).await
                })
            })
            .collect();
        let mut results = Vec::with_capacity(parts.len());
        for part in parts {
            results.push(
                part.await
                    .unwrap_or_else(|_| Err(Error::connection("the ring's task failed"))),
            );
        }
        let mut out = RingOutcome {
            found: 0.0,
            killed: 0.0,
            hosts: 0.0,
            denied: None,
        };
        let mut first_error = None;
        for r in results {
            match r {
                Ok((found, killed, denied)) => {
                    out.hosts += 1.0;
                    out.found += found as f64;
                    out.killed += killed as f64;
                    if out.denied.is_none() {
                        out.denied = denied;
                    }
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        // A host that is away is the pool's business; a refusal everywhere is the caller's.
        match first_error {
            Some(e) if out.hosts == 0.0 => Err(handle.redact(e)),
            _ => Ok(out),
        }
    }

    /// Runs `text` on the park connection, opening it first (on the host a checkout would pick
    /// now) when there is none; a failure closes it, and the next park opens another.
    async fn park_on(
        handle: Arc<PoolHandle>,
        parker: Arc<ParkConn>,
        text: String,
        params: Vec<Param>,
    ) -> Result<UserRows> {
        let mut slot = parker.conn.lock().await;
        // A park connection on a host the pool has since set aside (a primary that handed over,
        // a host that failed) moves: the next park goes where the pool's calls go now.
        let moved = slot.as_ref().is_some_and(|conn| {
            handle.hosts.multi()
                && handle
                    .hosts
                    .node_of(conn)
                    .is_some_and(|node| node.is_aside())
        });
        if moved {
            if let Some(conn) = slot.take() {
                exec::discard(conn).await;
            }
        }
        if slot.is_none() {
            let pooled = handle.acquire().await?;
            let opts = pooled.opts().clone();
            handle.release(pooled, &Ok::<(), Error>(())).await;
            let opened = tokio::time::timeout(handle.acquire_timeout, Conn::new(opts))
                .await
                .map_err(|_| {
                    Error::connection("the park connection could not be opened in time")
                })?;
            *slot = Some(opened.map_err(|e| handle.redact(Error::from(e)))?);
        }
        let Some(conn) = slot.as_mut() else {
            return Err(Error::connection("the park connection is closed"));
        };
        let outcome = run_bounded(&handle, conn, &text, &params).await;
        if matches!(&outcome, Err(e) if e.leaves_pool()) {
            if let Some(conn) = slot.take() {
                exec::discard(conn).await;
            }
        }
        outcome.map(|(rows, _)| rows).map_err(|e| handle.redact(e))
    }
}

#[napi]
impl NativeSql {
    /// The doorbell's ring (lib/push/bell.js): `lookup` answers the ids of the parks to end, as
    /// its first column; `kill` says what an id names ('query-id' or 'connection'). Runs on one
    /// connection per host that is not set aside.
    #[napi(ts_return_type = "Promise<RingOutcome>")]
    pub fn ring<'env>(
        &self,
        env: &'env Env,
        lookup: String,
        kill: String,
    ) -> napi::Result<PromiseRaw<'env, RingOutcome>> {
        self.ensure_open(env)?;
        let target = promise::sync(env, Target::parse(&kill))?;
        promise::promise(env, Self::ring_hosts(self.handle.clone(), lookup, target))
    }

    /// Runs a park statement on the park connection (see the module comment).
    #[napi(ts_return_type = "Promise<Record<string, unknown>[]>")]
    pub fn park<'env>(
        &self,
        env: &'env Env,
        text: String,
        params: Option<Vec<Unknown>>,
    ) -> napi::Result<PromiseRaw<'env, UserRows>> {
        self.ensure_open(env)?;
        let params = promise::sync(env, convert_params(params))?;
        promise::promise(
            env,
            Self::park_on(self.handle.clone(), self.parker.clone(), text, params),
        )
    }

    /// Closes the park connection (a listener that stops parking); a park in flight ends first.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn end_parks<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let parker = self.parker.clone();
        promise::promise(env, async move {
            parker.close().await;
            Ok(())
        })
    }
}
