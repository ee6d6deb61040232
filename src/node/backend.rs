//! The `#[napi]` backend object: one method per port operation.
//!
//! Each method states ONCE whether its unit of work is a transaction (`Mode`), then runs the port
//! logic on the native pool (autocommit or one transaction, re-run after deadlocks) or, when
//! `lib/` passes a `via` bridge, on the wrapped JS `Sql` — which opens and settles its `tx` when
//! the wrapped executor says so. Results cross back as plain values or JSON text; errors as the
//! JS error objects `error` builds.

use crate::error::Error;
use crate::exec::wrapped::{self, IdFn, JsIds, RunFn};
use crate::exec::{self, Mode, PoolHandle};
use crate::model::codec::StartResult;
use crate::model::schema::{Contract, Schema};
use crate::node::coalesce::Enqueues;
use crate::node::promise;
use crate::node::sql::{NativeSql, NativeTx, TxInner};
use crate::observe::metrics;
use crate::ports::args::{
    self, CheckpointArg, CronArg, EnqueueArg, ListArg, OutboxArg, RunSetArg, SpecArg,
};
use crate::ports::queue;
use crate::ports::store;
use crate::ports::timer;
use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

/// Backend state: the schema (names and contract) and where its units run: the native pool,
/// a caller's open native transaction (`inTx`), or — neither set — a wrapped JS `Sql` bridged in
/// with every call.
#[napi]
pub struct NativeBackend {
    schema: Arc<Schema>,
    pool: Option<Arc<PoolHandle>>,
    tx: Option<Arc<TxInner>>,
    /// A wrapped backend whose `Sql` is a handle of the caller's transaction (`inTx`).
    joined: bool,
    /// What the last `claim` / `dueBatch` found, to start the next one with a cheap probe when
    /// it found nothing (an idle worker polls).
    idle: Arc<Idle>,
    /// `enqueue` calls made together, sent together (native pool only: `node/coalesce.rs`).
    enqueues: Option<Arc<Enqueues>>,
}

/// Whether the last claim / dueBatch came back empty.
#[derive(Default)]
struct Idle {
    claim: AtomicBool,
    due: AtomicBool,
}

fn schema_of(env: &Env, prefix: &str, contract: &str) -> napi::Result<Arc<Schema>> {
    let schema = Contract::parse(contract).and_then(|c| Schema::new(prefix, c));
    promise::sync(env, schema).map(Arc::new)
}

/// Runs `$body` (an expression using `$e`, `$t` and the captured values by reference) in `$mode`:
/// on the wrapped executor when `$via` is set, inside the caller's transaction for an `inTx`
/// backend, else on the native pool; answers a promise.
macro_rules! unit {
    ($self:ident, $env:ident, $name:literal, $via:ident, $mode:expr, ($($cap:ident),*), |$e:ident, $t:ident| $body:expr) => {{
        const METHOD: usize = metrics::index($name);
        let mode: Mode = $mode;
        let tables = $self.schema.clone();
        let pool = $self.pool.clone();
        let wrapped_joined = $self.joined;
        // Issued now (the JS thread): it runs after the caller's calls issued before it, and
        // the caller's later calls and commit wait for it.
        let joined = $self.tx.as_ref().map(|tx| tx.issue());
        // Native calls are counted in their pool's metrics (`sql.stats()`).
        let meter = pool.clone().or_else(|| joined.as_ref().map(|j| j.tx().handle()));
        $(let $cap = Arc::new($cap);)*
        promise::promise($env, async move {
            let started = Instant::now();
            let result = match ($via, pool, joined) {
                (Some(bridge), _, _) => {
                    wrapped::run(bridge, mode, wrapped_joined, move |$e| {
                        Box::pin(async move {
                            let $t: &Schema = &tables;
                            $(let $cap = &*$cap;)*
                            $body.await
                        })
                    })
                    .await
                }
                (None, _, Some(issued)) => {
                    issued.joined(move |$e| {
                        Box::pin(async move {
                            let $t: &Schema = &tables;
                            $(let $cap = &*$cap;)*
                            $body.await
                        })
                    })
                    .await
                }
                (None, Some(pool), None) => {
                    exec::run(&pool, mode, move |$e| {
                        let tables = tables.clone();
                        $(let $cap = $cap.clone();)*
                        Box::pin(async move {
                            let $t: &Schema = &tables;
                            $(let $cap = &*$cap;)*
                            $body.await
                        })
                    })
                    .await
                }
                (None, None, None) => Err(Error::Invalid(
                    "this backend has no native pool; pass a wrapped Sql bridge".into(),
                )),
            };
            if let Some(handle) = meter {
                handle.metrics.record(METHOD, started.elapsed(), result.as_ref().err());
            }
            result
        })
    }};
}

type Answer<'env, T> = napi::Result<PromiseRaw<'env, T>>;

#[napi]
impl NativeBackend {
    /// A backend over our native pool, following `contract`.
    #[napi(factory)]
    pub fn native(
        env: &Env,
        sql: &NativeSql,
        prefix: String,
        contract: String,
    ) -> napi::Result<Self> {
        let schema = schema_of(env, &prefix, &contract)?;
        let enqueues = Enqueues::new(sql.handle.clone(), schema.clone());
        Ok(NativeBackend {
            schema,
            pool: Some(sql.handle.clone()),
            tx: None,
            joined: false,
            idle: Arc::default(),
            enqueues: Some(Arc::new(enqueues)),
        })
    }

    /// A backend whose every unit joins the caller's open native transaction (`inTx`).
    #[napi(factory)]
    pub fn joined(
        env: &Env,
        tx: &NativeTx,
        prefix: String,
        contract: String,
    ) -> napi::Result<Self> {
        Ok(NativeBackend {
            schema: schema_of(env, &prefix, &contract)?,
            pool: None,
            tx: Some(tx.inner.clone()),
            joined: true,
            idle: Arc::default(),
            enqueues: None,
        })
    }

    /// A backend whose every call comes with a `via` bridge to a JS `Sql`; `joined` when that
    /// `Sql` is a handle of the caller's transaction (`inTx`).
    #[napi(factory)]
    pub fn wrapped(
        env: &Env,
        prefix: String,
        contract: String,
        joined: bool,
    ) -> napi::Result<Self> {
        Ok(NativeBackend {
            schema: schema_of(env, &prefix, &contract)?,
            pool: None,
            tx: None,
            joined,
            idle: Arc::default(),
            enqueues: None,
        })
    }

    #[napi(ts_return_type = "Promise<StartResult>")]
    pub fn start_run<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        spec: SpecArg,
        via: Option<RunFn>,
    ) -> Answer<'env, StartResult> {
        unit!(
            self,
            env,
            "startRun",
            via,
            Mode::Autocommit,
            (run_id, spec),
            |e, t| { store::start_run(e, t, run_id, spec) }
        )
    }

    /// `specs`: one JSON array of rows (`args::spec_rows`); answers `StartResult::rows_json`.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn start_many_runs<'env>(
        &self,
        env: &'env Env,
        specs: String,
        via: Option<RunFn>,
    ) -> Answer<'env, String> {
        let (run_ids, specs) =
            promise::sync(env, args::spec_rows(&specs).map_err(Error::Contract))?;
        // One multi-row INSERT is atomic alone; anything more is one transaction.
        let mode = Mode::transaction_if(!store::many_runs_in_one_statement(&specs));
        unit!(
            self,
            env,
            "startManyRuns",
            via,
            mode,
            (run_ids, specs),
            |e, t| {
                async {
                    let results = store::start_many_runs(e, t, run_ids, specs).await?;
                    StartResult::rows_json(&results)
                }
            }
        )
    }

    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn load_run<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        via: Option<RunFn>,
    ) -> Answer<'env, Option<String>> {
        unit!(
            self,
            env,
            "loadRun",
            via,
            Mode::Autocommit,
            (run_id),
            |e, t| { store::load_run(e, t, run_id) }
        )
    }

    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn load_run_row<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        via: Option<RunFn>,
    ) -> Answer<'env, Option<String>> {
        unit!(
            self,
            env,
            "loadRunRow",
            via,
            Mode::Autocommit,
            (run_id),
            |e, t| { store::load_run_row(e, t, run_id) }
        )
    }

    #[napi(ts_return_type = "Promise<string>")]
    pub fn load_run_rows<'env>(
        &self,
        env: &'env Env,
        run_ids: Vec<String>,
        via: Option<RunFn>,
    ) -> Answer<'env, String> {
        unit!(
            self,
            env,
            "loadRunRows",
            via,
            Mode::Autocommit,
            (run_ids),
            |e, t| { store::load_run_rows(e, t, run_ids) }
        )
    }

    #[napi(ts_return_type = "Promise<number | null>")]
    pub fn arrive_at_join<'env>(
        &self,
        env: &'env Env,
        parent_run_id: String,
        via: Option<RunFn>,
    ) -> Answer<'env, Option<i64>> {
        unit!(
            self,
            env,
            "arriveAtJoin",
            via,
            // Natively one atomic UPDATE (see `store::arrive_at_join`); a wrapped `Sql` may not
            // report `insertId`, so there the re-read shares the UPDATE's transaction.
            Mode::transaction_if(via.is_some()),
            (parent_run_id),
            |e, t| { store::arrive_at_join(e, t, parent_run_id) }
        )
    }

    #[napi(ts_return_type = "Promise<boolean>")]
    #[allow(clippy::too_many_arguments)]
    pub fn post_signal<'env>(
        &self,
        env: &'env Env,
        signal_id: String,
        run_id: String,
        name: String,
        payload: Option<String>,
        idem_key: Option<String>,
        via: Option<RunFn>,
    ) -> Answer<'env, bool> {
        unit!(
            self,
            env,
            "postSignal",
            via,
            Mode::Transaction,
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

    #[napi(ts_return_type = "Promise<number>")]
    pub fn mark_running<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        via: Option<RunFn>,
    ) -> Answer<'env, i64> {
        unit!(
            self,
            env,
            "markRunning",
            via,
            Mode::Autocommit,
            (run_id),
            |e, t| { store::mark_running(e, t, run_id) }
        )
    }

    /// Without an outbox the checkpoint is one autocommit statement (see `store::checkpoint_step`).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn checkpoint_step<'env>(
        &self,
        env: &'env Env,
        c: CheckpointArg,
        fx: Option<OutboxArg>,
        via: Option<RunFn>,
    ) -> Answer<'env, String> {
        let mode = Mode::transaction_if(fx.is_some());
        unit!(self, env, "checkpointStep", via, mode, (c, fx), |e, t| {
            store::checkpoint_step(e, t, c, fx.as_ref())
        })
    }

    /// A status write without an outbox is one atomic UPDATE: no transaction needed.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn suspend_run<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        status: String,
        fx: Option<OutboxArg>,
        via: Option<RunFn>,
    ) -> Answer<'env, ()> {
        let mode = Mode::transaction_if(fx.is_some());
        unit!(
            self,
            env,
            "suspendRun",
            via,
            mode,
            (run_id, status, fx),
            |e, t| { store::suspend_run(e, t, run_id, status, fx.as_ref()) }
        )
    }

    #[napi(ts_return_type = "Promise<void>")]
    #[allow(clippy::too_many_arguments)]
    pub fn mark_terminal<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        status: String,
        output: Option<String>,
        error: Option<String>,
        fx: Option<OutboxArg>,
        via: Option<RunFn>,
    ) -> Answer<'env, ()> {
        let mode = Mode::transaction_if(fx.is_some());
        unit!(
            self,
            env,
            "markTerminal",
            via,
            mode,
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

    #[napi(ts_return_type = "Promise<string>")]
    pub fn list_runs<'env>(
        &self,
        env: &'env Env,
        list: ListArg,
        via: Option<RunFn>,
    ) -> Answer<'env, String> {
        unit!(
            self,
            env,
            "listRuns",
            via,
            Mode::Autocommit,
            (list),
            |e, t| { store::list_runs(e, t, list) }
        )
    }

    #[napi(ts_return_type = "Promise<string>")]
    pub fn children_of<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        via: Option<RunFn>,
    ) -> Answer<'env, String> {
        unit!(
            self,
            env,
            "childrenOf",
            via,
            Mode::Autocommit,
            (run_id),
            |e, t| { store::children_of(e, t, run_id) }
        )
    }

    #[napi(ts_return_type = "Promise<string>")]
    pub fn run_stats<'env>(&self, env: &'env Env, via: Option<RunFn>) -> Answer<'env, String> {
        unit!(self, env, "runStats", via, Mode::Autocommit, (), |e, t| {
            store::run_stats(e, t)
        })
    }

    #[napi(ts_return_type = "Promise<string[]>")]
    pub fn orphaned_runs<'env>(
        &self,
        env: &'env Env,
        limit: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, Vec<String>> {
        unit!(
            self,
            env,
            "orphanedRuns",
            via,
            Mode::Autocommit,
            (limit),
            |e, t| { store::orphaned_runs(e, t, *limit) }
        )
    }

    #[napi(ts_return_type = "Promise<number>")]
    pub fn delete_runs_older_than<'env>(
        &self,
        env: &'env Env,
        before: i64,
        limit: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, i64> {
        unit!(
            self,
            env,
            "deleteRunsOlderThan",
            via,
            Mode::Transaction,
            (before, limit),
            |e, t| { store::delete_runs_older_than(e, t, *before, *limit) }
        )
    }

    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn retry_run<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        via: Option<RunFn>,
    ) -> Answer<'env, bool> {
        unit!(
            self,
            env,
            "retryRun",
            via,
            Mode::Transaction,
            (run_id),
            |e, t| { store::retry_run(e, t, run_id) }
        )
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn upsert_cron<'env>(
        &self,
        env: &'env Env,
        cron: CronArg,
        via: Option<RunFn>,
    ) -> Answer<'env, ()> {
        unit!(
            self,
            env,
            "upsertCron",
            via,
            Mode::Autocommit,
            (cron),
            |e, t| { store::upsert_cron(e, t, cron) }
        )
    }

    #[napi(ts_return_type = "Promise<string>")]
    pub fn due_crons<'env>(
        &self,
        env: &'env Env,
        now: i64,
        limit: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, String> {
        unit!(
            self,
            env,
            "dueCrons",
            via,
            Mode::Autocommit,
            (now, limit),
            |e, t| { store::due_crons(e, t, *now, *limit) }
        )
    }

    #[napi(ts_return_type = "Promise<boolean>")]
    #[allow(clippy::too_many_arguments)]
    pub fn advance_cron<'env>(
        &self,
        env: &'env Env,
        name: String,
        expected: i64,
        next: i64,
        last: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, bool> {
        unit!(
            self,
            env,
            "advanceCron",
            via,
            Mode::Autocommit,
            (name, expected, next, last),
            |e, t| store::advance_cron(e, t, name, *expected, *next, *last)
        )
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn enqueue<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        run_at: i64,
        priority: Option<i64>,
        via: Option<RunFn>,
    ) -> Answer<'env, ()> {
        if let (Some(enqueues), None) = (&self.enqueues, &via) {
            // Counted in the pool's metrics by `coalesce` once answered.
            return enqueues.arrive(env, run_id, run_at, priority);
        }
        unit!(
            self,
            env,
            "enqueue",
            via,
            Mode::Autocommit,
            (run_id, run_at, priority),
            |e, t| queue::enqueue(e, t, run_id, *run_at, *priority)
        )
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn enqueue_many<'env>(
        &self,
        env: &'env Env,
        requests: Vec<EnqueueArg>,
        via: Option<RunFn>,
    ) -> Answer<'env, ()> {
        unit!(
            self,
            env,
            "enqueueMany",
            via,
            Mode::Autocommit,
            (requests),
            |e, t| { queue::enqueue_many(e, t, requests) }
        )
    }

    #[napi(ts_return_type = "Promise<string>")]
    #[allow(clippy::too_many_arguments)]
    pub fn claim<'env>(
        &self,
        env: &'env Env,
        at: i64,
        lease_ms: i64,
        limit: i64,
        names: Option<Vec<String>>,
        id_fn: Option<IdFn>,
        via: Option<RunFn>,
    ) -> Answer<'env, String> {
        let ids = id_fn.map(JsIds);
        let idle = self.idle.clone();
        unit!(
            self,
            env,
            "claim",
            via,
            Mode::Transaction,
            (at, lease_ms, limit, names, ids, idle),
            |e, t| queue::claim(
                e,
                t,
                *at,
                *lease_ms,
                *limit,
                names.as_deref(),
                ids.as_ref(),
                &idle.claim
            )
        )
    }

    #[napi(ts_return_type = "Promise<void>")]
    #[allow(clippy::too_many_arguments)]
    pub fn heartbeat<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        token: String,
        at: i64,
        lease_ms: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, ()> {
        unit!(
            self,
            env,
            "heartbeat",
            via,
            Mode::Autocommit,
            (run_id, token, at, lease_ms),
            |e, t| queue::heartbeat(e, t, run_id, token, *at, *lease_ms)
        )
    }

    #[napi(ts_return_type = "Promise<void>")]
    #[allow(clippy::too_many_arguments)]
    pub fn ack<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        token: String,
        version: i64,
        at: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, ()> {
        unit!(
            self,
            env,
            "ack",
            via,
            Mode::Autocommit,
            (run_id, token, version, at),
            |e, t| queue::ack(e, t, run_id, token, *version, *at)
        )
    }

    #[napi(ts_return_type = "Promise<string>")]
    pub fn depth<'env>(
        &self,
        env: &'env Env,
        now: i64,
        names: Option<Vec<String>>,
        via: Option<RunFn>,
    ) -> Answer<'env, String> {
        unit!(
            self,
            env,
            "depth",
            via,
            Mode::Autocommit,
            (now, names),
            |e, t| { queue::depth(e, t, *now, names.as_deref()) }
        )
    }

    #[napi(ts_return_type = "Promise<number>")]
    pub fn due_count<'env>(
        &self,
        env: &'env Env,
        now: i64,
        names: Option<Vec<String>>,
        via: Option<RunFn>,
    ) -> Answer<'env, i64> {
        unit!(
            self,
            env,
            "dueCount",
            via,
            Mode::Autocommit,
            (now, names),
            |e, t| { timer::due_count(e, t, *now, names.as_deref()) }
        )
    }

    #[napi(ts_return_type = "Promise<number | null>")]
    pub fn next_due_at<'env>(
        &self,
        env: &'env Env,
        now: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, Option<i64>> {
        unit!(
            self,
            env,
            "nextDueAt",
            via,
            Mode::Autocommit,
            (now),
            |e, t| { timer::next_due_at(e, t, *now) }
        )
    }

    #[napi(ts_return_type = "Promise<string>")]
    pub fn list_crons<'env>(&self, env: &'env Env, via: Option<RunFn>) -> Answer<'env, String> {
        unit!(self, env, "listCrons", via, Mode::Autocommit, (), |e, t| {
            store::list_crons(e, t)
        })
    }

    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn remove_cron<'env>(
        &self,
        env: &'env Env,
        name: String,
        via: Option<RunFn>,
    ) -> Answer<'env, bool> {
        unit!(
            self,
            env,
            "removeCron",
            via,
            Mode::Autocommit,
            (name),
            |e, t| { store::remove_cron(e, t, name) }
        )
    }

    #[napi(ts_return_type = "Promise<number>")]
    pub fn due_cron_count<'env>(
        &self,
        env: &'env Env,
        now: i64,
        names: Option<Vec<String>>,
        via: Option<RunFn>,
    ) -> Answer<'env, i64> {
        unit!(
            self,
            env,
            "dueCronCount",
            via,
            Mode::Autocommit,
            (now, names),
            |e, t| { store::due_cron_count(e, t, *now, names.as_deref()) }
        )
    }

    #[napi(ts_return_type = "Promise<number>")]
    pub fn delete_runs<'env>(
        &self,
        env: &'env Env,
        filter: RunSetArg,
        limit: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, i64> {
        unit!(
            self,
            env,
            "deleteRuns",
            via,
            Mode::Transaction,
            (filter, limit),
            |e, t| { store::delete_runs(e, t, filter, *limit) }
        )
    }

    #[napi(ts_return_type = "Promise<number>")]
    pub fn cancel_runs<'env>(
        &self,
        env: &'env Env,
        filter: RunSetArg,
        limit: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, i64> {
        unit!(
            self,
            env,
            "cancelRuns",
            via,
            Mode::Transaction,
            (filter, limit),
            |e, t| { store::cancel_runs(e, t, filter, *limit) }
        )
    }

    #[napi(ts_return_type = "Promise<number>")]
    pub fn retry_runs<'env>(
        &self,
        env: &'env Env,
        filter: RunSetArg,
        limit: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, i64> {
        unit!(
            self,
            env,
            "retryRuns",
            via,
            Mode::Transaction,
            (filter, limit),
            |e, t| { store::retry_runs(e, t, filter, *limit) }
        )
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn schedule<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        fire_at: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, ()> {
        unit!(
            self,
            env,
            "schedule",
            via,
            Mode::Autocommit,
            (run_id, fire_at),
            |e, t| { timer::schedule(e, t, run_id, *fire_at) }
        )
    }

    #[napi(ts_return_type = "Promise<string[]>")]
    pub fn due_batch<'env>(
        &self,
        env: &'env Env,
        now: i64,
        limit: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, Vec<String>> {
        let idle = self.idle.clone();
        unit!(
            self,
            env,
            "dueBatch",
            via,
            Mode::Transaction,
            (now, limit, idle),
            |e, t| { timer::due_batch(e, t, *now, *limit, &idle.due) }
        )
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn cancel_timer<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        via: Option<RunFn>,
    ) -> Answer<'env, ()> {
        unit!(
            self,
            env,
            "cancelTimer",
            via,
            Mode::Autocommit,
            (run_id),
            |e, t| { timer::cancel(e, t, run_id) }
        )
    }
}
