//! Connection options from JS, validated and turned into `mysql_async` options.
//!
//! `mysql_async::Pool::new` panics on some bad inputs, so every field is checked here first and a
//! bad value becomes an `Error::Invalid` naming the option, before any connection is tried. This
//! is the one place option ranges are checked (`lib/sql.js` only turns URL digits into numbers).

use crate::error::{Error, Result};
use crate::pool::charset;
use crate::pool::hosts::Failover;
use mysql_async::{OptsBuilder, PoolConstraints, PoolOpts, SslOpts};
use napi_derive::napi;
use std::collections::HashMap;
use std::time::Duration;

/// Connection options, already normalised by `lib/sql.js` from a URL, a mysql2 pool or an object.
#[napi(object)]
#[derive(Clone, Default)]
pub struct PoolConfig {
    pub host: Option<String>,
    pub port: Option<i64>,
    /// Several hosts in one pool (instead of `host` / `port`), tried in the order `failover`
    /// says (see `hosts.rs`).
    pub hosts: Option<Vec<HostConfig>>,
    /// `sequential` (default) or `loadbalance`; only with `hosts`.
    pub failover: Option<String>,
    pub user: Option<String>,
    pub password: Option<String>,
    pub database: Option<String>,
    pub socket_path: Option<String>,
    /// Maximum open connections (mysql2's `connectionLimit`); default 10.
    pub connection_limit: Option<i64>,
    /// How long a call may wait for a connection (checkout, or connect + handshake), in ms;
    /// default 10 000.
    pub acquire_timeout_ms: Option<i64>,
    /// How long one round trip on an established connection may go unanswered, in ms, before
    /// the call rejects and the connection is closed; default 60 000, 0 = no bound.
    pub query_timeout_ms: Option<i64>,
    /// Prepared statements each connection keeps (default 16); the single-statement units
    /// run prepared, skipping the server's parser. 0 = text protocol only (for proxies or
    /// servers that cannot keep prepared statements).
    pub statement_cache_size: Option<i64>,
    /// Set READ COMMITTED on each new connection (default true). `false` sends no `SET` at all,
    /// for servers that pin a connection on any session change (PlanetScale/Vitess); their
    /// default isolation must then be READ COMMITTED.
    pub set_isolation: Option<bool>,
    /// TLS: `true`/`require` = encrypt; see `SslConfig`.
    pub ssl: Option<SslConfig>,
    /// Idle connections beyond `maxIdle` are closed after this many ms (mysql2's
    /// `idleTimeout`); default 60 000.
    pub idle_timeout: Option<i64>,
    /// Idle connections kept however long they idle (mysql2's `maxIdle`); default 0.
    pub max_idle: Option<i64>,
    /// TCP keepalive on each connection (default true).
    pub enable_keep_alive: Option<bool>,
    /// Idle time before the first keepalive probe, ms (default 30 000).
    pub keep_alive_initial_delay: Option<i64>,
    /// Compress the protocol (where the server supports it).
    pub compress: Option<bool>,
    /// Connection attributes sent with the handshake.
    pub connect_attributes: Option<HashMap<String, String>>,
    /// Answer a server's `mysql_clear_password` request (e.g. a token over TLS).
    pub enable_cleartext_plugin: Option<bool>,
    /// Reset every connection a user call used before the next borrower gets it, not only those
    /// whose session a statement may have changed (see `pool::session`).
    pub reset_on_release: Option<bool>,
}

/// One host of a host list.
#[napi(object)]
#[derive(Clone, Default)]
pub struct HostConfig {
    pub host: String,
    pub port: Option<i64>,
}

/// TLS settings (mirrors mysql2's `ssl` object where it makes sense).
#[napi(object)]
#[derive(Clone, Default)]
pub struct SslConfig {
    /// Path of a PEM CA bundle to trust.
    pub ca_path: Option<String>,
    /// PEM CA certificate text (as mysql2's `ssl.ca`), handed to the driver in memory.
    pub ca: Option<String>,
    /// Verify the server certificate chain (default true).
    pub reject_unauthorized: Option<bool>,
    /// Verify that the certificate names the host (default true).
    pub verify_identity: Option<bool>,
    /// The client's certificate chain and its private key (PEM), for servers that require one.
    pub cert: Option<String>,
    pub key: Option<String>,
    /// The name the server's certificate must carry, when it is not the host connected to.
    pub servername: Option<String>,
}

/// What the pool needs besides the driver options.
pub struct Settings {
    /// The driver options of each host, in list order (one entry for a single host).
    pub hosts: Vec<mysql_async::Opts>,
    pub failover: Failover,
    /// `connectionLimit`: connections each host's pool may open.
    pub limit: usize,
    pub acquire_timeout: Duration,
    pub query_timeout: Option<Duration>,
    /// Whether single-statement units run prepared (`statementCacheSize` > 0).
    pub prepared: bool,
    pub password: Option<String>,
    /// Reset every connection a user call used (`resetOnRelease`).
    pub reset_on_release: bool,
}

const MAX_CONNECTIONS: i64 = 10_000;

/// The longest host list accepted.
const MAX_HOSTS: usize = 64;

/// Default bound on an unanswered round trip: far above any statement the backend sends, and
/// above the server's default lock wait (50 s), so only a silent network or server reaches it.
const DEFAULT_QUERY_TIMEOUT_MS: i64 = 60_000;

/// Prepared statements per connection: the hot writes of one backend are about ten, and a
/// server's `max_prepared_stmt_count` (16 382 by default) is shared by every connection.
const DEFAULT_STATEMENT_CACHE: i64 = 16;
const MAX_STATEMENT_CACHE: i64 = 1024;

/// How long an idle connection stays open (mysql2's default `idleTimeout`).
const DEFAULT_IDLE_TIMEOUT_MS: i64 = 60_000;

/// Idle time before the first TCP keepalive probe.
const DEFAULT_KEEPALIVE: Duration = Duration::from_secs(30);

/// The longest timeout accepted, in ms (what Node's timers can hold).
const MAX_TIMEOUT_MS: i64 = 2_147_483_647;

/// `value` (default `default`) if it lies in `min..=max`, else an error naming `name`.
fn in_range(name: &str, value: Option<i64>, default: i64, min: i64, max: i64) -> Result<i64> {
    let v = value.unwrap_or(default);
    if (min..=max).contains(&v) {
        Ok(v)
    } else {
        Err(Error::Invalid(format!(
            "mysqlPool: {name} must be an integer between {min} and {max}, got {v}"
        )))
    }
}

fn ident_ok(s: &str) -> bool {
    !s.contains('\0')
}

/// `host` if it can name a host, else an error naming `name`.
fn checked_host(name: &str, host: &str) -> Result<String> {
    if host.is_empty() || !ident_ok(host) || host.contains(['/', ' ', ',']) {
        return Err(Error::Invalid(format!(
            "mysqlPool: invalid {name} {host:?}"
        )));
    }
    Ok(host.to_string())
}

/// The `(host, port)` list of `cfg`: its `hosts`, or its one `host` / `port`.
fn host_list(cfg: &PoolConfig) -> Result<Vec<(String, u16)>> {
    let Some(list) = &cfg.hosts else {
        let host = checked_host("host", cfg.host.as_deref().unwrap_or("localhost"))?;
        return Ok(vec![(
            host,
            in_range("port", cfg.port, 3306, 1, 65_535)? as u16,
        )]);
    };
    if cfg.host.is_some() || cfg.port.is_some() {
        return Err(Error::Invalid(
            "mysqlPool: give either host/port or hosts, not both".into(),
        ));
    }
    if cfg.socket_path.is_some() {
        return Err(Error::Invalid(
            "mysqlPool: socketPath names one local server; it cannot go with hosts".into(),
        ));
    }
    if list.is_empty() || list.len() > MAX_HOSTS {
        return Err(Error::Invalid(format!(
            "mysqlPool: hosts must list between 1 and {MAX_HOSTS} hosts, got {}",
            list.len()
        )));
    }
    let mut out: Vec<(String, u16)> = Vec::with_capacity(list.len());
    for (i, h) in list.iter().enumerate() {
        let host = checked_host(&format!("hosts[{i}].host"), &h.host)?;
        let port = in_range(&format!("hosts[{i}].port"), h.port, 3306, 1, 65_535)? as u16;
        if out.iter().any(|(a, p)| a == &host && *p == port) {
            return Err(Error::Invalid(format!(
                "mysqlPool: hosts[{i}] ({host}:{port}) is listed twice"
            )));
        }
        out.push((host, port));
    }
    Ok(out)
}

/// Validates `cfg` and builds the driver options.
pub fn build(cfg: &PoolConfig) -> Result<Settings> {
    let hosts = host_list(cfg)?;
    let failover = Failover::parse(cfg.failover.as_deref())?;
    let limit = in_range(
        "connectionLimit",
        cfg.connection_limit,
        10,
        1,
        MAX_CONNECTIONS,
    )? as usize;
    let acquire_ms = in_range(
        "acquireTimeoutMs",
        cfg.acquire_timeout_ms,
        10_000,
        1,
        MAX_TIMEOUT_MS,
    )?;
    let query_ms = in_range(
        "queryTimeoutMs",
        cfg.query_timeout_ms,
        DEFAULT_QUERY_TIMEOUT_MS,
        0,
        MAX_TIMEOUT_MS,
    )?;
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
    let cache = in_range(
        "statementCacheSize",
        cfg.statement_cache_size,
        DEFAULT_STATEMENT_CACHE,
        0,
        MAX_STATEMENT_CACHE,
    )? as usize;
    let acquire_timeout = Duration::from_millis(acquire_ms as u64);
    let query_timeout = (query_ms > 0).then(|| Duration::from_millis(query_ms as u64));

    let idle_ms = in_range(
        "idleTimeout",
        cfg.idle_timeout,
        DEFAULT_IDLE_TIMEOUT_MS,
        1,
        MAX_TIMEOUT_MS,
    )?;
    // As in mysql2, a maxIdle above connectionLimit means all of them.
    let max_idle = (in_range("maxIdle", cfg.max_idle, 0, 0, MAX_CONNECTIONS)? as usize).min(limit);
    let keep_alive_ms = in_range(
        "keepAliveInitialDelay",
        cfg.keep_alive_initial_delay,
        0,
        0,
        MAX_TIMEOUT_MS,
    )?;
    let constraints = PoolConstraints::new(max_idle, limit)
        .ok_or_else(|| Error::Invalid("mysqlPool: invalid connectionLimit".into()))?;
    let idle = Duration::from_millis(idle_ms as u64);
    let pool_opts = PoolOpts::default()
        .with_constraints(constraints)
        .with_reset_connection(false)
        .with_inactive_connection_ttl(idle)
        // Looked at twice per idleTimeout (every 1 to 30 s, the driver's bounds), so an idle
        // connection lives at most about 1.5 × idleTimeout.
        .with_ttl_check_interval((idle / 2).clamp(Duration::from_secs(1), Duration::from_secs(30)));
    let keep_alive = cfg.enable_keep_alive.unwrap_or(true).then(|| {
        if keep_alive_ms == 0 {
            DEFAULT_KEEPALIVE
        } else {
            Duration::from_millis(keep_alive_ms as u64)
        }
    });
    let attributes = cfg.connect_attributes.clone().unwrap_or_default();
    if let Some(bad) = attributes
        .keys()
        .chain(attributes.values())
        .find(|t| !ident_ok(t))
    {
        return Err(Error::Invalid(format!(
            "mysqlPool: connectAttributes must not contain NUL ({bad:?})"
        )));
    }

    let mut b = OptsBuilder::default()
        .user(cfg.user.clone().or_else(|| Some("root".into())))
        .pass(cfg.password.clone())
        .db_name(cfg.database.clone().filter(|d| !d.is_empty()))
        .client_found_rows(true)
        .prefer_socket(false)
        .tcp_keepalive(keep_alive)
        .pool_opts(pool_opts)
        .stmt_cache_size(cache)
        .enable_cleartext_plugin(cfg.enable_cleartext_plugin.unwrap_or(false))
        .compression(
            cfg.compress
                .unwrap_or(false)
                .then(mysql_async::Compression::fast),
        )
        .setup(setup(cfg));
    if !attributes.is_empty() {
        b = b.connect_attributes(attributes);
    }
    if let Some(sock) = cfg.socket_path.clone().filter(|s| !s.is_empty()) {
        b = b.socket(Some(sock));
    }
    if let Some(ssl) = &cfg.ssl {
        b = b.ssl_opts(Some(ssl_opts(ssl)?));
    }
    Ok(Settings {
        hosts: hosts
            .into_iter()
            .map(|(host, port)| b.clone().ip_or_hostname(host).tcp_port(port).into())
            .collect(),
        failover,
        limit,
        acquire_timeout,
        query_timeout,
        prepared: cache > 0,
        password: cfg.password.clone().filter(|p| !p.is_empty()),
        reset_on_release: cfg.reset_on_release.unwrap_or(false),
    })
}

/// What a connection runs once it is open, and again after a reset (`pool::session`), in one
/// round trip: the character set every literal is written for (`charset::PIN`), the isolation
/// level the ports assume, and the pool's database (a reset keeps the one a user's `USE` chose,
/// so it is chosen again whatever the options). With `setIsolation: false` (see
/// `PoolConfig::set_isolation`) no `SET` is sent, only the `USE`.
fn setup(cfg: &PoolConfig) -> Vec<String> {
    let use_db = cfg
        .database
        .as_deref()
        .filter(|d| !d.is_empty())
        .map(|db| format!("USE `{}`", db.replace('`', "``")));
    let mut parts = Vec::new();
    if cfg.set_isolation.unwrap_or(true) {
        parts.push(charset::PIN.to_string());
        parts.push("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED".to_string());
    }
    parts.extend(use_db);
    if parts.is_empty() {
        return Vec::new();
    }
    vec![parts.join("; ")]
}

fn ssl_opts(ssl: &SslConfig) -> Result<SslOpts> {
    let mut o = SslOpts::default();
    let verify = ssl.reject_unauthorized.unwrap_or(true);
    o = o.with_danger_accept_invalid_certs(!verify);
    o = o.with_danger_skip_domain_validation(!ssl.verify_identity.unwrap_or(verify));
    // PEM text goes to the driver in memory: a temp file would outlive the pool (one per pool
    // ever built) and put the CA where other local users may replace it.
    match (&ssl.ca_path, &ssl.ca) {
        (Some(p), _) => {
            let p = std::path::PathBuf::from(p);
            if !p.exists() {
                return Err(Error::Invalid(format!(
                    "mysqlPool: ssl CA file {} does not exist",
                    p.display()
                )));
            }
            o = o.with_root_certs(vec![p.into()]);
        }
        (None, Some(pem)) => o = o.with_root_certs(vec![pem.clone().into_bytes().into()]),
        (None, None) => {}
    }
    if let (Some(cert), Some(key)) = (&ssl.cert, &ssl.key) {
        o = o.with_client_identity(Some(mysql_async::ClientIdentity::new(
            cert.clone().into_bytes().into(),
            key.clone().into_bytes().into(),
        )));
    }
    if let Some(name) = &ssl.servername {
        o = o.with_danger_tls_hostname_override(Some(name.clone()));
    }
    Ok(o)
}
