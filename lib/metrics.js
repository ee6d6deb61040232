'use strict';
// `sql.stats()` in the Prometheus text exposition format (version 0.0.4), with no dependency:
// serve it from your metrics endpoint, or turn `stats()` into any other system's format.

const KINDS = ['argument', 'server', 'connection', 'contract'];

/** The text of `stats` (what `sql.stats()` returns); metric names start with `prefix`. */
function renderPrometheus(stats, { prefix = 'iterativeflow_mysql' } = {}) {
  const lines = [];
  const metric = (name, type, help, samples) => {
    lines.push(`# HELP ${prefix}_${name} ${help}`, `# TYPE ${prefix}_${name} ${type}`);
    for (const [labels, value] of samples) lines.push(`${prefix}_${name}${labels} ${value}`);
  };
  const label = (pairs) =>
    `{${Object.entries(pairs)
      .map(([k, v]) => `${k}="${v}"`)
      .join(',')}}`;
  metric('round_trips_total', 'counter', 'Round trips sent by the backend.', [['', stats.roundTrips]]);
  metric('statements_total', 'counter', 'Statements sent by the backend.', [['', stats.statements]]);
  metric('retries_total', 'counter', 'Units re-run after a deadlock, lock wait timeout or certification failure.', [
    ['', stats.deadlockRetries],
  ]);
  metric('connections', 'gauge', 'Pool connections by state.', [
    [label({ state: 'open' }), stats.pool.open],
    [label({ state: 'idle' }), stats.pool.idle],
    [label({ state: 'in_use' }), stats.pool.inUse],
    [label({ state: 'waiting' }), stats.pool.waiters],
  ]);
  const methods = Object.entries(stats.methods);
  metric(
    'calls_total',
    'counter',
    'Port method calls.',
    methods.map(([m, s]) => [label({ method: m }), s.calls]),
  );
  metric(
    'errors_total',
    'counter',
    'Port method failures by kind.',
    methods.flatMap(([m, s]) => KINDS.map((k) => [label({ method: m, kind: k }), s.errors[k]])),
  );
  metric(
    'latency_ms',
    'gauge',
    'Port method latency percentiles (upper bounds of histogram buckets), ms.',
    methods.flatMap(([m, s]) => [
      [label({ method: m, quantile: '0.5' }), s.p50Ms],
      [label({ method: m, quantile: '0.9' }), s.p90Ms],
      [label({ method: m, quantile: '0.99' }), s.p99Ms],
    ]),
  );
  return `${lines.join('\n')}\n`;
}

module.exports = { renderPrometheus };
