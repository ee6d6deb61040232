//! The listings of runs: `listRuns`, `childrenOf`, `runStats`, `orphanedRuns`. The ones about
//! live work read indexes bounded by the live runs, never the whole finished history
//! (docs/benchmarks.md, "Cost with history"; __test__/sql/history-plans.test.mjs checks the plans).

use super::{
    is_live, select_runs, tag_params, NON_SUCCESS_TERMINAL, RECONCILABLE, TAG_FILTER, TERMINAL,
};

use crate::error::Result;
use crate::exec::{Exec, Stmt};
use crate::model::codec::{self, i, int, s, string, JsonOut, RUN};
use crate::model::schema::Schema;
use crate::pool::literal::holes;
use crate::ports::args::ListArg;
use mysql_async::Value;

/// The newest runs a tag filter over live statuses examines first (see `list_runs`).
const WINDOW: i64 = 2000;

/// `listRuns`: newest-inserted first; `{ runs, cursor }` with the cursor (the last row's `seq`)
/// only when the page is full.
///
/// A tag with only live statuses (the cron overlap check: every live status and `cron:<name>`)
/// is a filter whose selectivity the optimizer cannot estimate: it walks `seq` from the newest
/// run and, when no live run has the tag, through the whole finished history. Here it is two
/// bounded reads instead: the newest `WINDOW` runs (below the cursor) by `seq`, which answer
/// when they hold a full page (the run a cron started last is usually among them); otherwise
/// the live runs through the `run_status` index, whose number does not grow with the history.
/// Without a tag, or with a finished status, the optimizer's estimate is sound and its choice
/// stays.
pub async fn list_runs<E: Exec>(e: &mut E, t: &Schema, a: &ListArg) -> Result<String> {
    let mut wh = Vec::new();
    let mut params = Vec::new();
    if let Some(st) = &a.statuses {
        wh.push(format!("status IN {}", holes(st.len())));
        params.extend(st.iter().map(|x| s(x)));
    }
    if let Some(n) = a.name.as_deref().filter(|n| !n.is_empty()) {
        wh.push("name = ?".to_string());
        params.push(s(n));
    }
    if let Some(v) = a.version.filter(|_| t.contract.is_v3()) {
        wh.push("version = ?".to_string());
        params.push(i(v));
    }
    let tag = a.tag.as_deref().filter(|n| !n.is_empty());
    if let Some(tag) = tag {
        wh.push(TAG_FILTER.to_string());
        params.extend(tag_params(tag));
    }
    if let Some(c) = a.cursor {
        wh.push("seq < ?".to_string());
        params.push(i(c));
    }
    params.push(i(a.limit));
    let clause = if wh.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", wh.join(" AND "))
    };
    let page = |from: &str, params: Vec<Value>| {
        Stmt::query(
            format!(
                "SELECT {}, seq FROM {from} {clause} ORDER BY seq DESC LIMIT ?",
                RUN.select()
            ),
            params,
            [RUN.names(), &["seq"]].concat(),
        )
    };
    let live_only = a
        .statuses
        .as_ref()
        .is_some_and(|st| st.iter().all(|x| is_live(x)));
    let rows = if tag.is_some() && live_only {
        let (below, mut window_params) = match a.cursor {
            Some(c) => ("WHERE seq < ? ", vec![i(c)]),
            None => ("", Vec::new()),
        };
        window_params.extend(params.iter().cloned());
        let window = format!(
            "(SELECT id AS window_id FROM {run} {below}ORDER BY seq DESC LIMIT {WINDOW}) w \
             STRAIGHT_JOIN {run} ON id = window_id",
            run = t.run
        );
        let mut out = e.batch(vec![page(&window, window_params)]).await?;
        if i64::try_from(out[0].rows.len()).is_ok_and(|n| n >= a.limit) {
            out.swap_remove(0).rows
        } else {
            let live = format!("{} FORCE INDEX (run_status)", t.run);
            e.batch(vec![page(&live, params)])
                .await?
                .swap_remove(0)
                .rows
        }
    } else {
        e.batch(vec![page(&t.run, params)])
            .await?
            .swap_remove(0)
            .rows
    };
    let mut j = JsonOut::new();
    j.open_obj();
    j.key("runs");
    j.raw(&RUN.write_all(&rows, t.contract)?);
    let full = i64::try_from(rows.len()).is_ok_and(|n| n == a.limit);
    if let Some(seq) = rows
        .last()
        .filter(|_| full)
        .and_then(|r| r.get(RUN.cols.len()))
    {
        j.key("cursor");
        j.str(&string(seq).unwrap_or_default());
    }
    j.close_obj();
    Ok(j.finish())
}

/// `childrenOf`: direct children.
pub async fn children_of<E: Exec>(e: &mut E, t: &Schema, run_id: &str) -> Result<String> {
    let out = e
        .batch(vec![select_runs(t, "parent_run_id = ?", vec![s(run_id)])])
        .await?;
    RUN.write_all(&out[0].rows, t.contract)
}

/// `runStats`: counts per status present (JS overlays them on all-zero stats).
pub async fn run_stats<E: Exec>(e: &mut E, t: &Schema) -> Result<String> {
    let out = e
        .batch(vec![Stmt::query(
            format!(
                "SELECT status, COUNT(*) AS n FROM {} GROUP BY status",
                t.run
            ),
            vec![],
            &["status", "n"],
        )])
        .await?;
    let mut j = JsonOut::new();
    j.open_obj();
    for r in &out[0].rows {
        if t.contract.is_v3() {
            codec::check_status(&r[0])?;
        }
        if let (Some(st), Some(n)) = (string(&r[0]), int(&r[1])) {
            j.key(&st);
            j.num(n);
        }
    }
    j.close_obj();
    Ok(j.finish())
}

/// `orphanedRuns`: the three orphan cases as one UNION, oldest inserted first.
///
/// Each case finds run ids from a secondary index without reading a run row for every live
/// run — `run_status` holds (status, id), `run_parent` (parent, id), and a job or timer is
/// looked up by its primary key — and only the orphans found are joined back for their `seq`.
/// A live run's row read costs a primary-key descent (a few µs each, most of the statement's
/// time when every live run paid one); the finished history is never walked:
/// - stranded: reconcilable runs (`run_status`) with neither a job nor a timer;
/// - lost wake-up: `awaiting_child` runs (`run_status`) without a job whose children
///   (`run_parent`) all ended, or one of them failed — one correlated count per such run, so
///   the children are read only for these parents (as `EXISTS` under an `OR`, MariaDB
///   materialises the subqueries over every run instead). The index is named: where no run
///   has a parent yet, its statistics say every run shares one parent, and MySQL then plans a
///   table scan per such run;
/// - abandoned: live runs whose parent failed or was canceled, found from `run_parent` (the
///   runs that have a parent) or from `run_status` (the live runs), whichever range the
///   optimizer estimates smaller, never by a table scan; each then reads its parent by key.
pub async fn orphaned_runs<E: Exec>(e: &mut E, t: &Schema, limit: i64) -> Result<Vec<String>> {
    let (run, job, timer) = (&t.run, &t.job, &t.timer);
    let no_job = format!("NOT EXISTS (SELECT 1 FROM {job} j WHERE j.run_id = s.id)");
    let sql = format!(
        "SELECT r.id FROM (\
         SELECT s.id FROM {run} s FORCE INDEX (run_status) WHERE s.status IN {RECONCILABLE} \
           AND {no_job} AND NOT EXISTS (SELECT 1 FROM {timer} tm WHERE tm.run_id = s.id) \
         UNION \
         SELECT s.id FROM {run} s FORCE INDEX (run_status) WHERE s.status = 'awaiting_child' \
           AND {no_job} \
           AND (SELECT COUNT(*) > 0 AND (SUM(c.status IN {NON_SUCCESS_TERMINAL}) > 0 \
                  OR SUM(c.status NOT IN {TERMINAL}) = 0) \
                FROM {run} c FORCE INDEX (run_parent) WHERE c.parent_run_id = s.id) \
         UNION \
         SELECT STRAIGHT_JOIN c.id FROM {run} c FORCE INDEX (run_parent, run_status) \
           JOIN {run} p ON p.id = c.parent_run_id \
           WHERE c.parent_run_id IS NOT NULL AND c.status NOT IN {TERMINAL} \
             AND p.status IN {NON_SUCCESS_TERMINAL}\
         ) o STRAIGHT_JOIN {run} r ON r.id = o.id ORDER BY r.seq LIMIT ?"
    );
    let out = e
        .batch(vec![Stmt::query(sql, vec![i(limit)], &["id"])])
        .await?;
    Ok(out[0].rows.iter().filter_map(|r| string(&r[0])).collect())
}
