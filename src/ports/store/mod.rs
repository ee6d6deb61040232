//! Store port: runs, step memos, signals, crons (behaviour: docs/contract.md, "Store"), one
//! file per concern; this file holds what several of them share.
//!
//! Every function is generic over `Exec`, so the native pool and a wrapped JS `Sql` share the
//! port logic; where `Exec::one_session` allows it, the native path sends fewer statements (a
//! lookup only when an insert was ignored, a read only when a write matched nothing). Which
//! calls are transactions is decided once, in `backend.rs`. Rows come back as JSON text (see
//! `codec.rs`); scalars as plain values.

use crate::exec::{Exec, Outcome, Stmt};
use crate::model::codec::RUN;
use crate::model::schema::Schema;
use mysql_async::Value;

mod bulk;
mod crons;
mod listing;
mod runs;
mod signals;
mod snapshot;
mod steps;
mod tags;

pub use bulk::*;
pub use crons::*;
pub use listing::*;
pub use runs::*;
pub use signals::*;
pub use snapshot::*;
pub use steps::*;

use tags::{tag_params, TAG_FILTER};

// Status writes by id say `FORCE INDEX (PRIMARY)`: without it the optimizer also weighs the
// `run_status` index for the status condition (range analysis with index dives), measured at
// about 15 µs of server CPU per statement for nothing — the primary key always wins.

/// Terminal statuses as a SQL tuple.
pub const TERMINAL: &str = "('done','failed','canceled')";
pub(super) const NON_SUCCESS_TERMINAL: &str = "('failed','canceled')";
pub(super) const RECONCILABLE: &str = "('pending','running','sleeping','retrying')";
pub(super) const ACTIVE: &str =
    "('pending','running','sleeping','awaiting_signal','awaiting_child','retrying')";

/// Whether `status` is one of the live statuses (the ones `ACTIVE` lists).
pub(super) fn is_live(status: &str) -> bool {
    ACTIVE
        .trim_matches(|c| c == '(' || c == ')')
        .split(',')
        .any(|x| x.trim_matches('\'') == status)
}

pub(super) fn select_runs(t: &Schema, condition: &str, params: Vec<Value>) -> Stmt {
    Stmt::query(
        format!("SELECT {} FROM {} WHERE {condition}", RUN.select(), t.run),
        params,
        RUN.names(),
    )
}

pub(super) fn first_row(outcomes: &[Outcome], idx: usize) -> Option<&Vec<Value>> {
    outcomes.get(idx).and_then(|o| o.rows.first())
}

/// `LAST_INSERT_ID()` is unsigned and 0 means "none": a new INT value read back through it
/// travels shifted by 2^32, which keeps every INT value (also a negative one, down to -2^31)
/// representable and above zero.
pub(super) const SHIFT: i64 = 1 << 32;

/// The SQL that sets a column to `expr` and hands the new value back through the OK packet
/// (`LAST_INSERT_ID(expr)`, shifted) — except inside a caller's transaction (`inTx`), whose
/// session's `LAST_INSERT_ID()` belongs to the caller: there it is plain `expr`, and the unit
/// reads the row back instead (its UPDATE holds the row lock until the caller's transaction
/// ends, so no other writer can slip in between).
pub(super) fn handed_back(e: &impl Exec, expr: &str) -> String {
    if e.in_callers_session() {
        expr.to_string()
    } else {
        format!("CAST(LAST_INSERT_ID({expr} + {SHIFT}) AS SIGNED) - {SHIFT}")
    }
}

/// The value a shifted `LAST_INSERT_ID(expr)` UPDATE (first outcome) wrote, when it matched
/// one row and its OK packet carried the id; never inside a caller's transaction, whose UPDATE
/// hands nothing back (`handed_back`).
pub(super) fn shifted(e: &impl Exec, out: &[Outcome]) -> Option<i64> {
    if e.in_callers_session() {
        return None;
    }
    out.first()
        .filter(|o| o.affected == 1 && o.insert_id > 0)
        .and_then(|o| i64::try_from(o.insert_id).ok())
        .map(|v| v - SHIFT)
}

/// What a retry sets: pending, no error; 3.0 also starts the attempt count over.
pub(super) fn retry_set(t: &Schema) -> &'static str {
    if t.contract.is_v3() {
        "status = 'pending', error = NULL, attempts = 0"
    } else {
        "status = 'pending', error = NULL"
    }
}

#[cfg(test)]
mod tests {
    use super::is_live;

    #[test]
    fn live_statuses_are_the_six_active_ones() {
        for st in [
            "pending",
            "running",
            "sleeping",
            "awaiting_signal",
            "awaiting_child",
            "retrying",
        ] {
            assert!(is_live(st), "{st}");
        }
        for st in ["done", "failed", "canceled", "", "runn"] {
            assert!(!is_live(st), "{st}");
        }
    }
}
