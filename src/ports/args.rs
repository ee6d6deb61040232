//! Argument shapes passed from `lib/` (store.js, queue.js, timer.js via encode.js) to the backend methods.
//!
//! `lib/` validates user input and pre-serialises JSON values with `JSON.stringify` (which
//! defines the contract's JSON fidelity), so Rust receives flat, already-checked data.

use napi_derive::napi;

/// A `RunSpec` with JSON fields already encoded (`None` = SQL NULL).
#[napi(object, object_to_js = false)]
#[derive(Clone)]
pub struct SpecArg {
    pub name: String,
    pub version: i64,
    pub input: Option<String>,
    pub idempotency_key: Option<String>,
    pub tags: Option<String>,
    pub parent_run_id: Option<String>,
    pub parent_cursor_key: Option<String>,
    pub depth: i64,
    /// `run.priority` (3.0 layout only; 0 when absent).
    pub priority: i64,
    pub created_at: i64,
}

/// One `startManyRuns` spec as `lib/encode.js` (`specRows`) sends it, in one JSON array for the
/// whole call: `[id, name, version, input, idempotencyKey, tags, parentRunId, parentCursorKey,
/// depth, priority, createdAt]`. One string crosses instead of an object per spec, whose
/// properties napi would read one by one, by name (about 3 µs a spec, a tenth of a bulk
/// submission's JavaScript-thread time).
type SpecRow = (
    String,
    String,
    i64,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    i64,
    i64,
    i64,
);

/// The run ids and specs of `startManyRuns`' rows (see `SpecRow`).
pub fn spec_rows(text: &str) -> Result<(Vec<String>, Vec<SpecArg>), String> {
    let rows: Vec<SpecRow> = serde_json::from_str(text)
        .map_err(|e| format!("internal error: startManyRuns' specs did not parse ({e})"))?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let spec = SpecArg {
                name: r.1,
                version: r.2,
                input: r.3,
                idempotency_key: r.4,
                tags: r.5,
                parent_run_id: r.6,
                parent_cursor_key: r.7,
                depth: r.8,
                priority: r.9,
                created_at: r.10,
            };
            (r.0, spec)
        })
        .unzip())
}

/// A spawn request: child id, spec and its enqueue options.
#[napi(object, object_to_js = false)]
#[derive(Clone)]
pub struct SpawnArg {
    pub run_id: String,
    pub spec: SpecArg,
    pub run_at: i64,
    /// `None`: 0 under 2.0.0-alpha.2, the run's own priority under 3.0.
    pub priority: Option<i64>,
}

/// An enqueue request (`run_at` 0 = immediately due).
#[napi(object, object_to_js = false)]
#[derive(Clone)]
pub struct EnqueueArg {
    pub run_id: String,
    pub run_at: i64,
    /// `None`: 0 under 2.0.0-alpha.2, the run's own priority under 3.0.
    pub priority: Option<i64>,
}

/// A timer request.
#[napi(object, object_to_js = false)]
#[derive(Clone)]
pub struct TimerArg {
    pub run_id: String,
    pub fire_at: i64,
}

/// `joinTarget` of an outbox.
#[napi(object, object_to_js = false)]
#[derive(Clone)]
pub struct JoinArg {
    pub run_id: String,
    pub count: i64,
}

/// An outbox, applied atomically with the write that guards it.
#[napi(object, object_to_js = false)]
#[derive(Clone, Default)]
pub struct OutboxArg {
    pub spawn: Option<Vec<SpawnArg>>,
    pub enqueue: Option<Vec<EnqueueArg>>,
    pub timers: Option<Vec<TimerArg>>,
    pub cancel_timers: Option<Vec<String>>,
    pub consume_signals: Option<Vec<String>>,
    pub join_target: Option<JoinArg>,
    /// 3.0 fencing: write only while the run's job still has this version.
    pub require_version: Option<i64>,
}

/// A step checkpoint with JSON fields encoded.
#[napi(object, object_to_js = false)]
#[derive(Clone)]
pub struct CheckpointArg {
    pub run_id: String,
    pub cursor_key: String,
    pub status: String,
    pub result: Option<String>,
    pub error: Option<String>,
    pub attempts: i64,
    pub shape: Option<String>,
}

/// `listRuns` filter and page.
#[napi(object, object_to_js = false)]
#[derive(Clone)]
pub struct ListArg {
    pub statuses: Option<Vec<String>>,
    pub name: Option<String>,
    /// 3.0 only.
    pub version: Option<i64>,
    pub tag: Option<String>,
    pub cursor: Option<i64>,
    pub limit: i64,
}

/// The filter of the 3.0 bulk operations (`deleteRuns`, `cancelRuns`, `retryRuns`): runs
/// matching every given predicate, with a status among `statuses` (already narrowed by JS to
/// the ones the operation may touch).
#[napi(object, object_to_js = false)]
#[derive(Clone)]
pub struct RunSetArg {
    pub before: Option<i64>,
    pub name: Option<String>,
    pub version: Option<i64>,
    pub tag: Option<String>,
    pub statuses: Vec<String>,
}

/// A cron spec with `input` encoded.
#[napi(object, object_to_js = false)]
#[derive(Clone)]
pub struct CronArg {
    pub name: String,
    pub schedule: String,
    pub flow_name: String,
    pub flow_version: i64,
    pub input: Option<String>,
    pub overlap: String,
    pub next_run_at: i64,
}

#[cfg(test)]
mod tests {
    use super::spec_rows;

    #[test]
    fn spec_rows_read_each_field_in_order() {
        let text = r#"[["r1","f",2,"{\"a\":1}",null,"[\"t\"]","p","k",1,5,1700000000000],
                       ["r2","g",1,null,"key",null,null,null,0,0,7]]"#;
        let (ids, specs) = spec_rows(text).expect("rows parse");
        assert_eq!(ids, ["r1", "r2"]);
        let (a, b) = (&specs[0], &specs[1]);
        assert_eq!((a.name.as_str(), a.version), ("f", 2));
        assert_eq!(a.input.as_deref(), Some(r#"{"a":1}"#));
        assert_eq!(a.idempotency_key, None);
        assert_eq!(a.tags.as_deref(), Some(r#"["t"]"#));
        assert_eq!(
            (a.parent_run_id.as_deref(), a.parent_cursor_key.as_deref()),
            (Some("p"), Some("k"))
        );
        assert_eq!(
            (a.depth, a.priority, a.created_at),
            (1, 5, 1_700_000_000_000)
        );
        assert_eq!(
            (b.input.as_deref(), b.idempotency_key.as_deref()),
            (None, Some("key"))
        );
        assert_eq!(b.created_at, 7);
    }

    #[test]
    fn spec_rows_refuse_what_js_never_sends() {
        assert!(spec_rows(r#"[["r1","f"]]"#).is_err());
        assert!(spec_rows(r#"[["r1","f",1.5,null,null,null,null,null,0,0,0]]"#).is_err());
        // A lone surrogate's escape (JS makes every string well-formed first).
        assert!(spec_rows(r#"[["\ud800","f",1,null,null,null,null,null,0,0,0]]"#).is_err());
        assert_eq!(spec_rows("[]").map(|(ids, _)| ids.len()), Ok(0));
    }
}
