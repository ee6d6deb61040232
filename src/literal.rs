//! Client-side rendering of `?` placeholders into SQL literals.
//!
//! The backend sends whole transactions as one multi-statement text query (one round trip), which
//! the binary protocol cannot do, so values are rendered as literals here. Rendering is
//! injection-proof by construction: strings holding a backslash or NUL become `_utf8mb4 X'…'` hex
//! literals (immune to `NO_BACKSLASH_ESCAPES`), all others are single-quoted with `'` doubled,
//! which both SQL modes read the same way.

use mysql_async::Value;
use std::fmt::Write as _;

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
            b'-' if b.get(i + 1) == Some(&b'-') => {
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
pub fn push_literal(out: &mut String, v: &Value) -> Result<(), String> {
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
        Value::Bytes(bytes) => push_bytes(out, bytes),
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

fn push_bytes(out: &mut String, bytes: &[u8]) {
    let plain = std::str::from_utf8(bytes)
        .ok()
        .filter(|s| !s.contains(['\\', '\0']));
    match plain {
        Some(s) => {
            out.reserve(s.len() + 2);
            out.push('\'');
            for ch in s.chars() {
                if ch == '\'' {
                    out.push('\'');
                }
                out.push(ch);
            }
            out.push('\'');
        }
        None => {
            let utf8 = std::str::from_utf8(bytes).is_ok();
            out.push_str(if utf8 { "_utf8mb4 X'" } else { "X'" });
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            out.reserve(bytes.len() * 2 + 1);
            for byte in bytes {
                out.push(HEX[(byte >> 4) as usize] as char);
                out.push(HEX[(byte & 15) as usize] as char);
            }
            out.push('\'');
        }
    }
}

/// Renders `sql` with each `?` replaced by the matching parameter's literal.
pub fn interpolate(sql: &str, params: &[Value], out: &mut String) -> Result<(), String> {
    let offsets = placeholder_offsets(sql);
    if offsets.len() != params.len() {
        return Err(format!(
            "statement has {} placeholders but {} parameters were given",
            offsets.len(),
            params.len()
        ));
    }
    let mut last = 0;
    for (off, value) in offsets.iter().zip(params) {
        out.push_str(&sql[last..*off]);
        push_literal(out, value)?;
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
        interpolate(sql, params, &mut out).unwrap();
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
        assert!(interpolate("?", &[Value::Double(f64::NAN)], &mut out).is_err());
    }

    #[test]
    fn counts_must_match() {
        let mut out = String::new();
        assert!(interpolate("? ?", &[Value::Int(1)], &mut out).is_err());
    }

    #[test]
    fn holes_lists() {
        assert_eq!(holes(3), "(?,?,?)");
    }
}
