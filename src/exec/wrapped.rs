//! The wrapped executor: runs the backend's statements through a JS `Sql` object.
//!
//! Used when `createMysqlBackend` gets something other than our native `Sql` (a user's logging or
//! fault-injecting wrapper). Each request becomes one call of a JS function `run(request)` (the
//! bridge in `lib/bridge.js`): a statement turns into `sql.query` / `sql.exec` on the caller's
//! object, or on the transaction handle of its `tx`; `begin` / `commit` / `rollback` open and
//! settle that `tx` — when to send them is decided here, from the unit's `Mode`, as for the
//! native executor. Slower than the native path (one JS call per statement), but the plain SQL
//! of the JavaScript package, in its order.

use crate::error::{Error, Result};
use crate::exec::{self, BoxFut, Exec, Mode, Outcome, Stmt};
use mysql_async::Value;
use napi::bindgen_prelude::Promise;
use napi::threadsafe_function::ThreadsafeFunction;
use napi::Status;
use serde_json::Value as J;

/// JS function `(requestJson: string) => Promise<string>`.
pub type RunFn = ThreadsafeFunction<String, Promise<String>, String, Status, false>;

/// Executor over a JS `Sql` (see module docs).
pub struct JsExec {
    run: RunFn,
    opening: Opening,
    begun: bool,
    /// The `Sql` is a handle of the caller's transaction (`inTx`).
    joined: bool,
}

/// How a unit starts on the wrapped `Sql`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Opening {
    /// Statement by statement.
    None,
    /// Inside the `Sql`'s own `tx`.
    Tx,
    /// Behind a savepoint, inside a caller's transaction the `Sql` handle belongs to (`inTx`):
    /// a failing unit goes back to it and leaves nothing of itself behind.
    Savepoint,
}

/// Runs `body` over the bridge `run` in `mode`: inside the wrapped `Sql`'s `tx` for a
/// transaction (opened with the first statement, committed when `body` succeeded, rolled back
/// when it failed), statement by statement otherwise. A `joined` backend's `Sql` is a handle of
/// the caller's transaction: every unit then runs behind a savepoint instead.
pub async fn run<T, F>(run: RunFn, mode: Mode, joined: bool, body: F) -> Result<T>
where
    F: for<'a> FnOnce(&'a mut JsExec) -> BoxFut<'a, T>,
{
    let opening = match (joined, mode) {
        (true, _) => Opening::Savepoint,
        (false, Mode::Transaction) => Opening::Tx,
        (false, Mode::Autocommit) => Opening::None,
    };
    let mut ex = JsExec {
        run,
        opening,
        begun: false,
        joined,
    };
    let result = body(&mut ex).await;
    if !ex.begun {
        return result;
    }
    match (result, opening) {
        (Ok(v), Opening::Tx) => ex.commit().await.map(|()| v),
        (Ok(v), _) => Ok(v),
        (Err(e), opening) => {
            // The body's error is what the caller needs; a failing rollback adds nothing.
            let _ = match opening {
                Opening::Savepoint => ex.one(Stmt::exec(exec::UNIT_UNDO, vec![])).await.map(drop),
                _ => ex.request(r#"{"op":"rollback"}"#.into()).await.map(drop),
            };
            Err(e)
        }
    }
}

/// The bridge's answer to `commit` when the wrapped `tx` called its function again (see
/// `lib/bridge.js`).
const RERUN: &str = r#"{"rerun":true}"#;

impl JsExec {
    /// Commits the wrapped `tx`. One whose function was called again — a `tx` re-running it
    /// after its first attempt failed — had the second run refused by the bridge. The first
    /// attempt committed nothing unless it failed on a lost connection at its COMMIT, which
    /// the wrapper alone saw: the message says so, and the caller decides.
    async fn commit(&self) -> Result<()> {
        let answer = self.request(r#"{"op":"commit"}"#.into()).await?;
        if answer == RERUN {
            return Err(Error::Aborted(
                "the wrapped Sql's tx called its function again (a retry after its first attempt \
                 failed?); a backend unit runs once per tx call, so the retry was refused. Nothing of \
                 the unit was committed, unless that attempt lost its connection at COMMIT (then its \
                 outcome is unknown)"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Sends one request to the bridge and returns its JSON answer text.
    async fn request(&self, req: String) -> Result<String> {
        let promise = self.run.call_async_catch(req).await.map_err(js_err)?;
        promise.await.map_err(js_err)
    }

    async fn one(&self, stmt: Stmt) -> Result<Outcome> {
        let is_query = !stmt.cols.is_empty();
        let params: Vec<J> = stmt.params.iter().map(to_json).collect::<Result<_>>()?;
        let req = serde_json::json!({ "q": is_query, "t": stmt.text, "p": params }).to_string();
        let answer = self.request(req).await?;
        let parsed: J = serde_json::from_str(&answer)
            .map_err(|e| Error::Js(format!("wrapped Sql returned unreadable data: {e}")))?;
        if is_query {
            let rows = parsed.as_array().ok_or_else(|| {
                Error::Js("wrapped Sql.query did not resolve to an array of rows".into())
            })?;
            let rows = rows
                .iter()
                .map(|row| stmt.cols.iter().map(|c| from_json(row.get(*c))).collect())
                .collect();
            Ok(Outcome {
                rows,
                affected: 0,
                insert_id: 0,
            })
        } else {
            let num = |k: &str| parsed.get(k).and_then(J::as_f64).unwrap_or(0.0).max(0.0) as u64;
            Ok(Outcome {
                rows: Vec::new(),
                affected: num("affectedRows"),
                insert_id: num("insertId"),
            })
        }
    }
}

fn js_err(e: napi::Error) -> Error {
    Error::Js(e.reason.clone())
}

impl Exec for JsExec {
    fn one_session(&self) -> bool {
        false
    }

    fn in_callers_session(&self) -> bool {
        self.joined
    }

    fn reads_merged_columns(&self) -> bool {
        false
    }

    async fn batch_before_tx(&mut self, stmts: Vec<Stmt>) -> Result<Vec<Outcome>> {
        let opening = std::mem::replace(&mut self.opening, Opening::None);
        let out = self.batch(stmts).await;
        self.opening = opening;
        out
    }

    async fn batch(&mut self, stmts: Vec<Stmt>) -> Result<Vec<Outcome>> {
        if self.opening != Opening::None && !self.begun && !stmts.is_empty() {
            match self.opening {
                Opening::Savepoint => {
                    self.one(Stmt::exec(exec::UNIT_SAVEPOINT, vec![])).await?;
                }
                _ => {
                    self.request(r#"{"op":"begin"}"#.into()).await?;
                }
            }
            self.begun = true;
        }
        let mut out = Vec::with_capacity(stmts.len());
        for s in stmts {
            out.push(self.one(s).await?);
        }
        Ok(out)
    }
}

fn to_json(v: &Value) -> Result<J> {
    Ok(match v {
        Value::NULL => J::Null,
        Value::Int(n) => J::from(*n),
        Value::UInt(n) => J::from(*n),
        Value::Double(f) => J::from(*f),
        Value::Float(f) => J::from(f64::from(*f)),
        Value::Bytes(b) => J::String(
            String::from_utf8(b.clone())
                .map_err(|_| Error::Invalid("non-UTF-8 parameter".into()))?,
        ),
        _ => {
            return Err(Error::Invalid(
                "date/time parameters are not used by the backend".into(),
            ))
        }
    })
}

fn from_json(v: Option<&J>) -> Value {
    match v {
        None | Some(J::Null) => Value::NULL,
        Some(J::Bool(b)) => Value::Int(i64::from(*b)),
        Some(J::Number(n)) => n
            .as_i64()
            .map(Value::Int)
            .unwrap_or_else(|| Value::Double(n.as_f64().unwrap_or(0.0))),
        Some(J::String(s)) => Value::Bytes(s.clone().into_bytes()),
        Some(other) => Value::Bytes(other.to_string().into_bytes()),
    }
}

/// JS function `(n: number) => string` answering a JSON array of `n` fresh ids (the user's `id`
/// option), called only for as many ids as are actually needed.
pub type IdFn = ThreadsafeFunction<u32, String, u32, Status, false>;

/// Ids from the user's generator, fetched in one JS call per batch.
pub struct JsIds(pub IdFn);

impl JsIds {
    /// `n` ids from the generator.
    pub async fn take(&self, n: usize) -> Result<Vec<String>> {
        let count =
            u32::try_from(n).map_err(|_| Error::Invalid("too many ids requested".into()))?;
        let text = self.0.call_async_catch(count).await.map_err(js_err)?;
        let ids: Vec<String> = serde_json::from_str(&text)
            .map_err(|e| Error::Js(format!("opts.id() returned unusable ids: {e}")))?;
        if ids.len() != n {
            return Err(Error::Js(format!(
                "opts.id(): expected {n} ids, got {}",
                ids.len()
            )));
        }
        Ok(ids)
    }
}
