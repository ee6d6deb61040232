//! Client-side rendering of `?` placeholders into SQL literals.
//!
//! The backend sends whole transactions as one multi-statement text query (one round trip), which
//! the binary protocol cannot do, so values are rendered as literals here. Rendering follows the
//! connection's current `NO_BACKSLASH_ESCAPES` state (read from the server's last status flags),
//! so escaping is exact either way; when the state is unknown, strings holding a backslash or NUL
//! become `_utf8mb4 X'…'` hex literals, which both modes read the same way.

use mysql_async::consts::StatusFlags;
use mysql_async::{Conn, Value};
use std::fmt::Write as _;

/// How the server on this connection reads backslashes inside string literals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Escaping {
    /// Default SQL mode: backslash is an escape character.
    Backslash,
    /// `NO_BACKSLASH_ESCAPES`: backslash is an ordinary character.
    Literal,
    /// Not known: avoid relying on either reading.
    Unknown,
}

/// The escaping mode of `conn`, from the status flags of its last OK packet.
pub fn escaping_of(conn: &Conn) -> Escaping {
    match conn.last_ok_packet() {
        Some(ok)
            if ok
                .status_flags()
                .contains(StatusFlags::SERVER_STATUS_NO_BACKSLASH_ESCAPES) =>
        {
            Escaping::Literal
        }
        Some(_) => Escaping::Backslash,
        None => Escaping::Unknown,
    }
}

/// Byte offsets of every `?` placeholder outside quotes and comments.
pub fn placeholder_offsets(sql: &str) -> Vec<usize> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
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
            // `-- ` starts a comment only when followed by whitespace (or the end), as in MySQL.
            b'-' if b.get(i + 1) == Some(&b'-')
                && b.get(i + 2).is_none_or(|c| c.is_ascii_whitespace()) =>
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
            b'?' => out.push(i),
            _ => {}
        }
        i += 1;
    }
    out
}

/// Appends `v` to `out` as a SQL literal.
pub fn push_literal(out: &mut String, v: &Value, mode: Escaping) -> Result<(), String> {
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
        Value::Bytes(bytes) => push_bytes(out, bytes, mode),
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

fn push_bytes(out: &mut String, bytes: &[u8], mode: Escaping) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return push_hex(out, bytes, false);
    };
    match mode {
        Escaping::Backslash => {
            out.reserve(text.len() + 2);
            out.push('\'');
            for ch in text.chars() {
                match ch {
                    '\'' => out.push_str("\\'"),
                    '\\' => out.push_str("\\\\"),
                    '\0' => out.push_str("\\0"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\u{1a}' => out.push_str("\\Z"),
                    c => out.push(c),
                }
            }
            out.push('\'');
        }
        Escaping::Literal | Escaping::Unknown
            if text.contains('\0') || (mode == Escaping::Unknown && text.contains('\\')) =>
        {
            push_hex(out, bytes, true)
        }
        _ => {
            out.reserve(text.len() + 2);
            out.push('\'');
            for ch in text.chars() {
                if ch == '\'' {
                    out.push('\'');
                }
                out.push(ch);
            }
            out.push('\'');
        }
    }
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
/// expand to a list, see `params.rs`).
pub trait Bind {
    fn push(&self, out: &mut String, mode: Escaping) -> Result<(), String>;
}

impl Bind for Value {
    fn push(&self, out: &mut String, mode: Escaping) -> Result<(), String> {
        push_literal(out, self, mode)
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
pub fn render<P: Bind>(
    sql: &str,
    params: &[P],
    out: &mut String,
    mode: Escaping,
) -> Result<(), String> {
    let offsets = check_count(sql, params.len())?;
    let mut last = 0;
    for (off, value) in offsets.iter().zip(params) {
        out.push_str(&sql[last..*off]);
        value.push(out, mode)?;
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
        render_in(sql, params, Escaping::Unknown)
    }

    fn render_in(sql: &str, params: &[Value], mode: Escaping) -> String {
        let mut out = String::new();
        super::render(sql, params, &mut out, mode).unwrap();
        out
    }

    #[test]
    fn skips_placeholders_inside_quotes_and_comments() {
        let sql = "SELECT '?', \"?\", `?` -- ?\n, ? /* ? */ # ?\n";
        assert_eq!(placeholder_offsets(sql).len(), 1);
    }

    #[test]
    fn quotes_plain_strings_and_doubles_single_quotes() {
        let s = render("a = ?", &[Value::from("it's")]);
        assert_eq!(s, "a = 'it''s'");
    }

    #[test]
    fn hex_encodes_backslashes_and_nul() {
        let s = render("a = ?", &[Value::from("a\\'b")]);
        assert_eq!(s, "a = _utf8mb4 X'615C2762'");
        let s = render("a = ?", &[Value::from("\0")]);
        assert_eq!(s, "a = _utf8mb4 X'00'");
    }

    #[test]
    fn escapes_per_connection_mode() {
        let v = [Value::from("a\\'b\0")];
        assert_eq!(render_in("?", &v, Escaping::Backslash), "'a\\\\\\'b\\0'");
        assert_eq!(
            render_in("?", &[Value::from("a\\'b")], Escaping::Literal),
            "'a\\''b'"
        );
        assert_eq!(
            render_in("?", &v, Escaping::Literal),
            "_utf8mb4 X'615C276200'"
        );
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
        assert!(super::render(
            "?",
            &[Value::Double(f64::NAN)],
            &mut out,
            Escaping::Backslash
        )
        .is_err());
    }

    #[test]
    fn double_dash_needs_whitespace_to_start_a_comment() {
        assert_eq!(placeholder_offsets("SELECT 1--?").len(), 1);
        assert_eq!(placeholder_offsets("SELECT 1 -- ?").len(), 0);
    }

    #[test]
    fn counts_must_match() {
        let mut out = String::new();
        assert!(super::render("? ?", &[Value::Int(1)], &mut out, Escaping::Backslash).is_err());
    }

    #[test]
    fn holes_lists() {
        assert_eq!(holes(3), "(?,?,?)");
    }
}
