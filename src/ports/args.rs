//! Argument shapes passed from `lib/` (store.js, queue.js, timer.js via encode.js) to the backend methods.
//!
//! `lib/` validates user input and pre-serialises JSON values with `JSON.stringify` (which
//! defines the contract's JSON fidelity), so Rust receives flat, already-checked data.

use napi_derive::napi;

/// A `RunSpec` with JSON fields already encoded (`None` = SQL NULL).
#[napi(object, object_to_js = false)]
#[derive(Clone)]
pub struct SpecArg {
    pub name: String,
    pub version: i64,
    pub input: Option<String>,
    pub idempotency_key: Option<String>,
    pub tags: Option<String>,
    pub parent_run_id: Option<String>,
    pub parent_cursor_key: Option<String>,
    pub depth: i64,
    /// `run.priority` (3.0 layout only; 0 when absent).
    pub priority: i64,
    pub created_at: i64,
}

/// A spawn request: child id, spec and its enqueue options.
#[napi(object, object_to_js = false)]
#[derive(Clone)]
pub struct SpawnArg {
    pub run_id: String,
    pub spec: SpecArg,
    pub run_at: i64,
    /// `None`: 0 under 2.0.0-alpha.2, the run's own priority under 3.0.
    pub priority: Option<i64>,
}

/// An enqueue request (`run_at` 0 = immediately due).
#[napi(object, object_to_js = false)]
#[derive(Clone)]
pub struct EnqueueArg {
    pub run_id: String,
    pub run_at: i64,
    /// `None`: 0 under 2.0.0-alpha.2, the run's own priority under 3.0.
    pub priority: Option<i64>,
}

/// A timer request.
#[napi(object, object_to_js = false)]
#[derive(Clone)]
pub struct TimerArg {
    pub run_id: String,
    pub fire_at: i64,
}

/// `joinTarget` of an outbox.
#[napi(object, object_to_js = false)]
#[derive(Clone)]
pub struct JoinArg {
    pub run_id: String,
    pub count: i64,
}

/// An outbox, applied atomically with the write that guards it.
#[napi(object, object_to_js = false)]
#[derive(Clone, Default)]
pub struct OutboxArg {
    pub spawn: Option<Vec<SpawnArg>>,
    pub enqueue: Option<Vec<EnqueueArg>>,
    pub timers: Option<Vec<TimerArg>>,
    pub cancel_timers: Option<Vec<String>>,
    pub consume_signals: Option<Vec<String>>,
    pub join_target: Option<JoinArg>,
    /// 3.0 fencing: write only while the run's job still has this version.
    pub require_version: Option<i64>,
}

/// A step checkpoint with JSON fields encoded.
#[napi(object, object_to_js = false)]
#[derive(Clone)]
pub struct CheckpointArg {
    pub run_id: String,
    pub cursor_key: String,
    pub status: String,
    pub result: Option<String>,
    pub error: Option<String>,
    pub attempts: i64,
    pub shape: Option<String>,
}

/// `listRuns` filter and page.
#[napi(object, object_to_js = false)]
#[derive(Clone)]
pub struct ListArg {
    pub statuses: Option<Vec<String>>,
    pub name: Option<String>,
    /// 3.0 only.
    pub version: Option<i64>,
    pub tag: Option<String>,
    pub cursor: Option<i64>,
    pub limit: i64,
}

/// The filter of the 3.0 bulk operations (`deleteRuns`, `cancelRuns`, `retryRuns`): runs
/// matching every given predicate, with a status among `statuses` (already narrowed by JS to
/// the ones the operation may touch).
#[napi(object, object_to_js = false)]
#[derive(Clone)]
pub struct RunSetArg {
    pub before: Option<i64>,
    pub name: Option<String>,
    pub version: Option<i64>,
    pub tag: Option<String>,
    pub statuses: Vec<String>,
}

/// A cron spec with `input` encoded.
#[napi(object, object_to_js = false)]
#[derive(Clone)]
pub struct CronArg {
    pub name: String,
    pub schedule: String,
    pub flow_name: String,
    pub flow_version: i64,
    pub input: Option<String>,
    pub overlap: String,
    pub next_run_at: i64,
}
