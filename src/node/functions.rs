//! The free functions of the addon (schema facts JS asks for synchronously) and the runtime the
//! async ones run on.

use crate::model::{codec, schema};
use crate::node::promise;
use crate::observe::metrics;
use crate::observe::trace;
use napi::Env;
use napi_derive::napi;

/// The DDL statements for `prefix` under `contract`, with the timeline table when `events`
/// (throws on a bad prefix or contract).
#[napi(js_name = "ddl")]
pub fn ddl_js(
    env: &Env,
    prefix: String,
    contract: String,
    events: Option<bool>,
) -> napi::Result<Vec<String>> {
    let events = events.unwrap_or(false);
    let ddl = schema::Contract::parse(&contract).and_then(|c| schema::ddl(&prefix, c, events));
    promise::sync(env, ddl)
}

/// What `applySchema` runs for `prefix` under `contract` (see `schema::plan`).
#[napi]
pub fn schema_plan(
    env: &Env,
    prefix: String,
    contract: String,
) -> napi::Result<schema::SchemaPlan> {
    let plan = schema::Contract::parse(&contract).and_then(|c| schema::plan(&prefix, c));
    promise::sync(env, plan)
}

/// The six back-quoted table names for `prefix` (throws on a bad prefix).
#[napi]
pub fn table_names(env: &Env, prefix: String) -> napi::Result<schema::TableNames> {
    let schema = schema::Schema::new(&prefix, schema::Contract::Alpha2);
    promise::sync(env, schema.map(schema::TableNames::from))
}

/// The back-quoted name of the opt-in timeline table for `prefix` (not one of `tables()`: that
/// list is the JavaScript package's six).
#[napi]
pub fn event_table_name(env: &Env, prefix: String) -> napi::Result<String> {
    let schema = schema::Schema::new(&prefix, schema::Contract::Alpha2);
    promise::sync(env, schema.map(|t| t.event))
}

/// Every row shape JS builds objects of under `contract`:
/// `{ run: [{ key, date }], step: …, signal: …, cron: … }`.
#[napi]
pub fn row_shapes(
    env: &Env,
    contract: String,
) -> napi::Result<std::collections::HashMap<String, Vec<codec::ShapeKey>>> {
    let contract = promise::sync(env, schema::Contract::parse(&contract))?;
    Ok(codec::shapes(contract)
        .iter()
        .map(|(name, shape)| (name.to_string(), shape.keys()))
        .collect())
}

/// Arms a per-call trace for the next native call on this thread (see `trace`; JS calls it only
/// while a tracing channel has a subscriber).
#[napi]
pub fn arm_trace() -> trace::NativeTrace {
    trace::arm()
}

/// Drops an armed trace that no call took.
#[napi]
pub fn disarm_trace() {
    trace::disarm()
}

/// The upper bounds of the latency buckets in `stats().methods[m].buckets`, ms (last: Infinity).
#[napi]
pub fn latency_buckets_ms() -> Vec<f64> {
    metrics::latency_buckets_ms()
}

/// Sizes the tokio runtime napi runs our futures on. Work per call is tiny (render a batch,
/// one socket round trip), so fewer workers mean fewer cross-thread wake-ups per call;
/// `IFW_TOKIO_WORKERS` overrides the default of 1.
#[napi_derive::module_init]
fn init_runtime() {
    let workers = std::env::var("IFW_TOKIO_WORKERS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| (1..=64).contains(n))
        .unwrap_or(1);
    if let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
    {
        napi::bindgen_prelude::create_custom_tokio_runtime(rt);
    }
}

/// How the calls of this process started so far (src/node/eager.rs): first polled on the JS
/// thread (`here`), or spawned on the runtime (`spawned`).
#[napi(object)]
pub struct FirstPolls {
    pub here: f64,
    pub spawned: f64,
}

/// `FirstPolls` now (for the tests).
#[napi]
pub fn first_polls() -> FirstPolls {
    let (here, spawned) = crate::node::eager::starts();
    FirstPolls {
        here: here as f64,
        spawned: spawned as f64,
    }
}
