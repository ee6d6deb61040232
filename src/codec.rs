//! Row values ⇄ the JSON text handed to JS, and the one declaration of each row shape.
//!
//! Reads are returned to JS as one JSON document that `lib/` parses with a single `JSON.parse`
//! (measured cheaper than building napi objects field by field). JSON columns are embedded
//! verbatim — the database already holds `JSON.stringify` text — and SQL NULL is expressed by
//! leaving the key out, so JS sees `undefined` while a stored JSON `null` stays `null`.
//!
//! Each entity's row (`RUN`, `STEP`, `SIGNAL`, `CRON`) is declared once as a table of
//! (column, JSON key, kind); it gives the select list, the column names the wrapped executor
//! reads, the JSON writer, and (through `rowShapes()`) the keys JS fills in and turns into Dates.

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

/// UTF-8 text of a cell, `None` for NULL (and for cells that are not text).
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

/// The `StartResult` of one `startRun` spec.
#[napi_derive::napi(object)]
pub struct StartResult {
    pub run_id: String,
    pub created: bool,
    pub status: String,
}

/// How a column's cell becomes a JSON member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Text column ⇒ JSON string.
    Text,
    /// Integer column ⇒ JSON number.
    Int,
    /// Epoch milliseconds ⇒ JSON number, a `Date` in JS.
    Epoch,
    /// `JSON.stringify` text ⇒ embedded verbatim.
    Json,
}

/// One column of a row shape (its name is in `Shape::names`, at the same position).
pub struct Col {
    pub key: &'static str,
    pub kind: Kind,
}

/// A row shape: its columns in select-list order.
pub struct Shape {
    pub cols: &'static [Col],
    /// Column names, comma-separated, in order.
    pub select: &'static str,
    /// Column names, in order (what the wrapped executor reads out of row objects).
    pub names: &'static [&'static str],
}

macro_rules! shape {
    ($(#[$doc:meta])* $id:ident: $first:literal => $fkey:literal $fkind:ident
        $(, $col:literal => $key:literal $kind:ident)* $(,)?) => {
        $(#[$doc])*
        pub const $id: Shape = Shape {
            cols: &[
                Col { key: $fkey, kind: Kind::$fkind },
                $(Col { key: $key, kind: Kind::$kind },)*
            ],
            select: concat!($first $(, ", ", $col)*),
            names: &[$first $(, $col)*],
        };
    };
}

shape!(
    /// A `RunRow`.
    RUN: "id" => "id" Text,
    "name" => "name" Text,
    "version" => "version" Int,
    "status" => "status" Text,
    "input" => "input" Json,
    "attempts" => "attempts" Int,
    "output" => "output" Json,
    "error" => "error" Json,
    "idempotency_key" => "idempotencyKey" Text,
    "tags" => "tags" Json,
    "parent_run_id" => "parentRunId" Text,
    "parent_cursor_key" => "parentCursorKey" Text,
    "depth" => "depth" Int,
    "created_at" => "createdAt" Epoch,
);

shape!(
    /// A `StepOutcome` (the memo of one step).
    STEP: "status" => "status" Text,
    "result" => "result" Json,
    "error" => "error" Json,
    "attempts" => "attempts" Int,
    "shape" => "shape" Text,
);

shape!(
    /// A signal of a `RunSnapshot`.
    SIGNAL: "id" => "id" Text,
    "name" => "name" Text,
    "payload" => "payload" Json,
);

shape!(
    /// A `CronRow`.
    CRON: "name" => "name" Text,
    "schedule" => "schedule" Text,
    "flow_name" => "flowName" Text,
    "flow_version" => "flowVersion" Int,
    "input" => "input" Json,
    "overlap" => "overlap" Text,
    "next_run_at" => "nextRunAt" Epoch,
    "last_run_at" => "lastRunAt" Epoch,
);

/// Every shape JS builds objects of, by name.
pub const SHAPES: [(&str, &Shape); 4] = [
    ("run", &RUN),
    ("step", &STEP),
    ("signal", &SIGNAL),
    ("cron", &CRON),
];

/// One key of a row shape as JS sees it.
#[napi_derive::napi(object)]
pub struct ShapeKey {
    pub key: String,
    /// Epoch milliseconds that JS turns into a `Date`.
    pub date: bool,
}

impl Shape {
    /// The JSON keys of this shape, in order.
    pub fn keys(&self) -> Vec<ShapeKey> {
        self.cols
            .iter()
            .map(|c| ShapeKey {
                key: c.key.to_string(),
                date: c.kind == Kind::Epoch,
            })
            .collect()
    }

    /// The select list with every column qualified by `alias` (for joins).
    pub fn select_as(&self, alias: &str) -> String {
        self.names
            .iter()
            .map(|n| format!("{alias}.{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Writes the first `cols.len()` cells of `row` as one JSON object (NULL ⇒ key omitted).
    pub fn write(&self, j: &mut JsonOut, row: &[Value]) {
        j.open_obj();
        for (col, v) in self.cols.iter().zip(row) {
            match col.kind {
                Kind::Text => j.str_field(col.key, v),
                Kind::Int | Kind::Epoch => j.num_field(col.key, v),
                Kind::Json => j.json_field(col.key, v),
            }
        }
        j.close_obj();
    }

    /// Rows as one JSON array.
    pub fn write_all(&self, rows: &[Vec<Value>]) -> String {
        let mut j = JsonOut::new();
        j.open_arr();
        for r in rows {
            self.write(&mut j, r);
        }
        j.close_arr();
        j.finish()
    }
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
