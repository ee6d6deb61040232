//! The run lifecycle the engine drives: start, load, join, signal, run, checkpoint, suspend, end.

use super::*;

#[napi]
impl NativeBackend {
    #[napi(ts_return_type = "Promise<StartResult>")]
    pub fn start_run<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        spec: SpecArg,
        via: Option<RunFn>,
    ) -> Answer<'env, StartResult> {
        unit!(
            self,
            env,
            "startRun",
            via,
            Mode::Autocommit,
            (run_id, spec),
            |e, t| { store::start_run(e, t, run_id, spec) }
        )
    }

    /// `specs`: one JSON array of rows (`args::spec_rows`); answers `StartResult::rows_json`.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn start_many_runs<'env>(
        &self,
        env: &'env Env,
        specs: String,
        via: Option<RunFn>,
    ) -> Answer<'env, String> {
        let (run_ids, specs) =
            promise::sync(env, args::spec_rows(&specs).map_err(Error::Contract))?;
        // One multi-row INSERT is atomic alone; anything more is one transaction.
        let mode = Mode::transaction_if(!store::many_runs_in_one_statement(&specs));
        unit!(
            self,
            env,
            "startManyRuns",
            via,
            mode,
            (run_ids, specs),
            |e, t| {
                async {
                    let results = store::start_many_runs(e, t, run_ids, specs).await?;
                    StartResult::rows_json(&results)
                }
            }
        )
    }

    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn load_run<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        via: Option<RunFn>,
    ) -> Answer<'env, Option<String>> {
        unit!(
            self,
            env,
            "loadRun",
            via,
            Mode::Autocommit,
            (run_id),
            |e, t| { store::load_run(e, t, run_id) }
        )
    }

    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn load_run_row<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        via: Option<RunFn>,
    ) -> Answer<'env, Option<String>> {
        unit!(
            self,
            env,
            "loadRunRow",
            via,
            Mode::Autocommit,
            (run_id),
            |e, t| { store::load_run_row(e, t, run_id) }
        )
    }

    #[napi(ts_return_type = "Promise<string>")]
    pub fn load_run_rows<'env>(
        &self,
        env: &'env Env,
        run_ids: Vec<String>,
        via: Option<RunFn>,
    ) -> Answer<'env, String> {
        unit!(
            self,
            env,
            "loadRunRows",
            via,
            Mode::Autocommit,
            (run_ids),
            |e, t| { store::load_run_rows(e, t, run_ids) }
        )
    }

    #[napi(ts_return_type = "Promise<number | null>")]
    pub fn arrive_at_join<'env>(
        &self,
        env: &'env Env,
        parent_run_id: String,
        via: Option<RunFn>,
    ) -> Answer<'env, Option<i64>> {
        unit!(
            self,
            env,
            "arriveAtJoin",
            via,
            // Natively one atomic UPDATE (see `store::arrive_at_join`); a wrapped `Sql` may not
            // report `insertId`, so there the re-read shares the UPDATE's transaction.
            Mode::transaction_if(via.is_some()),
            (parent_run_id),
            |e, t| { store::arrive_at_join(e, t, parent_run_id) }
        )
    }

    #[napi(ts_return_type = "Promise<boolean>")]
    #[allow(clippy::too_many_arguments)]
    pub fn post_signal<'env>(
        &self,
        env: &'env Env,
        signal_id: String,
        run_id: String,
        name: String,
        payload: Option<String>,
        idem_key: Option<String>,
        via: Option<RunFn>,
    ) -> Answer<'env, bool> {
        unit!(
            self,
            env,
            "postSignal",
            via,
            Mode::Transaction,
            (signal_id, run_id, name, payload, idem_key),
            |e, t| store::post_signal(
                e,
                t,
                signal_id,
                run_id,
                name,
                payload.as_deref(),
                idem_key.as_deref()
            )
        )
    }

    #[napi(ts_return_type = "Promise<number>")]
    pub fn mark_running<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        via: Option<RunFn>,
    ) -> Answer<'env, i64> {
        unit!(
            self,
            env,
            "markRunning",
            via,
            Mode::Autocommit,
            (run_id),
            |e, t| { store::mark_running(e, t, run_id) }
        )
    }

    /// Without an outbox the checkpoint is one autocommit statement (see `store::checkpoint_step`).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn checkpoint_step<'env>(
        &self,
        env: &'env Env,
        c: CheckpointArg,
        fx: Option<OutboxArg>,
        via: Option<RunFn>,
    ) -> Answer<'env, String> {
        let mode = Mode::transaction_if(fx.is_some());
        unit!(self, env, "checkpointStep", via, mode, (c, fx), |e, t| {
            store::checkpoint_step(e, t, c, fx.as_ref())
        })
    }

    /// A status write without an outbox is one atomic UPDATE: no transaction needed.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn suspend_run<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        status: String,
        fx: Option<OutboxArg>,
        via: Option<RunFn>,
    ) -> Answer<'env, ()> {
        let mode = Mode::transaction_if(fx.is_some());
        unit!(
            self,
            env,
            "suspendRun",
            via,
            mode,
            (run_id, status, fx),
            |e, t| { store::suspend_run(e, t, run_id, status, fx.as_ref()) }
        )
    }

    #[napi(ts_return_type = "Promise<void>")]
    #[allow(clippy::too_many_arguments)]
    pub fn mark_terminal<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        status: String,
        output: Option<String>,
        error: Option<String>,
        fx: Option<OutboxArg>,
        via: Option<RunFn>,
    ) -> Answer<'env, ()> {
        let mode = Mode::transaction_if(fx.is_some());
        unit!(
            self,
            env,
            "markTerminal",
            via,
            mode,
            (run_id, status, output, error, fx),
            |e, t| store::mark_terminal(
                e,
                t,
                run_id,
                status,
                output.as_deref(),
                error.as_deref(),
                fx.as_ref()
            )
        )
    }
}
