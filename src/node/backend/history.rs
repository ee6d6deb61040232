//! Operating on finished and stuck history: listing, counting, deleting, cancelling and
//! retrying runs; crons.

use super::*;

#[napi]
impl NativeBackend {
    #[napi(ts_return_type = "Promise<string>")]
    pub fn list_runs<'env>(
        &self,
        env: &'env Env,
        list: ListArg,
        via: Option<RunFn>,
    ) -> Answer<'env, String> {
        unit!(
            self,
            env,
            "listRuns",
            via,
            Mode::Autocommit,
            (list),
            |e, t| { store::list_runs(e, t, list) }
        )
    }

    #[napi(ts_return_type = "Promise<string>")]
    pub fn children_of<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        via: Option<RunFn>,
    ) -> Answer<'env, String> {
        unit!(
            self,
            env,
            "childrenOf",
            via,
            Mode::Autocommit,
            (run_id),
            |e, t| { store::children_of(e, t, run_id) }
        )
    }

    #[napi(ts_return_type = "Promise<string>")]
    pub fn run_stats<'env>(&self, env: &'env Env, via: Option<RunFn>) -> Answer<'env, String> {
        unit!(self, env, "runStats", via, Mode::Autocommit, (), |e, t| {
            store::run_stats(e, t)
        })
    }

    #[napi(ts_return_type = "Promise<string[]>")]
    pub fn orphaned_runs<'env>(
        &self,
        env: &'env Env,
        limit: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, Vec<String>> {
        unit!(
            self,
            env,
            "orphanedRuns",
            via,
            Mode::Autocommit,
            (limit),
            |e, t| { store::orphaned_runs(e, t, *limit) }
        )
    }

    #[napi(ts_return_type = "Promise<number>")]
    pub fn delete_runs_older_than<'env>(
        &self,
        env: &'env Env,
        before: i64,
        limit: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, i64> {
        unit!(
            self,
            env,
            "deleteRunsOlderThan",
            via,
            Mode::Transaction,
            (before, limit),
            |e, t| { store::delete_runs_older_than(e, t, *before, *limit) }
        )
    }

    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn retry_run<'env>(
        &self,
        env: &'env Env,
        run_id: String,
        via: Option<RunFn>,
    ) -> Answer<'env, bool> {
        unit!(
            self,
            env,
            "retryRun",
            via,
            Mode::Transaction,
            (run_id),
            |e, t| { store::retry_run(e, t, run_id) }
        )
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn upsert_cron<'env>(
        &self,
        env: &'env Env,
        cron: CronArg,
        via: Option<RunFn>,
    ) -> Answer<'env, ()> {
        unit!(
            self,
            env,
            "upsertCron",
            via,
            Mode::Autocommit,
            (cron),
            |e, t| { store::upsert_cron(e, t, cron) }
        )
    }

    #[napi(ts_return_type = "Promise<string>")]
    pub fn due_crons<'env>(
        &self,
        env: &'env Env,
        now: i64,
        limit: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, String> {
        unit!(
            self,
            env,
            "dueCrons",
            via,
            Mode::Autocommit,
            (now, limit),
            |e, t| { store::due_crons(e, t, *now, *limit) }
        )
    }

    #[napi(ts_return_type = "Promise<boolean>")]
    #[allow(clippy::too_many_arguments)]
    pub fn advance_cron<'env>(
        &self,
        env: &'env Env,
        name: String,
        expected: i64,
        next: i64,
        last: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, bool> {
        unit!(
            self,
            env,
            "advanceCron",
            via,
            Mode::Autocommit,
            (name, expected, next, last),
            |e, t| store::advance_cron(e, t, name, *expected, *next, *last)
        )
    }

    #[napi(ts_return_type = "Promise<string>")]
    pub fn list_crons<'env>(&self, env: &'env Env, via: Option<RunFn>) -> Answer<'env, String> {
        unit!(self, env, "listCrons", via, Mode::Autocommit, (), |e, t| {
            store::list_crons(e, t)
        })
    }

    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn remove_cron<'env>(
        &self,
        env: &'env Env,
        name: String,
        via: Option<RunFn>,
    ) -> Answer<'env, bool> {
        unit!(
            self,
            env,
            "removeCron",
            via,
            Mode::Autocommit,
            (name),
            |e, t| { store::remove_cron(e, t, name) }
        )
    }

    #[napi(ts_return_type = "Promise<number>")]
    pub fn due_cron_count<'env>(
        &self,
        env: &'env Env,
        now: i64,
        names: Option<Vec<String>>,
        via: Option<RunFn>,
    ) -> Answer<'env, i64> {
        unit!(
            self,
            env,
            "dueCronCount",
            via,
            Mode::Autocommit,
            (now, names),
            |e, t| { store::due_cron_count(e, t, *now, names.as_deref()) }
        )
    }

    #[napi(ts_return_type = "Promise<number>")]
    pub fn delete_runs<'env>(
        &self,
        env: &'env Env,
        filter: RunSetArg,
        limit: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, i64> {
        unit!(
            self,
            env,
            "deleteRuns",
            via,
            Mode::Transaction,
            (filter, limit),
            |e, t| { store::delete_runs(e, t, filter, *limit) }
        )
    }

    #[napi(ts_return_type = "Promise<number>")]
    pub fn cancel_runs<'env>(
        &self,
        env: &'env Env,
        filter: RunSetArg,
        limit: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, i64> {
        unit!(
            self,
            env,
            "cancelRuns",
            via,
            Mode::Transaction,
            (filter, limit),
            |e, t| { store::cancel_runs(e, t, filter, *limit) }
        )
    }

    #[napi(ts_return_type = "Promise<number>")]
    pub fn retry_runs<'env>(
        &self,
        env: &'env Env,
        filter: RunSetArg,
        limit: i64,
        via: Option<RunFn>,
    ) -> Answer<'env, i64> {
        unit!(
            self,
            env,
            "retryRuns",
            via,
            Mode::Transaction,
            (filter, limit),
            |e, t| { store::retry_runs(e, t, filter, *limit) }
        )
    }
}
