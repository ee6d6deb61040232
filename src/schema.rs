//! Table names and the DDL of the on-disk format (identical to `@iterativeflow/mysql`
//! 2.0.0-alpha.2, so databases are interchangeable in both directions).

use crate::error::{Error, Result};

/// Back-quoted table identifiers for one prefix.
#[derive(Clone, Debug)]
pub struct Tables {
    pub run: String,
    pub step: String,
    pub job: String,
    pub timer: String,
    pub signal: String,
    pub cron: String,
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

impl From<Tables> for TableNames {
    fn from(t: Tables) -> Self {
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

impl Tables {
    /// Validates `prefix` and renders the six table names.
    pub fn new(prefix: &str) -> Result<Self> {
        check_prefix(prefix)?;
        let q = |base: &str| format!("`{prefix}{base}`");
        Ok(Tables {
            run: q("run"),
            step: q("step"),
            job: q("job"),
            timer: q("timer"),
            signal: q("signal"),
            cron: q("cron"),
        })
    }
}

/// The six `CREATE TABLE IF NOT EXISTS` statements, in the order run, step, job, timer, signal, cron.
pub fn ddl(prefix: &str) -> Result<Vec<String>> {
    let t = Tables::new(prefix)?;
    Ok(vec![
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
      join_remaining    INT NOT NULL DEFAULT 0,
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
      idem_key VARCHAR(191),
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
    ])
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
        let t = Tables::new("app_").unwrap();
        assert_eq!(t.signal, "`app_signal`");
        assert_eq!(ddl("p_").unwrap().len(), 6);
        assert!(ddl("p_").unwrap()[4].starts_with("CREATE TABLE IF NOT EXISTS `p_signal` ("));
    }
}
