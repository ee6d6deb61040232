//! One error type for the crate, mapped to a JS `Error` with a stable `code` prefix.
//!
//! Driver errors keep the server's message and error number so callers can tell a deadlock from a
//! syntax error; anything that might echo a connection URL is scrubbed of the password first.

use napi::Status;

/// What went wrong, by origin.
#[derive(Debug, Clone)]
pub enum Error {
    /// Bad argument or option from the caller (maps to a JS `TypeError`-like message).
    Invalid(String),
    /// The server answered with an error.
    Server {
        code: u16,
        state: String,
        message: String,
    },
    /// Connection, I/O or pool trouble: the connection is unusable afterwards.
    Connection(String),
    /// No answer within `queryTimeoutMs`: the connection was closed (a connection failure whose
    /// outcome, for a write outside a transaction, is unknown).
    Timeout(String),
    /// A unit of work was rolled back before its COMMIT was sent because one of its checks did
    /// not hold (e.g. an outbox guard that could not be evaluated). Nothing was committed, so the
    /// whole unit may be re-run.
    Aborted(String),
    /// The backend's own contract errors (run not found, lease lost, …).
    Contract(String),
    /// An error raised by a JS `Sql` wrapper (wrapped path).
    Js(String),
}

/// Crate result alias.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// True for InnoDB deadlocks and lock-wait timeouts (on Galera also certification failures,
    /// reported as deadlocks) and for units aborted before COMMIT: a re-run of the whole unit
    /// cures them, because nothing of it was committed.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Error::Server {
                code: 1213 | 1205,
                ..
            } | Error::Aborted(_)
        )
    }

    /// True when the connection the error came from must not be used again.
    pub fn is_connection(&self) -> bool {
        matches!(self, Error::Connection(_) | Error::Timeout(_))
    }

    /// True when the server has already rolled the whole transaction back (a deadlock or a
    /// Galera brute-force abort), so later statements would run outside it.
    pub fn ends_transaction(&self) -> bool {
        self.is_connection() || matches!(self, Error::Server { code: 1213, .. } | Error::Aborted(_))
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
            Error::Connection(m) => Error::Connection(f(m)),
            Error::Timeout(m) => Error::Timeout(f(m)),
            Error::Aborted(m) => Error::Aborted(f(m)),
            Error::Invalid(m) => Error::Invalid(f(m)),
            Error::Contract(m) => Error::Contract(f(m)),
            Error::Js(m) => Error::Js(f(m)),
        }
    }

    /// Human-readable text without secrets.
    pub fn message(&self) -> String {
        match self {
            Error::Invalid(m) | Error::Contract(m) | Error::Js(m) | Error::Aborted(m) => m.clone(),
            Error::Server {
                code,
                state,
                message,
            } => format!("{message} (errno {code}, sqlstate {state})"),
            Error::Connection(m) | Error::Timeout(m) => format!("MySQL connection error: {m}"),
        }
    }
}

impl From<mysql_async::Error> for Error {
    fn from(e: mysql_async::Error) -> Self {
        match e {
            mysql_async::Error::Server(s) => Error::Server {
                code: s.code,
                state: s.state,
                message: s.message,
            },
            mysql_async::Error::Url(u) => {
                Error::Invalid(format!("invalid MySQL URL: {}", scrub(&u.to_string())))
            }
            other => Error::Connection(scrub(&other.to_string())),
        }
    }
}

impl From<Error> for napi::Error {
    fn from(e: Error) -> Self {
        let status = match e {
            Error::Invalid(_) => Status::InvalidArg,
            _ => Status::GenericFailure,
        };
        napi::Error::new(status, e.message())
    }
}

impl From<napi::Error> for Error {
    fn from(e: napi::Error) -> Self {
        Error::Js(e.reason.clone())
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
    fn deadlocks_are_transient() {
        let e = Error::Server {
            code: 1213,
            state: "40001".into(),
            message: "Deadlock".into(),
        };
        assert!(e.is_transient());
        assert!(!Error::Contract("x".into()).is_transient());
    }
}
