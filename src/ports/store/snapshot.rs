//! `loadRun`: a run with its steps and unconsumed signals, read as one statement.

use super::select_runs;

use crate::error::{Error, Result};
use crate::exec::{Exec, Stmt};
use crate::model::codec::{self, req_int, s, string, JsonOut, RUN, SIGNAL};
use crate::model::schema::Schema;
use mysql_async::Value;

/// `loadRun`: run, steps and signals in one round trip; `None` when the run is missing.
///
/// Natively one statement (`snapshot_union`): the server's cost per statement is about a fifth
/// of a loadRun's, and a run is loaded at least once per lease. A wrapped `Sql` gets three
/// plain SELECTs instead, since its driver would type the union's merged columns by their
/// merged type rather than by each table's own.
pub async fn load_run<E: Exec>(e: &mut E, t: &Schema, run_id: &str) -> Result<Option<String>> {
    let step = codec::step(t.contract);
    // 3.0 soft-consumes signals: only the unconsumed ones are delivered.
    let unconsumed = if t.contract.is_v3() {
        " AND consumed = 0"
    } else {
        ""
    };
    if e.reads_merged_columns() {
        let out = e.batch(vec![snapshot_union(t, run_id, unconsumed)]).await?;
        let rows = out.into_iter().next().map(|o| o.rows).unwrap_or_default();
        return snapshot_of_union(t, rows);
    }
    let stmts = vec![
        select_runs(t, "id = ?", vec![s(run_id)]),
        Stmt::query(
            format!(
                "SELECT cursor_key, {} FROM {} WHERE run_id = ?",
                step.select(),
                t.step
            ),
            vec![s(run_id)],
            [&["cursor_key"], step.names()].concat(),
        ),
        Stmt::query(
            format!(
                "SELECT {} FROM {} WHERE run_id = ?{unconsumed} ORDER BY seq",
                SIGNAL.select(),
                t.signal
            ),
            vec![s(run_id)],
            SIGNAL.names(),
        ),
    ];
    let mut out = e.batch(stmts).await?.into_iter().map(|o| o.rows);
    let (runs, steps, signals) = (
        out.next().unwrap_or_default(),
        out.next().unwrap_or_default(),
        out.next().unwrap_or_default(),
    );
    match runs.first() {
        Some(run) => snapshot_json(t, run, &steps, &signals).map(Some),
        None => Ok(None),
    }
}

/// Which table a row of `snapshot_union` comes from (its first column).
pub(super) const ROW_RUN: &str = "0";
pub(super) const ROW_STEP: &str = "1";
pub(super) const ROW_SIGNAL: &str = "2";

/// The run row, its steps and its signals as one `UNION ALL`, each row tagged with its table,
/// padded with NULLs to the run's width. The steps' and signals' text columns are cast to
/// binary, so the answer never depends on how a server reconciles two tables' collations in one
/// result column (tables created under different server defaults differ; MariaDB 10.11 accepts
/// the mix, not every server need); a binary cell carries the same bytes as the text one.
/// Signals carry their `seq`, since a union part's ORDER BY is not kept.
pub(super) fn snapshot_union(t: &Schema, run_id: &str, unconsumed: &str) -> Stmt {
    let step = codec::step(t.contract);
    let width = RUN.names().len();
    let bin = |cols: &[&str]| {
        cols.iter()
            .map(|c| format!("CAST({c} AS BINARY)"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let pad = |used: usize| ", NULL".repeat(width.saturating_sub(used));
    let step_cols: Vec<&str> = [&["cursor_key"], step.names()].concat();
    let signal_cols = SIGNAL.names();
    let text = format!(
        "SELECT {ROW_RUN} AS k, {} FROM {} WHERE id = ? \
         UNION ALL SELECT {ROW_STEP}, {}{} FROM {} WHERE run_id = ? \
         UNION ALL SELECT {ROW_SIGNAL}, {}, seq{} FROM {} WHERE run_id = ?{unconsumed}",
        RUN.select(),
        t.run,
        bin(&step_cols),
        pad(step_cols.len()),
        t.step,
        bin(signal_cols),
        pad(signal_cols.len() + 1),
        t.signal,
    );
    let cols: Vec<&'static str> = [&["k"], RUN.names()].concat();
    Stmt::query(text, vec![s(run_id), s(run_id), s(run_id)], cols)
}

/// A `RunSnapshot` from the rows of `snapshot_union`; `None` without a run row.
pub(super) fn snapshot_of_union(t: &Schema, rows: Vec<Vec<Value>>) -> Result<Option<String>> {
    let step_width = 1 + codec::step(t.contract).names().len();
    let signal_width = SIGNAL.names().len();
    let mut run = None;
    let mut steps = Vec::new();
    let mut signals: Vec<(i64, Vec<Value>)> = Vec::new();
    for mut row in rows {
        if row.is_empty() {
            continue;
        }
        let tag = string(&row[0]).unwrap_or_default();
        let mut cols = row.split_off(1);
        match tag.as_str() {
            ROW_RUN => run = Some(cols),
            ROW_STEP => {
                cols.truncate(step_width);
                steps.push(cols);
            }
            ROW_SIGNAL => {
                let seq = req_int(cols.get(signal_width).unwrap_or(&Value::NULL), "seq")?;
                cols.truncate(signal_width);
                signals.push((seq, cols));
            }
            other => {
                return Err(Error::connection(format!(
                    "loadRun: unexpected row tag {other:?}"
                )))
            }
        }
    }
    let Some(run) = run else {
        return Ok(None);
    };
    signals.sort_by_key(|(seq, _)| *seq);
    let signals: Vec<Vec<Value>> = signals.into_iter().map(|(_, row)| row).collect();
    snapshot_json(t, &run, &steps, &signals).map(Some)
}

/// `{ run, steps: [[cursorKey, memo]…], signals }` as JSON.
pub(super) fn snapshot_json(
    t: &Schema,
    run: &[Value],
    steps: &[Vec<Value>],
    signals: &[Vec<Value>],
) -> Result<String> {
    let step = codec::step(t.contract);
    // A step or signal that does not decode names its run.
    let of_run = |e: Error| {
        let id = run.first().and_then(string).unwrap_or_default();
        e.map_message(|m| format!("run {id}: {m}"))
    };
    let mut j = JsonOut::new();
    j.open_obj();
    j.key("run");
    RUN.write(&mut j, run, t.contract)?;
    j.key("steps");
    j.open_arr();
    for r in steps {
        j.open_arr();
        j.str(&r.first().and_then(string).unwrap_or_default());
        step.write(&mut j, r.get(1..).unwrap_or_default(), t.contract)
            .map_err(of_run)?;
        j.close_arr();
    }
    j.close_arr();
    j.key("signals");
    j.raw(&SIGNAL.write_all(signals, t.contract).map_err(of_run)?);
    j.close_obj();
    Ok(j.finish())
}
