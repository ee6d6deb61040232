//! What a pooled connection carries from one borrower to the next: nothing a user statement may
//! have changed.
//!
//! A call of the user's `Sql` (`query`, `exec`, a `tx`) borrows a connection, and so does every
//! backend unit. A user statement can leave session state behind — `sql_mode`, `time_zone`,
//! user variables, `autocommit = 0`, an open transaction, temporary tables, prepared statements,
//! table locks, named locks (`GET_LOCK`), another default database — which the next borrower,
//! often the backend, would inherit. So a connection on which a user statement ran that *may*
//! have changed its session is reset when it goes back to the pool (`COM_RESET_CONNECTION`,
//! then the connection's setup statements again: utf8mb4, READ COMMITTED and the pool's
//! database, `pool::config`), in the background, before anyone else gets it, bounded like a
//! round trip: a connection whose reset fails or does not answer is discarded
//! (`exec::handle`). The backend's own statements never change
//! session state and never cost a reset; neither do plain reads and writes of the user's.
//!
//! `may_change` judges the statement's text (the server's session-state tracking would say it
//! exactly, but the driver does not ask for it): every statement of a multi-statement text must
//! begin with a keyword that leaves the session as it found it, and mention no user variable
//! and no named-lock function, quoted or not (the server calls the built-in for
//! `` `GET_LOCK`(…) ``). A text holding an executable comment (`/*!NNNNN … */`, `/*M! … */`) is
//! always reset after: whether the server runs the comment's text or skips it depends on its
//! version and on which server it is (MySQL skips `/*M!`), so the text has two readings and
//! only one of them may be checked here. A false alarm costs one background reset; what it
//! cannot see is state changed inside a stored function or trigger (`SELECT f()`), which stays
//! with the connection — a character set changed that way is still caught (`pool::charset`).

/// First keywords of statements that leave the session as they found it (when they mention no
/// user variable and take no named lock). Anything else — `SET`, `USE`, `CALL`, `PREPARE`,
/// `EXECUTE`, `LOCK`, `BEGIN`, `START`, `XA`, `HANDLER`, `SAVEPOINT`, `COMMIT`/`ROLLBACK` (which
/// may chain a transaction), `CREATE TEMPORARY`, … — may not.
const KEEPS_SESSION: &[&str] = &[
    "select", "insert", "update", "delete", "replace", "with", "values", "table", "show",
    "explain", "describe", "desc", "do", "alter", "create", "drop", "truncate", "rename", "grant",
    "revoke", "analyze", "optimize", "check", "checksum", "repair", "kill", "help",
];

/// Words after `CREATE` / `DROP` that make the statement change the session.
const SESSION_OBJECTS: &[&str] = &["temporary", "prepare"];

/// Functions that take or give up a lock held by the session, not the transaction.
const SESSION_FUNCTIONS: &[&str] = &["get_lock", "release_lock", "release_all_locks"];

/// Whether `sql` (the text of a user statement, before its values are bound) may leave state in
/// its session for the next borrower of the connection (see the module comment).
pub fn may_change(sql: &str) -> bool {
    let mut statement_start = true;
    let mut after_create = false;
    for token in Tokens::new(sql) {
        match token {
            Token::End => {
                statement_start = true;
                after_create = false;
            }
            Token::UserVariable | Token::Conditional => return true,
            Token::Quoted(name) => {
                if !statement_start && names_session_function(name) {
                    return true;
                }
                statement_start = false;
                after_create = false;
            }
            Token::Word(w) => {
                let w = w.to_ascii_lowercase();
                if statement_start {
                    if !KEEPS_SESSION.contains(&w.as_str()) {
                        return true;
                    }
                    after_create = w == "create" || w == "drop";
                    statement_start = false;
                } else if after_create {
                    if SESSION_OBJECTS.contains(&w.as_str()) {
                        return true;
                    }
                    // MariaDB's `CREATE OR REPLACE TEMPORARY TABLE`.
                    after_create = w == "or" || w == "replace";
                } else if names_session_function(&w) {
                    return true;
                }
            }
            Token::Other => {
                statement_start = false;
                after_create = false;
            }
        }
    }
    false
}

/// Whether `name` (a word, or the inside of a quoted identifier) names a session-lock function.
fn names_session_function(name: &str) -> bool {
    SESSION_FUNCTIONS.contains(&name.to_ascii_lowercase().as_str())
}

/// What the scan sees: words, quoted names, user variables, executable comments, statement
/// ends, and anything else.
enum Token<'a> {
    Word(&'a str),
    /// The inside of a `` `…` `` or `"…"` run: an identifier (`"…"` under `ANSI_QUOTES`) the
    /// server may resolve to a built-in function.
    Quoted(&'a str),
    /// `/*! … */` or `/*M! … */`: text the server runs or skips depending on what it is.
    Conditional,
    /// `@name` (not `@@name`, a system variable).
    UserVariable,
    /// `;` between statements.
    End,
    Other,
}

/// Code tokens of SQL text: strings and plain comments (optimizer hints `/*+ … */` among them,
/// which bind one statement only) are skipped; quoted identifiers and executable comments are
/// reported.
struct Tokens<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Tokens<'a> {
    fn new(text: &'a str) -> Self {
        Tokens { text, at: 0 }
    }

    /// The index just past the quoted run starting at `self.at` (quote `q`; doubled or
    /// backslash-escaped quotes stay inside).
    fn skip_quoted(&self, q: u8) -> usize {
        let b = self.text.as_bytes();
        let mut i = self.at + 1;
        while i < b.len() {
            if b[i] == b'\\' && q != b'`' {
                i += 2;
            } else if b[i] == q {
                if b.get(i + 1) == Some(&q) {
                    i += 2;
                } else {
                    return i + 1;
                }
            } else {
                i += 1;
            }
        }
        b.len()
    }

    /// Past the end of the line starting at `from`.
    fn skip_line(&self, from: usize) -> usize {
        self.text[from..]
            .find('\n')
            .map_or(self.text.len(), |n| from + n + 1)
    }
}

impl<'a> Iterator for Tokens<'a> {
    type Item = Token<'a>;

    fn next(&mut self) -> Option<Token<'a>> {
        let b = self.text.as_bytes();
        loop {
            let c = *b.get(self.at)?;
            let next = b.get(self.at + 1).copied();
            match c {
                b'\'' => {
                    self.at = self.skip_quoted(c);
                    return Some(Token::Other);
                }
                b'"' | b'`' => {
                    let start = self.at + 1;
                    self.at = self.skip_quoted(c);
                    let end = self.at.saturating_sub(1).max(start);
                    return Some(Token::Quoted(self.text.get(start..end).unwrap_or("")));
                }
                b'#' => self.at = self.skip_line(self.at),
                b'-' if next == Some(b'-')
                    && b.get(self.at + 2)
                        .is_none_or(|c| c.is_ascii_whitespace() || c.is_ascii_control()) =>
                {
                    self.at = self.skip_line(self.at)
                }
                b'/' if next == Some(b'*') => {
                    let body = self.at + 2;
                    let rest = &self.text[body..];
                    if rest.starts_with('!') || rest.starts_with("M!") {
                        self.at = rest.find("*/").map_or(b.len(), |n| body + n + 2);
                        return Some(Token::Conditional);
                    }
                    self.at = rest.find("*/").map_or(b.len(), |n| body + n + 2);
                }
                b';' => {
                    self.at += 1;
                    return Some(Token::End);
                }
                b'@' => {
                    if next == Some(b'@') {
                        // A system variable: read as a word-like run, never a user variable.
                        self.at += 2;
                        while b.get(self.at).is_some_and(|c| is_word(*c) || *c == b'.') {
                            self.at += 1;
                        }
                        return Some(Token::Other);
                    }
                    self.at += 1;
                    return Some(Token::UserVariable);
                }
                c if is_word(c) => {
                    let start = self.at;
                    while b.get(self.at).is_some_and(|c| is_word(*c)) {
                        self.at += 1;
                    }
                    return Some(Token::Word(&self.text[start..self.at]));
                }
                c if c.is_ascii_whitespace() => self.at += 1,
                _ => {
                    self.at += 1;
                    return Some(Token::Other);
                }
            }
        }
    }
}

/// A byte of an unquoted word (identifiers and keywords; non-ASCII bytes belong to words).
fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80
}

#[cfg(test)]
mod tests {
    use super::may_change;

    #[test]
    fn plain_reads_and_writes_keep_the_session() {
        for sql in [
            "SELECT 1",
            "select * from t where a = ? and b in (?)",
            "INSERT INTO t (v) VALUES (?)",
            "UPDATE t SET v = 'SET x' WHERE id = ?",
            "DELETE FROM t; SELECT ROW_COUNT()",
            "WITH x AS (SELECT 1) SELECT * FROM x",
            "  -- a comment\n SELECT 'USE x; SET @a = 1'",
            "/* SET sql_mode = '' */ SELECT `@x` FROM t",
            "SELECT @@session.sql_mode, @@max_allowed_packet",
            "CREATE TABLE t2 (id INT); DROP TABLE t2",
            "SHOW TABLES LIKE ?",
            "SELECT \"it's\" AS a, 'a\\'b' AS b",
            "SELECT /*+ SET_VAR(sql_mode = '') */ 1",
            "SELECT 'GET_LOCK(1)', `locks` FROM t",
        ] {
            assert!(!may_change(sql), "{sql}");
        }
    }

    #[test]
    fn statements_that_may_leave_state_are_seen() {
        for sql in [
            "SET sql_mode = 'NO_BACKSLASH_ESCAPES'",
            "set session time_zone = '+02:00'",
            "SET @a = 1",
            "SELECT @a := 5",
            "SELECT 1 INTO @x",
            "SELECT 1; SET autocommit = 0",
            "USE other",
            "BEGIN",
            "START TRANSACTION",
            "CALL p()",
            "PREPARE s FROM 'SELECT 1'",
            "EXECUTE s",
            "DEALLOCATE PREPARE s",
            "DROP PREPARE s",
            "CREATE TEMPORARY TABLE tmp (id INT)",
            "DROP TEMPORARY TABLE tmp",
            "CREATE OR REPLACE TEMPORARY TABLE tmp (id INT)",
            "LOCK TABLES t WRITE",
            "SELECT GET_LOCK('x', 0)",
            "SELECT release_lock('x')",
            "/*!40101 SET NAMES utf8 */",
            "/*!99999 SELECT */ SET autocommit = 0",
            "/*!50700 SELECT */ SET @a = 1",
            "/*M!999999 SELECT */ SET autocommit = 0",
            "SELECT 1 /*! , 2 */; USE other",
            "SELECT `GET_LOCK`('job', 0)",
            "SELECT \"get_lock\"('job', 0)",
            "SELECT `release_all_locks`()",
            "SELECT 1 --\x01 'x\n; SET autocommit = 0",
            "/*M!100100 SET sql_mode = '' */",
            "SET STATEMENT max_statement_time = 1 FOR SELECT 1",
            "XA START 'x'",
            "HANDLER t OPEN",
            "COMMIT AND CHAIN",
            "SAVEPOINT a",
        ] {
            assert!(may_change(sql), "{sql}");
        }
    }
}
