//! The schema a backend works on: table names, the contract it follows, and the DDL of the
//! on-disk format. Under the default 2.0.0-alpha.2 contract the six tables are byte for byte the
//! JavaScript package's; the 3.0.0 layout adds `run.priority`, `signal.consumed` and the
//! `pending_work(flow_names, as_of)` function, and `applySchema` (lib/schema.js) brings an
//! alpha.2 database there in place with the migrations listed here.

use crate::error::{Error, Result};

/// Which published contract a backend follows (behaviour and table layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contract {
    /// `@iterativeflow/mysql` 2.0.0-alpha.2 (the default).
    Alpha2,
    /// `@iterativeflow/mysql` 3.0.0 (which includes what 2.5.0 added).
    V3,
}

impl Contract {
    /// The contract named `name` (`'2.0.0-alpha.2'` or `'3.0.0'`).
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "2.0.0-alpha.2" => Ok(Contract::Alpha2),
            "3.0.0" => Ok(Contract::V3),
            other => Err(Error::Invalid(format!(
                "contract must be '2.0.0-alpha.2' or '3.0.0', got {other:?}"
            ))),
        }
    }

    pub fn is_v3(self) -> bool {
        self == Contract::V3
    }
}

/// Back-quoted table (and function) identifiers for one prefix, and the contract they follow.
#[derive(Clone, Debug)]
pub struct Schema {
    pub run: String,
    pub step: String,
    pub job: String,
    pub timer: String,
    pub signal: String,
    pub cron: String,
    /// The opt-in timeline table (`applySchema(sql, prefix, { events: true })`): never created
    /// otherwise, so nothing reads or writes it unless it exists.
    pub event: String,
    /// `event` as `information_schema` spells it (unquoted), to ask whether it exists.
    pub event_name: String,
    /// The 3.0 layout's backlog function.
    pub pending_work: String,
    pub contract: Contract,
}

/// The six table names as JS sees them (`tables(prefix)`).
#[napi_derive::napi(object)]
pub struct TableNames {
    pub run: String,
    pub step: String,
    pub job: String,
    pub timer: String,
    pub signal: String,
    pub cron: String,
}

impl From<Schema> for TableNames {
    fn from(t: Schema) -> Self {
        TableNames {
            run: t.run,
            step: t.step,
            job: t.job,
            timer: t.timer,
            signal: t.signal,
            cron: t.cron,
        }
    }
}

/// Checks the prefix rule (`^[A-Za-z0-9_]*$`); the only identifier ever interpolated into SQL.
pub fn check_prefix(prefix: &str) -> Result<()> {
    if prefix
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && prefix.len() <= 58
    {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "invalid SQL schema/prefix {prefix:?}: only ASCII letters, digits and underscore are allowed (at most 58 characters)"
        )))
    }
}

impl Schema {
    /// Validates `prefix` and renders the names.
    pub fn new(prefix: &str, contract: Contract) -> Result<Self> {
        check_prefix(prefix)?;
        let q = |base: &str| format!("`{prefix}{base}`");
        Ok(Schema {
            run: q("run"),
            step: q("step"),
            job: q("job"),
            timer: q("timer"),
            signal: q("signal"),
            cron: q("cron"),
            event: q("event"),
            event_name: format!("{prefix}event"),
            pending_work: q("pending_work"),
            contract,
        })
    }
}

/// A column the 3.0 layout adds to an existing table.
#[napi_derive::napi(object)]
pub struct Migration {
    /// The table name as `information_schema` spells it.
    pub table_name: String,
    pub column: String,
    /// `ALTER TABLE … ADD COLUMN …`, placing the column where a fresh 3.0 table has it.
    pub add: String,
}

/// The schema steps `applySchema` takes for one prefix and contract (lib/schema.js runs them).
#[napi_derive::napi(object)]
pub struct SchemaPlan {
    /// `CREATE TABLE IF NOT EXISTS` statements, in order.
    pub tables: Vec<String>,
    /// Columns to add where an older layout lacks them.
    pub columns: Vec<Migration>,
    /// The `pending_work` function (3.0): dropped then created (MySQL), or replaced in one
    /// statement (MariaDB's `CREATE OR REPLACE`, so no caller ever finds it missing).
    pub drop_function: Option<String>,
    pub create_function: Option<String>,
    pub replace_function: Option<String>,
    /// The function's name as information_schema spells it (unquoted), and its body as the
    /// server stores it (`ROUTINE_DEFINITION`): on MySQL, a function already as this version
    /// creates it is left alone, so re-applying the schema never drops it under a caller.
    pub function_name: Option<String>,
    pub function_body: Option<String>,
    /// The opt-in timeline table's `CREATE TABLE IF NOT EXISTS` (run only with `events: true`).
    pub events: String,
}

/// What `applySchema` does for `prefix` under `contract`.
pub fn plan(prefix: &str, contract: Contract) -> Result<SchemaPlan> {
    let t = Schema::new(prefix, contract)?;
    let tables = tables_ddl(&t);
    if !contract.is_v3() {
        return Ok(SchemaPlan {
            tables,
            columns: Vec::new(),
            drop_function: None,
            create_function: None,
            replace_function: None,
            function_name: None,
            function_body: None,
            events: event_ddl(&t),
        });
    }
    let column = |table: &str, base: &str, column: &str, definition: &str, after: &str| Migration {
        table_name: format!("{prefix}{base}"),
        column: column.into(),
        add: format!("ALTER TABLE {table} ADD COLUMN {column} {definition} AFTER {after}"),
    };
    let create = pending_work(&t);
    Ok(SchemaPlan {
        tables,
        columns: vec![
            column(&t.signal, "signal", "consumed", CONSUMED, "idem_key"),
            column(&t.run, "run", "priority", PRIORITY, "join_remaining"),
        ],
        drop_function: Some(format!("DROP FUNCTION IF EXISTS {}", t.pending_work)),
        replace_function: Some(create.replacen("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)),
        function_name: Some(format!("{prefix}pending_work")),
        function_body: create
            .split_once(PENDING_WORK_HEAD_END)
            .map(|(_, body)| body.trim().to_string()),
        create_function: Some(create),
        events: event_ddl(&t),
    })
}

/// The column definitions the 3.0 layout adds.
const PRIORITY: &str = "INT NOT NULL DEFAULT 0";
const CONSUMED: &str = "TINYINT(1) NOT NULL DEFAULT 0";

/// `ddl(prefix)`: the tables; under 3.0 also the function (dropped, then created), as the
/// JavaScript 3.0 package lists it; with `events`, the timeline table last (so the list without
/// it is exactly the JavaScript package's).
pub fn ddl(prefix: &str, contract: Contract, events: bool) -> Result<Vec<String>> {
    let t = Schema::new(prefix, contract)?;
    let mut out = tables_ddl(&t);
    if contract.is_v3() {
        out.push(format!("DROP FUNCTION IF EXISTS {}", t.pending_work));
        out.push(pending_work(&t));
    }
    if events {
        out.push(event_ddl(&t));
    }
    Ok(out)
}

/// The timeline table: one row per core `FlowEvent`, in the Postgres backend's columns (`seq`
/// orders, `at` in epoch ms like every time column here, `data` JSON text). No foreign key:
/// a run's deletion removes its events in the same transaction (`ports::store::bulk`).
fn event_ddl(t: &Schema) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} (
      seq    BIGINT AUTO_INCREMENT PRIMARY KEY,
      run_id VARCHAR(191) NOT NULL,
      type   VARCHAR(64) NOT NULL,
      at     BIGINT NOT NULL,
      data   LONGTEXT,
      KEY event_run (run_id, seq)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
        t.event
    )
}

/// The backlog an autoscaler can poll with one SQL call: due unleased jobs + due timers + due
/// crons; `flow_names` (a JSON array) restricts the count to those flows — a job or timer whose
/// run row is missing still counts, an empty array counts nothing, NULL counts everything.
/// Where `pending_work`'s head (name, parameters, characteristics) ends and its body begins.
const PENDING_WORK_HEAD_END: &str = "READS SQL DATA";

fn pending_work(t: &Schema) -> String {
    let wanted = |name: &str| format!("JSON_CONTAINS(flow_names, JSON_QUOTE({name}))");
    let of_flows = |alias: &str| {
        format!(
            "(flow_names IS NULL OR (JSON_LENGTH(flow_names) > 0 AND \
             COALESCE((SELECT {} FROM {} r WHERE r.id = {alias}.run_id), 1)))",
            wanted("r.name"),
            t.run
        )
    };
    format!(
        "CREATE FUNCTION {f}(flow_names JSON, as_of BIGINT) RETURNS BIGINT {PENDING_WORK_HEAD_END}\n\
         RETURN (SELECT COUNT(*) FROM {job} j WHERE j.run_at <= as_of \
         AND (j.lease_expires IS NULL OR j.lease_expires <= as_of) AND {jobs})\n\
         + (SELECT COUNT(*) FROM {timer} tm WHERE tm.fire_at <= as_of AND {timers})\n\
         + (SELECT COUNT(*) FROM {cron} c WHERE c.next_run_at <= as_of \
         AND (flow_names IS NULL OR {crons}))",
        f = t.pending_work,
        job = t.job,
        timer = t.timer,
        cron = t.cron,
        jobs = of_flows("j"),
        timers = of_flows("tm"),
        crons = wanted("c.flow_name"),
    )
}

/// The six `CREATE TABLE IF NOT EXISTS` statements, in the order run, step, job, timer, signal,
/// cron; the 3.0 layout has `run.priority` and `signal.consumed` in them.
fn tables_ddl(t: &Schema) -> Vec<String> {
    let v3 = t.contract.is_v3();
    let priority = if v3 {
        format!("\n      priority          {PRIORITY},")
    } else {
        String::new()
    };
    let consumed = if v3 {
        format!("\n      consumed {CONSUMED},")
    } else {
        String::new()
    };
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {} (
      id                VARCHAR(191) PRIMARY KEY,
      seq               BIGINT AUTO_INCREMENT UNIQUE,
      name              VARCHAR(191) NOT NULL,
      version           INT NOT NULL,
      status            VARCHAR(32) NOT NULL,
      input             LONGTEXT,
      output            LONGTEXT,
      error             LONGTEXT,
      attempts          INT NOT NULL DEFAULT 0,
      idempotency_key   VARCHAR(191),
      tags              LONGTEXT,
      parent_run_id     VARCHAR(191),
      parent_cursor_key VARCHAR(191),
      depth             INT NOT NULL DEFAULT 0,
      join_remaining    INT NOT NULL DEFAULT 0,{priority}
      created_at        BIGINT NOT NULL,
      UNIQUE KEY run_idem (name, version, idempotency_key),
      KEY run_created (created_at),
      KEY run_parent (parent_run_id),
      KEY run_status (status)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
            t.run
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {} (
      run_id     VARCHAR(191) NOT NULL,
      cursor_key VARCHAR(191) NOT NULL,
      status     VARCHAR(32) NOT NULL,
      result     LONGTEXT,
      error      LONGTEXT,
      attempts   INT NOT NULL,
      shape      VARCHAR(191),
      PRIMARY KEY (run_id, cursor_key)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
            t.step
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {} (
      run_id        VARCHAR(191) PRIMARY KEY,
      run_at        BIGINT NOT NULL,
      priority      INT NOT NULL DEFAULT 0,
      version       BIGINT NOT NULL DEFAULT 0,
      lease_token   VARCHAR(191),
      lease_expires BIGINT,
      KEY job_claimable (priority, run_at)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
            t.job
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {} (
      run_id  VARCHAR(191) PRIMARY KEY,
      fire_at BIGINT NOT NULL,
      KEY timer_due (fire_at)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
            t.timer
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {} (
      id       VARCHAR(191) PRIMARY KEY,
      seq      BIGINT AUTO_INCREMENT UNIQUE,
      run_id   VARCHAR(191) NOT NULL,
      name     VARCHAR(191) NOT NULL,
      payload  LONGTEXT,
      idem_key VARCHAR(191),{consumed}
      KEY signal_inbox (run_id, seq),
      UNIQUE KEY signal_idem (run_id, idem_key)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
            t.signal
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {} (
      name         VARCHAR(191) PRIMARY KEY,
      schedule     VARCHAR(255) NOT NULL,
      flow_name    VARCHAR(191) NOT NULL,
      flow_version INT NOT NULL,
      input        LONGTEXT,
      overlap      VARCHAR(16) NOT NULL DEFAULT 'allow',
      next_run_at  BIGINT NOT NULL,
      last_run_at  BIGINT,
      KEY cron_due (next_run_at)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
            t.cron
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_rule() {
        assert!(check_prefix("").is_ok());
        assert!(check_prefix("app_1").is_ok());
        for bad in ["a-b", "a b", "a;", "a`", "é", "a.b", "x'"] {
            assert!(check_prefix(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tables_are_quoted_and_prefixed() {
        let t = Schema::new("app_", Contract::Alpha2).unwrap();
        assert_eq!(t.signal, "`app_signal`");
        let alpha2 = ddl("p_", Contract::Alpha2, false).unwrap();
        assert_eq!(alpha2.len(), 6);
        assert!(alpha2[4].starts_with("CREATE TABLE IF NOT EXISTS `p_signal` ("));
        assert!(!alpha2[0].contains("priority") && !alpha2[4].contains("consumed"));
    }

    #[test]
    fn the_3_0_layout_adds_two_columns_and_the_function() {
        let v3 = ddl("p_", Contract::V3, false).unwrap();
        assert_eq!(v3.len(), 8);
        assert!(v3[0].contains("join_remaining    INT NOT NULL DEFAULT 0,\n      priority          INT NOT NULL DEFAULT 0,\n      created_at"));
        assert!(
            v3[4].contains("idem_key VARCHAR(191),\n      consumed TINYINT(1) NOT NULL DEFAULT 0,")
        );
        assert_eq!(v3[6], "DROP FUNCTION IF EXISTS `p_pending_work`");
        assert!(
            v3[7].starts_with("CREATE FUNCTION `p_pending_work`(flow_names JSON, as_of BIGINT)")
        );
        assert_eq!(plan("p_", Contract::V3).unwrap().columns.len(), 2);
    }

    #[test]
    fn the_event_table_is_only_listed_when_asked_for() {
        for c in [Contract::Alpha2, Contract::V3] {
            let without = ddl("p_", c, false).unwrap();
            let with = ddl("p_", c, true).unwrap();
            assert!(without.iter().all(|s| !s.contains("`p_event`")));
            assert_eq!(with.len(), without.len() + 1);
            assert_eq!(with[..without.len()], without[..]);
            assert!(with[without.len()].starts_with("CREATE TABLE IF NOT EXISTS `p_event` ("));
        }
    }
}
