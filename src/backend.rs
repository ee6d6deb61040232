//! The `#[napi]` backend object: one async method per port operation.
//!
//! Each method runs the port logic either on the native pool (autocommit or one transaction with
//! deadlock retry) or, when `index.js` passes `via`, on a wrapped JS `Sql` — the same statements
//! either way. `index.js` opens the wrapped transaction itself (`sql.tx(t => …)`) and passes the
//! transaction handle's bridge as `via`.

use crate::args::{CheckpointArg, CronArg, ListArg, OutboxArg, SpecArg};
use crate::error::Error;
use crate::exec::{self, PoolHandle};
use crate::jsexec::{IdFn, JsExec, JsIds, RunFn};
use crate::schema::Tables;
use crate::sql::NativeSql;
use crate::{queue, store, timer};
use napi_derive::napi;
use std::sync::Arc;

/// Backend state: table names and, on the native path, the pool.
#[napi]
pub struct NativeBackend {
    tables: Arc<Tables>,
    pool: Option<Arc<PoolHandle>>,
}

/// Runs `$body` (an expression using `$e`, `$t` and the captured clones) on the wrapped executor
/// when `$via` is set, else on the native pool in `$mode` (`autocommit` or `transaction`).
macro_rules! unit {
    ($self:ident, $via:ident, $mode:ident, ($($cap:ident),*), |$e:ident, $t:ident| $body:expr) => {{
        let tables = $self.tables.clone();
        let result = match $via {
            Some(run) => {
                let mut ex = JsExec::new(run);
                let $e = &mut ex;
                $(let $cap = &$cap;)*
                let $t: &Tables = &tables;
                $body.await
            }
            None => match &$self.pool {
                None => Err(Error::Invalid("this backend has no native pool; pass a wrapped Sql bridge".into())),
                Some(pool) => {
                    $(let $cap = Arc::new($cap);)*
                    exec::$mode(pool, move |$e| {
                        let tables = tables.clone();
                        $(let $cap = $cap.clone();)*
                        Box::pin(async move {
                            let $t: &Tables = &tables;
                            $(let $cap = &*$cap;)*
                            $body.await
                        })
                    })
                    .await
                }
            },
        };
        result.map_err(napi::Error::from)
    }};
}

#[napi]
impl NativeBackend {
    /// A backend over our native pool.
    #[napi(factory)]
    pub fn native(sql: &NativeSql, prefix: String) -> napi::Result<Self> {
        Ok(NativeBackend {
            tables: Arc::new(Tables::new(&prefix)?),
            pool: Some(sql.handle.clone()),
        })
    }

    /// A backend whose every call comes with a `via` bridge to a JS `Sql`.
    #[napi(factory)]
    pub fn wrapped(prefix: String) -> napi::Result<Self> {
        Ok(NativeBackend {
            tables: Arc::new(Tables::new(&prefix)?),
            pool: None,
        })
    }

    #[napi]
    pub async fn start_run(
        &self,
        run_id: String,
        spec: SpecArg,
        via: Option<RunFn>,
    ) -> napi::Result<String> {
        unit!(self, via, autocommit, (run_id, spec), |e, t| {
            store::start_run(e, t, run_id, spec)
        })
    }

    #[napi]
    pub async fn start_many_runs(
        &self,
        run_ids: Vec<String>,
        specs: Vec<SpecArg>,
        via: Option<RunFn>,
    ) -> napi::Result<String> {
        unit!(self, via, transaction, (run_ids, specs), |e, t| {
            store::start_many_runs(e, t, run_ids, specs)
        })
    }

    #[napi]
    pub async fn load_run(&self, run_id: String, via: Option<RunFn>) -> napi::Result<String> {
        unit!(self, via, autocommit, (run_id), |e, t| store::load_run(
            e, t, run_id
        ))
    }

    #[napi]
    pub async fn load_run_row(&self, run_id: String, via: Option<RunFn>) -> napi::Result<String> {
        unit!(self, via, autocommit, (run_id), |e, t| store::load_run_row(
            e, t, run_id
        ))
    }

    #[napi]
    pub async fn load_run_rows(
        &self,
        run_ids: Vec<String>,
        via: Option<RunFn>,
    ) -> napi::Result<String> {
        unit!(self, via, autocommit, (run_ids), |e, t| {
            store::load_run_rows(e, t, run_ids)
        })
    }

    #[napi]
    pub async fn arrive_at_join(
        &self,
        parent_run_id: String,
        via: Option<RunFn>,
    ) -> napi::Result<String> {
        unit!(self, via, transaction, (parent_run_id), |e, t| {
            store::arrive_at_join(e, t, parent_run_id)
        })
    }

    #[napi]
    pub async fn post_signal(
        &self,
        signal_id: String,
        run_id: String,
        name: String,
        payload: Option<String>,
        idem_key: Option<String>,
        via: Option<RunFn>,
    ) -> napi::Result<String> {
        unit!(
            self,
            via,
            transaction,
            (signal_id, run_id, name, payload, idem_key),
            |e, t| store::post_signal(
                e,
                t,
                signal_id,
                run_id,
                name,
                payload.as_deref(),
                idem_key.as_deref()
            )
        )
    }

    #[napi]
    pub async fn mark_running(&self, run_id: String, via: Option<RunFn>) -> napi::Result<String> {
        unit!(self, via, autocommit, (run_id), |e, t| store::mark_running(
            e, t, run_id
        ))
    }

    /// Without an outbox the checkpoint needs no transaction (see `store::checkpoint_step`).
    #[napi]
    pub async fn checkpoint_step(
        &self,
        c: CheckpointArg,
        fx: Option<OutboxArg>,
        via: Option<RunFn>,
    ) -> napi::Result<String> {
        if fx.is_none() {
            unit!(self, via, autocommit, (c), |e, t| store::checkpoint_step(
                e, t, c, None
            ))
        } else {
            unit!(self, via, transaction, (c, fx), |e, t| {
                store::checkpoint_step(e, t, c, fx.as_ref())
            })
        }
    }

    /// A status write without an outbox is one atomic UPDATE: no transaction needed.
    #[napi]
    pub async fn suspend_run(
        &self,
        run_id: String,
        status: String,
        fx: Option<OutboxArg>,
        via: Option<RunFn>,
    ) -> napi::Result<String> {
        if fx.is_none() {
            unit!(self, via, autocommit, (run_id, status), |e, t| {
                store::suspend_run(e, t, run_id, status, None)
            })
        } else {
            unit!(self, via, transaction, (run_id, status, fx), |e, t| {
                store::suspend_run(e, t, run_id, status, fx.as_ref())
            })
        }
    }

    #[napi]
    pub async fn mark_terminal(
        &self,
        run_id: String,
        status: String,
        output: Option<String>,
        error: Option<String>,
        fx: Option<OutboxArg>,
        via: Option<RunFn>,
    ) -> napi::Result<String> {
        if fx.is_none() {
            unit!(
                self,
                via,
                autocommit,
                (run_id, status, output, error),
                |e, t| store::mark_terminal(
                    e,
                    t,
                    run_id,
                    status,
                    output.as_deref(),
                    error.as_deref(),
                    None
                )
            )
        } else {
            unit!(
                self,
                via,
                transaction,
                (run_id, status, output, error, fx),
                |e, t| store::mark_terminal(
                    e,
                    t,
                    run_id,
                    status,
                    output.as_deref(),
                    error.as_deref(),
                    fx.as_ref()
                )
            )
        }
    }

    #[napi]
    pub async fn list_runs(&self, list: ListArg, via: Option<RunFn>) -> napi::Result<String> {
        unit!(self, via, autocommit, (list), |e, t| store::list_runs(
            e, t, list
        ))
    }

    #[napi]
    pub async fn children_of(&self, run_id: String, via: Option<RunFn>) -> napi::Result<String> {
        unit!(self, via, autocommit, (run_id), |e, t| store::children_of(
            e, t, run_id
        ))
    }

    #[napi]
    pub async fn run_stats(&self, via: Option<RunFn>) -> napi::Result<String> {
        unit!(self, via, autocommit, (), |e, t| store::run_stats(e, t))
    }

    #[napi]
    pub async fn orphaned_runs(&self, limit: i64, via: Option<RunFn>) -> napi::Result<String> {
        unit!(self, via, autocommit, (limit), |e, t| store::orphaned_runs(
            e, t, *limit
        ))
    }

    #[napi]
    pub async fn delete_runs_older_than(
        &self,
        before: i64,
        limit: i64,
        via: Option<RunFn>,
    ) -> napi::Result<String> {
        unit!(self, via, transaction, (before, limit), |e, t| {
            store::delete_runs_older_than(e, t, *before, *limit)
        })
    }

    #[napi]
    pub async fn retry_run(&self, run_id: String, via: Option<RunFn>) -> napi::Result<String> {
        unit!(self, via, transaction, (run_id), |e, t| store::retry_run(
            e, t, run_id
        ))
    }

    #[napi]
    pub async fn upsert_cron(&self, cron: CronArg, via: Option<RunFn>) -> napi::Result<String> {
        unit!(self, via, autocommit, (cron), |e, t| store::upsert_cron(
            e, t, cron
        ))
    }

    #[napi]
    pub async fn due_crons(
        &self,
        now: i64,
        limit: i64,
        via: Option<RunFn>,
    ) -> napi::Result<String> {
        unit!(
            self,
            via,
            autocommit,
            (now, limit),
            |e, t| store::due_crons(e, t, *now, *limit)
        )
    }

    #[napi]
    pub async fn advance_cron(
        &self,
        name: String,
        expected: i64,
        next: i64,
        last: i64,
        via: Option<RunFn>,
    ) -> napi::Result<String> {
        unit!(
            self,
            via,
            autocommit,
            (name, expected, next, last),
            |e, t| store::advance_cron(e, t, name, *expected, *next, *last)
        )
    }

    #[napi]
    pub async fn enqueue(
        &self,
        run_id: String,
        run_at: i64,
        priority: i64,
        via: Option<RunFn>,
    ) -> napi::Result<String> {
        unit!(self, via, autocommit, (run_id, run_at, priority), |e, t| {
            queue::enqueue(e, t, run_id, *run_at, *priority)
        })
    }

    #[napi]
    pub async fn claim(
        &self,
        at: i64,
        lease_ms: i64,
        limit: i64,
        id_fn: Option<IdFn>,
        via: Option<RunFn>,
    ) -> napi::Result<String> {
        let ids = id_fn.map(JsIds);
        unit!(
            self,
            via,
            transaction,
            (at, lease_ms, limit, ids),
            |e, t| queue::claim(e, t, *at, *lease_ms, *limit, ids.as_ref())
        )
    }

    #[napi]
    pub async fn heartbeat(
        &self,
        run_id: String,
        token: String,
        at: i64,
        lease_ms: i64,
        via: Option<RunFn>,
    ) -> napi::Result<String> {
        unit!(
            self,
            via,
            autocommit,
            (run_id, token, at, lease_ms),
            |e, t| queue::heartbeat(e, t, run_id, token, *at, *lease_ms)
        )
    }

    #[napi]
    pub async fn ack(
        &self,
        run_id: String,
        token: String,
        version: i64,
        at: i64,
        via: Option<RunFn>,
    ) -> napi::Result<String> {
        unit!(
            self,
            via,
            autocommit,
            (run_id, token, version, at),
            |e, t| queue::ack(e, t, run_id, token, *version, *at)
        )
    }

    #[napi]
    pub async fn depth(&self, now: i64, via: Option<RunFn>) -> napi::Result<String> {
        unit!(self, via, autocommit, (now), |e, t| queue::depth(
            e, t, *now
        ))
    }

    #[napi]
    pub async fn schedule(
        &self,
        run_id: String,
        fire_at: i64,
        via: Option<RunFn>,
    ) -> napi::Result<String> {
        unit!(self, via, autocommit, (run_id, fire_at), |e, t| {
            timer::schedule(e, t, run_id, *fire_at)
        })
    }

    #[napi]
    pub async fn due_batch(
        &self,
        now: i64,
        limit: i64,
        via: Option<RunFn>,
    ) -> napi::Result<String> {
        unit!(self, via, transaction, (now, limit), |e, t| {
            timer::due_batch(e, t, *now, *limit)
        })
    }

    #[napi]
    pub async fn cancel_timer(&self, run_id: String, via: Option<RunFn>) -> napi::Result<String> {
        unit!(self, via, autocommit, (run_id), |e, t| timer::cancel(
            e, t, run_id
        ))
    }
}
