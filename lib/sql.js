'use strict';
// mysqlPool(): normalises a mysql2 pool / URL / options object into our native pool, and the
// JS-side `Sql` object users and the backend share (query / exec / tx / close).
const c = require('./check');
const { inspect } = require('node:util');
const binding = require('./binding');
const { renderPrometheus, registerPromClient, observeOpenTelemetry } = require('./observe/metrics');
const tracing = require('./observe/tracing');

const NATIVE = Symbol('iterativeflow.nativeSql');
const NATIVE_TX = Symbol('iterativeflow.nativeTx');
/** What the tracing channels say about the pool a handle belongs to (lib/observe/tracing.js). */
const SERVER = Symbol('iterativeflow.server');
/** The doorbell's park on the pool's park connection (lib/push/listener.js; src/node/bell.rs). */
const PARK = Symbol('iterativeflow.park');
/** What must end before the pool closes: the listeners parked on it (see onClose). */
const ON_CLOSE = Symbol('iterativeflow.onClose');

function fail(msg) {
  return c.typeError(`mysqlPool: ${msg}`);
}

/** An integer option (URL parameters arrive as digits); its range is checked in Rust. */
function optInt(v, name) {
  if (v === undefined || v === null || v === '') return undefined;
  const n = typeof v === 'string' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isSafeInteger(n)) throw fail(`${name} must be an integer`);
  return n;
}

function optStr(v, name) {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw fail(`${name} must be a string`);
  return v;
}

function sslFrom(v, name) {
  if (v === undefined || v === null || v === false) return undefined;
  if (v === true || v === 'true' || v === 'required' || v === 'REQUIRED' || v === '1') {
    return { rejectUnauthorized: false, verifyIdentity: false };
  }
  if (typeof v === 'string') {
    if (v === 'Amazon RDS') throw fail(`${name}: named SSL profiles are not supported; pass { ca }`);
    throw fail(`${name}: unknown TLS setting ${JSON.stringify(v)}`);
  }
  if (typeof v !== 'object') throw fail(`${name} must be a boolean or an object`);
  const ca = Array.isArray(v.ca) ? c.arr(v.ca, `${name}.ca`).map(String).join('\n') : v.ca;
  return {
    ca: ca === undefined ? undefined : Buffer.isBuffer(ca) ? ca.toString('utf8') : optStr(ca, `${name}.ca`),
    caPath: optStr(v.caPath, `${name}.caPath`),
    rejectUnauthorized: v.rejectUnauthorized === undefined ? true : Boolean(v.rejectUnauthorized),
    verifyIdentity: v.verifyIdentity === undefined ? undefined : Boolean(v.verifyIdentity),
  };
}

function sslFromUrl(params) {
  const mode = (params.get('sslmode') || params.get('ssl-mode') || '').toUpperCase();
  const ssl = params.get('ssl');
  const ca = params.get('ssl-ca') || params.get('sslca') || undefined;
  if (mode === 'DISABLED' || ssl === 'false' || ssl === '0') return undefined;
  if (mode === 'VERIFY_IDENTITY') return { caPath: ca, rejectUnauthorized: true, verifyIdentity: true };
  if (mode === 'VERIFY_CA') return { caPath: ca, rejectUnauthorized: true, verifyIdentity: false };
  if (mode === 'REQUIRED' || mode === 'PREFERRED' || ssl === 'true' || ssl === '1' || ssl === 'required' || ca) {
    return { caPath: ca, rejectUnauthorized: Boolean(ca), verifyIdentity: false };
  }
  if (mode) throw fail(`unknown sslmode ${JSON.stringify(mode)}`);
  return undefined;
}

/** One `host[:port]` / `[v6]:port` of a URL host list, as `{ host, port }`. */
function hostPort(text, name) {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+))(?::(\d*))?$/.exec(text);
  if (!m || (m[3] !== undefined && m[3] === ''))
    throw fail(`${name}: expected host or host:port, got ${JSON.stringify(text)}`);
  return { host: m[1] || m[2], port: m[3] === undefined ? undefined : optInt(m[3], `${name} port`) };
}

/**
 * A URL whose authority lists several hosts (`db1:3306,db2:3306`, which `URL` cannot parse):
 * the text with a placeholder host for `URL`, and the hosts; `hosts` is undefined for one host.
 */
function splitHosts(text) {
  const m = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)(.*)$/is.exec(text);
  if (!m) return { text, hosts: undefined };
  const at = m[2].lastIndexOf('@');
  const list = m[2].slice(at + 1);
  if (!list.includes(',')) return { text, hosts: undefined };
  const hosts = list.split(',').map((h, i) => hostPort(h, `URL host ${i + 1}`));
  return { text: `${m[1]}${m[2].slice(0, at + 1)}hosts.invalid${m[3]}`, hosts };
}

function fromUrl(whole) {
  const { text, hosts } = splitHosts(whole);
  let url;
  try {
    url = new URL(text);
  } catch {
    throw fail('the connection string is not a valid URL (expected mysql://user:password@host:port/database)');
  }
  if (url.protocol !== 'mysql:' && url.protocol !== 'mariadb:') {
    throw fail(`unsupported URL scheme ${JSON.stringify(url.protocol)} (use mysql://)`);
  }
  const p = url.searchParams;
  const dec = (s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      throw fail('the URL contains a malformed percent-escape');
    }
  };
  return normalise({
    host: hosts ? undefined : url.hostname ? url.hostname.replace(/^\[|\]$/g, '') : undefined,
    port: hosts ? undefined : url.port || undefined,
    hosts,
    failover: p.get('failover') || undefined,
    user: url.username ? dec(url.username) : undefined,
    password: url.password ? dec(url.password) : undefined,
    database: url.pathname && url.pathname.length > 1 ? dec(url.pathname.slice(1)) : undefined,
    socketPath: p.get('socket') || p.get('socketPath') || undefined,
    connectionLimit: p.get('connectionLimit') || p.get('connection_limit') || undefined,
    acquireTimeoutMs: p.get('acquireTimeoutMs') || p.get('acquire_timeout_ms') || undefined,
    queryTimeoutMs: p.get('queryTimeoutMs') || p.get('query_timeout_ms') || undefined,
    statementCacheSize: p.get('statementCacheSize') || p.get('statement_cache_size') || undefined,
    ssl: sslFromUrl(p),
    _sslNormalised: true,
  });
}

/** `hosts`: `[{ host, port? }]` or `['host:port', …]`; ranges and duplicates are checked in Rust. */
function hostsOf(v) {
  if (v === undefined || v === null) return undefined;
  return c.arr(v, 'hosts').map((h, i) => {
    const name = `hosts[${i}]`;
    if (typeof h === 'string') return hostPort(h, name);
    if (h === null || typeof h !== 'object')
      throw fail(`${name} must be an object { host, port } or a 'host:port' string`);
    if (typeof h.host !== 'string') throw fail(`${name}.host must be a string`);
    return { host: h.host, port: optInt(h.port, `${name}.port`) };
  });
}

function normalise(o) {
  return {
    host: optStr(o.host, 'host'),
    port: optInt(o.port, 'port'),
    hosts: hostsOf(o.hosts),
    failover: optStr(o.failover, 'failover'),
    user: optStr(o.user, 'user'),
    password: optStr(o.password, 'password'),
    database: optStr(o.database, 'database'),
    socketPath: optStr(o.socketPath, 'socketPath'),
    connectionLimit: optInt(o.connectionLimit, 'connectionLimit'),
    acquireTimeoutMs: optInt(o.acquireTimeoutMs, 'acquireTimeoutMs'),
    queryTimeoutMs: optInt(o.queryTimeoutMs, 'queryTimeoutMs'),
    statementCacheSize: optInt(o.statementCacheSize, 'statementCacheSize'),
    setIsolation: o.setIsolation === undefined ? undefined : Boolean(o.setIsolation),
    ssl: o._sslNormalised ? o.ssl : sslFrom(o.ssl, 'ssl'),
  };
}

/** The mysql2 pool's connection config, if `x` is a mysql2 (promise or callback) pool. */
function mysql2Config(x) {
  const core = x && typeof x === 'object' && x.pool && x.pool.config ? x.pool : x;
  const cfg = core && core.config;
  if (!cfg || typeof cfg !== 'object' || !cfg.connectionConfig) return undefined;
  const c = cfg.connectionConfig;
  return normalise({
    host: c.host,
    port: c.port,
    user: c.user,
    password: c.password,
    database: c.database,
    socketPath: c.socketPath,
    connectionLimit: cfg.connectionLimit,
    ssl: c.ssl || undefined,
  });
}

/**
 * The config of a mysql2 `PoolCluster` (promise or callback), if `x` is one: its nodes become a
 * host list, its default selector the failover policy (`ORDER` is sequential, `RR` / `RANDOM`
 * spread connections). The nodes must share user, password, database and TLS settings.
 */
function mysql2ClusterConfig(x) {
  const core = x && typeof x === 'object' && x.poolCluster ? x.poolCluster : x;
  if (!core || typeof core !== 'object' || !core._nodes || typeof core._nodes !== 'object') return undefined;
  const nodes = Object.values(core._nodes).map((n) => n && n.pool && n.pool.config);
  if (nodes.length === 0 || nodes.some((n) => !n || !n.connectionConfig)) {
    throw fail('the mysql2 PoolCluster has no nodes (call cluster.add(config) first)');
  }
  const first = nodes[0].connectionConfig;
  for (const [i, n] of nodes.entries()) {
    const cc = n.connectionConfig;
    for (const key of ['user', 'password', 'database', 'socketPath']) {
      if (cc[key] !== first[key])
        throw fail(`the mysql2 PoolCluster's nodes differ in ${key} (node ${i}); one pool has one set`);
    }
    if (JSON.stringify(cc.ssl || null) !== JSON.stringify(first.ssl || null)) {
      throw fail(`the mysql2 PoolCluster's nodes differ in ssl (node ${i}); one pool has one set`);
    }
  }
  const selector = String(core._defaultSelector || 'RR').toUpperCase();
  return normalise({
    hosts: nodes.map((n) => ({ host: n.connectionConfig.host, port: n.connectionConfig.port })),
    failover: selector === 'ORDER' ? 'sequential' : 'loadbalance',
    user: first.user,
    password: first.password,
    database: first.database,
    connectionLimit: nodes[0].connectionLimit,
    ssl: first.ssl || undefined,
  });
}

function configOf(x) {
  if (typeof x === 'string') return fromUrl(x);
  if (x === null || typeof x !== 'object') {
    throw fail('expected a mysql2 Pool or PoolCluster, a mysql:// URL, or an options object');
  }
  const fromMysql2 = mysql2Config(x) || mysql2ClusterConfig(x);
  if (fromMysql2) return fromMysql2;
  if (typeof x.url === 'string') return { ...fromUrl(x.url), ...stripUndefined(normalise({ ...x, url: undefined })) };
  return normalise(x);
}

function stripUndefined(o) {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

/**
 * The most values one statement's parameters may hold (src/node/params.rs, MAX_VALUES): checked here
 * for the top-level list, which napi converts (allocating room for `length` values) before
 * Rust can look at it; Rust checks the nested lists against the same bound.
 */
const MAX_PARAM_VALUES = 2 ** 24;

/** Shapes user params: arrays stay arrays (expanded for IN (?)), everything else passes through. */
function paramsOf(params) {
  if (params === undefined || params === null) return undefined;
  if (!Array.isArray(params)) throw c.typeError('params must be an array');
  return c.bounded(params, 'params', MAX_PARAM_VALUES);
}

/** Calls `fn`, turning a synchronous throw into a rejected promise. */
function settle(fn) {
  try {
    return fn();
  } catch (e) {
    return Promise.reject(e);
  }
}

function checkText(text) {
  if (typeof text !== 'string') throw c.typeError('text must be a SQL string');
}

/** The `Sql` bound to one open transaction; `tx` nests flat (runs fn on the same handle). */
function txSql(tx, server) {
  const self = {
    query(text, params) {
      return settle(() => {
        checkText(text);
        const p = paramsOf(params);
        return tracing.traceStatement(server, text, p, () => tx.query(text, p));
      });
    },
    exec(text, params) {
      return settle(() => {
        checkText(text);
        const p = paramsOf(params);
        return tracing.traceStatement(server, text, p, () => tx.exec(text, p));
      });
    },
    tx(fn) {
      return Promise.resolve().then(() => fn(self));
    },
  };
  // A backend built over this handle (inTx) runs its units inside the transaction, natively.
  Object.defineProperty(self, NATIVE_TX, { value: tx });
  Object.defineProperty(self, SERVER, { value: server });
  return self;
}

/** A native pool behind the `Sql` interface. */
class MysqlSql {
  #native;
  #inflight = 0;
  #closing = null;
  #onIdle = null;
  #onClose = new Set();

  constructor(native, server) {
    this.#native = native;
    Object.defineProperty(this, NATIVE, { value: native });
    Object.defineProperty(this, SERVER, { value: server });
  }

  /**
   * Runs `start()` (which returns a promise) as tracked in-flight work: `close()` waits for it.
   * Rejects at once after `close()` was called.
   */
  track(start) {
    if (this.#closing) return Promise.reject(this.#native.closedError());
    const p = settle(start);
    this.#inflight++;
    const done = () => {
      if (--this.#inflight === 0 && this.#onIdle) this.#onIdle();
    };
    return p.then(
      (v) => {
        done();
        return v;
      },
      (e) => {
        done();
        throw e;
      },
    );
  }

  query(text, params) {
    return this.track(() => {
      checkText(text);
      const p = paramsOf(params);
      return tracing.traceStatement(this[SERVER], text, p, () => this.#native.query(text, p));
    });
  }
  exec(text, params) {
    return this.track(() => {
      checkText(text);
      const p = paramsOf(params);
      return tracing.traceStatement(this[SERVER], text, p, () => this.#native.exec(text, p));
    });
  }
  tx(fn) {
    if (typeof fn !== 'function') return Promise.reject(c.typeError('tx: fn must be a function'));
    const server = this[SERVER];
    const end = (tx, statement) =>
      tracing.traceStatement(server, statement, undefined, () =>
        statement === 'COMMIT' ? tx.commit() : tx.rollback(),
      );
    return this.track(async () => {
      const tx = await tracing.traceStatement(server, 'BEGIN', undefined, () => this.#native.begin());
      let out;
      try {
        out = await fn(txSql(tx, server));
      } catch (e) {
        await end(tx, 'ROLLBACK').catch(() => undefined);
        throw e;
      }
      await end(tx, 'COMMIT');
      return out;
    });
  }
  /** A park of the doorbell on the park connection; tracked like any call. */
  [PARK](text, params) {
    return this.track(() => this.#native.park(text, paramsOf(params)));
  }
  /** Registers `fn` to run (and be awaited) when close() is called, before in-flight work is waited for. */
  [ON_CLOSE](fn) {
    this.#onClose.add(fn);
  }
  /** Refuses new calls, ends the listeners parked on the pool (a park is not work), waits for
   * in-flight work (queries, transactions, backend calls), then closes every connection. Calling
   * it again returns the same promise. */
  close() {
    if (!this.#closing) {
      this.#closing = (async () => {
        await Promise.allSettled([...this.#onClose].map((fn) => fn()));
        if (this.#inflight > 0) await new Promise((resolve) => (this.#onIdle = resolve));
        await this.#native.close();
      })();
    }
    return this.#closing;
  }
  get closed() {
    return this.#closing !== null;
  }
  /**
   * Counters of the backend's executors: `{ roundTrips, deadlockRetries, statements, preparedFallbacks, pool: { open,
   * idle, inUse, waiters }, methods: { <method>: { calls, errors, p50Ms, p90Ms, p99Ms } } }`.
   */
  stats() {
    return this.#native.stats();
  }
  /** `stats()` in the Prometheus text format (lib/observe/metrics.js). */
  prometheus(opts) {
    return renderPrometheus(this, opts);
  }
  /** Registers `stats()` as collectors in a prom-client `Registry`; answers an unregister function. */
  registerPromClient(registry, opts) {
    return registerPromClient(this, registry, opts);
  }
  /** Observes `stats()` with instruments on an OpenTelemetry `Meter`; answers a stop function. */
  observeOpenTelemetry(meter, opts) {
    return observeOpenTelemetry(this, meter, opts);
  }
  [inspect.custom]() {
    return this.#native.describe();
  }
  toString() {
    return this.#native.describe();
  }
  toJSON() {
    return this.#native.describe();
  }
}

/** `opts.tracing`: `{ mysql2?: boolean, values?: boolean }` (see lib/observe/tracing.js). */
function tracingOpts(t) {
  if (t === undefined || t === null) return undefined;
  if (typeof t !== 'object') throw fail('opts.tracing must be an object');
  for (const key of ['mysql2', 'values']) {
    if (t[key] !== undefined && typeof t[key] !== 'boolean') throw fail(`opts.tracing.${key} must be a boolean`);
  }
  return t;
}

/** `mysqlPool(x)`: x is a mysql2 Pool, a mysql:// URL, or an options object. */
/** `mysqlPool(x, { setIsolation, tracing })`: x is a mysql2 Pool, a mysql:// URL, or an options object. */
function mysqlPool(x, opts) {
  const cfg = configOf(x);
  let traceOpts;
  if (opts !== undefined && opts !== null) {
    if (typeof opts !== 'object') throw fail('opts must be an object');
    if (opts.setIsolation !== undefined && typeof opts.setIsolation !== 'boolean')
      throw fail('opts.setIsolation must be a boolean');
    if (opts.setIsolation !== undefined) cfg.setIsolation = opts.setIsolation;
    traceOpts = tracingOpts(opts.tracing);
  }
  const native = new binding.NativeSql(cfg);
  return new MysqlSql(native, tracing.serverOf(cfg, traceOpts, native));
}

function nativeOf(sql) {
  return sql instanceof MysqlSql ? sql[NATIVE] : undefined;
}

/** The native transaction behind a handle `tx(fn)` gave, if it is one of ours. */
function nativeTxOf(sql) {
  return sql && typeof sql === 'object' ? sql[NATIVE_TX] : undefined;
}

/** Runs `fn` when `sql` (a pool of ours) starts closing, before it waits for in-flight work. */
function onClose(sql, fn) {
  if (sql instanceof MysqlSql) sql[ON_CLOSE](fn);
}

function isNative(sql) {
  return sql instanceof MysqlSql;
}

/** The pool facts the tracing channels publish for `sql` (ours or a transaction handle of ours). */
function serverInfoOf(sql) {
  return sql && typeof sql === 'object' ? sql[SERVER] : undefined;
}

module.exports = { mysqlPool, MysqlSql, nativeOf, nativeTxOf, isNative, configOf, serverInfoOf, onClose, PARK };
