'use strict';
// mysqlPool(): normalises a mysql2 pool / URL / options object into our native pool, and the
// JS-side `Sql` object users and the backend share (query / exec / tx / close).
const c = require('./check');
const { configOf, poolOpts } = require('./source');
const { rejected } = require('./failure');
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

/**
 * Awaits `p` (a call's promise), giving a rejection the caller's stack (lib/failure.js): an
 * async function, so that the callers awaiting it are on the stack when it fails.
 */
async function settled(p) {
  try {
    return await p;
  } catch (e) {
    throw rejected(e, settled);
  }
}

/** The `Sql` bound to one open transaction; `tx` nests flat (runs fn on the same handle). */
function txSql(tx, server) {
  const self = {
    query(text, params) {
      return settled(
        settle(() => {
          checkText(text);
          const p = paramsOf(params);
          return tracing.traceStatement(server, text, p, () => tx.query(text, p));
        }),
      );
    },
    exec(text, params) {
      return settled(
        settle(() => {
          checkText(text);
          const p = paramsOf(params);
          return tracing.traceStatement(server, text, p, () => tx.exec(text, p));
        }),
      );
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
    return settled(
      this.track(() => {
        checkText(text);
        const p = paramsOf(params);
        return tracing.traceStatement(this[SERVER], text, p, () => this.#native.query(text, p));
      }),
    );
  }
  exec(text, params) {
    return settled(
      this.track(() => {
        checkText(text);
        const p = paramsOf(params);
        return tracing.traceStatement(this[SERVER], text, p, () => this.#native.exec(text, p));
      }),
    );
  }
  tx(fn) {
    if (typeof fn !== 'function') return Promise.reject(c.typeError('tx: fn must be a function'));
    const server = this[SERVER];
    const end = (tx, statement) =>
      tracing.traceStatement(server, statement, undefined, () =>
        statement === 'COMMIT' ? tx.commit() : tx.rollback(),
      );
    return settled(
      this.track(async () => {
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
      }),
    );
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

/** `mysqlPool(x, { setIsolation, tracing })`: x is a mysql2 Pool, a mysql:// URL, or an options object. */
function mysqlPool(x, opts) {
  const cfg = configOf(x);
  const o = poolOpts(opts);
  if (o.setIsolation !== undefined) cfg.setIsolation = o.setIsolation;
  const native = new binding.NativeSql(cfg);
  return new MysqlSql(native, tracing.serverOf(cfg, o.tracing, native));
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

module.exports = {
  settled,
  mysqlPool,
  MysqlSql,
  nativeOf,
  nativeTxOf,
  isNative,
  configOf,
  serverInfoOf,
  onClose,
  PARK,
};
