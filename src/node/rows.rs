//! Result rows of user queries → plain JS objects, typed like mysql2's defaults.
//!
//! Integers become numbers (strings beyond ±2^53, where a number would lose digits), DECIMAL
//! stays a string, DATE/DATETIME/TIMESTAMP become `Date` (read as UTC), binary columns become
//! `Buffer`, JSON columns are parsed, NULL is `null`.

use crate::model::codec::text;
use mysql_async::consts::{ColumnFlags, ColumnType};
use mysql_async::{Column, Row, Value};
use napi::bindgen_prelude::*;
use napi::sys;
use std::sync::Arc;

/// Rows of one result set plus its column metadata.
pub struct UserRows {
    columns: Option<Arc<[Column]>>,
    rows: Vec<Row>,
}

impl UserRows {
    pub fn new(columns: Option<Arc<[Column]>>, rows: Vec<Row>) -> Self {
        UserRows { columns, rows }
    }
}

const BINARY_CHARSET: u16 = 63;
const MAX_SAFE: i128 = 9_007_199_254_740_991;

fn parse_datetime(s: &str) -> Option<f64> {
    let (date, time) = s.split_once(' ').unwrap_or((s, "00:00:00"));
    let mut d = date.split('-').map(|p| p.parse::<i64>());
    let (y, m, dd) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    if m == 0 || dd == 0 {
        return None;
    }
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let mut t = hms.split(':').map(|p| p.parse::<i64>());
    let (h, mi, sec) = (t.next()?.ok()?, t.next()?.ok()?, t.next()?.ok()?);
    let millis: i64 = format!("{frac:0<3}")[..3].parse().ok()?;
    // Days from civil (H. Hinnant).
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + dd - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((((days * 24 + h) * 60 + mi) * 60 + sec) as f64 * 1000.0 + millis as f64)
}

unsafe fn cell(env: sys::napi_env, col: &Column, v: &Value) -> Result<sys::napi_value> {
    let Some(s) = text(v) else {
        return match v {
            Value::NULL => Null::to_napi_value(env, Null),
            Value::Bytes(b) => Buffer::to_napi_value(env, Buffer::from(b.clone())),
            other => String::to_napi_value(env, other.as_sql(true)),
        };
    };
    use ColumnType::*;
    match col.column_type() {
        MYSQL_TYPE_TINY | MYSQL_TYPE_SHORT | MYSQL_TYPE_LONG | MYSQL_TYPE_INT24
        | MYSQL_TYPE_LONGLONG | MYSQL_TYPE_YEAR => match s.parse::<i128>() {
            Ok(n) if n.abs() <= MAX_SAFE => f64::to_napi_value(env, n as f64),
            _ => String::to_napi_value(env, s.to_string()),
        },
        MYSQL_TYPE_FLOAT | MYSQL_TYPE_DOUBLE => {
            f64::to_napi_value(env, s.parse::<f64>().unwrap_or(f64::NAN))
        }
        MYSQL_TYPE_DATE
        | MYSQL_TYPE_DATETIME
        | MYSQL_TYPE_TIMESTAMP
        | MYSQL_TYPE_DATETIME2
        | MYSQL_TYPE_TIMESTAMP2 => {
            let mut out = std::ptr::null_mut();
            let ms = parse_datetime(s).unwrap_or(f64::NAN);
            check_status!(sys::napi_create_date(env, ms, &mut out))?;
            Ok(out)
        }
        MYSQL_TYPE_JSON => match serde_json::from_str::<serde_json::Value>(s) {
            Ok(j) => serde_json::Value::to_napi_value(env, j),
            Err(_) => String::to_napi_value(env, s.to_string()),
        },
        MYSQL_TYPE_BIT => Buffer::to_napi_value(env, Buffer::from(s.as_bytes().to_vec())),
        MYSQL_TYPE_TINY_BLOB
        | MYSQL_TYPE_MEDIUM_BLOB
        | MYSQL_TYPE_LONG_BLOB
        | MYSQL_TYPE_BLOB
        | MYSQL_TYPE_VAR_STRING
        | MYSQL_TYPE_STRING
        | MYSQL_TYPE_VARCHAR
            if col.character_set() == BINARY_CHARSET
                && !col.flags().contains(ColumnFlags::NUM_FLAG) =>
        {
            Buffer::to_napi_value(env, Buffer::from(s.as_bytes().to_vec()))
        }
        _ => String::to_napi_value(env, s.to_string()),
    }
}

impl ToNapiValue for UserRows {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        let mut arr = std::ptr::null_mut();
        check_status!(sys::napi_create_array_with_length(
            env,
            val.rows.len(),
            &mut arr
        ))?;
        let columns = val.columns.unwrap_or_else(|| Arc::from(Vec::new()));
        let mut keys = Vec::with_capacity(columns.len());
        for c in columns.iter() {
            keys.push(String::to_napi_value(env, c.name_str().into_owned())?);
        }
        for (i, row) in val.rows.into_iter().enumerate() {
            let mut obj = std::ptr::null_mut();
            check_status!(sys::napi_create_object(env, &mut obj))?;
            let values = row.unwrap();
            for ((col, key), v) in columns.iter().zip(&keys).zip(values.iter()) {
                let jv = cell(env, col, v)?;
                check_status!(sys::napi_set_property(env, obj, *key, jv))?;
            }
            check_status!(sys::napi_set_element(env, arr, i as u32, obj))?;
        }
        Ok(arr)
    }
}

#[cfg(test)]
mod tests {
    use super::parse_datetime;

    #[test]
    fn parses_datetimes_as_utc() {
        assert_eq!(parse_datetime("1970-01-01 00:00:00"), Some(0.0));
        assert_eq!(
            parse_datetime("2030-01-01 00:00:00.123"),
            Some(1_893_456_000_123.0)
        );
        assert_eq!(parse_datetime("2030-01-01"), Some(1_893_456_000_000.0));
        assert_eq!(parse_datetime("0000-00-00 00:00:00"), None);
    }
}
