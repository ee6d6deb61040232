//! Connection options from JS, validated and turned into `mysql_async` options.
//!
//! `mysql_async::Pool::new` panics on some bad inputs, so every field is checked here first and a
//! bad value becomes an `Error::Invalid` naming the option, before any connection is tried.

use crate::error::{Error, Result};
use mysql_async::{OptsBuilder, PoolConstraints, PoolOpts, SslOpts};
use napi_derive::napi;
use std::time::Duration;

/// Connection options, already normalised by `index.js` from a URL, a mysql2 pool or an object.
#[napi(object)]
#[derive(Clone, Default)]
pub struct PoolConfig {
    pub host: Option<String>,
    pub port: Option<u32>,
    pub user: Option<String>,
    pub password: Option<String>,
    pub database: Option<String>,
    pub socket_path: Option<String>,
    /// Maximum open connections (mysql2's `connectionLimit`); default 10.
    pub connection_limit: Option<u32>,
    /// How long a call may wait for a connection (checkout, or connect + handshake), in ms;
    /// default 10 000.
    pub acquire_timeout_ms: Option<u32>,
    /// How long one round trip on an established connection may go unanswered, in ms, before
    /// the call rejects and the connection is closed; default 60 000, 0 = no bound.
    pub query_timeout_ms: Option<u32>,
    /// TLS: `true`/`require` = encrypt; see `SslConfig`.
    pub ssl: Option<SslConfig>,
    /// Prepared-statement cache per connection (user queries with parameters); default 64.
    pub statement_cache_size: Option<u32>,
}

/// TLS settings (mirrors mysql2's `ssl` object where it makes sense).
#[napi(object)]
#[derive(Clone, Default)]
pub struct SslConfig {
    /// Path of a PEM CA bundle to trust.
    pub ca_path: Option<String>,
    /// PEM CA certificate text (as mysql2's `ssl.ca`), written to a temp file for the driver.
    pub ca: Option<String>,
    /// Verify the server certificate chain (default true).
    pub reject_unauthorized: Option<bool>,
    /// Verify that the certificate names the host (default true).
    pub verify_identity: Option<bool>,
}

/// What the pool needs besides the driver options.
pub struct Settings {
    pub opts: mysql_async::Opts,
    pub acquire_timeout: Duration,
    pub query_timeout: Option<Duration>,
    pub password: Option<String>,
}

const MAX_CONNECTIONS: u32 = 10_000;

/// Default bound on an unanswered round trip: far above any statement the backend sends, and
/// above the server's default lock wait (50 s), so only a silent network or server reaches it.
const DEFAULT_QUERY_TIMEOUT_MS: u32 = 60_000;

fn ident_ok(s: &str) -> bool {
    !s.contains('\0')
}

/// Validates `cfg` and builds the driver options.
pub fn build(cfg: &PoolConfig) -> Result<Settings> {
    let host = cfg.host.clone().unwrap_or_else(|| "localhost".into());
    if host.is_empty() || !ident_ok(&host) || host.contains(['/', ' ']) {
        return Err(Error::Invalid(format!("mysqlPool: invalid host {host:?}")));
    }
    let port = cfg.port.unwrap_or(3306);
    if port == 0 || port > 65_535 {
        return Err(Error::Invalid(format!("mysqlPool: invalid port {port}")));
    }
    let limit = cfg.connection_limit.unwrap_or(10);
    if limit == 0 || limit > MAX_CONNECTIONS {
        return Err(Error::Invalid(format!(
            "mysqlPool: connectionLimit must be between 1 and {MAX_CONNECTIONS}, got {limit}"
        )));
    }
    for (name, v) in [
        ("user", &cfg.user),
        ("password", &cfg.password),
        ("database", &cfg.database),
        ("socketPath", &cfg.socket_path),
    ] {
        if let Some(v) = v {
            if !ident_ok(v) {
                return Err(Error::Invalid(format!(
                    "mysqlPool: {name} must not contain NUL"
                )));
            }
        }
    }
    let acquire_timeout =
        Duration::from_millis(u64::from(cfg.acquire_timeout_ms.unwrap_or(10_000).max(1)));
    let query_timeout = match cfg.query_timeout_ms.unwrap_or(DEFAULT_QUERY_TIMEOUT_MS) {
        0 => None,
        ms => Some(Duration::from_millis(u64::from(ms))),
    };

    let constraints = PoolConstraints::new(0, limit as usize)
        .ok_or_else(|| Error::Invalid("mysqlPool: invalid connectionLimit".into()))?;
    let pool_opts = PoolOpts::default()
        .with_constraints(constraints)
        .with_reset_connection(false)
        .with_inactive_connection_ttl(Duration::from_secs(60));

    let mut b = OptsBuilder::default()
        .ip_or_hostname(host)
        .tcp_port(port as u16)
        .user(cfg.user.clone().or_else(|| Some("root".into())))
        .pass(cfg.password.clone())
        .db_name(cfg.database.clone().filter(|d| !d.is_empty()))
        .client_found_rows(true)
        .prefer_socket(false)
        .stmt_cache_size(cfg.statement_cache_size.unwrap_or(64) as usize)
        .tcp_keepalive(Some(Duration::from_secs(30)))
        .pool_opts(pool_opts)
        .setup(vec![
            "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
        ]);
    if let Some(sock) = cfg.socket_path.clone().filter(|s| !s.is_empty()) {
        b = b.socket(Some(sock));
    }
    if let Some(ssl) = &cfg.ssl {
        b = b.ssl_opts(Some(ssl_opts(ssl)?));
    }
    Ok(Settings {
        opts: b.into(),
        acquire_timeout,
        query_timeout,
        password: cfg.password.clone().filter(|p| !p.is_empty()),
    })
}

fn ssl_opts(ssl: &SslConfig) -> Result<SslOpts> {
    let mut o = SslOpts::default();
    let verify = ssl.reject_unauthorized.unwrap_or(true);
    o = o.with_danger_accept_invalid_certs(!verify);
    o = o.with_danger_skip_domain_validation(!ssl.verify_identity.unwrap_or(verify));
    let ca_path = match (&ssl.ca_path, &ssl.ca) {
        (Some(p), _) => Some(std::path::PathBuf::from(p)),
        (None, Some(pem)) => {
            let path = std::env::temp_dir().join(format!("ifw-ca-{}.pem", uuid::Uuid::new_v4()));
            std::fs::write(&path, pem)
                .map_err(|e| Error::Invalid(format!("mysqlPool: cannot stage ssl.ca: {e}")))?;
            Some(path)
        }
        (None, None) => None,
    };
    if let Some(p) = ca_path {
        if !p.exists() {
            return Err(Error::Invalid(format!(
                "mysqlPool: ssl CA file {} does not exist",
                p.display()
            )));
        }
        o = o.with_root_certs(vec![p.into()]);
    }
    Ok(o)
}
