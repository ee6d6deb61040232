'use strict';
// `sql.stats()` as metric families — the one list of names, types, units and help texts that the
// Prometheus text (prometheus.js) and prom-client collectors render. Every sample carries the
// pool's name (`pool`), so that several pools share one registry. A family holds one kind of
// thing in one unit: no family mixes a total with its parts or counts two different things.
const binding = require('../binding');

const KINDS = ['argument', 'server', 'connection', 'contract'];

/** The latency bucket bounds in seconds (the last one Infinity), from Rust (src/observe/metrics.rs). */
let bounds;
function bucketsSeconds() {
  bounds ??= binding.latencyBucketsMs().map((ms) => (ms === Infinity ? Infinity : ms / 1000));
  return bounds;
}

/** `le` of a bound: Prometheus' spelling (`+Inf`), a plain decimal otherwise (0.00025, not 2.5e-4). */
function le(bound) {
  if (bound === Infinity) return '+Inf';
  const text = String(bound);
  return text.includes('e') ? bound.toFixed(10).replace(/0+$/, '') : text;
}

/** The `_bucket` (cumulative), `_sum` and `_count` samples of one method's latency buckets. */
function histogram(labels, s) {
  const les = bucketsSeconds();
  const samples = [];
  let seen = 0;
  (s.buckets ?? []).forEach((n, k) => {
    seen += n;
    samples.push([{ ...labels, le: le(les[k]) }, seen, '_bucket']);
  });
  samples.push([labels, (s.sumMs ?? 0) / 1000, '_sum'], [labels, s.calls, '_count']);
  return samples;
}

const counter = (name, help, value) => ({ name, type: 'counter', help, value });

/**
 * The families of one pool's `stats`, every sample labelled `pool`: `{ name, type, help, samples:
 * [[labels, value, suffix?]] }`; a histogram's samples carry their `_bucket` / `_sum` / `_count`
 * suffix. `pool`: the pool's name.
 */
function families(stats, pool) {
  const p = { pool };
  const methods = Object.entries(stats.methods);
  const plain = [
    counter('round_trips_total', 'Round trips sent by the backend.', stats.roundTrips),
    counter('statements_total', 'Statements sent by the backend.', stats.statements),
    counter(
      'retries_total',
      'Units of work re-run after a deadlock, lock wait timeout or certification failure.',
      stats.deadlockRetries,
    ),
    counter(
      'prepared_fallbacks_total',
      'Statements sent as text because the server had no room for another prepared statement (max_prepared_stmt_count).',
      stats.preparedFallbacks ?? 0,
    ),
    counter(
      'coalesced_statements_total',
      'Multi-row statements that carried enqueue calls made together.',
      stats.coalesced.batches,
    ),
    counter('coalesced_calls_total', 'enqueue calls carried by those multi-row statements.', stats.coalesced.calls),
    counter(
      'coalesced_resent_calls_total',
      'Of those calls, the ones sent again one by one because the server refused their statement.',
      stats.coalesced.resent,
    ),
  ].map((f) => ({ name: f.name, type: f.type, help: f.help, samples: [[p, f.value]] }));
  return [
    ...plain,
    {
      name: 'connections',
      type: 'gauge',
      help: 'Pool connections by state: idle in the pool, or in use.',
      samples: [
        [{ ...p, state: 'idle' }, stats.pool.idle],
        [{ ...p, state: 'in_use' }, stats.pool.inUse],
      ],
    },
    {
      name: 'connections_open',
      type: 'gauge',
      help: 'Pool connections open, including those being opened or closed.',
      samples: [[p, stats.pool.open]],
    },
    {
      name: 'connection_pending_requests',
      type: 'gauge',
      help: 'Calls waiting for a connection of the pool.',
      samples: [[p, stats.pool.waiters]],
    },
    {
      name: 'host_up',
      type: 'gauge',
      help: 'Each host of the pool: 1 while healthy, 0 while set aside after a failure.',
      samples: (stats.hosts ?? []).map((h) => [{ ...p, host: `${h.host}:${h.port}` }, h.state === 'healthy' ? 1 : 0]),
    },
    {
      name: 'errors_total',
      type: 'counter',
      help: 'Port method calls that failed, by method and kind (argument, server, connection, contract).',
      samples: methods.flatMap(([m, s]) => KINDS.map((k) => [{ ...p, method: m, kind: k }, s.errors[k]])),
    },
    {
      name: 'call_duration_seconds',
      type: 'histogram',
      help: 'Port method call durations, seconds; _count is the number of calls.',
      samples: methods.flatMap(([m, s]) => histogram({ ...p, method: m }, s)),
    },
  ];
}

/**
 * The name a pool goes by when its owner gave none: `host:port/database` (the form the
 * OpenTelemetry conventions suggest for `db.client.connection.pool.name`), the hosts of a host
 * list joined by commas, or the socket path.
 */
function defaultPoolName(sql) {
  const server = require('../sql').serverInfoOf(sql) ?? {};
  const hosts = sql.stats().hosts ?? [];
  const where =
    server.serverPort === undefined && server.serverAddress
      ? server.serverAddress
      : hosts.map((h) => `${h.host.includes(':') ? `[${h.host}]` : h.host}:${h.port}`).join(',') || 'localhost:3306';
  return `${where}/${server.database ?? ''}`;
}

module.exports = { families, defaultPoolName, bucketsSeconds, KINDS };
