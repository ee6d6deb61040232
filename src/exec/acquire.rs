//! Checking a connection out of the pool: with several hosts, which host (`Hosts::order`), how
//! long each may take, the probe of a new connection (`hosts::unfit`), and the wait for a host
//! that can take writes while a cluster changes its writer.

use super::handle::connect_failure;
use super::{discard, PoolHandle};
use crate::error::{connect, Error, Result};
use crate::observe::trace;
use crate::pool::hosts::{self, Node};
use mysql_async::prelude::*;
use mysql_async::Conn;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How long a checkout waits before trying the hosts again when none could take writes (see
/// `PoolHandle::acquire_from_hosts`): each round opens and probes a connection per host.
const UNFIT_PAUSE: Duration = Duration::from_millis(250);

/// The most one try of a checkout gives a host that is set aside: connecting and probing takes
/// milliseconds on a host that answers.
const RETRY_SHARE: Duration = Duration::from_secs(1);

/// Why a checkout from one host gave no connection.
enum Refusal {
    /// The host answered, but its probe found it cannot take writes (`hosts::unfit`).
    Unfit(Error),
    /// Anything else: refused, broken, a failed probe.
    Failed(Error),
}

impl Refusal {
    fn into_error(self) -> Error {
        match self {
            Refusal::Unfit(e) | Refusal::Failed(e) => e,
        }
    }
}

impl From<mysql_async::Error> for Refusal {
    fn from(e: mysql_async::Error) -> Self {
        Refusal::Failed(e.into())
    }
}

impl PoolHandle {
    /// Checks out a connection, bounded by the acquire timeout. With several hosts they are
    /// tried in `Hosts::order`, each for an even share of the time left; a host that fails is
    /// set aside and the checkout moves on, so a call not yet sent goes to the next host.
    pub async fn acquire(&self) -> Result<Conn> {
        let started = trace::start();
        // For a traced call only: whether a pool opened a connection for this checkout (none
        // was idle and one more is open after), which JS reports on the connect channel.
        let before = started.map(|_| self.pool_counts());
        let acquired = self.acquire_from_hosts().await;
        let opened = before.map(|(open, idle)| idle == 0 && self.pool_counts().0 > open);
        trace::acquired(started, opened, &acquired);
        acquired
    }

    /// Connections open and idle right now, over every host's pool.
    fn pool_counts(&self) -> (usize, usize) {
        self.hosts
            .pools()
            .iter()
            .fold((0, 0), |(open, idle), pool| {
                let m = pool.metrics();
                (
                    open + m.connection_count.load(Ordering::Relaxed),
                    idle + m.connections_in_pool.load(Ordering::Relaxed),
                )
            })
    }

    /// `acquire` without its trace. When every host was tried and one at least answered but
    /// could not take writes — a cluster between two writers: a Group Replication group electing
    /// its new primary, a switchover, a Galera node resyncing — the hosts are tried again every
    /// `UNFIT_PAUSE` until `acquireTimeoutMs` runs out: the call then waits for the new writer
    /// instead of failing without having been sent.
    async fn acquire_from_hosts(&self) -> Result<Conn> {
        let deadline = tokio::time::Instant::now() + self.acquire_timeout;
        loop {
            let (last, unfit) = match self.try_hosts(deadline).await {
                Ok(conn) => return Ok(conn),
                Err(failure) => failure,
            };
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if !unfit || left <= UNFIT_PAUSE {
                return Err(last.unwrap_or_else(|| self.acquire_timed_out()));
            }
            tokio::time::sleep(UNFIT_PAUSE).await;
        }
    }

    /// Tries each host once, in `Hosts::order`, each for an even share of the time left; a host
    /// that fails is set aside. On failure: the last error, and whether some host answered but
    /// could not take writes.
    async fn try_hosts(
        &self,
        deadline: tokio::time::Instant,
    ) -> std::result::Result<Conn, (Option<Error>, bool)> {
        let order = self.hosts.order();
        let mut last = None;
        let mut unfit = false;
        for (i, node) in order.iter().enumerate() {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let mut share = left / (order.len() - i) as u32;
            // A host set aside is tried again only briefly: one that stopped answering (frozen,
            // black-holed) would otherwise hold every checkout for its share, or for all the time
            // left when it comes last, while another host may be able to take writes by now.
            if node.is_aside() {
                share = share.min(RETRY_SHARE);
            }
            let (pool, generation) = node.current();
            let failure = match tokio::time::timeout(share, self.checkout(node, &pool)).await {
                Ok(Ok(conn)) => return Ok(conn),
                Ok(Err(Refusal::Unfit(e))) => {
                    unfit = true;
                    self.redact(e)
                }
                Ok(Err(Refusal::Failed(e))) => self.redact(e),
                // Every connection in use: a busy host, not a dead one — wait for it.
                Err(_) if self.hosts.multi() && self.hosts.saturated(node) => {
                    return match tokio::time::timeout_at(deadline, self.checkout(node, &pool)).await
                    {
                        Ok(r) => r.map_err(|e| (Some(self.redact(e.into_error())), false)),
                        Err(_) => Err((Some(self.acquire_timed_out()), false)),
                    };
                }
                Err(_) if self.hosts.saturated(node) => self.acquire_timed_out(),
                // Not waiting for a busy connection: connecting took too long.
                Err(_) => {
                    connect::Failure::timed_out(&connect::Place::of(node.opts()), share.as_millis())
                }
            };
            if self.hosts.multi() {
                node.set_aside(failure.message(), Some(generation));
            }
            last = Some(failure);
        }
        Err((last, unfit))
    }

    fn acquire_timed_out(&self) -> Error {
        Error::Connection {
            code: "ETIMEDOUT",
            message: format!(
                "timed out after {} ms waiting for a free connection (acquireTimeoutMs; \
                 all connectionLimit connections were in use)",
                self.acquire_timeout.as_millis()
            ),
        }
    }

    /// One connection of `node` as it is — not probed for writes, whatever its state — bounded by
    /// the acquire timeout: for a unit that must run on that very host and writes nothing (a
    /// doorbell ring, which may have a park to end on a member that stopped being the primary).
    pub async fn checkout_as_is(&self, node: &Node) -> Result<Conn> {
        let (pool, _) = node.current();
        match tokio::time::timeout(self.acquire_timeout, pool.get_conn()).await {
            Ok(Ok(conn)) => Ok(conn),
            Ok(Err(e)) => Err(self.redact(connect_failure(e, node.opts()).await)),
            Err(_) => Err(self.acquire_timed_out()),
        }
    }

    /// One connection from `node`'s pool; in a multi-host pool, probed (`hosts::unfit`) on its
    /// first checkout and after the host was set aside, and closed if the node is unfit.
    async fn checkout(
        &self,
        node: &Node,
        pool: &mysql_async::Pool,
    ) -> std::result::Result<Conn, Refusal> {
        let mut conn = match pool.get_conn().await {
            Ok(conn) => conn,
            Err(e) => return Err(Refusal::Failed(connect_failure(e, node.opts()).await)),
        };
        if self.max_packet.load(Ordering::Relaxed) == 0 {
            // The smaller of this connection's limit and the one connections opened from now on
            // get, so that the statements checked against it fit on either.
            let max: Option<u64> = conn
                .query_first(
                    "SELECT LEAST(@@SESSION.max_allowed_packet, @@GLOBAL.max_allowed_packet)",
                )
                .await?;
            self.max_packet
                .store(max.unwrap_or(u64::MAX), Ordering::Relaxed);
        }
        if !self.hosts.multi() {
            return Ok(conn);
        }
        let id = conn.id();
        if !node.needs_probe(id) {
            return Ok(conn);
        }
        match hosts::unfit(&mut conn, &self.hosts, node).await {
            Ok(None) => {
                node.healthy(Some(id));
                Ok(conn)
            }
            Ok(Some(why)) => {
                discard(conn).await;
                Err(Refusal::Unfit(Error::connection(format!(
                    "{}:{} cannot take writes: {why}",
                    node.host, node.port
                ))))
            }
            Err(e) => {
                discard(conn).await;
                Err(Refusal::Failed(e))
            }
        }
    }
}
