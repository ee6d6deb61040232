//! A connection that could not be opened, as mysql2 and Node report it: the code mysql2 users
//! match on (`ECONNREFUSED`, `ENOTFOUND`, `ETIMEDOUT`, `HANDSHAKE_NO_SSL_SUPPORT`, …), the system
//! call that failed, and where the connection was going — never the driver's own wording.
//!
//! Most such failures pass (the server comes back, the network heals). Some are the pool's
//! configuration meeting a server it cannot work with — TLS required and not offered, a
//! certificate that does not verify, an authentication method the driver lacks — and fail the
//! same way every time: those are `permanent`, and reach JS with `kind: 'argument'`, so that
//! `mysqlClassify` does not retry them forever.

use super::Error;
use mysql_async::{DriverError, IoError, Opts};
use std::fmt;
use std::io::ErrorKind;

/// Where a connection was going.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    Tcp { host: String, port: u16 },
    Socket(String),
}

impl Place {
    /// Where a connection with `opts` goes (a socket path, when set, wins).
    pub fn of(opts: &Opts) -> Place {
        match opts.socket() {
            Some(path) => Place::Socket(path.to_string()),
            None => Place::Tcp {
                host: opts.ip_or_hostname().to_string(),
                port: opts.tcp_port(),
            },
        }
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Tcp { host, port } if host.contains(':') => write!(f, "[{host}]:{port}"),
            Place::Tcp { host, port } => write!(f, "{host}:{port}"),
            Place::Socket(path) => f.write_str(path),
        }
    }
}

/// A connection that could not be opened (see the module comment).
#[derive(Debug, Clone)]
pub struct Failure {
    pub code: &'static str,
    /// Node's `syscall` (`connect`, `getaddrinfo`, `read`) when a system call failed.
    pub syscall: Option<&'static str>,
    pub place: Place,
    pub message: String,
    /// The pool's configuration cannot work with this server: a retry fails the same way.
    pub permanent: bool,
}

impl Failure {
    fn new(
        code: &'static str,
        syscall: Option<&'static str>,
        place: &Place,
        message: String,
    ) -> Self {
        Failure {
            code,
            syscall,
            place: place.clone(),
            message,
            permanent: false,
        }
    }

    fn permanent(mut self) -> Self {
        self.permanent = true;
        self
    }

    /// `connect ETIMEDOUT <place>`: no connection within `ms` (the acquire bound).
    pub fn timed_out(place: &Place, ms: u128) -> Error {
        Error::Connect(Box::new(Failure::new(
            "ETIMEDOUT",
            Some("connect"),
            place,
            format!("connect ETIMEDOUT {place} (no connection within {ms} ms, acquireTimeoutMs)"),
        )))
    }
}

/// `e`, raised while opening a connection to `place`, as the caller sees it. Server errors
/// (a wrong password, an unknown database, too many connections) stay the server's.
pub fn shape(e: mysql_async::Error, place: &Place) -> Error {
    let failure = match e {
        mysql_async::Error::Io(IoError::Io(io)) => io_failure(&io, place),
        mysql_async::Error::Io(IoError::Tls(tls)) => Failure::new(
            "HANDSHAKE_SSL_ERROR",
            None,
            place,
            format!("TLS with {place} could not be set up: {tls}"),
        )
        .permanent(),
        mysql_async::Error::Driver(d) => driver_failure(d, place),
        other => return Error::from(other),
    };
    Error::Connect(Box::new(failure))
}

fn io_failure(io: &std::io::Error, place: &Place) -> Failure {
    let text = describe(io);
    if let Some(detail) = text.strip_prefix("failed to lookup address information: ") {
        let host = match place {
            Place::Tcp { host, .. } => host.as_str(),
            Place::Socket(path) => path.as_str(),
        };
        // What Node calls EAI_AGAIN is a resolver that may answer later; anything else is a
        // name that does not resolve (Node says ENOTFOUND for EAI_NONAME and EAI_NODATA).
        let code = if detail.contains("Temporary failure") || detail.contains("try again") {
            "EAI_AGAIN"
        } else {
            "ENOTFOUND"
        };
        return Failure::new(
            code,
            Some("getaddrinfo"),
            place,
            format!("getaddrinfo {code} {host} (connecting to {place}: {detail})"),
        );
    }
    if is_tls(io) {
        let certificate = text.contains("certificate");
        let failure = Failure::new(
            "HANDSHAKE_SSL_ERROR",
            None,
            place,
            format!("TLS with {place} failed: {text}"),
        );
        // A certificate that does not verify stays so until the pool's CA or the server's
        // certificate changes.
        return if certificate {
            failure.permanent()
        } else {
            failure
        };
    }
    let (code, syscall) = match io.kind() {
        ErrorKind::ConnectionRefused => ("ECONNREFUSED", "connect"),
        ErrorKind::NotFound => ("ENOENT", "connect"),
        ErrorKind::PermissionDenied => ("EACCES", "connect"),
        ErrorKind::TimedOut => ("ETIMEDOUT", "connect"),
        ErrorKind::HostUnreachable => ("EHOSTUNREACH", "connect"),
        ErrorKind::NetworkUnreachable => ("ENETUNREACH", "connect"),
        ErrorKind::AddrNotAvailable => ("EADDRNOTAVAIL", "connect"),
        ErrorKind::ConnectionReset => ("ECONNRESET", "read"),
        ErrorKind::ConnectionAborted => ("ECONNABORTED", "read"),
        ErrorKind::BrokenPipe => ("EPIPE", "write"),
        ErrorKind::UnexpectedEof => {
            return Failure::new(
                "PROTOCOL_CONNECTION_LOST",
                None,
                place,
                format!("{place} closed the connection during the handshake"),
            )
        }
        _ => {
            return Failure::new(
                "PROTOCOL_CONNECTION_LOST",
                None,
                place,
                format!("connecting to {place} failed: {text}"),
            )
        }
    };
    let message = if syscall == "connect" {
        format!("connect {code} {place}")
    } else {
        format!("{syscall} {code} (connecting to {place})")
    };
    Failure::new(code, Some(syscall), place, message)
}

fn driver_failure(d: DriverError, place: &Place) -> Failure {
    match d {
        DriverError::NoClientSslFlagFromServer => Failure::new(
            "HANDSHAKE_NO_SSL_SUPPORT",
            None,
            place,
            format!(
                "{place} does not offer TLS, which this pool requires (ssl / sslmode): \
                 enable TLS on the server, or connect without it (sslmode=DISABLED)"
            ),
        )
        .permanent(),
        DriverError::CleartextPluginDisabled => Failure::new(
            "MYSQL_CLEAR_PASSWORD_NOT_ENABLED",
            None,
            place,
            format!(
                "the account on {place} asks for mysql_clear_password (the password sent as \
                 it is): set enableCleartextPlugin: true, and use it over TLS only"
            ),
        )
        .permanent(),
        DriverError::UnknownAuthPlugin { name } if name == "sha256_password" => {
            let mut f = unsupported_plugin(&name, place);
            f.message.push_str(
                "; MySQL also asks for sha256_password when the account does not exist (check the user name)",
            );
            f
        }
        DriverError::UnknownAuthPlugin { name } => unsupported_plugin(&name, place),
        DriverError::MysqlOldPasswordDisabled => unsupported_plugin("mysql_old_password", place),
        other => Failure::new(
            "PROTOCOL_CONNECTION_LOST",
            None,
            place,
            format!("connecting to {place} failed: {other}"),
        ),
    }
}

/// An account whose authentication plugin the driver lacks.
pub fn unsupported_plugin(name: &str, place: &Place) -> Failure {
    Failure::new(
        "ER_NOT_SUPPORTED_AUTH_MODE",
        None,
        place,
        format!(
            "the account on {place} authenticates with the {name} plugin, which this driver \
             does not support (it supports caching_sha2_password and mysql_native_password): \
             ALTER USER … IDENTIFIED WITH caching_sha2_password"
        ),
    )
    .permanent()
}

/// Whether `io` is a TLS failure wrapped as an I/O error (how the handshake reports one).
fn is_tls(io: &std::io::Error) -> bool {
    io.kind() == ErrorKind::InvalidData
        && io.get_ref().is_some_and(|inner| {
            let t = inner.to_string();
            t.contains("certificate") || t.contains("alert") || t.contains("handshake")
        })
}

/// The text of an I/O error without Rust's " (os error N)" suffix.
pub fn describe(io: &std::io::Error) -> String {
    let text = io.to_string();
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_string(),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp() -> Place {
        Place::Tcp {
            host: "db.example".into(),
            port: 3307,
        }
    }

    #[test]
    fn refused_names_the_place_as_node_does() {
        let io = std::io::Error::from_raw_os_error(111);
        let f = io_failure(&io, &tcp());
        assert_eq!(f.code, "ECONNREFUSED");
        assert_eq!(f.message, "connect ECONNREFUSED db.example:3307");
        assert!(!f.permanent);
    }

    #[test]
    fn a_name_that_does_not_resolve_is_enotfound() {
        let io = std::io::Error::other(
            "failed to lookup address information: Name or service not known",
        );
        let f = io_failure(&io, &tcp());
        assert_eq!((f.code, f.syscall), ("ENOTFOUND", Some("getaddrinfo")));
        assert!(f
            .message
            .starts_with("getaddrinfo ENOTFOUND db.example (connecting to db.example:3307"));
    }

    #[test]
    fn tls_not_offered_is_permanent() {
        let f = driver_failure(DriverError::NoClientSslFlagFromServer, &tcp());
        assert_eq!(f.code, "HANDSHAKE_NO_SSL_SUPPORT");
        assert!(f.permanent);
        assert!(f.message.contains("db.example:3307"));
    }

    #[test]
    fn places_print_as_host_port_or_path() {
        let v6 = Place::Tcp {
            host: "::1".into(),
            port: 3306,
        };
        assert_eq!(v6.to_string(), "[::1]:3306");
        assert_eq!(
            Place::Socket("/run/mysqld.sock".into()).to_string(),
            "/run/mysqld.sock"
        );
        assert_eq!(
            describe(&std::io::Error::from_raw_os_error(111)),
            "Connection refused"
        );
    }
}
