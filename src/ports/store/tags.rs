//! The tag filter of `listRuns` and the 3.0 bulk operations: whether a run's `tags` (JSON text,
//! an array of strings as `JSON.stringify` writes it) holds a tag.
//!
//! `JSON_CONTAINS(tags, JSON_QUOTE(?))` alone answers on every text the server parses, but not
//! on one holding an escaped lone surrogate (`["x\ud800y"]`, what `JSON.stringify` writes for a
//! lone UTF-16 surrogate): MySQL refuses the whole statement (error 3141), MariaDB answers NULL
//! for the row, whatever its other tags. So the filter is a `CASE` of three ways:
//!
//! 1. the tag's own JSON text (`"…"`, as `JSON.stringify` writes it) does not occur in the row's
//!    text, byte for byte, and the text has no backslash (so none of its strings is written
//!    with an escape): then no string in it equals the tag — 0, without parsing anything. This
//!    is most rows, and the cheap narrowing before the JSON function;
//! 2. a text the server parses: `JSON_CONTAINS`, exactly as before (each server's own answer);
//! 3. a text it does not parse: an anchored regular expression that walks the top-level array's
//!    strings one by one (`"…"` with `\`-escapes, whitespace allowed between tokens) and
//!    matches when one of them is exactly the tag's JSON text — the same answer on both
//!    servers, and on the text a backend wrote the same as `JSON_CONTAINS` where it parses:
//!    a string holding a lone surrogate equals no tag (the tag reaches Rust well-formed, such
//!    a string keeps its escape), the others match as usual.
//!
//! Comparisons are binary (`utf8mb4_bin`), as JSON string comparison is: `A` is not `a`.

use crate::model::codec::s;
use mysql_async::Value;

/// The predicate; its three placeholders take `tag_params(tag)`, in that order.
pub(super) const TAG_FILTER: &str = "(CASE \
     WHEN INSTR(tags COLLATE utf8mb4_bin, ?) = 0 \
      AND INSTR(tags COLLATE utf8mb4_bin, CHAR(92 USING utf8mb4)) = 0 THEN 0 \
     WHEN JSON_VALID(tags) THEN JSON_CONTAINS(tags, JSON_QUOTE(?)) \
     ELSE tags COLLATE utf8mb4_bin REGEXP ? END)";

/// The values of `TAG_FILTER`'s placeholders: the tag's JSON text, the tag, the pattern.
pub(super) fn tag_params(tag: &str) -> [Value; 3] {
    let text = json_string(tag);
    [s(&text), s(tag), s(&element_pattern(&text))]
}

/// `JSON.stringify(value)` of a well-formed string: `"` and `\` escaped, the control characters
/// below U+0020 as `\b \f \n \r \t` or `\u00xx` (lower-case hex), everything else as is.
pub(super) fn json_string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// JSON whitespace between tokens.
const WS: &str = "[ \\t\\n\\r]*";

/// The regular expression (ICU on MySQL, PCRE2 on MariaDB: only syntax both read the same)
/// that matches a text whose top-level array has the string `text` (a JSON string token) as
/// one of its elements: from the start, any number of string elements with their commas, then
/// `text`, then a comma or the closing bracket. A string token cannot be entered half-way: each
/// one is consumed from its opening quote, escapes in pairs.
pub(super) fn element_pattern(text: &str) -> String {
    let string = r#""(?:[^"\\]|\\.)*""#;
    let mut out = format!("^{WS}\\[{WS}(?:{string}{WS},{WS})*");
    for c in text.chars() {
        if "\\^$.|?*+()[]{}".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out.push_str(&format!("{WS}[,\\]]"));
    out
}

#[cfg(test)]
mod tests {
    use super::{element_pattern, json_string};

    #[test]
    fn json_text_as_json_stringify_writes_it() {
        assert_eq!(json_string("cron:a"), r#""cron:a""#);
        assert_eq!(
            json_string("q\"b\\s/\u{1}\u{8}\u{c}\n\r\t\u{1f}\u{7f}é😀\u{2028}"),
            "\"q\\\"b\\\\s/\\u0001\\b\\f\\n\\r\\t\\u001f\u{7f}é😀\u{2028}\""
        );
        assert_eq!(json_string(""), r#""""#);
    }

    #[test]
    fn the_pattern_quotes_every_metacharacter_of_the_tag() {
        let p = element_pattern(&json_string("a.b*(c)[d]{e}|f^g$h+i?j\\k"));
        assert!(p.ends_with(r#""a\.b\*\(c\)\[d\]\{e\}\|f\^g\$h\+i\?j\\\\k"[ \t\n\r]*[,\]]"#));
        assert!(p.starts_with(r#"^[ \t\n\r]*\[[ \t\n\r]*(?:"(?:[^"\\]|\\.)*"[ \t\n\r]*,"#));
    }
}
