//! Per-call traces for the tracing channels (`lib/tracing.js`): what each statement of one call
//! cost the server, and how long the call waited for a connection.
//!
//! Nothing is collected unless JS asks: only while a channel has a subscriber does JS arm a
//! trace (`armTrace`) right before a call, which the call's promise (`promise::promise`) takes on the
//! JS thread and carries in a task-local scope into its future. The executors then note each round trip's statement
//! texts (with their `?` placeholders, never the bound values) and times; JS reads them with
//! `take()` once the call has settled. Without a scope every `note` is one task-local look-up.

use crate::error::{Error, Result};
use napi_derive::napi;
use std::cell::RefCell;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// One thing a traced call did, as JS publishes it.
#[napi(object)]
#[derive(Clone)]
pub struct TraceEvent {
    /// `query` (a statement), `acquire` (waiting for a pooled connection) or `retry` (the
    /// back-off before the unit of work was run again).
    pub kind: String,
    /// The statement text with `?` placeholders (`query` only).
    pub query: Option<String>,
    /// Which round trip of the call carried the statement (from 0): statements sharing one
    /// share its times.
    pub round_trip: Option<u32>,
    /// Whether the statement went as a prepared statement (binary protocol).
    pub prepared: Option<bool>,
    /// ms since the epoch, fractional.
    pub start_time: f64,
    pub end_time: f64,
    /// The error's code when this step failed.
    pub error: Option<String>,
    /// `acquire` only: whether the pool opened a new connection for it (best effort: it had
    /// none idle before and one more open after).
    pub opened: Option<bool>,
}

/// The events of one call.
#[derive(Default)]
struct Trace {
    events: Mutex<Vec<TraceEvent>>,
    round_trips: Mutex<u32>,
}

tokio::task_local! {
    static CURRENT: Arc<Trace>;
}

thread_local! {
    /// The trace JS armed for the next call made on this (JS) thread.
    static ARMED: RefCell<Option<Arc<Trace>>> = const { RefCell::new(None) };
}

/// A trace armed from JS; read it with `take()` after the call settled.
#[napi]
pub struct NativeTrace {
    inner: Arc<Trace>,
}

#[napi]
impl NativeTrace {
    /// The events noted so far (all of them once the call has settled), in order.
    #[napi]
    pub fn take(&self) -> Vec<TraceEvent> {
        match self.inner.events.lock() {
            Ok(mut events) => std::mem::take(&mut *events),
            Err(_) => Vec::new(),
        }
    }
}

/// Arms a trace for the next native call made on this thread (JS calls it only while a
/// channel has a subscriber, then `disarmTrace()` right after the call).
pub fn arm() -> NativeTrace {
    let inner = Arc::new(Trace::default());
    ARMED.with(|a| *a.borrow_mut() = Some(inner.clone()));
    NativeTrace { inner }
}

/// Drops an armed trace no call took (the call threw before reaching Rust's body).
pub fn disarm() {
    ARMED.with(|a| a.borrow_mut().take());
}

/// The armed trace, if any, for the call starting now (on the JS thread).
pub fn take_armed() -> Option<TraceScope> {
    ARMED.with(|a| a.borrow_mut().take()).map(TraceScope)
}

/// An armed trace on its way into a call's future.
pub struct TraceScope(Arc<Trace>);

/// Runs `fut` with `scope`'s trace current (or as it is, without one).
pub async fn traced<F: Future>(scope: Option<TraceScope>, fut: F) -> F::Output {
    match scope {
        Some(s) => CURRENT.scope(s.0, fut).await,
        None => fut.await,
    }
}

/// ms since the epoch, fractional.
fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

/// The start time of a step, when the current call is traced.
pub fn start() -> Option<f64> {
    CURRENT.try_with(|_| now_ms()).ok()
}

/// Notes one round trip that began at `started` (from `start()`) carrying `texts`, with its
/// outcome; nothing when untraced.
pub fn round_trip<T>(
    started: Option<f64>,
    texts: impl IntoIterator<Item = String>,
    prepared: bool,
    outcome: &Result<T>,
) {
    let Some(start_time) = started else { return };
    let end_time = now_ms();
    let error = outcome.as_ref().err().map(Error::code);
    let _ = CURRENT.try_with(|t| {
        let index = match t.round_trips.lock() {
            Ok(mut n) => {
                *n += 1;
                *n - 1
            }
            Err(_) => 0,
        };
        if let Ok(mut events) = t.events.lock() {
            events.extend(texts.into_iter().map(|text| TraceEvent {
                kind: "query".into(),
                query: Some(text),
                round_trip: Some(index),
                prepared: Some(prepared),
                start_time,
                end_time,
                error: error.clone(),
                opened: None,
            }));
        }
    });
}

/// Notes a step without statements (`retry`) that began at `started`.
pub fn step<T>(kind: &str, started: Option<f64>, outcome: &Result<T>) {
    push(kind, started, None, outcome);
}

/// Notes a connection checkout that began at `started`; `opened`: see `TraceEvent::opened`.
pub fn acquired<T>(started: Option<f64>, opened: Option<bool>, outcome: &Result<T>) {
    push("acquire", started, opened, outcome);
}

fn push<T>(kind: &str, started: Option<f64>, opened: Option<bool>, outcome: &Result<T>) {
    let Some(start_time) = started else { return };
    let end_time = now_ms();
    let _ = CURRENT.try_with(|t| {
        if let Ok(mut events) = t.events.lock() {
            events.push(TraceEvent {
                kind: kind.into(),
                query: None,
                round_trip: None,
                prepared: None,
                start_time,
                end_time,
                error: outcome.as_ref().err().map(Error::code),
                opened,
            });
        }
    });
}

/// Whether the current call is traced (texts are copied only then).
pub fn active() -> bool {
    CURRENT.try_with(|_| ()).is_ok()
}
