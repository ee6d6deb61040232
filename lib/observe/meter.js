'use strict';
// OpenTelemetry metrics of a pool on the caller's `Meter` (from their `@opentelemetry/api`; none
// required here), named by the database client semantic conventions:
//   db.client.operation.duration           histogram, s — one value per port call, recorded as it
//                                          settles, with the advised bucket boundaries
//   db.client.connection.count             by db.client.connection.state (idle, used)
//   db.client.connection.pending_requests  calls waiting for a connection
// both with db.client.connection.pool.name; and, the package's own, counters over `sql.stats()`:
// iterativeflow.mysql.round_trips / .statements / .retries. db.system.name is asked of the server
// (system.js): `mariadb` on MariaDB, `mysql` on MySQL.
const c = require('../check');
const { observeCalls } = require('./calls');
const { defaultPoolName } = require('./families');
const { detectSystem, systemOf } = require('./system');

/** The conventions' advised bucket boundaries for db.client.operation.duration, s. */
const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10];

/** `error.type` and `db.response.status_code` of a failed call (the latter for server errors). */
function errorAttributes(e) {
  const out = { 'error.type': (e && typeof e.code === 'string' && e.code) || e?.name || '_OTHER' };
  if (e && Number.isInteger(e.errno) && e.errno > 0) out['db.response.status_code'] = String(e.errno);
  return out;
}

function checkMeter(meter) {
  for (const fn of [
    'createHistogram',
    'createObservableCounter',
    'createObservableUpDownCounter',
    'addBatchObservableCallback',
  ]) {
    if (!meter || typeof meter[fn] !== 'function') {
      throw c.typeError('observeOpenTelemetry: meter must be an OpenTelemetry Meter (metrics.getMeter(name))');
    }
  }
}

/**
 * Observes `sql` with instruments of `meter`; `opts.pool` names the pool (default
 * host:port/database). Answers a function that stops observing.
 */
function observeOpenTelemetry(sql, meter, opts = {}) {
  checkMeter(meter);
  if (opts === null || typeof opts !== 'object') throw c.typeError('observeOpenTelemetry: opts must be an object');
  if (opts.pool !== undefined && (typeof opts.pool !== 'string' || opts.pool === '')) {
    throw c.typeError('observeOpenTelemetry: opts.pool must be a non-empty string');
  }
  const server = require('../sql').serverInfoOf(sql);
  const poolName = opts.pool ?? defaultPoolName(sql);
  const fallback = opts.system ?? 'mysql'; // only while the server cannot be asked
  const system = () => systemOf(server) ?? fallback;

  const duration = meter.createHistogram('db.client.operation.duration', {
    description: 'Duration of database client operations: port method calls, as the caller sees them.',
    unit: 's',
    advice: { explicitBucketBoundaries: DURATION_BUCKETS },
  });
  const where = {};
  if (server?.database) where['db.namespace'] = server.database;
  if (server?.serverAddress !== undefined) where['server.address'] = server.serverAddress;
  if (server?.serverPort !== undefined) where['server.port'] = server.serverPort;
  const record = (method, seconds, error) => {
    const attrs = { 'db.system.name': system(), ...where, 'db.operation.name': method };
    duration.record(seconds, error === undefined ? attrs : { ...attrs, ...errorAttributes(error) });
  };
  // Until the server has said what it is, values wait for the answer (at most a second).
  const unobserve = observeCalls(server, (method, seconds, error) => {
    if (systemOf(server) !== undefined || !server) record(method, seconds, error);
    else detectSystem(server).then(() => record(method, seconds, error));
  });

  const pool = { 'db.client.connection.pool.name': poolName };
  const connections = meter.createObservableUpDownCounter('db.client.connection.count', {
    description: 'The number of connections that are currently in the state described by the state attribute.',
    unit: '{connection}',
  });
  const pending = meter.createObservableUpDownCounter('db.client.connection.pending_requests', {
    description: 'The number of current pending requests for an open connection.',
    unit: '{request}',
  });
  const counter = (name, description, unit) => meter.createObservableCounter(name, { description, unit });
  const roundTrips = counter('iterativeflow.mysql.round_trips', 'Round trips sent by the backend.', '{round_trip}');
  const statements = counter('iterativeflow.mysql.statements', 'Statements sent by the backend.', '{statement}');
  const retries = counter('iterativeflow.mysql.retries', 'Units of work re-run after a transient failure.', '{retry}');
  const instruments = [connections, pending, roundTrips, statements, retries];
  const observe = async (r) => {
    await detectSystem(server);
    const s = sql.stats();
    const base = { 'db.system.name': system(), ...pool };
    r.observe(connections, s.pool.idle, { ...base, 'db.client.connection.state': 'idle' });
    r.observe(connections, s.pool.inUse, { ...base, 'db.client.connection.state': 'used' });
    r.observe(pending, s.pool.waiters, base);
    r.observe(roundTrips, s.roundTrips, base);
    r.observe(statements, s.statements, base);
    r.observe(retries, s.deadlockRetries, base);
  };
  meter.addBatchObservableCallback(observe, instruments);
  return () => {
    unobserve();
    meter.removeBatchObservableCallback(observe, instruments);
  };
}

module.exports = { observeOpenTelemetry, errorAttributes, DURATION_BUCKETS };
