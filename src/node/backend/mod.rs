//! The `#[napi]` backend object: one method per port operation (runs.rs: the run lifecycle;
//! dispatch.rs: queue and timers; history.rs: listing, deleting, retrying runs, crons).
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
use crate::node::sql::NativeSql;
use crate::node::tx::{NativeTx, TxInner};
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

// The methods, one file per concern; declared after the macro, whose scope is textual.
mod dispatch;
mod history;
mod runs;

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
}
