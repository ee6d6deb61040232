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
use crate::node::eager;
use crate::observe::trace::{self, TraceScope};
use crate::ports::queue;
use crate::ports::statements::{Enqueue, ENQUEUE_ROWS};
use napi::sys;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::{Arc, Mutex, MutexGuard};
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

/// Where a call's answer will come from (see `Enqueues::arrive`).
pub struct Turn(oneshot::Receiver<Result<()>>);

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
    /// Calls made in the current JS turn, in call order; handed to `waiting` at its end.
    gathered: Vec<Call>,
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

    /// The pool the calls run on.
    pub fn pool(&self) -> &Arc<PoolHandle> {
        &self.pool
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // The lock guards plain bookkeeping that no panic leaves half-done.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A call's place in line, taken on the JS thread (`env`) as the call is made, so that calls
    /// go in the order the caller made them. The turn's first call queues the microtask that
    /// hands the turn's calls over (`turn_ended`); if that cannot be queued, the call is handed
    /// over at once, as a lone call.
    pub fn arrive(
        self: &Arc<Self>,
        env: sys::napi_env,
        run_id: String,
        run_at: i64,
        priority: Option<i64>,
    ) -> Turn {
        let request = Request {
            run_id,
            run_at,
            priority,
            trace: trace::take_armed(),
        };
        let (answer, answered) = oneshot::channel();
        let first = {
            let mut st = self.state();
            st.gathered.push(Call { request, answer });
            st.gathered.len() == 1
        };
        if first && !at_turn_end(env, self) {
            self.hand_over();
        }
        Turn(answered)
    }

    /// The call's answer.
    pub async fn settle(&self, turn: Turn) -> Result<()> {
        turn.0.await.unwrap_or_else(|_| {
            Err(Error::Contract(
                "internal error: a coalesced enqueue went unanswered (please report this)".into(),
            ))
        })
    }

    /// The end of a turn: its calls join the queue, and a free slot starts sending at once. Its
    /// first statement is written from here, the JS thread, with no wake-up of a worker (the
    /// way a lone call always went: `node/eager.rs`).
    fn hand_over(self: &Arc<Self>) {
        let batch = {
            let mut st = self.state();
            let gathered = std::mem::take(&mut st.gathered);
            st.waiting.extend(gathered);
            if st.busy >= SLOTS || st.waiting.is_empty() {
                return;
            }
            st.busy += 1;
            take_batch(&mut st.waiting)
        };
        eager::start(true, serve(Slot(self.clone()), batch));
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
    /// The backends of this JS thread with calls gathered in the current turn, in the order of
    /// their turn's first call (empty when no `turn_ended` microtask is queued).
    static GATHERING: RefCell<Vec<Arc<Enqueues>>> = const { RefCell::new(Vec::new()) };
}

/// Makes `turn_ended` hand `backend`'s gathered calls over at the end of this turn, queueing the
/// microtask unless an earlier call of the turn did. False if it could not be queued.
fn at_turn_end(env: sys::napi_env, backend: &Arc<Enqueues>) -> bool {
    let queued = GATHERING.with(|g| !g.borrow().is_empty());
    // SAFETY: `env` is the live environment of the JS thread this call was made on.
    if !queued && !unsafe { queue_microtask(env) } {
        return false;
    }
    GATHERING.with(|g| g.borrow_mut().push(backend.clone()));
    true
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

/// The microtask at the end of a turn with gathered calls: hands each backend's calls over.
unsafe extern "C" fn turn_ended(
    _env: sys::napi_env,
    _info: sys::napi_callback_info,
) -> sys::napi_value {
    let backends = GATHERING.with(|g| std::mem::take(&mut *g.borrow_mut()));
    for backend in backends {
        // A panic must not unwind into Node; the calls it leaves are answered as unanswered.
        let _ = catch_unwind(AssertUnwindSafe(|| backend.hand_over()));
    }
    ptr::null_mut()
}
