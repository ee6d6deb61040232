//! How every call crosses back to JS: a future run on the tokio runtime whose promise is settled
//! on the JS thread, rejected with the error object `Error::to_js` builds; and the same for the
//! synchronous entry points.
//!
//! Promises are settled through one threadsafe function per JS thread (`Settler`) instead of
//! one per call: napi-rs's own future bridge creates and closes a threadsafe function (a libuv
//! handle) for every call, which the JS thread pays for twice. Finished calls queue up here and
//! the worker wakes the JS thread only when the queue was empty, so calls finishing close
//! together are settled in one wake-up. The threadsafe function keeps the event loop alive only
//! while a call is pending (it is ref'd then, unref'd when the last one settles).

use crate::error::{Error, Result};
use crate::node::eager;
use napi::bindgen_prelude::{PromiseRaw, ToNapiValue};
use napi::{sys, Env};
use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::ptr;
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll};

/// A promise of `fut`'s value; a failure rejects it with our JS error object.
pub fn promise<'env, T>(
    env: &'env Env,
    fut: impl Future<Output = Result<T>> + Send + 'static,
) -> napi::Result<PromiseRaw<'env, T>>
where
    T: ToNapiValue + Send + 'static,
{
    let raw = env.raw();
    let settler = Settler::of(raw)?;
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    // SAFETY: `raw` is the live environment of the JS thread this entry point runs on.
    check(unsafe { sys::napi_create_promise(raw, &mut deferred, &mut promise) })?;
    let in_flight = settler.started(raw)?;
    let deferred = Deferred(deferred);
    // A trace JS armed for this call (only while a tracing channel has a subscriber).
    let fut = crate::observe::trace::traced(crate::observe::trace::take_armed(), fut);
    let here = eager::here(in_flight);
    eager::start(here, async move {
        let outcome = CatchUnwind(Box::pin(fut)).await.unwrap_or_else(|_| {
            Err(Error::Contract(
                "internal error: the native call panicked (please report this)".into(),
            ))
        });
        if here {
            // The caller's next call likely follows as soon as this one settles, and starts here
            // too: let what this call woke run first — mysql_async's recycler putting its
            // connection back — so that the next checkout finds it idle instead of waiting for
            // it (or opening another), which would move its write back to the worker.
            tokio::task::yield_now().await;
        }
        settler.finished(Box::new(move |env| {
            // SAFETY: called on the JS thread that made the promise, with its live environment.
            unsafe { settle(env, deferred, outcome) }
        }));
    });
    Ok(PromiseRaw::new(raw, promise))
}

/// Settles promises the caller made (`deferreds`, on this JS thread) with the answers `fut`
/// gives, in the same order: one future and one settlement for a group of calls answered
/// together (a coalesced batch), where `promise` would cost each call a task of its own, a
/// settlement of its own and a promise resolved with another promise. The group counts as one
/// call in flight. A missing answer rejects its promise.
pub fn settle_all(
    env: &Env,
    deferreds: Vec<sys::napi_deferred>,
    fut: impl Future<Output = Vec<Result<()>>> + Send + 'static,
) -> napi::Result<()> {
    let raw = env.raw();
    let settler = Settler::of(raw)?;
    settler.started(raw)?;
    let deferreds: Vec<Deferred> = deferreds.into_iter().map(Deferred).collect();
    napi::bindgen_prelude::spawn(async move {
        let answers = CatchUnwind(Box::pin(fut)).await.unwrap_or_default();
        settler.finished(Box::new(move |env| {
            let mut answers = answers.into_iter();
            for deferred in deferreds {
                let outcome = answers.next().unwrap_or_else(|| {
                    Err(Error::Contract(
                        "internal error: a call of a group went unanswered (please report this)"
                            .into(),
                    ))
                });
                // SAFETY: called on the JS thread that made the promises, with its live
                // environment; each deferred is settled once.
                unsafe { settle(env, deferred, outcome) }
            }
        }));
    });
    Ok(())
}

/// `r` for a synchronous entry point: a failure is thrown as our JS error object.
pub fn sync<T>(env: &Env, r: Result<T>) -> napi::Result<T> {
    r.map_err(|e| e.to_js(env.raw()))
}

fn check(status: sys::napi_status) -> napi::Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::new(
            napi::Status::from(status),
            "could not settle a promise",
        ))
    }
}

/// A promise's deferred handle, moved to the worker and back (only ever used on its JS thread).
struct Deferred(sys::napi_deferred);
// SAFETY: the handle is only dereferenced by napi on the thread that created it (`settle`).
unsafe impl Send for Deferred {}

/// Resolves or rejects `deferred` with `outcome`.
unsafe fn settle<T: ToNapiValue>(env: sys::napi_env, deferred: Deferred, outcome: Result<T>) {
    let value = match outcome {
        Ok(v) => T::to_napi_value(env, v),
        Err(e) => Err(e.to_js(env)),
    };
    match value {
        Ok(v) => {
            sys::napi_resolve_deferred(env, deferred.0, v);
        }
        Err(e) => {
            let mut reason = match <napi::Error as ToNapiValue>::to_napi_value(env, e) {
                Ok(r) => r,
                Err(_) => ptr::null_mut(),
            };
            if reason.is_null() {
                sys::napi_get_undefined(env, &mut reason);
            }
            sys::napi_reject_deferred(env, deferred.0, reason);
        }
    }
}

/// A settlement waiting for the JS thread.
type Done = Box<dyn FnOnce(sys::napi_env) + Send>;

/// The threadsafe function handle (napi allows calling it from any thread).
struct Tsfn(sys::napi_threadsafe_function);
// SAFETY: `napi_call_threadsafe_function` is thread-safe; ref/unref happen on the JS thread.
unsafe impl Send for Tsfn {}
unsafe impl Sync for Tsfn {}

/// What the worker threads and the JS thread share: finished calls, and whether the
/// environment is going away (after which the threadsafe function must not be called: Node
/// frees it with the environment).
///
/// Two locks, so that the JS thread, woken by a worker's call of the threadsafe function,
/// never waits for that worker to return from it: `queue` is held only to push or take, while
/// `closed` (read-locked by workers for the whole push-and-wake, write-locked once by `closing`)
/// keeps the function alive across the call.
#[derive(Default)]
struct Shared {
    queue: Mutex<Vec<Done>>,
    closed: RwLock<bool>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One JS thread's settlement queue and the threadsafe function that drains it.
struct Settler {
    tsfn: Tsfn,
    shared: Arc<Shared>,
}

thread_local! {
    /// This JS thread's settler (a Node environment has exactly one thread).
    static SETTLER: RefCell<Option<Arc<Settler>>> = const { RefCell::new(None) };
    /// Calls of this JS thread not yet settled.
    static PENDING: Cell<usize> = const { Cell::new(0) };
}

impl Settler {
    /// This thread's settler, created (unref'd) on first use.
    fn of(env: sys::napi_env) -> napi::Result<Arc<Settler>> {
        if let Some(s) = SETTLER.with(|s| s.borrow().clone()) {
            return Ok(s);
        }
        let queue: Arc<Shared> = Arc::default();
        let mut name = ptr::null_mut();
        let mut tsfn = ptr::null_mut();
        // SAFETY: `env` is live on this thread; the context pointer is one strong count of
        // `queue`, given back by `finalize` when the threadsafe function goes away with the
        // environment.
        let context = Arc::into_raw(queue.clone()) as *mut c_void;
        unsafe {
            check(sys::napi_create_string_utf8(
                env,
                c"iterativeflow-mysql-native".as_ptr(),
                26,
                &mut name,
            ))?;
            check(sys::napi_create_threadsafe_function(
                env,
                ptr::null_mut(),
                ptr::null_mut(),
                name,
                0,
                1,
                context,
                Some(finalize),
                context,
                Some(drain),
                &mut tsfn,
            ))?;
            check(sys::napi_unref_threadsafe_function(env, tsfn))?;
            // Registered after the threadsafe function, so it runs before the function's own
            // clean-up (Node runs them in reverse order).
            let hook = Arc::into_raw(queue.clone()) as *mut c_void;
            check(sys::napi_add_env_cleanup_hook(env, Some(closing), hook))?;
        }
        let settler = Arc::new(Settler {
            tsfn: Tsfn(tsfn),
            shared: queue,
        });
        SETTLER.with(|s| *s.borrow_mut() = Some(settler.clone()));
        Ok(settler)
    }

    /// Counts a new pending call (JS thread); the first one keeps the event loop alive. Answers
    /// how many others were in flight.
    fn started(&self, env: sys::napi_env) -> napi::Result<usize> {
        let n = PENDING.with(|p| {
            p.set(p.get() + 1);
            p.get()
        });
        if n == 1 {
            // SAFETY: JS thread, live environment.
            check(unsafe { sys::napi_ref_threadsafe_function(env, self.tsfn.0) })?;
        }
        Ok(n - 1)
    }

    /// Shareds a settlement (worker thread) and wakes the JS thread unless a wake is pending.
    /// Once the environment is closing its promises are gone: the settlement is dropped.
    fn finished(&self, done: Done) {
        let closed = self.shared.closed.read().unwrap_or_else(|p| p.into_inner());
        if *closed {
            return;
        }
        let first = {
            let mut q = lock(&self.shared.queue);
            q.push(done);
            q.len() == 1
        };
        if first {
            // SAFETY: thread-safe by contract; the read lock is held so that `closing` cannot
            // run (and Node free the function) between the check above and this call.
            unsafe {
                sys::napi_call_threadsafe_function(
                    self.tsfn.0,
                    ptr::null_mut(),
                    sys::ThreadsafeFunctionCallMode::nonblocking,
                );
            }
        }
    }
}

/// The threadsafe function's callback (JS thread): settles everything queued.
unsafe extern "C" fn drain(
    env: sys::napi_env,
    _js_callback: sys::napi_value,
    context: *mut c_void,
    _data: *mut c_void,
) {
    let queue = &*(context as *const Shared);
    let done = std::mem::take(&mut *lock(&queue.queue));
    if env.is_null() {
        // The environment is being torn down: nothing is left to settle.
        return;
    }
    let n = done.len();
    for d in done {
        d(env);
    }
    let left = PENDING.with(|p| {
        p.set(p.get().saturating_sub(n));
        p.get()
    });
    if left == 0 && n > 0 {
        if let Some(s) = SETTLER.with(|s| s.borrow().clone()) {
            sys::napi_unref_threadsafe_function(env, s.tsfn.0);
        }
    }
}

/// Gives back the threadsafe function's strong count of its queue (the environment is going).
unsafe extern "C" fn finalize(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    drop(Arc::from_raw(data as *const Shared));
}

/// The environment's clean-up hook (JS thread): no settlement may call the function after it.
unsafe extern "C" fn closing(data: *mut c_void) {
    let queue = Arc::from_raw(data as *const Shared);
    let dropped = {
        let mut closed = queue.closed.write().unwrap_or_else(|p| p.into_inner());
        *closed = true;
        std::mem::take(&mut *lock(&queue.queue))
    };
    drop(dropped);
    // A later environment on this thread starts afresh.
    SETTLER.with(|s| s.borrow_mut().take());
    PENDING.with(|p| p.set(0));
}

/// Turns a panic inside a call's future into a value, so that its promise still settles.
struct CatchUnwind<F>(Pin<Box<F>>);

impl<F: Future> Future for CatchUnwind<F> {
    type Output = std::thread::Result<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let fut = self.0.as_mut();
        match catch_unwind(AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}
