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
//! - `observe`: what the package tells about itself: counters cheap enough to stay on
//!   (`metrics`) and per-call statement traces for the tracing channels (`trace`).
#![deny(clippy::all)]

mod error;
mod exec;
mod model;
pub mod node;
mod observe;
mod pool;
mod ports;
