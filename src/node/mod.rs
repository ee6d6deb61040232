//! What JS holds and calls: the `#[napi]` backend object and the user's pool (`Sql`, its
//! transactions), the decoding of user query parameters (`params`), user result rows, and
//! how every call settles its promise (`promise`). May call every layer below.

pub(crate) mod backend;
pub(crate) mod bell;
pub(crate) mod coalesce;
pub(crate) mod eager;
// Public, as napi exports are: their registration alone does not count as a use.
pub mod functions;
pub(crate) mod params;
pub(crate) mod promise;
pub(crate) mod rows;
pub(crate) mod sql;
pub(crate) mod turns;
pub(crate) mod tx;
