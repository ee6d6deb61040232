//! How every call crosses back to JS: a future run on the tokio runtime whose promise is settled
//! on the JS thread, rejected with the error object `Error::to_js` builds; and the same for the
//! synchronous entry points.

use crate::error::Result;
use napi::bindgen_prelude::{PromiseRaw, ToNapiValue};
use napi::Env;
use std::future::Future;

/// A promise of `fut`'s value; a failure rejects it with our JS error object.
pub fn promise<'env, T>(
    env: &'env Env,
    fut: impl Future<Output = Result<T>> + Send + 'static,
) -> napi::Result<PromiseRaw<'env, T>>
where
    T: ToNapiValue + Send + 'static,
{
    env.spawn_future_with_callback(async move { Ok(fut.await) }, |env, outcome| {
        outcome.map_err(|e| e.to_js(env.raw()))
    })
}

/// `r` for a synchronous entry point: a failure is thrown as our JS error object.
pub fn sync<T>(env: &Env, r: Result<T>) -> napi::Result<T> {
    r.map_err(|e| e.to_js(env.raw()))
}
