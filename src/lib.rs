//! iterativeflow-mysql-native: the iterativeflow backend on MySQL/MariaDB, in Rust behind Node-API.
//!
//! `index.js` and `lib/` are the public surface. The crate, top layer first; a layer calls only
//! the layers below it:
//!
//! - `node`: what JS holds and calls: the backend object (one method per port operation), the
//!   user's `Sql` pool and transactions, argument and parameter decoding, result rows, and how
//!   every call settles its promise.
//! - `ports`: the port logic (store, queue, timer): which statements a unit sends, in which
//!   batches, and whether it is a transaction. Knows nothing of napi or connections.
//! - `exec`: the one seam between port logic and a database: the native executor over a pooled
//!   connection (one round trip per batch), and the wrapped one through a user's JS `Sql`.
//! - `pool`: connections: options, literal rendering, the connection's character set.
//! - `model`: the on-disk format (schema, DDL, contracts) and the row shapes (codec).
//! - `error`: the errors every layer returns, and the JS error objects they become.
//! - `metrics`: counters cheap enough to stay on.
#![deny(clippy::all)]

mod error;
mod exec;
mod metrics;
mod model;
pub mod node;
mod pool;
mod ports;
mod trace;

// Old flat names, kept while the branches written before the move land (see CONTRIBUTING).
#[allow(unused_imports)]
use {
    error::codes as errcodes,
    exec::wrapped as jsexec,
    model::{codec, jsontext, schema},
    node::promise as js,
    node::{args, backend, params, rows, sql, turns},
    pool::{charset, config, literal},
    ports::{queue, statements, store, timer},
};
