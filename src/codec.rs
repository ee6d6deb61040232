//! Row values ⇄ the JSON text handed to JS.
//!
//! Reads are returned to JS as one JSON document that `index.js` parses with a single
//! `JSON.parse` (measured cheaper than building napi objects field by field). JSON columns are
//! embedded verbatim — the database already holds `JSON.stringify` text — and SQL NULL is
//! expressed by leaving the key out, so JS sees `undefined` while a stored JSON `null` stays `null`.

use crate::error::{Error, Result};
use mysql_async::Value;

/// Integer from a cell (text protocol sends digits; the wrapped path may send numbers).
pub fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(n) => Some(*n),
        Value::UInt(n) => i64::try_from(*n).ok(),
        Value::Double(f) => Some(*f as i64),
        Value::Float(f) => Some(*f as i64),
        Value::Bytes(b) => std::str::from_utf8(b).ok()?.trim().parse().ok(),
        _ => None,
    }
}

/// Integer that must be present.
pub fn req_int(v: &Value, what: &str) -> Result<i64> {
    int(v).ok_or_else(|| Error::Contract(format!("unexpected value in column {what}")))
}

/// UTF-8 text of a cell, `None` for NULL.
pub fn text(v: &Value) -> Option<&str> {
    match v {
        Value::Bytes(b) => std::str::from_utf8(b).ok(),
        _ => None,
    }
}

/// Owned string of a cell (numbers rendered), `None` for NULL.
pub fn string(v: &Value) -> Option<String> {
    match v {
        Value::NULL => None,
        Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
        other => int(other).map(|n| n.to_string()),
    }
}

/// String parameter.
pub fn s(v: &str) -> Value {
    Value::Bytes(v.as_bytes().to_vec())
}

/// Optional string parameter (`None` ⇒ NULL).
pub fn opt_s(v: Option<&str>) -> Value {
    v.map_or(Value::NULL, s)
}

/// Integer parameter.
pub fn i(v: i64) -> Value {
    Value::Int(v)
}

/// Incremental writer of one JSON object/array document.
pub struct JsonOut {
    buf: String,
    first: bool,
}

impl JsonOut {
    pub fn new() -> Self {
        JsonOut {
            buf: String::with_capacity(256),
            first: true,
        }
    }

    pub fn open_obj(&mut self) {
        self.sep();
        self.buf.push('{');
        self.first = true;
    }
    pub fn close_obj(&mut self) {
        self.buf.push('}');
        self.first = false;
    }
    pub fn open_arr(&mut self) {
        self.sep();
        self.buf.push('[');
        self.first = true;
    }
    pub fn close_arr(&mut self) {
        self.buf.push(']');
        self.first = false;
    }
    /// Starts a member; the next value written belongs to it.
    pub fn key(&mut self, k: &str) {
        self.sep();
        self.push_str_lit(k);
        self.buf.push(':');
        self.first = true;
    }
    fn sep(&mut self) {
        if !self.first {
            self.buf.push(',');
        }
        self.first = false;
    }
    fn push_str_lit(&mut self, v: &str) {
        self.buf.push('"');
        for ch in v.chars() {
            match ch {
                '"' => self.buf.push_str("\\\""),
                '\\' => self.buf.push_str("\\\\"),
                '\n' => self.buf.push_str("\\n"),
                '\r' => self.buf.push_str("\\r"),
                '\t' => self.buf.push_str("\\t"),
                c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                    self.buf.push_str(&format!("\\u{:04x}", c as u32));
                }
                c => self.buf.push(c),
            }
        }
        self.buf.push('"');
    }
    /// A string value.
    pub fn str(&mut self, v: &str) {
        self.sep();
        self.push_str_lit(v);
    }
    /// A number value.
    pub fn num(&mut self, v: i64) {
        self.sep();
        self.buf.push_str(&v.to_string());
    }
    /// A boolean value.
    pub fn bool(&mut self, v: bool) {
        self.sep();
        self.buf.push_str(if v { "true" } else { "false" });
    }
    /// JSON `null`.
    pub fn null(&mut self) {
        self.sep();
        self.buf.push_str("null");
    }
    /// Pre-encoded JSON text, embedded verbatim.
    pub fn raw(&mut self, json: &str) {
        self.sep();
        self.buf.push_str(json);
    }

    /// Member `k` with a string cell; omitted when NULL.
    pub fn str_field(&mut self, k: &str, v: &Value) {
        if let Some(t) = string(v) {
            self.key(k);
            self.str(&t);
        }
    }
    /// Member `k` with an integer cell; omitted when NULL.
    pub fn num_field(&mut self, k: &str, v: &Value) {
        if let Some(n) = int(v) {
            self.key(k);
            self.num(n);
        }
    }
    /// Member `k` with a JSON-text cell embedded verbatim; omitted when NULL.
    pub fn json_field(&mut self, k: &str, v: &Value) {
        if let Some(t) = text(v) {
            self.key(k);
            self.raw(t);
        }
    }

    pub fn finish(self) -> String {
        self.buf
    }
}

impl Default for JsonOut {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_nested_documents_and_omits_nulls() {
        let mut j = JsonOut::new();
        j.open_obj();
        j.str_field("id", &s("a\"b"));
        j.json_field("input", &s("{\"x\":1}"));
        j.json_field("output", &Value::NULL);
        j.key("list");
        j.open_arr();
        j.num(1);
        j.num(2);
        j.close_arr();
        j.close_obj();
        assert_eq!(j.finish(), r#"{"id":"a\"b","input":{"x":1},"list":[1,2]}"#);
    }

    #[test]
    fn reads_ints_from_text_and_numbers() {
        assert_eq!(int(&s("42")), Some(42));
        assert_eq!(int(&Value::Int(-1)), Some(-1));
        assert_eq!(int(&Value::NULL), None);
    }
}
