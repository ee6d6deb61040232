//! What a MySQL Group Replication member says of itself and its group, read from its
//! `performance_schema` on a connection to it: the one place the package reads group facts (the
//! multi-host probe `hosts::unfit`, the check after a certification failure in `exec::run`; `doctor`
//! and `stats()` may call `facts` too).
//!
//! These tables need `SELECT` on `performance_schema` (or on the tables themselves); an account
//! without it gets errno 1142, which callers treat as "facts unknown", never as a broken host.

use crate::error::{Error, Result};
use mysql_async::prelude::*;
use mysql_async::Conn;

/// Whether `e` says the account may not read the group tables (1142: SELECT denied).
pub fn denied(e: &Error) -> bool {
    matches!(e, Error::Server { code: 1142, .. })
}

/// One member's view of itself and its group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupFacts {
    /// `ONLINE`, `RECOVERING`, `OFFLINE` (Group Replication not running), `ERROR`, …
    pub state: String,
    /// `PRIMARY` or `SECONDARY` (every ONLINE member is `PRIMARY` in multi-primary mode); empty
    /// when the member is not in the group.
    pub role: String,
    /// Whether the group runs with one primary (`group_replication_single_primary_mode`).
    pub single_primary: bool,
    /// The ONLINE primary as the members report themselves (`report_host:report_port`), in
    /// single-primary mode.
    pub primary: Option<(String, u16)>,
    /// Members in this member's view, and how many of them it sees ONLINE: without a majority
    /// ONLINE its commits wait (for `group_replication_unreachable_majority_timeout`, by default
    /// for ever).
    pub members: u32,
    pub online: u32,
    /// The view this member has installed (`replication_group_member_stats.VIEW_ID`); None
    /// outside the group.
    pub view: Option<ViewId>,
    /// Transactions waiting for certification on this member, and certified remote transactions
    /// waiting to be applied (`replication_group_member_stats`): the queues flow control
    /// throttles writers on. None when that table cannot be read.
    pub certification_queue: Option<u64>,
    pub applier_queue: Option<u64>,
}

impl GroupFacts {
    /// Why this member cannot take writes now, or None: not ONLINE, a secondary of a
    /// single-primary group, or without a majority of its group ONLINE.
    pub fn unfit(&self) -> Option<String> {
        if self.state != "ONLINE" {
            return Some(format!(
                "Group Replication member not ONLINE (state {})",
                self.state
            ));
        }
        if self.single_primary && self.role != "PRIMARY" {
            let primary = match &self.primary {
                Some((host, port)) => format!("the primary is {host}:{port}"),
                None => "no primary now".into(),
            };
            return Some(format!("Group Replication secondary ({primary})"));
        }
        if 2 * self.online <= self.members {
            return Some(format!(
                "Group Replication member without a majority ({} of {} members ONLINE)",
                self.online, self.members
            ));
        }
        None
    }
}

/// A group view's id, `<fixed>:<counter>`: the fixed part is chosen when the group is
/// bootstrapped, the counter grows with every membership change. A member that was cut off (frozen,
/// partitioned) and is back before it learns of its expulsion still holds the view it had, and
/// still names itself ONLINE (and PRIMARY) in it: only its view id gives it away.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewId {
    fixed: String,
    counter: u64,
}

impl ViewId {
    /// `<fixed>:<counter>` as the server prints it; None for anything else (an empty id outside
    /// the group).
    pub fn parse(text: &str) -> Option<Self> {
        let (fixed, counter) = text.rsplit_once(':')?;
        let counter = counter.parse().ok()?;
        (!fixed.is_empty()).then(|| ViewId {
            fixed: fixed.to_string(),
            counter,
        })
    }

    /// Whether this view came before `other` in the same group's life. Views of different
    /// bootstraps (another fixed part) cannot be ordered: never behind.
    pub fn behind(&self, other: &ViewId) -> bool {
        self.fixed == other.fixed && self.counter < other.counter
    }
}

impl std::fmt::Display for ViewId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.fixed, self.counter)
    }
}

/// The variables that say whether a server is configured as a group member: its group name (empty
/// or absent: not a member) and its mode. Read with the probe's other variables (one round trip).
pub const GROUP_NAME: &str = "group_replication_group_name";
pub const SINGLE_PRIMARY: &str = "group_replication_single_primary_mode";

/// This member's state and role, its view's size and ONLINE count, the single primary and the
/// view's id (one round trip). No row for this member: Group Replication is not running here (`OFFLINE`).
const MEMBERS: &str = "SELECT \
    (SELECT MEMBER_STATE FROM performance_schema.replication_group_members WHERE MEMBER_ID = @@GLOBAL.server_uuid), \
    (SELECT MEMBER_ROLE FROM performance_schema.replication_group_members WHERE MEMBER_ID = @@GLOBAL.server_uuid), \
    (SELECT COUNT(*) FROM performance_schema.replication_group_members), \
    (SELECT COUNT(*) FROM performance_schema.replication_group_members WHERE MEMBER_STATE = 'ONLINE'), \
    (SELECT MEMBER_HOST FROM performance_schema.replication_group_members \
      WHERE MEMBER_ROLE = 'PRIMARY' AND MEMBER_STATE = 'ONLINE' ORDER BY MEMBER_ID LIMIT 1), \
    (SELECT MEMBER_PORT FROM performance_schema.replication_group_members \
      WHERE MEMBER_ROLE = 'PRIMARY' AND MEMBER_STATE = 'ONLINE' ORDER BY MEMBER_ID LIMIT 1), \
    (SELECT VIEW_ID FROM performance_schema.replication_group_member_stats \
      WHERE MEMBER_ID = @@GLOBAL.server_uuid LIMIT 1)";

// Read by `facts` only, which nothing calls yet (`doctor` and `stats()` are to).
#[allow(dead_code)]
const QUEUES: &str =
    "SELECT COUNT_TRANSACTIONS_IN_QUEUE, COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE \
    FROM performance_schema.replication_group_member_stats WHERE MEMBER_ID = @@GLOBAL.server_uuid";

type MembersRow = (
    Option<String>,
    Option<String>,
    u32,
    u32,
    Option<String>,
    Option<u16>,
    Option<String>,
);

/// The member's state, role, view and primary (`single_primary` as its variable says), without
/// the queues. One round trip.
pub async fn membership(conn: &mut Conn, single_primary: bool) -> Result<GroupFacts> {
    let row: Option<MembersRow> = conn.query_first(MEMBERS).await?;
    let (state, role, members, online, host, port, view) =
        row.unwrap_or((None, None, 0, 0, None, None, None));
    Ok(GroupFacts {
        state: state
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "OFFLINE".into()),
        role: role.unwrap_or_default(),
        single_primary,
        primary: host.zip(port).filter(|_| single_primary),
        members,
        online,
        view: view.as_deref().and_then(ViewId::parse),
        certification_queue: None,
        applier_queue: None,
    })
}

/// Everything this module knows of the member behind `conn`, or None when the server is not
/// configured as a group member (no Group Replication, or MariaDB). Two or three round trips;
/// the queues are None when `replication_group_member_stats` cannot be read.
#[allow(dead_code)] // for `doctor` and `stats()`, which do not call it yet
pub async fn facts(conn: &mut Conn) -> Result<Option<GroupFacts>> {
    let vars: Vec<(String, String)> = conn
        .query(format!(
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('{GROUP_NAME}', '{SINGLE_PRIMARY}')"
        ))
        .await?;
    let var = |name: &str| {
        vars.iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    if var(GROUP_NAME).is_none_or(str::is_empty) {
        return Ok(None);
    }
    let single = var(SINGLE_PRIMARY).is_some_and(is_on);
    let mut facts = membership(conn, single).await?;
    match conn.query_first::<(u64, u64), _>(QUEUES).await {
        Ok(Some((cert, apply))) => {
            facts.certification_queue = Some(cert);
            facts.applier_queue = Some(apply);
        }
        Ok(None) => {}
        Err(e) => {
            let e = Error::from(e);
            if !denied(&e) {
                return Err(e);
            }
        }
    }
    Ok(Some(facts))
}

/// Whether the member behind `conn` is still an ONLINE member of its group, asked right after a
/// certification failure (3101): a member that has just left its group answers the commits that
/// were waiting for the group with that error too, though the group may have committed them.
/// Without access to the group tables, a member that can still take writes counts as one
/// (leaving the group makes it `super_read_only`). Any other failure: not known to be.
pub async fn still_member(conn: &mut Conn) -> bool {
    let state: std::result::Result<Option<Option<String>>, _> = conn
        .query_first(
            "SELECT MEMBER_STATE FROM performance_schema.replication_group_members \
             WHERE MEMBER_ID = @@GLOBAL.server_uuid",
        )
        .await;
    match state.map_err(Error::from) {
        Ok(Some(Some(s))) => s == "ONLINE",
        Ok(_) => false,
        Err(e) if denied(&e) => {
            let ro: std::result::Result<Option<u8>, _> =
                conn.query_first("SELECT @@GLOBAL.super_read_only").await;
            matches!(ro, Ok(Some(0)))
        }
        Err(_) => false,
    }
}

/// `ON` / `1` (as `SHOW VARIABLES` prints a boolean).
pub fn is_on(value: &str) -> bool {
    value.eq_ignore_ascii_case("ON") || value == "1"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(state: &str, role: &str, single: bool, online: u32) -> GroupFacts {
        GroupFacts {
            state: state.into(),
            role: role.into(),
            single_primary: single,
            primary: Some(("db1".into(), 3306)),
            members: 3,
            online,
            view: None,
            certification_queue: None,
            applier_queue: None,
        }
    }

    #[test]
    fn only_an_online_primary_with_a_majority_takes_writes() {
        assert_eq!(member("ONLINE", "PRIMARY", true, 3).unfit(), None);
        assert_eq!(member("ONLINE", "PRIMARY", false, 2).unfit(), None);
        let secondary = member("ONLINE", "SECONDARY", true, 3).unfit().unwrap();
        assert!(secondary.contains("secondary") && secondary.contains("db1:3306"));
        assert!(member("RECOVERING", "SECONDARY", true, 3)
            .unfit()
            .unwrap()
            .contains("RECOVERING"));
        assert!(member("OFFLINE", "", true, 0).unfit().is_some());
        assert!(member("ONLINE", "PRIMARY", true, 1)
            .unfit()
            .unwrap()
            .contains("majority"));
    }

    #[test]
    fn views_order_by_counter_within_one_bootstrap_only() {
        let v = |s: &str| ViewId::parse(s).unwrap();
        assert!(v("17964579:5").behind(&v("17964579:6")));
        assert!(!v("17964579:6").behind(&v("17964579:6")));
        assert!(!v("17964579:7").behind(&v("17964579:6")));
        assert!(!v("11111111:1").behind(&v("17964579:6")));
        assert_eq!(v("17964579:12").to_string(), "17964579:12");
        for bad in ["", ":3", "17964579", "17964579:x"] {
            assert_eq!(ViewId::parse(bad), None, "{bad:?}");
        }
    }
}
