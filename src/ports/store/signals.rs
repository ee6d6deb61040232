//! Signals: `postSignal`, stored and its run woken in one unit.

use crate::error::Result;
use crate::exec::{Exec, Stmt};
use crate::model::codec::{opt_s, s};
use crate::model::schema::Schema;
use crate::ports::statements::write_then_enqueue;

/// `postSignal`: store the signal; enqueue the run in the same unit only if it was new.
pub async fn post_signal<E: Exec>(
    e: &mut E,
    t: &Schema,
    signal_id: &str,
    run_id: &str,
    name: &str,
    payload: Option<&str>,
    idem_key: Option<&str>,
) -> Result<bool> {
    let insert = Stmt::exec(
        format!(
            "INSERT IGNORE INTO {} (id, run_id, name, payload, idem_key) VALUES (?, ?, ?, ?, ?)",
            t.signal
        ),
        vec![
            s(signal_id),
            s(run_id),
            s(name),
            opt_s(payload),
            opt_s(idem_key),
        ],
    );
    write_then_enqueue(e, t, insert, run_id).await
}
