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
use crate::model::jsontext::{self, Kind as JsonKind};
use crate::model::schema::Contract;
use mysql_async::Value;
use std::sync::OnceLock;
use Check::{Free, Required};
use Kind::{Epoch, Int, Json, Text};

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

impl StartResult {
    /// `startManyRuns`' answers as one JSON text, `[[runId, created, status], …]`: one string
    /// crosses to JS (which `JSON.parse`s it) instead of an object per spec made by napi.
    pub fn rows_json(results: &[StartResult]) -> Result<String> {
        let rows: Vec<(&str, bool, &str)> = results
            .iter()
            .map(|r| (r.run_id.as_str(), r.created, r.status.as_str()))
            .collect();
        serde_json::to_string(&rows)
            .map_err(|e| Error::Contract(format!("internal error: startManyRuns' answer ({e})")))
    }
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

/// What the 3.0 contract's strict decoding demands of a cell (2.0.0-alpha.2 reads rows as
/// they are).
#[derive(Clone, Copy, Debug)]
pub enum Check {
    /// Anything, NULL included.
    Free,
    /// Not NULL.
    Required,
    /// Not NULL, and one of these.
    OneOf(&'static [&'static str]),
    /// NULL, or a JSON object with string `code` and `message` (a `FlowError`).
    FlowError,
    /// NULL, JSON `null`, or a JSON array of strings.
    Tags,
}

/// One column of a row shape.
pub struct Col {
    pub name: &'static str,
    pub key: &'static str,
    pub kind: Kind,
    pub check: Check,
}

const fn col(name: &'static str, key: &'static str, kind: Kind, check: Check) -> Col {
    Col {
        name,
        key,
        kind,
        check,
    }
}

/// A row shape: its columns in select-list order, declared once; the select list and the name
/// list are derived from them.
pub struct Shape {
    pub cols: &'static [Col],
    /// What a row is, for the message of a row that does not decode; with `named`, its first
    /// column names it (`run <id>`, `cron <name>`). Steps and signals are named by their run
    /// in the caller.
    what: &'static str,
    named: bool,
    select: OnceLock<String>,
    names: OnceLock<Vec<&'static str>>,
}

pub const RUN_STATUSES: &[&str] = &[
    "pending",
    "running",
    "sleeping",
    "awaiting_signal",
    "awaiting_child",
    "retrying",
    "done",
    "failed",
    "canceled",
];

/// A run's `status` column.
const RUN_STATUS: Col = col("status", "status", Text, Check::OneOf(RUN_STATUSES));

/// A `RunRow`.
pub static RUN: Shape = Shape::new(
    "run",
    true,
    &[
        col("id", "id", Text, Required),
        col("name", "name", Text, Required),
        col("version", "version", Int, Required),
        RUN_STATUS,
        col("input", "input", Json, Free),
        col("attempts", "attempts", Int, Required),
        col("output", "output", Json, Free),
        col("error", "error", Json, Check::FlowError),
        col("idempotency_key", "idempotencyKey", Text, Free),
        col("tags", "tags", Json, Check::Tags),
        col("parent_run_id", "parentRunId", Text, Free),
        col("parent_cursor_key", "parentCursorKey", Text, Free),
        col("depth", "depth", Int, Required),
        col("created_at", "createdAt", Epoch, Required),
    ],
);

/// The columns of a `StepOutcome` (the memo of one step); `call_key` names the `shape` column:
/// `shape` under 2.0.0-alpha.2, `call` under 3.0.
const fn step_cols(call_key: &'static str) -> [Col; 5] {
    [
        col("status", "status", Text, Check::OneOf(&["ok"])),
        col("result", "result", Json, Free),
        col("error", "error", Json, Check::FlowError),
        col("attempts", "attempts", Int, Required),
        col("shape", call_key, Text, Free),
    ]
}

const STEP_ALPHA2_COLS: [Col; 5] = step_cols("shape");
const STEP_V3_COLS: [Col; 5] = step_cols("call");
static STEP_ALPHA2: Shape = Shape::new("step", false, &STEP_ALPHA2_COLS);
static STEP_V3: Shape = Shape::new("step", false, &STEP_V3_COLS);

/// The step memo shape of `contract`.
pub fn step(contract: Contract) -> &'static Shape {
    if contract.is_v3() {
        &STEP_V3
    } else {
        &STEP_ALPHA2
    }
}

/// A signal of a `RunSnapshot`.
pub static SIGNAL: Shape = Shape::new(
    "signal",
    false,
    &[
        col("id", "id", Text, Required),
        col("name", "name", Text, Required),
        col("payload", "payload", Json, Free),
    ],
);

/// A `CronRow`.
pub static CRON: Shape = Shape::new(
    "cron",
    true,
    &[
        col("name", "name", Text, Required),
        col("schedule", "schedule", Text, Required),
        col("flow_name", "flowName", Text, Required),
        col("flow_version", "flowVersion", Int, Required),
        col("input", "input", Json, Free),
        col("overlap", "overlap", Text, Check::OneOf(&["allow", "skip"])),
        col("next_run_at", "nextRunAt", Epoch, Required),
        col("last_run_at", "lastRunAt", Epoch, Free),
    ],
);

/// Every shape JS builds objects of, by name, under `contract`.
pub fn shapes(contract: Contract) -> [(&'static str, &'static Shape); 4] {
    [
        ("run", &RUN),
        ("step", step(contract)),
        ("signal", &SIGNAL),
        ("cron", &CRON),
    ]
}

/// One key of a row shape as JS sees it.
#[napi_derive::napi(object)]
pub struct ShapeKey {
    pub key: String,
    /// Epoch milliseconds that JS turns into a `Date`.
    pub date: bool,
}

impl Shape {
    const fn new(what: &'static str, named: bool, cols: &'static [Col]) -> Self {
        Shape {
            cols,
            what,
            named,
            select: OnceLock::new(),
            names: OnceLock::new(),
        }
    }

    /// The column names, comma-separated, in order.
    pub fn select(&self) -> &str {
        self.select.get_or_init(|| self.names().join(", "))
    }

    /// The column names, in order (what the wrapped executor reads out of row objects).
    pub fn names(&self) -> &[&'static str] {
        self.names
            .get_or_init(|| self.cols.iter().map(|c| c.name).collect())
    }

    /// The select list with every column qualified by `alias` (for joins).
    pub fn select_as(&self, alias: &str) -> String {
        self.names()
            .iter()
            .map(|n| format!("{alias}.{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

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

    /// Writes the first `cols.len()` cells of `row` as one JSON object (NULL ⇒ key omitted);
    /// under the 3.0 contract each cell must pass its column's check first.
    pub fn write(&self, j: &mut JsonOut, row: &[Value], contract: Contract) -> Result<()> {
        j.open_obj();
        for (col, v) in self.cols.iter().zip(row) {
            if contract.is_v3() {
                check(col, v).map_err(|e| e.map_message(|m| format!("{}: {m}", self.who(row))))?;
            }
            match col.kind {
                Kind::Text => j.str_field(col.key, v),
                Kind::Int | Kind::Epoch => j.num_field(col.key, v),
                Kind::Json => j.json_field(col.key, v),
            }
        }
        j.close_obj();
        Ok(())
    }

    /// `run <id>` / `cron <name>`, or just `step` / `signal`.
    fn who(&self, row: &[Value]) -> String {
        match row.first().and_then(string).filter(|_| self.named) {
            Some(name) => format!("{} {name}", self.what),
            None => self.what.to_string(),
        }
    }

    /// Rows as one JSON array.
    pub fn write_all(&self, rows: &[Vec<Value>], contract: Contract) -> Result<String> {
        let mut j = JsonOut::new();
        j.open_arr();
        for r in rows {
            self.write(&mut j, r, contract)?;
        }
        j.close_arr();
        Ok(j.finish())
    }
}

/// A run status cell, decoded strictly (3.0).
pub fn check_status(v: &Value) -> Result<()> {
    check(&RUN_STATUS, v)
}

/// The 3.0 contract's strict decoding of one cell. JSON cells must be text `JSON.parse` accepts
/// (they are embedded verbatim in the document JS parses, see `jsontext`), and `error` / `tags`
/// must decode as a `FlowError` / a list of strings, as the 3.0.0 decoders judge the parsed value.
fn check(col: &Col, v: &Value) -> Result<()> {
    let bad = |what: &str| {
        Err(Error::Contract(format!(
            "a stored row does not decode: column {} {what}",
            col.name
        )))
    };
    let is_null = matches!(v, Value::NULL);
    match col.check {
        Check::Required if is_null => return bad("is NULL"),
        Check::OneOf(_) if is_null => return bad("is NULL"),
        Check::OneOf(allowed) => {
            return match text(v) {
                Some(t) if allowed.contains(&t) => Ok(()),
                _ => bad(&format!(
                    "holds {:?}, not one of {allowed:?}",
                    string(v).unwrap_or_default()
                )),
            }
        }
        _ => {}
    }
    if col.kind != Kind::Json || is_null {
        return Ok(());
    }
    let top = match text(v).map(jsontext::scan) {
        Some(Ok(top)) => top,
        Some(Err(e)) => return bad(&format!("is not JSON ({e})")),
        None => return bad("is not text"),
    };
    match col.check {
        Check::FlowError
            if top.kind != JsonKind::Object || !top.code_is_string || !top.message_is_string =>
        {
            bad("is not a FlowError ({ code, message })")
        }
        Check::Tags if top.kind != JsonKind::Null && !top.all_strings => {
            bad("is not an array of strings")
        }
        _ => Ok(()),
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
