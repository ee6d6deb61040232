//! Counters cheap enough to stay on: per port method calls, errors by kind and a latency
//! histogram, plus statements sent. Recording is a few relaxed atomic increments; percentiles
//! are computed only when someone reads `sql.stats()`.

use crate::error::{Error, Kind};
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Every port method, in the order `stats()` lists them (camelCase, as JS calls them).
pub const METHODS: [&str; 37] = [
    "startRun",
    "startManyRuns",
    "loadRun",
    "loadRunRow",
    "loadRunRows",
    "arriveAtJoin",
    "postSignal",
    "markRunning",
    "checkpointStep",
    "suspendRun",
    "markTerminal",
    "listRuns",
    "childrenOf",
    "runStats",
    "orphanedRuns",
    "deleteRunsOlderThan",
    "retryRun",
    "upsertCron",
    "dueCrons",
    "advanceCron",
    "enqueue",
    "enqueueMany",
    "claim",
    "heartbeat",
    "ack",
    "depth",
    "dueCount",
    "nextDueAt",
    "listCrons",
    "removeCron",
    "dueCronCount",
    "deleteRuns",
    "cancelRuns",
    "retryRuns",
    "schedule",
    "dueBatch",
    "cancelTimer",
];

/// The position of `name` in `METHODS`, at compile time (a misspelt name fails the build).
pub const fn index(name: &str) -> usize {
    let mut i = 0;
    while i < METHODS.len() {
        if eq(METHODS[i].as_bytes(), name.as_bytes()) {
            return i;
        }
        i += 1;
    }
    panic!("not a port method");
}

const fn eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The latency buckets' upper bounds, µs: 0.1 ms … 10 s in a 1-2.5-5 series, so that each of the
/// OpenTelemetry database conventions' advised bounds (1, 5, 10, 50, 100, 500 ms, 1, 5, 10 s) is
/// one of them and a Prometheus histogram gets round `le` values. Bucket `k` holds the calls that
/// took at most `BOUNDS_US[k]`; the last bucket (`BUCKETS - 1`) everything slower.
const BOUNDS_US: [u64; 16] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 5_000_000, 10_000_000,
];
const BUCKETS: usize = BOUNDS_US.len() + 1;

fn bucket_of(d: Duration) -> usize {
    let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    BOUNDS_US.partition_point(|&b| b < us)
}

/// The upper bound of bucket `k`, ms (the last finite one for the unbounded bucket).
fn bucket_upper_ms(k: usize) -> f64 {
    BOUNDS_US[k.min(BOUNDS_US.len() - 1)] as f64 / 1000.0
}

/// The lower bound of bucket `k`, ms.
fn bucket_lower_ms(k: usize) -> f64 {
    if k == 0 {
        0.0
    } else {
        bucket_upper_ms(k - 1)
    }
}

struct Method {
    calls: AtomicU64,
    /// Total time of all calls, µs (a histogram's `_sum`).
    sum_us: AtomicU64,
    /// Failures by `Kind` (argument, server, connection, contract).
    errors: [AtomicU64; 4],
    latency: [AtomicU64; BUCKETS],
}

impl Default for Method {
    fn default() -> Self {
        Method {
            calls: AtomicU64::new(0),
            sum_us: AtomicU64::new(0),
            errors: std::array::from_fn(|_| AtomicU64::new(0)),
            latency: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

/// The counters of one pool.
pub struct Metrics {
    methods: Vec<Method>,
    /// Statements sent by the backend's executors.
    pub statements: AtomicU64,
    /// Multi-row statements carrying coalesced `enqueue` calls, and the calls they carried.
    pub coalesced_batches: AtomicU64,
    pub coalesced_calls: AtomicU64,
    /// Coalesced calls sent again one by one after the server refused their batch.
    pub resent_alone: AtomicU64,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            methods: METHODS.iter().map(|_| Method::default()).collect(),
            statements: AtomicU64::new(0),
            coalesced_batches: AtomicU64::new(0),
            coalesced_calls: AtomicU64::new(0),
            resent_alone: AtomicU64::new(0),
        }
    }
}

fn kind_slot(k: Kind) -> usize {
    match k {
        Kind::Argument => 0,
        Kind::Server => 1,
        Kind::Connection => 2,
        Kind::Contract => 3,
    }
}

impl Metrics {
    /// A batch of `calls` coalesced `enqueue` calls was sent as one statement.
    pub fn coalesced(&self, calls: usize) {
        self.coalesced_batches.fetch_add(1, Ordering::Relaxed);
        self.coalesced_calls
            .fetch_add(calls as u64, Ordering::Relaxed);
    }

    /// A batch of `calls` was refused by the server and its calls are sent one by one.
    pub fn sent_alone(&self, calls: usize) {
        self.coalesced(calls);
        self.resent_alone.fetch_add(calls as u64, Ordering::Relaxed);
    }

    /// Records one finished call of method `index` that took `took`.
    pub fn record(&self, index: usize, took: Duration, error: Option<&Error>) {
        let Some(m) = self.methods.get(index) else {
            return;
        };
        m.calls.fetch_add(1, Ordering::Relaxed);
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        m.sum_us.fetch_add(us, Ordering::Relaxed);
        m.latency[bucket_of(took)].fetch_add(1, Ordering::Relaxed);
        if let Some(e) = error {
            m.errors[kind_slot(e.kind())].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `{ <method>: { calls, errors: { argument, server, connection, contract }, p50Ms, p90Ms,
    /// p99Ms, sumMs, buckets } }` for every method called at least once (percentiles are estimated
    /// within their bucket; `buckets[k]` counts the calls in bucket `k`, see `latencyBucketsMs()`).
    pub fn methods(&self) -> Value {
        let mut out = Map::new();
        for (name, m) in METHODS.iter().zip(&self.methods) {
            let calls = m.calls.load(Ordering::Relaxed);
            if calls == 0 {
                continue;
            }
            let counts: Vec<u64> = m
                .latency
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect();
            let e = |k: usize| m.errors[k].load(Ordering::Relaxed);
            out.insert(
                (*name).to_string(),
                json!({
                    "calls": calls,
                    "errors": { "argument": e(0), "server": e(1), "connection": e(2), "contract": e(3) },
                    "p50Ms": percentile(&counts, 0.50),
                    "p90Ms": percentile(&counts, 0.90),
                    "p99Ms": percentile(&counts, 0.99),
                    "sumMs": m.sum_us.load(Ordering::Relaxed) as f64 / 1000.0,
                    "buckets": counts,
                }),
            );
        }
        Value::Object(out)
    }
}

/// The upper bounds of the latency buckets, ms (the last one is unbounded: `Infinity`), for
/// exporters that publish `stats().methods[m].buckets` as a histogram (lib/observe/families.js).
pub fn latency_buckets_ms() -> Vec<f64> {
    BOUNDS_US
        .iter()
        .map(|&b| b as f64 / 1000.0)
        .chain(std::iter::once(f64::INFINITY))
        .collect()
}

/// The `q` quantile of `counts`, ms: linear within the bucket that holds it (as Prometheus'
/// `histogram_quantile` estimates it), the last finite bound when it falls in the unbounded one.
fn percentile(counts: &[u64], q: f64) -> f64 {
    let total: u64 = counts.iter().sum();
    let rank = (q * total as f64).max(1.0);
    let mut seen = 0u64;
    for (k, &n) in counts.iter().enumerate() {
        if n > 0 && (seen + n) as f64 >= rank {
            if k + 1 == BUCKETS {
                return bucket_upper_ms(k);
            }
            let (lo, hi) = (bucket_lower_ms(k), bucket_upper_ms(k));
            let v = lo + (hi - lo) * ((rank - seen as f64) / n as f64);
            return (v * 1000.0).round() / 1000.0;
        }
        seen += n;
    }
    bucket_upper_ms(BUCKETS - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_names_resolve_at_compile_time() {
        const CLAIM: usize = index("claim");
        assert_eq!(METHODS[CLAIM], "claim");
    }

    #[test]
    fn buckets_hold_calls_up_to_their_bound_and_percentiles_read_them() {
        assert_eq!(bucket_of(Duration::from_micros(10)), 0);
        assert_eq!(
            bucket_of(Duration::from_micros(100)),
            0,
            "a bound is inclusive (le)"
        );
        assert_eq!(bucket_of(Duration::from_micros(101)), 1);
        assert_eq!(bucket_of(Duration::from_millis(1)), 3);
        assert_eq!(bucket_of(Duration::from_secs(1000)), BUCKETS - 1);
        let bounds = latency_buckets_ms();
        assert_eq!(bounds.len(), BUCKETS);
        assert!(bounds.last().unwrap().is_infinite());
        for advised in [1.0, 5.0, 10.0, 50.0, 100.0, 500.0, 1000.0, 5000.0, 10000.0] {
            assert!(bounds.contains(&advised), "{advised} ms is a bound");
        }
        let m = Metrics::default();
        for _ in 0..99 {
            m.record(0, Duration::from_micros(100), None);
        }
        m.record(
            0,
            Duration::from_millis(80),
            Some(&Error::Contract("x".into())),
        );
        let v = m.methods();
        let s = &v["startRun"];
        assert_eq!(s["calls"], 100);
        assert_eq!(s["errors"]["contract"], 1);
        let p50 = s["p50Ms"].as_f64().unwrap();
        let p99 = s["p99Ms"].as_f64().unwrap();
        assert!(p50 > 0.0 && p50 <= 0.1, "{p50}");
        assert!(p99 <= 0.1, "{p99}");
        assert!(s["p90Ms"].as_f64().unwrap() <= p99);
        let buckets = s["buckets"].as_array().unwrap();
        assert_eq!(buckets.len(), BUCKETS);
        assert_eq!(buckets[0], 99);
        assert!(
            v.get("claim").is_none(),
            "methods never called are left out"
        );
    }

    #[test]
    fn a_quantile_in_the_unbounded_bucket_is_the_last_bound() {
        let mut counts = vec![0u64; BUCKETS];
        counts[BUCKETS - 1] = 3;
        assert_eq!(percentile(&counts, 0.5), bucket_upper_ms(BUCKETS - 2));
    }
}
