//! iterativeflow-mysql-native: the iterativeflow backend on MySQL/MariaDB, in Rust behind Node-API.
//!
//! `index.js` is the public surface; this crate provides the pool (`sql`), the port logic
//! (`store`, `queue`, `timer`, `outbox`) over one executor seam (`exec`, `jsexec`), and the
//! schema (`schema`).
#![deny(clippy::all)]

mod args;
mod backend;
mod codec;
mod config;
mod error;
mod exec;
mod jsexec;
mod literal;
mod outbox;
mod params;
mod queue;
mod rows;
mod schema;
mod sql;
mod store;
mod timer;

use napi_derive::napi;

/// The six DDL statements for `prefix` (throws on a bad prefix).
#[napi(js_name = "ddl")]
pub fn ddl_js(prefix: Option<String>) -> napi::Result<Vec<String>> {
    Ok(schema::ddl(prefix.as_deref().unwrap_or(""))?)
}

/// Throws unless `prefix` satisfies the table-prefix rule.
#[napi]
pub fn check_prefix(prefix: String) -> napi::Result<()> {
    Ok(schema::check_prefix(&prefix)?)
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
