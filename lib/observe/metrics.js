'use strict';
// `sql.stats()` as metric families — the one list of names, types and help texts — rendered
// three ways, none of them a dependency of the package: the Prometheus text exposition format
// (version 0.0.4), collectors in a user's prom-client `Registry`, and observable instruments on
// a user's OpenTelemetry `Meter`.
const binding = require('../binding');
const c = require('../check');

const KINDS = ['argument', 'server', 'connection', 'contract'];

/** The latency bucket bounds (ms, the last one Infinity), from Rust (src/observe/metrics.rs). */
let bounds;
function bucketsMs() {
  bounds ??= binding.latencyBucketsMs();
  return bounds;
}

/**
 * The families of `stats`: `{ name, type, help, samples: [[labels, value, suffix?]] }`; a
 * histogram's samples carry their `_bucket` / `_sum` / `_count` suffix.
 */
function families(stats) {
  const methods = Object.entries(stats.methods);
  const out = [
    {
      name: 'round_trips_total',
      type: 'counter',
      help: 'Round trips sent by the backend.',
      samples: [[{}, stats.roundTrips]],
    },
    {
      name: 'statements_total',
      type: 'counter',
      help: 'Statements sent by the backend.',
      samples: [[{}, stats.statements]],
    },
    {
      name: 'retries_total',
      type: 'counter',
      help: 'Units re-run after a deadlock, lock wait timeout or certification failure.',
      samples: [[{}, stats.deadlockRetries]],
    },
    {
      name: 'coalesced_total',
      type: 'counter',
      help: 'enqueue calls sent together: the multi-row statements, the calls they carried, the calls re-sent one by one.',
      samples: [
        [{ of: 'statements' }, stats.coalesced.batches],
        [{ of: 'calls' }, stats.coalesced.calls],
        [{ of: 'resent' }, stats.coalesced.resent],
      ],
    },
    {
      name: 'connections',
      type: 'gauge',
      help: 'Pool connections by state.',
      samples: [
        [{ state: 'open' }, stats.pool.open],
        [{ state: 'idle' }, stats.pool.idle],
        [{ state: 'in_use' }, stats.pool.inUse],
        [{ state: 'waiting' }, stats.pool.waiters],
      ],
    },
    {
      name: 'calls_total',
      type: 'counter',
      help: 'Port method calls.',
      samples: methods.map(([m, s]) => [{ method: m }, s.calls]),
    },
    {
      name: 'errors_total',
      type: 'counter',
      help: 'Port method failures by kind.',
      samples: methods.flatMap(([m, s]) => KINDS.map((k) => [{ method: m, kind: k }, s.errors[k]])),
    },
    {
      name: 'latency_ms',
      type: 'gauge',
      help: 'Port method latency percentiles (upper bounds of histogram buckets), ms.',
      samples: methods.flatMap(([m, s]) => [
        [{ method: m, quantile: '0.5' }, s.p50Ms],
        [{ method: m, quantile: '0.9' }, s.p90Ms],
        [{ method: m, quantile: '0.99' }, s.p99Ms],
      ]),
    },
    {
      name: 'call_duration_seconds',
      type: 'histogram',
      help: 'Port method call durations, s.',
      samples: methods.flatMap(([m, s]) => histogram({ method: m }, s)),
    },
  ];
  return out;
}

/** The `_bucket` (cumulative), `_sum` and `_count` samples of one method's latency buckets. */
function histogram(labels, s) {
  const les = bucketsMs();
  const samples = [];
  let seen = 0;
  (s.buckets ?? []).forEach((n, k) => {
    seen += n;
    const le = les[k] === Infinity ? '+Inf' : String(les[k] / 1000);
    samples.push([{ ...labels, le }, seen, '_bucket']);
  });
  samples.push([labels, (s.sumMs ?? 0) / 1000, '_sum'], [labels, s.calls, '_count']);
  return samples;
}

/** The text of `stats` (what `sql.stats()` returns); metric names start with `prefix`. */
function renderPrometheus(stats, { prefix = 'iterativeflow_mysql' } = {}) {
  const lines = [];
  const label = (pairs) => {
    const keys = Object.keys(pairs);
    return keys.length === 0 ? '' : `{${keys.map((k) => `${k}="${pairs[k]}"`).join(',')}}`;
  };
  for (const f of families(stats)) {
    const name = `${prefix}_${f.name}`;
    lines.push(`# HELP ${name} ${f.help}`, `# TYPE ${name} ${f.type}`);
    for (const [labels, value, suffix = ''] of f.samples) lines.push(`${name}${suffix}${label(labels)} ${value}`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Registers `sql.stats()` in a prom-client `Registry` (prom-client ≥ 13): one collector per
 * family, read at each scrape. prom-client is the caller's; nothing of it is required here.
 * Answers a function that unregisters them.
 */
function registerPromClient(sql, registry, { prefix = 'iterativeflow_mysql' } = {}) {
  if (!registry || typeof registry.registerMetric !== 'function' || typeof registry.removeSingleMetric !== 'function') {
    throw c.typeError('registerPromClient: registry must be a prom-client Registry (e.g. client.register)');
  }
  if (typeof prefix !== 'string' || !/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(prefix)) {
    throw c.typeError('registerPromClient: opts.prefix must be a metric name prefix ([a-zA-Z_:][a-zA-Z0-9_:]*)');
  }
  // One stats() read per scrape, shared by every family of it.
  let cached;
  const current = () => {
    if (!cached) {
      cached = families(sql.stats());
      queueMicrotask(() => (cached = undefined));
    }
    return cached;
  };
  const names = [];
  for (const f of families(sql.stats())) {
    const name = `${prefix}_${f.name}`;
    const promName = name;
    registry.registerMetric({
      name: promName,
      help: f.help,
      type: f.type,
      aggregator: 'sum',
      get() {
        const fam = current().find((x) => x.name === f.name);
        return {
          name: promName,
          help: f.help,
          type: f.type,
          aggregator: 'sum',
          values: fam.samples.map(([labels, value, suffix]) => ({
            labels,
            value,
            ...(suffix ? { metricName: `${name}${suffix}` } : {}),
          })),
        };
      },
    });
    names.push(promName);
  }
  return () => {
    for (const n of names) registry.removeSingleMetric(n);
  };
}

/**
 * Observable instruments over `sql.stats()` on an OpenTelemetry `meter` (from the caller's
 * `@opentelemetry/api`), named after the database client semantic conventions where one fits.
 * Answers a function that stops observing.
 */
function observeOpenTelemetry(sql, meter, { system = 'mysql' } = {}) {
  if (
    !meter ||
    typeof meter.createObservableCounter !== 'function' ||
    typeof meter.addBatchObservableCallback !== 'function'
  ) {
    throw c.typeError('observeOpenTelemetry: meter must be an OpenTelemetry Meter (metrics.getMeter(name))');
  }
  const base = { 'db.system.name': system };
  const calls = meter.createObservableCounter('iterativeflow.mysql.calls', {
    description: 'Port method calls.',
    unit: '{call}',
  });
  const errors = meter.createObservableCounter('iterativeflow.mysql.errors', {
    description: 'Port method failures.',
    unit: '{error}',
  });
  const roundTrips = meter.createObservableCounter('iterativeflow.mysql.round_trips', {
    description: 'Round trips sent by the backend.',
    unit: '{round_trip}',
  });
  const statements = meter.createObservableCounter('iterativeflow.mysql.statements', {
    description: 'Statements sent by the backend.',
    unit: '{statement}',
  });
  const retries = meter.createObservableCounter('iterativeflow.mysql.retries', {
    description: 'Units re-run after a transient failure.',
    unit: '{retry}',
  });
  const duration = meter.createObservableCounter('iterativeflow.mysql.call.duration', {
    description: 'Total time spent in port method calls.',
    unit: 's',
  });
  const connections = meter.createObservableUpDownCounter('db.client.connection.count', {
    description: 'Pool connections by state.',
    unit: '{connection}',
  });
  const pending = meter.createObservableUpDownCounter('db.client.connection.pending_requests', {
    description: 'Calls waiting for a connection.',
    unit: '{request}',
  });
  const latency = meter.createObservableGauge('iterativeflow.mysql.call.latency', {
    description: 'Port method latency percentiles (bucket upper bounds).',
    unit: 'ms',
  });
  const instruments = [calls, errors, roundTrips, statements, retries, duration, connections, pending, latency];
  const observe = (r) => {
    const s = sql.stats();
    r.observe(roundTrips, s.roundTrips, base);
    r.observe(statements, s.statements, base);
    r.observe(retries, s.deadlockRetries, base);
    r.observe(connections, s.pool.idle, { ...base, 'db.client.connection.state': 'idle' });
    r.observe(connections, s.pool.inUse, { ...base, 'db.client.connection.state': 'used' });
    r.observe(pending, s.pool.waiters, base);
    for (const [m, ms] of Object.entries(s.methods)) {
      const at = { ...base, 'db.operation.name': m };
      r.observe(calls, ms.calls, at);
      r.observe(duration, (ms.sumMs ?? 0) / 1000, at);
      for (const k of KINDS) r.observe(errors, ms.errors[k], { ...at, 'error.kind': k });
      r.observe(latency, ms.p50Ms, { ...at, quantile: '0.5' });
      r.observe(latency, ms.p90Ms, { ...at, quantile: '0.9' });
      r.observe(latency, ms.p99Ms, { ...at, quantile: '0.99' });
    }
  };
  meter.addBatchObservableCallback(observe, instruments);
  return () => meter.removeBatchObservableCallback(observe, instruments);
}

module.exports = { renderPrometheus, registerPromClient, observeOpenTelemetry, families };
