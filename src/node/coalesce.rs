//! Coalescing of independent `enqueue` calls made together (issue #23).
//!
//! The engine sends `enqueue` in bursts (`Promise.all` over the runs `submitMany` created, the
//! due timers of a tick, the orphans `reconcile` found: docs/coalescing.md has the counts), and
//! each call alone is one autocommit upsert. Here a call that finds the backend's slot free is
//! sent at once, alone, exactly as without coalescing — a lone call never waits for company.
//! Calls arriving while the slot is busy queue up; the slot, once its statement is answered,
//! sends what queued as one multi-row upsert (`queue::enqueue_together`: rows sorted, so that
//! batches of two backends lock in the same order) before it frees itself. Each caller gets its
//! own answer.
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
use crate::ports::queue;
use crate::ports::statements::{Enqueue, ENQUEUE_ROWS};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::oneshot;

/// Most run-id bytes in one coalesced statement (with `ENQUEUE_ROWS`, keeps its packet small).
const MAX_ID_BYTES: usize = 256 * 1024;

/// `enqueue` statements of one backend in flight at once. One: a backend's upserts then apply
/// in exactly the order its calls were made (a run enqueued twice ends as the later call says),
/// its own batches never wait for each other's row locks, and a burst becomes one lone statement
/// plus one batch. Measured against 2 and `connectionLimit` (10) slots: no slower on 1,000- and
/// 20-call bursts, with the fewest statements (docs/coalescing.md).
const SLOTS: usize = 1;

/// One call's arguments.
struct Request {
    run_id: String,
    run_at: i64,
    priority: Option<i64>,
}

/// Where `arrive` put a call.
pub struct Turn(Place);

enum Place {
    Alone(Request, Slot),
    Queued(oneshot::Receiver<Result<()>>),
}

/// A busy slot. Dropped — after its call's statement, or unused if the call never ran — it
/// hands itself to what queued meanwhile, or frees itself.
struct Slot(Arc<Enqueues>);

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(batch) = self.0.next_batch() {
            napi::bindgen_prelude::spawn(self.0.clone().serve(batch));
        }
    }
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
    /// Calls that found every slot busy, in arrival order. Non-empty only while every slot is
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

    /// A call's place in line, taken on the JS thread as the call is made, so that calls queue in
    /// the order the caller made them: a free slot (the call goes alone), or a wait for a batch.
    pub fn arrive(self: &Arc<Self>, run_id: String, run_at: i64, priority: Option<i64>) -> Turn {
        let request = Request {
            run_id,
            run_at,
            priority,
        };
        let mut st = self.state();
        if st.busy < SLOTS {
            st.busy += 1;
            return Turn(Place::Alone(request, Slot(self.clone())));
        }
        let (answer, answered) = oneshot::channel();
        st.waiting.push_back(Call { request, answer });
        Turn(Place::Queued(answered))
    }

    /// The call's answer.
    pub async fn settle(&self, turn: Turn) -> Result<()> {
        let (request, slot) = match turn.0 {
            Place::Alone(request, slot) => (request, slot),
            Place::Queued(answered) => {
                return answered.await.unwrap_or_else(|_| {
                    Err(Error::Contract(
                        "internal error: a coalesced enqueue went unanswered (please report this)"
                            .into(),
                    ))
                })
            }
        };
        let result = self.alone(&request).await;
        // This call is answered at once; what queued meanwhile is served by a task of its own,
        // which inherits the slot.
        drop(slot);
        result
    }

    /// Takes the next batch for a busy slot, or frees the slot when nothing waits.
    fn next_batch(&self) -> Option<Vec<Call>> {
        let mut st = self.state();
        if st.waiting.is_empty() {
            st.busy -= 1;
            return None;
        }
        let mut bytes = 0;
        let mut batch = Vec::new();
        while let Some(call) = st.waiting.front() {
            bytes += call.request.run_id.len();
            if batch.len() == ENQUEUE_ROWS || (!batch.is_empty() && bytes > MAX_ID_BYTES) {
                break;
            }
            batch.extend(st.waiting.pop_front());
        }
        Some(batch)
    }

    /// A slot's task: sends `batch`, then every later batch, until nothing waits.
    async fn serve(self: Arc<Self>, mut batch: Vec<Call>) {
        loop {
            self.send(batch).await;
            match self.next_batch() {
                Some(next) => batch = next,
                None => return,
            }
        }
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
        let (requests, answers): (Vec<Request>, Vec<_>) =
            batch.into_iter().map(|c| (c.request, c.answer)).unzip();
        if let [one] = requests.as_slice() {
            let result = self.alone(one).await;
            answers
                .into_iter()
                .for_each(|a| drop(a.send(result.clone())));
            return;
        }
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
                for (r, answer) in requests.iter().zip(answers) {
                    let result = self.alone(r).await;
                    let _ = answer.send(result);
                }
            }
        }
    }
}
