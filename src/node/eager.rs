//! Where a call's future starts: its first poll runs right here on the JS thread while few calls
//! are in flight, otherwise the whole future goes to the tokio runtime.
//!
//! With one engine loop every call waits for the one before, so the worker is parked when a call
//! arrives: spawning it costs a cross-thread wake-up (JS → worker) before the query is even
//! written. Polled once here instead (inside the runtime's context, so sockets and timers
//! register with its drivers), the future checks out a connection and writes its query, and
//! stops at the read. It is handed to the runtime only by the first wake-up of that poll's
//! waker — on the worker, when the answer arrives — so the call costs one hand-off (worker → JS)
//! instead of two. With several calls in flight the worker is busy anyway and the write would
//! only add main-thread CPU, so those calls are spawned as before (`IFW_EAGER_POLL`).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Wake, Waker};
use tokio::runtime::Handle;

type Task = Pin<Box<dyn Future<Output = ()> + Send>>;

/// How many calls of this JS thread may be in flight for a new one to be polled here first:
/// `IFW_EAGER_POLL` (0 = never; default 1, i.e. only when no other call is in flight).
fn limit() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::env::var("IFW_EAGER_POLL")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(1)
    })
}

/// Whether a call made while `in_flight` others are is polled here first.
pub fn here(in_flight: usize) -> bool {
    in_flight < limit()
}

/// Calls started so far: `[first polled on the JS thread, spawned on the runtime]` (`firstPolls()`,
/// for the tests: which way a call starts is decided here, whatever the machine's load).
static STARTS: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// `(here, spawned)`: how many calls started each way in this process.
pub fn starts() -> (u64, u64) {
    (
        STARTS[0].load(Ordering::Relaxed),
        STARTS[1].load(Ordering::Relaxed),
    )
}

/// Runs `fut`: its first poll here when `here` (see `here()`), otherwise all on the runtime.
pub fn start(here: bool, fut: impl Future<Output = ()> + Send + 'static) {
    STARTS[usize::from(!here)].fetch_add(1, Ordering::Relaxed);
    if !here {
        napi::bindgen_prelude::spawn(fut);
        return;
    }
    // The handle is taken under napi's lock on its runtime, which is not held while polling.
    let handle = napi::bindgen_prelude::within_runtime_if_available(Handle::current);
    let _entered = handle.enter();
    first_poll_here(handle.clone(), Box::pin(fut));
}

/// Polls `task` once (inside the runtime's context); if it is not done, parks it where the
/// poll's waker finds it.
fn first_poll_here(handle: Handle, mut task: Task) {
    let slot = Arc::new(Slot {
        handle,
        state: Mutex::new(State::Polling),
    });
    let waker = Waker::from(slot.clone());
    if task
        .as_mut()
        .poll(&mut Context::from_waker(&waker))
        .is_ready()
    {
        return;
    }
    let mut state = lock(&slot.state);
    match *state {
        // Woken while it was being polled (or since): it is due for another poll already.
        State::Woken => {
            *state = State::Handed;
            drop(state);
            slot.handle.spawn(task);
        }
        _ => *state = State::Parked(task),
    }
}

/// Where a future polled on the JS thread waits for its first wake-up.
struct Slot {
    handle: Handle,
    state: Mutex<State>,
}

enum State {
    /// The JS thread is polling it.
    Polling,
    /// Woken during that poll: the JS thread hands it over when the poll returns.
    Woken,
    /// Waiting for its first wake-up.
    Parked(Task),
    /// Spawned on the runtime, whose own waker it registers from then on: later calls of this
    /// waker (a resource still holding it) are spurious.
    Handed,
}

impl Wake for Slot {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref()
    }

    /// The first wake-up spawns the future. On a worker (the usual case: an I/O or timer driver
    /// firing) the task goes to that worker's own queue, without waking any other thread.
    fn wake_by_ref(self: &Arc<Self>) {
        let mut state = lock(&self.state);
        match std::mem::replace(&mut *state, State::Handed) {
            State::Parked(task) => {
                drop(state);
                self.handle.spawn(task);
            }
            State::Polling | State::Woken => *state = State::Woken,
            State::Handed => {}
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
