//! JS parameters of user `query`/`exec` calls → SQL values, with array expansion for `IN (?)`.
//!
//! Conversion happens synchronously on the JS thread (JS values cannot cross to tokio), and
//! anything the SQL layer cannot carry is refused with an error naming the parameter.

use crate::error::{Error, Result};
use crate::pool::literal::{self, Bind, Strings};
use mysql_async::Value;
use napi::bindgen_prelude::*;
use napi::{sys, JsValue, ValueType};

/// One converted parameter: a scalar, binary data (a `Buffer`, sent as a binary literal so that
/// it comes back as binary, as with mysql2), a list (`(?,?)` expansion) or a list of lists
/// (`(a,b),(c,d)` for bulk `VALUES ?`).
pub enum Param {
    One(Value),
    Binary(Vec<u8>),
    List(Vec<Param>),
}

fn check(
    env: sys::napi_env,
    v: sys::napi_value,
    f: unsafe extern "C" fn(sys::napi_env, sys::napi_value, *mut bool) -> sys::napi_status,
) -> bool {
    let mut out = false;
    // SAFETY: env and v come from a live callback scope; f only writes the bool.
    unsafe { f(env, v, &mut out) };
    out
}

/// The most values one statement's parameters may hold, counting every item of every list
/// (`IN (?)` lists, bulk `VALUES ?` rows). Far above any real statement — 16 777 216 values
/// average 64 bytes each in a 1 GiB packet, the largest `max_allowed_packet` there is — and it
/// keeps a sparse array such as `new Array(2 ** 32 - 1)` from asking for ~100 GB before the
/// first item is looked at (`lib/sql.js` checks the top-level list, which napi converts before
/// Rust sees it, against the same bound).
pub const MAX_VALUES: usize = 1 << 24;

/// The years a `DATETIME` holds. MySQL documents 1000..9999 as supported, but MySQL and MariaDB
/// store and return 0000..0999 exactly too, and mysql2 (what the JavaScript package used) sends
/// such dates unchanged; only years outside 0..9999 cannot be written at all.
const YEARS: std::ops::RangeInclusive<i64> = 0..=9999;

/// Converts one JS value; `name` is used in error messages (e.g. `params[2]`). `budget` is how
/// many more values the statement may hold (see `MAX_VALUES`).
pub fn convert(v: &Unknown, name: &str, depth: u32, budget: &mut usize) -> Result<Param> {
    *budget = budget.checked_sub(1).ok_or_else(|| too_many(name))?;
    let raw = v.raw();
    let env = v.value().env;
    let t = v.get_type().map_err(|e| Error::Invalid(e.reason.clone()))?;
    let bad =
        |what: &str| Error::Invalid(format!("{name}: {what} cannot be bound as a SQL parameter"));
    Ok(Param::One(match t {
        ValueType::Null | ValueType::Undefined => Value::NULL,
        ValueType::Boolean => {
            let b: bool = unsafe { v.cast() }.map_err(|e| Error::Invalid(e.reason.clone()))?;
            Value::Int(i64::from(b))
        }
        ValueType::Number => {
            let f: f64 = unsafe { v.cast() }.map_err(|e| Error::Invalid(e.reason.clone()))?;
            if !f.is_finite() {
                return Err(bad("a non-finite number (NaN/Infinity)"));
            }
            if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 {
                Value::Int(f as i64)
            } else {
                Value::Double(f)
            }
        }
        ValueType::String => {
            let s: String = unsafe { v.cast() }.map_err(|e| Error::Invalid(e.reason.clone()))?;
            Value::Bytes(s.into_bytes())
        }
        ValueType::BigInt => {
            let b: BigInt = unsafe { v.cast() }.map_err(|e| Error::Invalid(e.reason.clone()))?;
            let (n, lossless) = b.get_i64();
            if !lossless {
                return Err(bad("a BigInt outside the signed 64-bit range"));
            }
            Value::Int(n)
        }
        ValueType::Object => {
            if check(env, raw, sys::napi_is_date) {
                let mut ms = 0f64;
                unsafe { sys::napi_get_date_value(env, raw, &mut ms) };
                if !ms.is_finite() {
                    return Err(bad("an invalid Date"));
                }
                date_value(ms).ok_or_else(|| {
                    Error::Range(format!(
                        "{name}: a Date outside the years {} to {} cannot be stored as a DATETIME",
                        YEARS.start(),
                        YEARS.end()
                    ))
                })?
            } else if check(env, raw, sys::napi_is_buffer) {
                let buf: BufferSlice =
                    unsafe { v.cast() }.map_err(|e| Error::Invalid(e.reason.clone()))?;
                return Ok(Param::Binary(buf.to_vec()));
            } else if check(env, raw, sys::napi_is_array) {
                if depth >= 2 {
                    return Err(bad("an array nested more than two levels"));
                }
                let mut len = 0u32;
                // SAFETY: env and raw come from a live callback scope, raw is an array.
                unsafe { sys::napi_get_array_length(env, raw, &mut len) };
                if len as usize > *budget {
                    return Err(too_many(name));
                }
                let items: Vec<Unknown> =
                    unsafe { v.cast() }.map_err(|e| Error::Invalid(e.reason.clone()))?;
                let list = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| convert(item, &format!("{name}[{i}]"), depth + 1, budget))
                    .collect::<Result<Vec<_>>>()?;
                return Ok(Param::List(list));
            } else {
                return Err(bad("a plain object"));
            }
        }
        _ => return Err(bad("a value of this type (function/symbol)")),
    }))
}

fn too_many(name: &str) -> Error {
    Error::Range(format!(
        "{name}: the parameters of one statement may hold at most {MAX_VALUES} values"
    ))
}

/// UTC `DATETIME(3)`-style value from epoch milliseconds; `None` for a year outside `YEARS`
/// (a wider one would wrap around in the 16-bit year of the wire format).
fn date_value(ms: f64) -> Option<Value> {
    let total_ms = ms.floor() as i64;
    let secs = total_ms.div_euclid(1000);
    let millis = total_ms.rem_euclid(1000) as u32;
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    if !YEARS.contains(&y) {
        return None;
    }
    Some(Value::Date(
        y as u16,
        m as u8,
        d as u8,
        (sod / 3600) as u8,
        ((sod % 3600) / 60) as u8,
        (sod % 60) as u8,
        millis * 1000,
    ))
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Checks that `sql` has one placeholder per parameter (done synchronously, before any I/O).
pub fn check_count(sql: &str, params: &[Param]) -> Result<()> {
    literal::check_count(sql, params.len())
        .map(|_| ())
        .map_err(Error::Invalid)
}

impl Bind for Param {
    /// A scalar as its literal; a list as `a, b` (for `IN (?)`); a list of lists as
    /// `(a, b), (c, d)` (for bulk `VALUES ?`); an empty list as `NULL` (matches nothing).
    fn push(&self, out: &mut String, strings: Strings) -> std::result::Result<(), String> {
        match self {
            Param::One(v) => v.push(out, strings),
            Param::Binary(bytes) => {
                literal::push_binary(out, bytes);
                Ok(())
            }
            Param::List(items) if items.is_empty() => {
                out.push_str("NULL");
                Ok(())
            }
            Param::List(items) => {
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    if let Param::List(_) = item {
                        out.push('(');
                        item.push(out, strings)?;
                        out.push(')');
                    } else {
                        item.push(out, strings)?;
                    }
                }
                Ok(())
            }
        }
    }

    fn same_in_every_form(&self) -> bool {
        match self {
            Param::One(v) => v.same_in_every_form(),
            Param::Binary(_) => true,
            Param::List(items) => items.iter().all(Bind::same_in_every_form),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_rendered_in_utc() {
        let v = date_value(0.0);
        assert_eq!(v, Some(Value::Date(1970, 1, 1, 0, 0, 0, 0)));
        let v = date_value(1_893_456_000_123.0); // 2030-01-01T00:00:00.123Z
        assert_eq!(v, Some(Value::Date(2030, 1, 1, 0, 0, 0, 123_000)));
    }

    #[test]
    fn years_a_datetime_cannot_hold_are_refused() {
        let year = |y: i32| {
            let days = (y as f64 - 1970.0) * 365.2425;
            date_value(days.round() * 86_400_000.0 + 86_400_000.0 * 10.0)
        };
        assert!(year(9999).is_some());
        assert!(year(0).is_some());
        assert!(year(10_000).is_none());
        assert!(year(67_560).is_none()); // would wrap to 2024
        assert!(year(-1).is_none()); // would wrap to 65535
    }

    fn render(sql: &str, params: &[Param]) -> String {
        let mut out = String::new();
        literal::render(sql, params, &mut out).unwrap();
        out
    }

    #[test]
    fn lists_expand() {
        let p = vec![Param::List(vec![
            Param::One(Value::Int(1)),
            Param::One(Value::from("a")),
        ])];
        assert_eq!(render("x IN (?)", &p), "x IN (1, 'a')");
        let rows = vec![Param::List(vec![
            Param::List(vec![Param::One(Value::Int(1)), Param::One(Value::Int(2))]),
            Param::List(vec![Param::One(Value::Int(3)), Param::One(Value::Int(4))]),
        ])];
        assert_eq!(render("VALUES ?", &rows), "VALUES (1, 2), (3, 4)");
    }
}
