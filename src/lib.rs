//! iterativeflow-mysql-native: the iterativeflow backend on MySQL/MariaDB, in Rust behind Node-API.
//!
//! `index.js` and `lib/` are the public surface; this crate provides the pool (`sql`), the port
//! logic (`store`, `queue`, `timer`, with the shared `statements`) over one executor seam (`exec`
//! natively, `jsexec` for a wrapped JS `Sql`), the row shapes (`codec`), the schema (`schema`) and
//! the errors JS sees (`error`, `js`).
#![deny(clippy::all)]

mod args;
mod backend;
mod codec;
mod config;
mod errcodes;
mod error;
mod exec;
mod js;
mod jsexec;
mod jsontext;
mod literal;
mod metrics;
mod params;
mod queue;
mod rows;
mod schema;
mod sql;
mod statements;
mod store;
mod timer;

use napi::Env;
use napi_derive::napi;

/// The DDL statements for `prefix` under `contract` (throws on a bad prefix or contract).
#[napi(js_name = "ddl")]
pub fn ddl_js(env: &Env, prefix: String, contract: String) -> napi::Result<Vec<String>> {
    let ddl = schema::Contract::parse(&contract).and_then(|c| schema::ddl(&prefix, c));
    js::sync(env, ddl)
}

/// What `applySchema` runs for `prefix` under `contract` (see `schema::plan`).
#[napi]
pub fn schema_plan(
    env: &Env,
    prefix: String,
    contract: String,
) -> napi::Result<schema::SchemaPlan> {
    let plan = schema::Contract::parse(&contract).and_then(|c| schema::plan(&prefix, c));
    js::sync(env, plan)
}

/// The six back-quoted table names for `prefix` (throws on a bad prefix).
#[napi]
pub fn table_names(env: &Env, prefix: String) -> napi::Result<schema::TableNames> {
    let schema = schema::Schema::new(&prefix, schema::Contract::Alpha2);
    js::sync(env, schema.map(schema::TableNames::from))
}

/// Every row shape JS builds objects of under `contract`:
/// `{ run: [{ key, date }], step: …, signal: …, cron: … }`.
#[napi]
pub fn row_shapes(
    env: &Env,
    contract: String,
) -> napi::Result<std::collections::HashMap<String, Vec<codec::ShapeKey>>> {
    let contract = js::sync(env, schema::Contract::parse(&contract))?;
    Ok(codec::shapes(contract)
        .iter()
        .map(|(name, shape)| (name.to_string(), shape.keys()))
        .collect())
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
