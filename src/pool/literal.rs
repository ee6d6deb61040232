//! Client-side rendering of `?` placeholders into SQL literals.
//!
//! The backend sends whole transactions as one multi-statement text query (one round trip), which
//! the binary protocol cannot do, so values are rendered as literals here. A literal must mean
//! the same whatever state the session is in: `sql_mode` may gain or lose `NO_BACKSLASH_ESCAPES`
//! (by `SET`, `SET STATEMENT … FOR`, a procedure's body) without the client being told reliably,
//! and a user's `SET NAMES gbk` makes the server read multibyte sequences where UTF-8 has a
//! quote or backslash behind a lead byte. So a string is written quoted only when it is plain
//! ASCII without a backslash or NUL (a quote is doubled, which both modes read as one quote, and
//! every character set a client may use reads ASCII as ASCII); anything else becomes a hex
//! literal, `_utf8mb4 X'…'` for text, which no session state can reinterpret.
//!
//! MySQL's grammar takes only a plain quoted string in a few places (`SHOW … LIKE ?`,
//! `COMMENT ?`, `IDENTIFIED BY ?`), never in a DML expression. A user statement that may have
//! one (`plain_strings_needed`) is rendered for the session state read from the server just
//! before it is sent on the same connection (`Strings::QuotedFor`); nothing runs in between.

use mysql_async::Value;
use std::fmt::Write as _;

/// Calls `code(offset, byte)` for every byte of `sql` outside quotes and comments.
fn scan_code(sql: &str, mut code: impl FnMut(usize, u8)) {
    let b = sql.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"' | b'`') => {
                i += 1;
                while i < b.len() {
                    if b[i] == b'\\' && q != b'`' {
                        i += 2;
                        continue;
                    }
                    if b[i] == q {
                        if i + 1 < b.len() && b[i + 1] == q {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
            }
            // `--` starts a comment only when followed by whitespace or a control character (or
            // the end), as the server's lexer has it.
            b'-' if b.get(i + 1) == Some(&b'-')
                && b.get(i + 2).is_none_or(|&c| c <= b' ' || c == 0x7f) =>
            {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            c => code(i, c),
        }
        i += 1;
    }
}

/// Byte offsets of every `?` placeholder outside quotes and comments.
pub fn placeholder_offsets(sql: &str) -> Vec<usize> {
    let mut out = Vec::new();
    scan_code(sql, |i, c| {
        if c == b'?' {
            out.push(i);
        }
    });
    out
}

/// Statements whose placeholders stand where the grammar takes an expression, so a hex literal
/// is accepted where a string is — but for a few clauses that want a plain string (`SELECT …
/// INTO OUTFILE ?`, `FIELDS TERMINATED BY ?`, `JSON_TABLE(… PATH ?)`), where a value needing
/// hex is a syntax error: refused, never misread (docs/configuration.md).
const EXPRESSION_ONLY: [&str; 9] = [
    "select", "insert", "update", "delete", "replace", "with", "values", "do", "call",
];

/// Whether user statement `sql` must get its strings quoted for the session's state: some
/// parameter is a string a hex literal would carry, and `sql` is one statement that may put a
/// placeholder where only a plain quoted string is taken (`SHOW … LIKE ?`, DDL `COMMENT ?`).
/// A multi-statement text never is: an earlier statement could change the state it is
/// rendered for.
pub fn plain_strings_needed<P: Bind>(sql: &str, params: &[P]) -> bool {
    if params.iter().all(Bind::same_in_every_form) {
        return false;
    }
    let mut first_word = String::new();
    let mut words_done = false;
    let mut statements = 1;
    let mut after_semicolon = false;
    scan_code(sql, |_, c| {
        if after_semicolon && !c.is_ascii_whitespace() && c != b';' {
            statements += 1;
            after_semicolon = false;
        }
        if c == b';' {
            after_semicolon = true;
        }
        if !words_done {
            if c.is_ascii_alphabetic() {
                first_word.push(char::from(c.to_ascii_lowercase()));
            } else if !first_word.is_empty() {
                words_done = true;
            }
        }
    });
    statements == 1 && !EXPRESSION_ONLY.contains(&first_word.as_str())
}

/// Appends `v` to `out` as a SQL literal.
pub fn push_literal(out: &mut String, v: &Value, strings: Strings) -> Result<(), String> {
    match v {
        Value::NULL => out.push_str("NULL"),
        Value::Int(n) => {
            let _ = write!(out, "{n}");
        }
        Value::UInt(n) => {
            let _ = write!(out, "{n}");
        }
        Value::Double(f) => {
            if !f.is_finite() {
                return Err("a non-finite number cannot be sent to SQL".into());
            }
            let _ = write!(out, "{f:?}");
        }
        Value::Float(f) => {
            if !f.is_finite() {
                return Err("a non-finite number cannot be sent to SQL".into());
            }
            let _ = write!(out, "{f:?}");
        }
        Value::Bytes(bytes) => push_bytes(out, bytes, strings),
        Value::Date(y, mo, d, h, mi, s, us) => {
            let _ = write!(out, "'{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}.{us:06}'");
        }
        Value::Time(neg, d, h, mi, s, us) => {
            let sign = if *neg { "-" } else { "" };
            let hours = u32::from(*h) + d * 24;
            let _ = write!(out, "'{sign}{hours:02}:{mi:02}:{s:02}.{us:06}'");
        }
    }
    Ok(())
}

/// How a string that is not plain ASCII is written (see module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strings {
    /// As a hex literal, which reads the same in every session state.
    Hex,
    /// Quoted for the state `reading` describes, read from the session just before sending.
    QuotedFor(Reading),
}

/// What a session does with the bytes of a quoted string, as read from its variables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reading {
    /// `NO_BACKSLASH_ESCAPES` is off: a backslash escapes the next character.
    pub backslash_escapes: bool,
    /// `character_set_client` and `character_set_connection` are UTF-8, so non-ASCII text may
    /// travel as it is.
    pub utf8: bool,
}

/// Whether `bytes` may stand between single quotes with only quotes doubled and still read the
/// same in every session state (see module docs).
fn quotable(bytes: &[u8]) -> bool {
    bytes.iter().all(|&b| b != 0 && b != b'\\' && b.is_ascii())
}

fn push_bytes(out: &mut String, bytes: &[u8], strings: Strings) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return push_hex(out, bytes, false);
    };
    let backslash_escapes = match strings {
        // Quotes doubled read as one quote in both modes; nothing else needs escaping.
        _ if quotable(bytes) => false,
        Strings::QuotedFor(r) if r.utf8 || text.is_ascii() => r.backslash_escapes,
        _ => return push_hex(out, bytes, true),
    };
    out.reserve(text.len() + 2);
    out.push('\'');
    for ch in text.chars() {
        match ch {
            '\'' if backslash_escapes => out.push_str("\\'"),
            '\'' => out.push_str("''"),
            '\\' if backslash_escapes => out.push_str("\\\\"),
            '\0' if backslash_escapes => out.push_str("\\0"),
            c => out.push(c),
        }
    }
    out.push('\'');
}

/// Appends `bytes` as a binary string literal (`X'…'`).
pub fn push_binary(out: &mut String, bytes: &[u8]) {
    push_hex(out, bytes, false);
}

fn push_hex(out: &mut String, bytes: &[u8], utf8: bool) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push_str(if utf8 { "_utf8mb4 X'" } else { "X'" });
    out.reserve(bytes.len() * 2 + 1);
    for byte in bytes {
        out.push(HEX[(byte >> 4) as usize] as char);
        out.push(HEX[(byte & 15) as usize] as char);
    }
    out.push('\'');
}

/// A value that can stand in for one `?`: a backend `Value`, or a user parameter (which may
/// expand to a list, see `node::params`).
pub trait Bind {
    fn push(&self, out: &mut String, strings: Strings) -> Result<(), String>;
    /// Whether the literal does not depend on `Strings` (no string, or a plain ASCII one).
    fn same_in_every_form(&self) -> bool;
}

impl Bind for Value {
    fn push(&self, out: &mut String, strings: Strings) -> Result<(), String> {
        push_literal(out, self, strings)
    }
    fn same_in_every_form(&self) -> bool {
        match self {
            Value::Bytes(b) => quotable(b) || std::str::from_utf8(b).is_err(),
            _ => true,
        }
    }
}

/// Checks that `sql` has one placeholder per parameter.
pub fn check_count(sql: &str, given: usize) -> Result<Vec<usize>, String> {
    let offsets = placeholder_offsets(sql);
    if offsets.len() != given {
        return Err(format!(
            "params: the statement has {} placeholders but {given} parameters were given",
            offsets.len()
        ));
    }
    Ok(offsets)
}

/// Renders `sql` into `out` with each `?` replaced by the matching parameter's literal: the one
/// renderer of the crate, for backend statements and user queries alike.
pub fn render<P: Bind>(sql: &str, params: &[P], out: &mut String) -> Result<(), String> {
    render_with(sql, params, out, Strings::Hex)
}

/// `render`, writing strings that are not plain ASCII as `strings` says.
pub fn render_with<P: Bind>(
    sql: &str,
    params: &[P],
    out: &mut String,
    strings: Strings,
) -> Result<(), String> {
    let offsets = check_count(sql, params.len())?;
    let mut last = 0;
    for (off, value) in offsets.iter().zip(params) {
        out.push_str(&sql[last..*off]);
        value.push(out, strings)?;
        last = off + 1;
    }
    out.push_str(&sql[last..]);
    Ok(())
}

/// `(?,?,…)` with `n` holes, for set-based statements.
pub fn holes(n: usize) -> String {
    let mut s = String::with_capacity(n * 2 + 2);
    s.push('(');
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        s.push('?');
    }
    s.push(')');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(sql: &str, params: &[Value]) -> String {
        let mut out = String::new();
        super::render(sql, params, &mut out).unwrap();
        out
    }

    #[test]
    fn skips_placeholders_inside_quotes_and_comments() {
        let sql = "SELECT '?', \"?\", `?` -- ?\n, ? /* ? */ # ?\n";
        assert_eq!(placeholder_offsets(sql).len(), 1);
    }

    #[test]
    fn quotes_plain_ascii_and_doubles_single_quotes() {
        assert_eq!(render("a = ?", &[Value::from("it's")]), "a = 'it''s'");
        assert_eq!(render("?", &[Value::from("a\tb\nc")]), "'a\tb\nc'");
    }

    #[test]
    fn hex_encodes_what_a_session_state_could_reread() {
        // A backslash reads differently with and without NO_BACKSLASH_ESCAPES.
        assert_eq!(
            render("a = ?", &[Value::from("a\\'b")]),
            "a = _utf8mb4 X'615C2762'"
        );
        assert_eq!(render("a = ?", &[Value::from("\0")]), "a = _utf8mb4 X'00'");
        // UTF-8 read as gbk: the byte before the quote is taken as a lead byte.
        assert_eq!(
            render("?", &[Value::from("\u{4e2d}'")]),
            "_utf8mb4 X'E4B8AD27'"
        );
        // Not UTF-8 at all: a binary string.
        assert_eq!(render("?", &[Value::Bytes(vec![0xff, 0x27])]), "X'FF27'");
    }

    fn render_for(sql: &str, params: &[Value], backslash_escapes: bool, utf8: bool) -> String {
        let mut out = String::new();
        let reading = Reading {
            backslash_escapes,
            utf8,
        };
        super::render_with(sql, params, &mut out, Strings::QuotedFor(reading)).unwrap();
        out
    }

    #[test]
    fn quotes_for_a_session_state_read_just_before() {
        let v = [Value::from("a\\'b\0")];
        assert_eq!(render_for("?", &v, true, true), "'a\\\\\\'b\\0'");
        let v = [Value::from("a\\'b")];
        assert_eq!(render_for("?", &v, false, true), "'a\\''b'");
        // Without backslash escapes NUL travels as it is; non-ASCII has no quoted form
        // outside UTF-8.
        let v = [Value::from("a\0")];
        assert_eq!(render_for("?", &v, false, true), "'a\0'");
        let v = [Value::from("\u{4e2d}")];
        assert_eq!(render_for("?", &v, true, false), "_utf8mb4 X'E4B8AD'");
        assert_eq!(render_for("?", &v, true, true), "'\u{4e2d}'");
    }

    #[test]
    fn plain_strings_only_where_the_grammar_may_need_them() {
        let care = [Value::from("a\\b")];
        let plain = [Value::from("ab")];
        assert!(plain_strings_needed("SHOW TABLES LIKE ?", &care));
        assert!(plain_strings_needed(
            " /* x */ ALTER TABLE t COMMENT ?",
            &care
        ));
        assert!(!plain_strings_needed("SHOW TABLES LIKE ?", &plain));
        assert!(!plain_strings_needed("  select ?", &care));
        assert!(!plain_strings_needed("INSERT INTO t VALUES (?)", &care));
        assert!(!plain_strings_needed("(SELECT ?)", &care));
        // Several statements: the state could change between them.
        assert!(!plain_strings_needed(
            "SET sql_mode = ''; SHOW TABLES LIKE ?",
            &care
        ));
        assert!(plain_strings_needed("SHOW TABLES LIKE ?;", &care));
    }

    #[test]
    fn renders_numbers_and_null() {
        let s = render(
            "?,?,?,?",
            &[
                Value::Int(-3),
                Value::UInt(7),
                Value::Double(0.5),
                Value::NULL,
            ],
        );
        assert_eq!(s, "-3,7,0.5,NULL");
        let mut out = String::new();
        assert!(super::render("?", &[Value::Double(f64::NAN)], &mut out).is_err());
    }

    #[test]
    fn double_dash_needs_whitespace_to_start_a_comment() {
        assert_eq!(placeholder_offsets("SELECT 1--?").len(), 1);
        assert_eq!(placeholder_offsets("SELECT 1 -- ?").len(), 0);
        // Any control character starts one too (the server reads `--\x0b ?` as a comment).
        assert_eq!(placeholder_offsets("SELECT 1 --\x0b?").len(), 0);
        assert_eq!(placeholder_offsets("SELECT 1 --\x7f?").len(), 0);
    }

    #[test]
    fn counts_must_match() {
        let mut out = String::new();
        assert!(super::render("? ?", &[Value::Int(1)], &mut out).is_err());
    }

    #[test]
    fn holes_lists() {
        assert_eq!(holes(3), "(?,?,?)");
    }
}
