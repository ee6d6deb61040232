//! Dispatch: the queue's jobs (enqueue, claim, lease, ack, depth) and the durable timers.

use super::*;

#[napi]
impl NativeBackend {
    #[napi(ts_return_type = "Promise<void>")]
    pub fn enqueue<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        run_at: i64,
        priority: Option<i64>,
        via: Option<RunFn>,
    ) -> Answer<'env, ()> {
        if let (Some(enqueues), None) = (&self.enqueues, &via) {
            // Counted in the pool's metrics by `coalesce` once answered.
            return enqueues.arrive(env, run_id, run_at, priority);
        }
        unit!(
            self,
            env,
            "enqueue",
            via,
            Mode::Autocommit,
            (run_id, run_at, priority),
            |e, t| queue::enqueue(e, t, run_id, *run_at, *priority)
        )
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn enqueue_many<'env>(
        &self,
        env: &'env Env,
        requests: Vec<EnqueueArg>,
        via: Option<RunFn>,
    ) -> Answer<'env, ()> {
        unit!(
            self,
            env,
            "enqueueMany",
            via,
            Mode::Autocommit,
            (requests),
            |e, t| { queue::enqueue_many(e, t, requests) }
        )
    }

    #[napi(ts_return_type = "Promise<string>")]
    #[allow(clippy::too_many_arguments)]
    pub fn claim<'env>(
        &self,
        env: &'env Env,
        at: i64,
        lease_ms: i64,
        limit: i64,
        names: Option<Vec<String>>,
        id_fn: Option<IdFn>,
        via: Option<RunFn>,
    ) -> Answer<'env, String> {
        let ids = id_fn.map(JsIds);
        let idle = self.idle.clone();
        unit!(
            self,
            env,
            "claim",
            via,
            Mode::Transaction,
            (at, lease_ms, limit, names, ids, idle),
            |e, t| queue::claim(
                e,
                t,
                *at,
                *lease_ms,
                *limit,
                names.as_deref(),
                ids.as_ref(),
                &idle.claim
            )
        )
    }

    #[napi(ts_return_type = "Promise<void>")]
    #[allow(clippy::too_many_arguments)]
    pub fn heartbeat<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        token: String,
        at: i64,
        lease_ms: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, ()> {
        unit!(
            self,
            env,
            "heartbeat",
            via,
            Mode::Autocommit,
            (run_id, token, at, lease_ms),
            |e, t| queue::heartbeat(e, t, run_id, token, *at, *lease_ms)
        )
    }

    #[napi(ts_return_type = "Promise<void>")]
    #[allow(clippy::too_many_arguments)]
    pub fn ack<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        token: String,
        version: i64,
        at: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, ()> {
        unit!(
            self,
            env,
            "ack",
            via,
            Mode::Autocommit,
            (run_id, token, version, at),
            |e, t| queue::ack(e, t, run_id, token, *version, *at)
        )
    }

    #[napi(ts_return_type = "Promise<string>")]
    pub fn depth<'env>(
        &self,
        env: &'env Env,
        now: i64,
        names: Option<Vec<String>>,
        via: Option<RunFn>,
    ) -> Answer<'env, String> {
        unit!(
            self,
            env,
            "depth",
            via,
            Mode::Autocommit,
            (now, names),
            |e, t| { queue::depth(e, t, *now, names.as_deref()) }
        )
    }

    #[napi(ts_return_type = "Promise<number>")]
    pub fn due_count<'env>(
        &self,
        env: &'env Env,
        now: i64,
        names: Option<Vec<String>>,
        via: Option<RunFn>,
    ) -> Answer<'env, i64> {
        unit!(
            self,
            env,
            "dueCount",
            via,
            Mode::Autocommit,
            (now, names),
            |e, t| { timer::due_count(e, t, *now, names.as_deref()) }
        )
    }

    #[napi(ts_return_type = "Promise<number | null>")]
    pub fn next_due_at<'env>(
        &self,
        env: &'env Env,
        now: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, Option<i64>> {
        unit!(
            self,
            env,
            "nextDueAt",
            via,
            Mode::Autocommit,
            (now),
            |e, t| { timer::next_due_at(e, t, *now) }
        )
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn schedule<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        fire_at: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, ()> {
        unit!(
            self,
            env,
            "schedule",
            via,
            Mode::Autocommit,
            (run_id, fire_at),
            |e, t| { timer::schedule(e, t, run_id, *fire_at) }
        )
    }

    #[napi(ts_return_type = "Promise<string[]>")]
    pub fn due_batch<'env>(
        &self,
        env: &'env Env,
        now: i64,
        limit: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, Vec<String>> {
        let idle = self.idle.clone();
        unit!(
            self,
            env,
            "dueBatch",
            via,
            Mode::Transaction,
            (now, limit, idle),
            |e, t| { timer::due_batch(e, t, *now, *limit, &idle.due) }
        )
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn cancel_timer<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        via: Option<RunFn>,
    ) -> Answer<'env, ()> {
        unit!(
            self,
            env,
            "cancelTimer",
            via,
            Mode::Autocommit,
            (run_id),
            |e, t| { timer::cancel(e, t, run_id) }
        )
    }
}
