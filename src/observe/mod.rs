//! What the package tells about itself: per-method counters and latency histograms cheap enough
//! to stay on (`metrics`, read by `sql.stats()`), and the statements of one call recorded for
//! the tracing channels while someone subscribes (`trace`). Calls only `error`.

pub(crate) mod metrics;
pub(crate) mod trace;
