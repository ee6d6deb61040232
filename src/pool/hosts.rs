//! Several hosts behind one pool: a driver pool per host (a `mysql_async::Pool` knows one
//! host), each host's health, and the order in which a checkout tries them (`failover`).
//!
//! A host that refuses, times out, is not synced with its Galera cluster, is not the writable
//! member of its Group Replication group, or is read-only is set aside with a backoff that doubles on each consecutive failure; a checkout tries the healthy
//! hosts first and a host whose backoff has run out next (re-probing it), so calls not yet sent
//! move to another host. A pool of one host is never probed: its statements stay what they were.

use crate::error::{Error, Result};
use crate::pool::group;
use mysql_async::prelude::*;
use mysql_async::{Conn, Opts, Pool};
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Which host a new connection goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failover {
    /// The first healthy host in list order (one writer node, as Galera advises).
    Sequential,
    /// The healthy hosts in turn, spreading connections.
    LoadBalance,
}

impl Failover {
    /// `sequential` (the default) or `loadbalance`.
    pub fn parse(value: Option<&str>) -> Result<Self> {
        match value {
            None | Some("sequential") => Ok(Failover::Sequential),
            Some("loadbalance") => Ok(Failover::LoadBalance),
            Some(other) => Err(Error::Invalid(format!(
                "mysqlPool: failover must be 'sequential' or 'loadbalance', got {other:?}"
            ))),
        }
    }
}

/// The first wait before a host set aside is tried again; it doubles with each consecutive
/// failure up to `MAX_BACKOFF`.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// The hosts of one pool.
pub struct Hosts {
    failover: Failover,
    nodes: Vec<Node>,
    /// Where the next `loadbalance` checkout starts.
    next: AtomicUsize,
    /// Connections each host's pool may open (`connectionLimit`).
    limit: usize,
    /// The newest Group Replication view any probe of this pool has read: a member still in an
    /// older view of the same group is behind it (`Hosts::view_seen`).
    newest_view: Mutex<Option<group::ViewId>>,
}

/// One host: its driver pool and its health.
pub struct Node {
    pub host: String,
    pub port: u16,
    opts: Opts,
    state: Mutex<State>,
    /// A doorbell ring's part on this host is in flight in the background (a host set aside is
    /// rung without waiting for it, one ring at a time: `node::bell`).
    pub ringing: std::sync::atomic::AtomicBool,
}

struct State {
    pool: Pool,
    /// Counts the replacements of `pool`: a failure seen on an older pool was already counted.
    generation: u64,
    /// Set while the host is set aside.
    aside: Option<Aside>,
    /// When the host entered its current state.
    since: SystemTime,
    /// Consecutive failures (the backoff's exponent).
    failures: u32,
    /// Connections of `pool` that were probed (multi-host pools only).
    probed: HashSet<u32>,
    /// What the host said of its Group Replication group at its last probe, if it is a member.
    group: Option<group::GroupFacts>,
}

struct Aside {
    until: Instant,
    reason: String,
}

/// One host's state, for `sql.stats()`.
pub struct HostState {
    pub host: String,
    pub port: u16,
    /// `healthy` or `aside`.
    pub state: &'static str,
    pub reason: Option<String>,
    /// When the host entered this state, ms since the epoch.
    pub since: f64,
    /// Its Group Replication facts as its last probe read them (a group member of a multi-host
    /// pool only; a probe runs on a new connection and after a failure).
    pub group: Option<group::GroupFacts>,
}

impl Hosts {
    /// A pool per entry of `opts` (one per host, in list order).
    pub fn new(opts: Vec<Opts>, failover: Failover, limit: usize) -> Self {
        let nodes = opts
            .into_iter()
            .map(|o| Node {
                host: o.ip_or_hostname().to_string(),
                port: o.tcp_port(),
                state: Mutex::new(State {
                    pool: Pool::new(o.clone()),
                    generation: 0,
                    aside: None,
                    since: SystemTime::now(),
                    failures: 0,
                    probed: HashSet::new(),
                    group: None,
                }),
                ringing: Default::default(),
                opts: o,
            })
            .collect();
        Hosts {
            failover,
            nodes,
            next: AtomicUsize::new(0),
            limit,
            newest_view: Mutex::new(None),
        }
    }

    /// Whether the pool has several hosts (and so probes and sets hosts aside).
    pub fn multi(&self) -> bool {
        self.nodes.len() > 1
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The hosts in the order a checkout tries them: those not set aside (or whose backoff has
    /// run out) by the failover policy, then the rest by how soon their backoff ends — when
    /// every host is set aside, the caller still gets a real attempt and its real error.
    pub fn order(&self) -> Vec<&Node> {
        let n = self.nodes.len();
        let start = match self.failover {
            Failover::Sequential => 0,
            Failover::LoadBalance => self.next.fetch_add(1, Ordering::Relaxed) % n,
        };
        let now = Instant::now();
        let mut ready = Vec::with_capacity(n);
        let mut waiting = Vec::new();
        for node in (0..n).map(|i| &self.nodes[(start + i) % n]) {
            match node.lock().aside.as_ref().map(|a| a.until) {
                Some(until) if until > now => waiting.push((until, node)),
                _ => ready.push(node),
            }
        }
        waiting.sort_by_key(|(until, _)| *until);
        ready.extend(waiting.into_iter().map(|(_, node)| node));
        ready
    }

    /// The host `conn` is connected to.
    pub fn node_of(&self, conn: &Conn) -> Option<&Node> {
        let opts = conn.opts();
        self.nodes
            .iter()
            .find(|n| n.port == opts.tcp_port() && n.host == opts.ip_or_hostname())
    }

    /// Whether `node`'s pool has every connection in use, so a checkout waits for one to come
    /// back: a busy host, not a dead one.
    pub fn saturated(&self, node: &Node) -> bool {
        let pool = node.pool();
        let m = pool.metrics();
        m.connections_in_use.load(Ordering::Relaxed) >= self.limit
    }

    /// Every host's state.
    pub fn states(&self) -> Vec<HostState> {
        self.nodes
            .iter()
            .map(|n| {
                let st = n.lock();
                HostState {
                    host: n.host.clone(),
                    port: n.port,
                    state: if st.aside.is_some() {
                        "aside"
                    } else {
                        "healthy"
                    },
                    reason: st.aside.as_ref().map(|a| a.reason.clone()),
                    group: st.group.clone(),
                    since: st
                        .since
                        .duration_since(UNIX_EPOCH)
                        .map_or(0.0, |d| d.as_millis() as f64),
                }
            })
            .collect()
    }

    /// Records the view a probe of `node` read, and says why `node` is unfit when that view is
    /// older than one the pool has seen from another member: a member cut off from its group
    /// (frozen, partitioned) and back before it learns it was expelled still names itself ONLINE —
    /// and PRIMARY — in its old view, serving reads that miss the group's later commits. A newer
    /// view than any seen before makes every other host's connections be probed again on their
    /// next checkout: membership changed, and they must show they are in it.
    fn view_seen(&self, node: &Node, view: &group::ViewId) -> Option<String> {
        let mut newest = self.newest_view.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = newest.as_ref() {
            if view.behind(n) {
                return Some(format!(
                    "Group Replication member behind its group (in view {view}; another member \
                     is in view {n}): expelled without knowing it yet, or not yet in the new view"
                ));
            }
            if n == view {
                return None;
            }
        }
        let changed = newest.replace(view.clone()).is_some();
        drop(newest);
        if changed {
            for other in self.nodes.iter().filter(|o| !std::ptr::eq(*o, node)) {
                other.lock().probed.clear();
            }
        }
        None
    }

    /// Every host's current driver pool.
    pub fn pools(&self) -> Vec<Pool> {
        self.nodes.iter().map(Node::pool).collect()
    }
}

impl Node {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves nothing half-written worth refusing over.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The host's driver pool right now (replaced when the host is set aside).
    pub fn pool(&self) -> Pool {
        self.lock().pool.clone()
    }

    /// The host's driver pool right now and its generation (for `set_aside`).
    pub fn current(&self) -> (Pool, u64) {
        let st = self.lock();
        (st.pool.clone(), st.generation)
    }

    /// The options of this host's connections (for the session killer's own connection).
    pub fn opts(&self) -> &Opts {
        &self.opts
    }

    /// Whether a checkout may try this host now: not set aside, or its backoff has run out.
    pub fn ready(&self) -> bool {
        self.lock()
            .aside
            .as_ref()
            .is_none_or(|a| a.until <= Instant::now())
    }

    /// Whether the host is set aside (its backoff may have run out).
    pub fn is_aside(&self) -> bool {
        self.lock().aside.is_some()
    }

    /// Whether connection `id` must be probed before it is handed out: a connection not probed
    /// yet, or any connection of a host set aside (whose backoff has run out).
    pub fn needs_probe(&self, id: u32) -> bool {
        let st = self.lock();
        st.aside.is_some() || !st.probed.contains(&id)
    }

    /// Records a checkout that succeeded (after a probe where one was needed).
    pub fn healthy(&self, probed: Option<u32>) {
        let mut st = self.lock();
        if st.aside.take().is_some() {
            st.since = SystemTime::now();
        }
        st.failures = 0;
        st.probed.extend(probed);
    }

    /// Sets the host aside for a backoff, for `reason`, and replaces its pool: its idle
    /// connections are closed in the background instead of being handed out again. `seen_on` is
    /// the generation of the pool the failure came from, when known: a failure on a pool already
    /// replaced, or of a connection of a host already set aside, was counted by the failure that
    /// set it aside (the calls in flight when a node dies all fail at once).
    pub fn set_aside(&self, reason: String, seen_on: Option<u64>) {
        let mut st = self.lock();
        let stale = match seen_on {
            Some(generation) => generation != st.generation,
            None => st.aside.is_some(),
        };
        if stale {
            return;
        }
        st.generation += 1;
        st.failures = st.failures.saturating_add(1);
        let wait = FIRST_BACKOFF
            .saturating_mul(1 << (st.failures - 1).min(8))
            .min(MAX_BACKOFF);
        if st.aside.is_none() {
            st.since = SystemTime::now();
        }
        st.aside = Some(Aside {
            until: Instant::now() + wait,
            reason,
        });
        st.probed.clear();
        let old = std::mem::replace(&mut st.pool, Pool::new(self.opts.clone()));
        drop(st);
        // Waits for the connections still in use, which close as they come back.
        tokio::spawn(async move {
            let _ = old.disconnect().await;
        });
    }
}

/// Why the node behind `conn` cannot take writes, if it cannot: read-only (`read_only`,
/// `innodb_read_only`), a Galera node that is not `Synced`, or a Group Replication member that is
/// not an ONLINE primary with a majority of its group (`group::GroupFacts::unfit`: a secondary,
/// a member recovering, or one restarted outside its group, which may well be writable). One
/// round trip, two on a Galera node or a group member; only on a connection's first checkout in a
/// multi-host pool. A group member whose view is older than one another member of the pool
/// showed is unfit too (`Hosts::view_seen`). An account that may not read the group tables gets
/// the read-only verdict.
pub async fn unfit(conn: &mut Conn, hosts: &Hosts, node: &Node) -> Result<Option<String>> {
    let vars: Vec<(String, String)> = conn
        .query(format!(
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN \
             ('read_only', 'innodb_read_only', 'wsrep_on', '{}', '{}')",
            group::GROUP_NAME,
            group::SINGLE_PRIMARY
        ))
        .await?;
    let var = |name: &str| {
        vars.iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    // MariaDB and MySQL without the plugin have no group variables.
    if var(group::GROUP_NAME).is_some_and(|g| !g.is_empty()) {
        let single = var(group::SINGLE_PRIMARY).is_some_and(group::is_on);
        match group::membership(conn, single).await {
            Ok(facts) => {
                node.lock().group = Some(facts.clone());
                // Every member's view counts, a secondary's too: the newer the pool's, the sooner
                // a member behind it is told apart.
                let behind = facts.view.as_ref().and_then(|v| hosts.view_seen(node, v));
                if let Some(why) = facts.unfit().or(behind) {
                    return Ok(Some(why));
                }
            }
            Err(e) if group::denied(&e) => {}
            Err(e) => return Err(e),
        }
    }
    if var("read_only").is_some_and(group::is_on) {
        return Ok(Some("read-only (read_only = ON)".into()));
    }
    if var("innodb_read_only").is_some_and(group::is_on) {
        return Ok(Some("read-only (innodb_read_only = ON)".into()));
    }
    // MySQL has no wsrep variables; MariaDB has them with or without Galera.
    if !var("wsrep_on").is_some_and(group::is_on) {
        return Ok(None);
    }
    let state: Option<(String, String)> = conn
        .query_first("SHOW GLOBAL STATUS LIKE 'wsrep\\_local\\_state\\_comment'")
        .await?;
    match state {
        Some((_, s)) if s == "Synced" => Ok(None),
        Some((_, s)) => Ok(Some(format!(
            "Galera node not synced (wsrep_local_state_comment = {s})"
        ))),
        None => Ok(Some("Galera node state unknown".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failover_policies_parse_and_refuse_unknown_names() {
        assert_eq!(Failover::parse(None).unwrap(), Failover::Sequential);
        assert_eq!(
            Failover::parse(Some("loadbalance")).unwrap(),
            Failover::LoadBalance
        );
        assert!(Failover::parse(Some("random")).is_err());
    }
}
