//! Coalescing of independent `enqueue` calls made together (issue #23).
//!
//! The engine sends `enqueue` in bursts (`Promise.all` over the runs `submitMany` created, the
//! due timers of a tick, the orphans `reconcile` found: docs/coalescing.md has the counts), and
//! each call alone is one autocommit upsert. Here the calls a backend gets in one synchronous JS
//! turn are gathered, and the turn's end (a microtask, queued by its first call) hands them to
//! the backend's slot: one call goes alone, exactly as without coalescing (one prepared
//! single-row upsert), several go as one multi-row upsert (`queue::enqueue_together`: rows
//! sorted, so that batches of two backends lock in the same order). Nothing waits for I/O or a
//! timer: a lone call is sent before its turn yields to the event loop. Calls arriving while the
//! slot is busy queue up; the slot, once its statement is answered, sends what queued as one
//! statement before it frees itself. Each caller gets its own answer.
//!
//! A batch the server refuses (nothing of a single autocommit statement applied) is sent again
//! call by call, so one bad call fails alone. A batch whose outcome is unknown (the connection
//! was lost after sending) is not re-sent: every caller in it gets that connection error, as
//! each would have alone, and on disk the statement applied wholly or not at all.
//!
//! Only on the native pool: a unit joined to a caller's transaction must run in it, in order,
//! and a wrapped `Sql` sends each call through its own bridge — those run as before.

use crate::error::{Error, Result};
use crate::exec::{self, Mode, PoolHandle};
use crate::model::schema::Schema;
use crate::node::{eager, promise};
use crate::observe::metrics;
use crate::observe::trace::{self, TraceScope};
use crate::ports::queue;
use crate::ports::statements::{Enqueue, ENQUEUE_ROWS};
use napi::bindgen_prelude::{PromiseRaw, ToNapiValue};
use napi::{sys, Env, JsValue};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;
use tokio::sync::oneshot;

/// Most run-id bytes in one coalesced statement (with `ENQUEUE_ROWS`, keeps its packet small).
const MAX_ID_BYTES: usize = 256 * 1024;

/// `enqueue` statements of one backend in flight at once. One: a backend's upserts then apply
/// in exactly the order its calls were made (a run enqueued twice ends as the later call says),
/// its own batches never wait for each other's row locks, and calls made while one is in flight
/// go in one batch after it. Measured against 2 and `connectionLimit` (10) slots: no slower on 1,000- and
/// 20-call bursts, with the fewest statements (docs/coalescing.md).
const SLOTS: usize = 1;

/// One call's arguments.
struct Request {
    run_id: String,
    run_at: i64,
    priority: Option<i64>,
    /// The trace JS armed for this call: the statement sent for it alone is noted in it (a
    /// call sent in a batch notes none, since the batch's statement is no one call's).
    trace: Option<TraceScope>,
}

/// A call of the current turn, on the JS thread: its arguments, the promise its caller holds
/// (settled by the promise `hand_over` makes for it) and when it was made.
struct Pending {
    request: Request,
    deferred: sys::napi_deferred,
    started: Instant,
}

/// A busy slot. Dropped — after its batch's statement, or unused if its task never ran — it
/// hands itself to what queued meanwhile, or frees itself.
struct Slot(Arc<Enqueues>);

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(batch) = self.0.next_batch() {
            let slot = Slot(self.0.clone());
            napi::bindgen_prelude::spawn(serve(slot, batch));
        }
    }
}

/// Sends `batch` on the slot it holds; dropping the slot then serves what queued meanwhile.
async fn serve(slot: Slot, batch: Vec<Call>) {
    slot.0.send(batch).await;
}

/// One queued call and where its answer goes.
struct Call {
    request: Request,
    answer: oneshot::Sender<Result<()>>,
}

impl Request {
    fn upsert(&self) -> Enqueue<'_> {
        Enqueue {
            run_id: &self.run_id,
            run_at: self.run_at,
            priority: self.priority,
        }
    }
}

#[derive(Default)]
struct State {
    /// Slots with a statement in flight (or about to send one).
    busy: usize,
    /// Calls of past turns not sent yet, in call order. Non-empty only while every slot is
    /// busy: a slot frees itself only once nothing waits.
    waiting: VecDeque<Call>,
}

/// The `enqueue` calls of one native backend.
pub struct Enqueues {
    pool: Arc<PoolHandle>,
    schema: Arc<Schema>,
    state: Mutex<State>,
}

impl Enqueues {
    pub fn new(pool: Arc<PoolHandle>, schema: Arc<Schema>) -> Self {
        Enqueues {
            pool,
            schema,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // The lock guards plain bookkeeping that no panic leaves half-done.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A call's promise, made on the JS thread (`env`) as the call is made; the call takes its
    /// place in line then, so that calls go in the order the caller made them. The turn's first
    /// call queues the microtask that hands the turn's calls over (`turn_ended`); if that cannot
    /// be queued, the call is handed over at once, as a lone call.
    pub fn arrive<'env>(
        self: &Arc<Self>,
        env: &'env Env,
        run_id: String,
        run_at: i64,
        priority: Option<i64>,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        let raw = env.raw();
        let mut deferred = ptr::null_mut();
        let mut promise = ptr::null_mut();
        // SAFETY: `raw` is the live environment of the JS thread this call is made on.
        if unsafe { sys::napi_create_promise(raw, &mut deferred, &mut promise) } != OK {
            return Err(napi::Error::from_reason("could not make a promise"));
        }
        let pending = Pending {
            request: Request {
                run_id,
                run_at,
                priority,
                trace: trace::take_armed(),
            },
            deferred,
            started: Instant::now(),
        };
        let first = GATHERING.with(|g| {
            let mut g = g.borrow_mut();
            let first = g.is_empty();
            match g.iter_mut().find(|(b, _)| Arc::ptr_eq(b, self)) {
                Some((_, calls)) => calls.push(pending),
                None => g.push((self.clone(), vec![pending])),
            }
            first
        });
        // SAFETY: as above.
        if first && !unsafe { queue_microtask(raw) } {
            turn_over(raw);
        }
        Ok(PromiseRaw::new(raw, promise))
    }

    /// The end of a turn: its calls' promises are made, and the calls join the line. A lone call
    /// finding the slot free is sent by its own promise, as without coalescing: its statement is
    /// written from here, the JS thread, and its answer settles it directly (`node/eager.rs`).
    /// Otherwise each call waits for its answer, and a free slot starts sending the line at once,
    /// from here too.
    fn hand_over(self: &Arc<Self>, env: &Env, mut calls: Vec<Pending>) {
        const METHOD: usize = metrics::index("enqueue");
        let mut st = self.state();
        if calls.len() == 1 && st.busy < SLOTS && st.waiting.is_empty() {
            st.busy += 1;
            drop(st);
            if let Some(Pending {
                mut request,
                deferred,
                started,
            }) = calls.pop()
            {
                let slot = Slot(self.clone());
                let trace = request.trace.take();
                let fut = async move {
                    let result = trace::traced(trace, slot.0.alone(&request)).await;
                    slot.0.record(METHOD, started, &result);
                    // Answered now; what queued meanwhile is served by a task of its own, which
                    // inherits the slot.
                    drop(slot);
                    result
                };
                settle_with(env, deferred, promise::promise(env, fut));
            }
            return;
        }
        let mut deferreds = Vec::with_capacity(calls.len());
        let mut answers = Vec::with_capacity(calls.len());
        for Pending {
            request,
            deferred,
            started,
        } in calls
        {
            let (answer, answered) = oneshot::channel();
            st.waiting.push_back(Call { request, answer });
            deferreds.push(deferred);
            answers.push((started, answered));
        }
        let batch = (st.busy < SLOTS).then(|| {
            st.busy += 1;
            take_batch(&mut st.waiting)
        });
        drop(st);
        if let Some(batch) = batch {
            eager::start(true, serve(Slot(self.clone()), batch));
        }
        // The turn's calls are answered together (they go in one statement unless the turn made
        // more than one statement holds): one task and one settlement for all of them.
        let me = self.clone();
        let all = async move {
            let mut results = Vec::with_capacity(answers.len());
            for (started, answered) in answers {
                let result = answered.await.unwrap_or_else(|_| {
                    Err(Error::Contract(
                        "internal error: a coalesced enqueue went unanswered (please report this)"
                            .into(),
                    ))
                });
                me.record(METHOD, started, &result);
                results.push(result);
            }
            results
        };
        if let Err(e) = promise::settle_all(env, deferreds.clone(), all) {
            for deferred in deferreds {
                settle_with(
                    env,
                    deferred,
                    Err(napi::Error::from_reason(e.reason.clone())),
                );
            }
        }
    }

    /// Counts one finished call in the pool's metrics (`sql.stats()`).
    fn record(&self, method: usize, started: Instant, result: &Result<()>) {
        self.pool
            .metrics
            .record(method, started.elapsed(), result.as_ref().err());
    }

    /// Takes the next batch for a busy slot, or frees the slot when nothing waits.
    fn next_batch(&self) -> Option<Vec<Call>> {
        let mut st = self.state();
        if st.waiting.is_empty() {
            st.busy -= 1;
            return None;
        }
        Some(take_batch(&mut st.waiting))
    }

    /// One `enqueue` on its own: the statement a call sends without coalescing.
    async fn alone(&self, request: &Request) -> Result<()> {
        let schema = self.schema.clone();
        let run_id: Arc<str> = request.run_id.as_str().into();
        let (run_at, priority) = (request.run_at, request.priority);
        exec::run(&self.pool, Mode::Autocommit, move |e| {
            let schema = schema.clone();
            let run_id = run_id.clone();
            Box::pin(async move { queue::enqueue(e, &schema, &run_id, run_at, priority).await })
        })
        .await
    }

    /// Sends a batch as one statement and answers each of its calls.
    async fn send(&self, batch: Vec<Call>) {
        let (mut requests, answers): (Vec<Request>, Vec<_>) =
            batch.into_iter().map(|c| (c.request, c.answer)).unzip();
        if let [one] = requests.as_mut_slice() {
            let result = trace::traced(one.trace.take(), self.alone(one)).await;
            answers
                .into_iter()
                .for_each(|a| drop(a.send(result.clone())));
            return;
        }
        let traces: Vec<Option<TraceScope>> = requests.iter_mut().map(|r| r.trace.take()).collect();
        let schema = self.schema.clone();
        let requests = Arc::new(requests);
        let rows = requests.clone();
        let together = exec::run(&self.pool, Mode::Autocommit, move |e| {
            let schema = schema.clone();
            let rows = rows.clone();
            Box::pin(async move {
                let upserts: Vec<Enqueue> = rows.iter().map(Request::upsert).collect();
                queue::enqueue_together(e, &schema, &upserts).await
            })
        })
        .await;
        let metrics = &self.pool.metrics;
        match together {
            Ok(()) => {
                metrics.coalesced(answers.len());
                answers.into_iter().for_each(|a| drop(a.send(Ok(()))));
            }
            Err(e) if e.is_connection() => {
                metrics.coalesced(answers.len());
                answers
                    .into_iter()
                    .for_each(|a| drop(a.send(Err(e.clone()))));
            }
            Err(_) => {
                metrics.sent_alone(answers.len());
                for ((r, answer), scope) in requests.iter().zip(answers).zip(traces) {
                    let result = trace::traced(scope, self.alone(r)).await;
                    let _ = answer.send(result);
                }
            }
        }
    }
}

/// The calls at the head of `waiting` that fit in one statement (at least one).
fn take_batch(waiting: &mut VecDeque<Call>) -> Vec<Call> {
    let mut bytes = 0;
    let mut batch = Vec::new();
    while let Some(call) = waiting.front() {
        bytes += call.request.run_id.len();
        if batch.len() == ENQUEUE_ROWS || (!batch.is_empty() && bytes > MAX_ID_BYTES) {
            break;
        }
        batch.extend(waiting.pop_front());
    }
    batch
}

thread_local! {
    /// The calls made on this JS thread in the current turn, per backend, in call order (empty
    /// when no `turn_ended` microtask is queued).
    static GATHERING: RefCell<Vec<(Arc<Enqueues>, Vec<Pending>)>> =
        const { RefCell::new(Vec::new()) };
}

/// Hands every backend's calls of this turn over (see `Enqueues::hand_over`).
fn turn_over(env: sys::napi_env) {
    let env = Env::from_raw(env);
    let turns = GATHERING.with(|g| std::mem::take(&mut *g.borrow_mut()));
    for (backend, calls) in turns {
        backend.hand_over(&env, calls);
    }
}

/// Settles a caller's promise with the promise `made` for its call (or rejects it).
fn settle_with(env: &Env, deferred: sys::napi_deferred, made: napi::Result<PromiseRaw<'_, ()>>) {
    let raw = env.raw();
    // SAFETY: `deferred` was made in `raw`, on this thread, and is settled exactly once here.
    unsafe {
        match made {
            Ok(p) => {
                sys::napi_resolve_deferred(raw, deferred, p.raw());
            }
            Err(e) => {
                let mut reason =
                    <napi::Error as ToNapiValue>::to_napi_value(raw, e).unwrap_or(ptr::null_mut());
                if reason.is_null() {
                    sys::napi_get_undefined(raw, &mut reason);
                }
                sys::napi_reject_deferred(raw, deferred, reason);
            }
        }
    }
}

/// `queueMicrotask(turn_ended)`; false (with nothing left pending in `env`) if it failed.
unsafe fn queue_microtask(env: sys::napi_env) -> bool {
    let mut global = ptr::null_mut();
    let mut ignored = ptr::null_mut();
    let queued = match microtask_fns(env) {
        Some((queue, callback)) => {
            sys::napi_get_global(env, &mut global) == OK
                && sys::napi_call_function(env, global, queue, 1, &callback, &mut ignored) == OK
        }
        None => false,
    };
    if !queued {
        // A JS exception a failed step left pending must not surface as the caller's.
        let mut exception = ptr::null_mut();
        sys::napi_get_and_clear_last_exception(env, &mut exception);
    }
    queued
}

const OK: sys::napi_status = sys::Status::napi_ok;

thread_local! {
    /// `queueMicrotask` and the `turn_ended` function, made once per environment (the
    /// environment they belong to, and a reference to each).
    static MICROTASK: RefCell<Option<(sys::napi_env, sys::napi_ref, sys::napi_ref)>> =
        const { RefCell::new(None) };
}

/// `queueMicrotask` and `turn_ended` as JS values of `env`.
unsafe fn microtask_fns(env: sys::napi_env) -> Option<(sys::napi_value, sys::napi_value)> {
    let cached = MICROTASK.with(|m| *m.borrow());
    let (queue_ref, callback_ref) = match cached {
        Some((of, q, c)) if of == env => (q, c),
        _ => {
            let mut global = ptr::null_mut();
            let mut queue = ptr::null_mut();
            let mut callback = ptr::null_mut();
            let (mut queue_ref, mut callback_ref) = (ptr::null_mut(), ptr::null_mut());
            let made = sys::napi_get_global(env, &mut global) == OK
                && sys::napi_get_named_property(
                    env,
                    global,
                    c"queueMicrotask".as_ptr(),
                    &mut queue,
                ) == OK
                && sys::napi_create_function(
                    env,
                    c"ifwEnqueueTurn".as_ptr(),
                    -1, // NAPI_AUTO_LENGTH: the name is NUL-terminated
                    Some(turn_ended),
                    ptr::null_mut(),
                    &mut callback,
                ) == OK
                && sys::napi_create_reference(env, queue, 1, &mut queue_ref) == OK
                && sys::napi_create_reference(env, callback, 1, &mut callback_ref) == OK;
            if !made {
                return None;
            }
            MICROTASK.with(|m| *m.borrow_mut() = Some((env, queue_ref, callback_ref)));
            (queue_ref, callback_ref)
        }
    };
    let (mut queue, mut callback) = (ptr::null_mut(), ptr::null_mut());
    let got = sys::napi_get_reference_value(env, queue_ref, &mut queue) == OK
        && sys::napi_get_reference_value(env, callback_ref, &mut callback) == OK
        && !queue.is_null()
        && !callback.is_null();
    got.then_some((queue, callback))
}

/// The microtask at the end of a turn with calls made: hands them over.
unsafe extern "C" fn turn_ended(
    env: sys::napi_env,
    _info: sys::napi_callback_info,
) -> sys::napi_value {
    // A panic must not unwind into Node.
    let _ = catch_unwind(AssertUnwindSafe(|| turn_over(env)));
    ptr::null_mut()
}
