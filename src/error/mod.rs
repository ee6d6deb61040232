//! One error type for the crate, and the one place that turns it into a JS error object.
//!
//! Every error reaching JS is built here, in Rust: a `TypeError` / `RangeError` for a bad
//! argument, an `Error` otherwise, carrying `kind` (`argument`, `server`, `connection`,
//! `contract`), a symbolic `code`, and for server errors mysql2's `errno` and `sqlState`. The
//! JavaScript side parses nothing. Messages never hold a password (see `PoolHandle::redact`).

pub(crate) mod codes;
pub(crate) mod connect;

use napi::bindgen_prelude::*;
use napi::sys;
use std::ffi::CString;

/// What went wrong, by origin.
#[derive(Debug, Clone)]
pub enum Error {
    /// A bad argument or option (a JS `TypeError`).
    Invalid(String),
    /// An argument outside the range a column or the server can hold (a JS `RangeError`).
    Range(String),
    /// The server answered with an error.
    Server {
        code: u16,
        state: String,
        message: String,
    },
    /// Connection, I/O or pool trouble: the connection is unusable afterwards. `code` is the
    /// Node-style code mysql2 users branch on (`ECONNREFUSED`, `PROTOCOL_CONNECTION_LOST`, …).
    Connection { code: &'static str, message: String },
    /// A connection could not be opened (`connect`): refused, an unknown host, no answer, or a
    /// configuration the server cannot work with (then `permanent`).
    Connect(Box<connect::Failure>),
    /// No answer within `queryTimeoutMs`: the connection was closed (a connection failure whose
    /// outcome is unknown for a write outside a transaction and for a `COMMIT`).
    Timeout(String),
    /// A unit of work was rolled back before its COMMIT was sent because one of its checks did
    /// not hold (e.g. an outbox guard that could not be evaluated). Nothing was committed, so the
    /// whole unit may be re-run.
    Aborted(String),
    /// The backend's own contract errors (run not found, lease lost, …).
    Contract(String),
    /// An error raised by a JS `Sql` wrapper (wrapped path; JS rethrows the wrapper's own object).
    Js(String),
}

/// Crate result alias.
pub type Result<T> = std::result::Result<T, Error>;

/// Who is to blame, as a caller sees it (`err.kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The caller passed something unusable; nothing was sent.
    Argument,
    /// The server refused the statement.
    Server,
    /// The connection failed or went silent.
    Connection,
    /// The call broke a rule of the backend contract (e.g. a lease no longer held).
    Contract,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Argument => "argument",
            Kind::Server => "server",
            Kind::Connection => "connection",
            Kind::Contract => "contract",
        }
    }
}

impl Error {
    /// A connection failure with mysql2's code for a lost connection.
    pub fn connection(message: impl Into<String>) -> Self {
        Error::Connection {
            code: "PROTOCOL_CONNECTION_LOST",
            message: message.into(),
        }
    }

    /// A call on a pool after its `close()`.
    pub fn closed() -> Self {
        Error::Connection {
            code: "POOL_CLOSED",
            message: "this Sql pool is closed (close() was called)".into(),
        }
    }

    /// True for InnoDB deadlocks and lock-wait timeouts (on Galera also certification failures,
    /// reported as deadlocks), Group Replication certification failures (3101) and deadlocks at
    /// commit (1180 "Lock deadlock"), and for units aborted before COMMIT: a re-run of the whole
    /// unit cures them, because nothing of it was committed.
    pub fn is_transient(&self) -> bool {
        self.is_certification_failure()
            || matches!(
                self,
                Error::Server {
                    code: 1213 | 1205,
                    ..
                } | Error::Aborted(_)
            )
            || matches!(self, Error::Server { code, message, .. }
                if *code == codes::ERROR_DURING_COMMIT && message.contains(codes::LOCK_DEADLOCK))
    }

    /// True for a Group Replication certification failure (3101): rolled back on every member,
    /// provided the member that answered is still in its group (see `codes::CERTIFICATION_FAILED`).
    pub fn is_certification_failure(&self) -> bool {
        matches!(self, Error::Server { code, .. } if *code == codes::CERTIFICATION_FAILED)
    }

    /// True when the server answered that the statement's outcome is unknown and it can no
    /// longer serve the connection (`codes::OUTCOME_UNKNOWN`: a Group Replication member that
    /// could not finish a commit with its group, a server shutting down): the unit must not run
    /// again (it may have been committed), and the connection leaves the pool.
    pub fn outcome_unknown(&self) -> bool {
        matches!(self, Error::Server { code, .. } if codes::OUTCOME_UNKNOWN.contains(code))
    }

    /// True when the connection the error came from must not be used again.
    pub fn is_connection(&self) -> bool {
        matches!(
            self,
            Error::Connection { .. } | Error::Connect(_) | Error::Timeout(_)
        )
    }

    /// True when the node that answered can no longer serve this connection (`codes::NODE_UNFIT`:
    /// not synced with its Galera cluster, read-only, not an ONLINE Group Replication member):
    /// the statement was refused, so the error reaches the caller as the server's, but the
    /// connection must not be handed out again. A 1180 counts when it says the node left the
    /// primary component, a 4094 when a Group Replication primary is handing its role over.
    pub fn node_unfit(&self) -> bool {
        matches!(self, Error::Server { code, message, .. }
            if codes::NODE_UNFIT.contains(code)
                || (*code == codes::ERROR_DURING_COMMIT && message.contains(codes::NOT_PRIMARY))
                || (*code == codes::PRIMARY_CHANGE && message.contains(codes::SET_AS_PRIMARY)))
    }

    /// True when the connection the error came from must leave the pool: it is broken, or its
    /// node can no longer serve it.
    pub fn leaves_pool(&self) -> bool {
        self.is_connection() || self.node_unfit() || self.outcome_unknown()
    }

    /// True when the server has already rolled the whole transaction back (a deadlock, a
    /// Galera brute-force abort, a Group Replication conflict), or its state is unknown (a lost
    /// connection, a commit the group may or may not have taken, a shutdown), so later statements
    /// would run outside it.
    pub fn ends_transaction(&self) -> bool {
        self.is_connection()
            || self.outcome_unknown()
            || (self.is_transient() && !matches!(self, Error::Server { code: 1205, .. }))
    }

    /// Who is to blame.
    pub fn kind(&self) -> Kind {
        match self {
            Error::Invalid(_) | Error::Range(_) => Kind::Argument,
            Error::Server { .. } | Error::Aborted(_) | Error::Js(_) => Kind::Server,
            Error::Connection { .. } | Error::Timeout(_) => Kind::Connection,
            // A configuration the server cannot work with is the caller's to change.
            Error::Connect(f) if f.permanent => Kind::Argument,
            Error::Connect(_) => Kind::Connection,
            Error::Contract(_) => Kind::Contract,
        }
    }

    /// The symbolic code (`err.code`).
    pub fn code(&self) -> String {
        match self {
            Error::Invalid(_) => "ERR_INVALID_ARG".into(),
            Error::Range(_) => "ERR_OUT_OF_RANGE".into(),
            Error::Server { code, .. } => codes::name(*code),
            Error::Connection { code, .. } => (*code).into(),
            Error::Connect(f) => f.code.into(),
            Error::Timeout(_) => "ETIMEDOUT".into(),
            Error::Aborted(_) => "ERR_UNIT_ABORTED".into(),
            Error::Contract(_) => "ERR_CONTRACT".into(),
            Error::Js(_) => "ERR_WRAPPED_SQL".into(),
        }
    }

    /// Human-readable text without secrets.
    pub fn message(&self) -> String {
        match self {
            Error::Invalid(m)
            | Error::Range(m)
            | Error::Contract(m)
            | Error::Js(m)
            | Error::Aborted(m) => m.clone(),
            // The numbers stay in the text too, for logs that print only the message.
            Error::Server {
                code,
                state,
                message,
            } => format!("{message} (errno {code}, sqlstate {state})"),
            Error::Connection {
                code: "POOL_CLOSED",
                message: m,
            } => m.clone(),
            Error::Connection { message: m, .. } | Error::Timeout(m) => {
                format!("MySQL connection error: {m}")
            }
            Error::Connect(f) => f.message.clone(),
        }
    }

    /// The same error with `f` applied to its message text.
    pub fn map_message(self, f: impl Fn(String) -> String) -> Error {
        match self {
            Error::Server {
                code,
                state,
                message,
            } => Error::Server {
                code,
                state,
                message: f(message),
            },
            Error::Connection { code, message } => Error::Connection {
                code,
                message: f(message),
            },
            Error::Connect(mut c) => {
                c.message = f(c.message);
                Error::Connect(c)
            }
            Error::Timeout(m) => Error::Timeout(f(m)),
            Error::Aborted(m) => Error::Aborted(f(m)),
            Error::Invalid(m) => Error::Invalid(f(m)),
            Error::Range(m) => Error::Range(f(m)),
            Error::Contract(m) => Error::Contract(f(m)),
            Error::Js(m) => Error::Js(f(m)),
        }
    }

    /// Builds the JS error object (see module docs), to reject or throw with.
    pub fn to_js(&self, env: sys::napi_env) -> napi::Error {
        match self.to_js_value(env) {
            Ok(obj) => napi::Error::from(obj),
            Err(e) => e,
        }
    }

    /// Builds the JS error object as a value.
    pub fn to_js_value(&self, env: sys::napi_env) -> napi::Result<Unknown<'static>> {
        // SAFETY: `env` is the live environment of the JS thread this is called on.
        unsafe {
            let obj = self.build(env)?;
            Ok(Unknown::from_raw_unchecked(env, obj))
        }
    }

    unsafe fn build(&self, env: sys::napi_env) -> napi::Result<sys::napi_value> {
        let code = self.code();
        let create = match self {
            Error::Invalid(_) => sys::napi_create_type_error,
            Error::Range(_) => sys::napi_create_range_error,
            _ => sys::napi_create_error,
        };
        let mut obj = std::ptr::null_mut();
        let js_code = String::to_napi_value(env, code)?;
        let js_message = String::to_napi_value(env, self.message())?;
        check_status!(create(env, js_code, js_message, &mut obj))?;
        set(
            env,
            obj,
            "kind",
            String::to_napi_value(env, self.kind().as_str().into())?,
        )?;
        if let Error::Server { code, state, .. } = self {
            set(
                env,
                obj,
                "errno",
                u32::to_napi_value(env, u32::from(*code))?,
            )?;
            set(
                env,
                obj,
                "sqlState",
                String::to_napi_value(env, state.clone())?,
            )?;
        }
        if self.is_connection() {
            // mysql2 marks errors that end the connection as fatal.
            set(env, obj, "fatal", bool::to_napi_value(env, true)?)?;
        }
        if let Error::Connect(f) = self {
            where_failed(env, obj, f)?;
        }
        Ok(obj)
    }
}

/// Node's fields of a failed system call: `syscall`, and `address` / `port` (a socket path is the
/// address) or, for a name lookup, `hostname`. `errno` is Node's number for `code`, which
/// `lib/failure.js` adds (it differs between platforms).
unsafe fn where_failed(
    env: sys::napi_env,
    obj: sys::napi_value,
    f: &connect::Failure,
) -> napi::Result<()> {
    let text = |s: &str| String::to_napi_value(env, s.to_string());
    if let Some(call) = f.syscall {
        set(env, obj, "syscall", text(call)?)?;
    }
    match (&f.place, f.syscall) {
        (connect::Place::Tcp { host, .. }, Some("getaddrinfo")) => {
            set(env, obj, "hostname", text(host)?)?
        }
        (connect::Place::Tcp { host, port }, _) => {
            set(env, obj, "address", text(host)?)?;
            set(env, obj, "port", u32::to_napi_value(env, u32::from(*port))?)?;
        }
        (connect::Place::Socket(path), _) => set(env, obj, "address", text(path)?)?,
    }
    Ok(())
}

unsafe fn set(
    env: sys::napi_env,
    obj: sys::napi_value,
    key: &str,
    value: sys::napi_value,
) -> napi::Result<()> {
    let key = CString::new(key).map_err(|_| napi::Error::from_reason("bad property name"))?;
    check_status!(sys::napi_set_named_property(env, obj, key.as_ptr(), value))
}

impl From<mysql_async::Error> for Error {
    fn from(e: mysql_async::Error) -> Self {
        use mysql_async::{DriverError, IoError};
        match e {
            mysql_async::Error::Server(s) => Error::Server {
                code: s.code,
                state: s.state,
                message: s.message,
            },
            mysql_async::Error::Url(u) => {
                Error::Invalid(format!("invalid MySQL URL: {}", scrub(&u.to_string())))
            }
            // The driver refused to send a packet over the connection's own max_allowed_packet
            // (read when it opened: lower than the pool last read if the server's went down).
            mysql_async::Error::Io(IoError::Io(io)) if packet_too_large(&io) => Error::Connection {
                code: PACKET_TOO_LARGE,
                message: "a statement exceeds this connection's max_allowed_packet; reduce the size of the values passed".into(),
            },
            mysql_async::Error::Io(IoError::Io(io)) => Error::Connection {
                code: io_code(io.kind()),
                message: format!("connection lost: {}", scrub(&connect::describe(&io))),
            },
            mysql_async::Error::Driver(DriverError::PacketTooLarge) => Error::Range(
                "a statement exceeds the server's max_allowed_packet; reduce the size of the values passed"
                    .into(),
            ),
            mysql_async::Error::Driver(DriverError::ConnectionClosed) => {
                Error::connection("the server closed the connection")
            }
            // The driver's own words, without its "Driver error: `…'" wrapping.
            mysql_async::Error::Driver(d) => Error::connection(scrub(&d.to_string())),
            mysql_async::Error::Io(IoError::Tls(t)) => Error::connection(scrub(&format!("TLS failed: {t}"))),
            mysql_async::Error::Other(o) => Error::connection(scrub(&o.to_string())),
        }
    }
}

/// mysql2's code for a packet over `max_allowed_packet`.
pub const PACKET_TOO_LARGE: &str = "ER_NET_PACKET_TOO_LARGE";

/// Whether `io` is the driver's codec refusing a packet over the connection's limit.
fn packet_too_large(io: &std::io::Error) -> bool {
    use mysql_common::proto::codec::error::PacketCodecError;
    io.get_ref()
        .and_then(|e| e.downcast_ref::<PacketCodecError>())
        .is_some_and(|e| matches!(e, PacketCodecError::PacketTooLarge))
}

/// The Node-style code of an I/O failure, as mysql2 reports it.
fn io_code(kind: std::io::ErrorKind) -> &'static str {
    use std::io::ErrorKind::*;
    match kind {
        ConnectionRefused => "ECONNREFUSED",
        ConnectionReset => "ECONNRESET",
        BrokenPipe => "EPIPE",
        TimedOut => "ETIMEDOUT",
        NotFound => "ENOENT",
        PermissionDenied => "EACCES",
        _ => "PROTOCOL_CONNECTION_LOST",
    }
}

/// Removes `user:password@` credentials from anything that looks like a URL.
pub fn scrub(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find("://") {
        let (head, tail) = rest.split_at(pos + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| c.is_whitespace() || c == '/' || c == '"' || c == '\'')
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                let user = authority[..at].split(':').next().unwrap_or("");
                out.push_str(user);
                out.push_str(":***@");
                out.push_str(&authority[at + 1..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_hides_passwords_in_urls() {
        assert_eq!(
            scrub("bad mysql://root:hunter2@db:3306/x here"),
            "bad mysql://root:***@db:3306/x here"
        );
        assert_eq!(scrub("no url"), "no url");
    }

    #[test]
    fn deadlocks_are_transient_and_end_the_transaction() {
        let e = Error::Server {
            code: 1213,
            state: "40001".into(),
            message: "Deadlock".into(),
        };
        assert!(e.is_transient());
        assert!(e.ends_transaction());
        assert_eq!(e.kind(), Kind::Server);
        assert_eq!(e.code(), "ER_LOCK_DEADLOCK");
        assert!(!Error::Contract("x".into()).is_transient());
    }

    #[test]
    fn read_only_and_unsynced_answers_take_the_connection_out_of_the_pool() {
        let server = |code| Error::Server {
            code,
            state: "HY000".into(),
            message: "x".into(),
        };
        for code in [1047, 1290, 1836] {
            assert!(server(code).leaves_pool(), "{code}");
            assert!(!server(code).is_connection(), "{code} stays a server error");
        }
        let non_primary = Error::Server {
            code: 1180,
            state: "HY000".into(),
            message: "Error while appending streaming replication fragment(provider status: Not connected to Primary Component)".into(),
        };
        assert!(non_primary.node_unfit() && non_primary.leaves_pool());
        assert!(
            !server(1180).node_unfit(),
            "another 1180 is not about the node"
        );
        assert!(!server(1062).leaves_pool());
        assert!(!server(1213).leaves_pool());
        assert!(Error::connection("x").leaves_pool());
        assert!(Error::Timeout("x".into()).leaves_pool());
    }

    #[test]
    fn group_replication_answers_are_classified() {
        let server = |code, message: &str| Error::Server {
            code,
            state: "HY000".into(),
            message: message.into(),
        };
        let conflict = server(
            3101,
            "Plugin instructed the server to rollback the current transaction.",
        );
        assert!(conflict.is_transient() && conflict.ends_transaction() && !conflict.leaves_pool());
        let deadlock = server(
            1180,
            "Got error 149 - 'Lock deadlock; Retry transaction' during COMMIT",
        );
        assert!(deadlock.is_transient() && !deadlock.leaves_pool());
        let hook = server(
            3100,
            "Error on observer while running replication hook 'before_commit'.",
        );
        assert!(hook.outcome_unknown() && hook.leaves_pool() && hook.ends_transaction());
        assert!(
            !hook.is_transient() && !hook.node_unfit(),
            "a commit of unknown outcome never runs again"
        );
        for code in [3032, 3782, 3783, 3796, 3799] {
            assert!(server(code, "x").node_unfit(), "{code}");
        }
        let handover = server(4094, "All queries have been blocked while function 'group_replication_set_as_primary()' is executing.");
        assert!(handover.node_unfit());
        assert!(
            !server(4094, "At line 3 in p").node_unfit(),
            "MariaDB's 4094 is a note of its own"
        );
        assert_eq!(conflict.code(), "ER_TRANSACTION_ROLLBACK_DURING_COMMIT");
    }

    #[test]
    fn kinds_tell_the_caller_who_is_to_blame() {
        assert_eq!(Error::Range("x".into()).kind(), Kind::Argument);
        assert_eq!(Error::Timeout("x".into()).kind(), Kind::Connection);
        assert_eq!(Error::connection("x").code(), "PROTOCOL_CONNECTION_LOST");
        assert_eq!(Error::Contract("x".into()).kind(), Kind::Contract);
        assert_eq!(
            io_code(std::io::ErrorKind::ConnectionRefused),
            "ECONNREFUSED"
        );
    }
}
