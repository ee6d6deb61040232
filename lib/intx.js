'use strict';
// inTx(poolOrSql, fn, opts?): `fn(backend, tx)` inside ONE transaction. Every store / queue /
// timer call through `backend` joins it (flat nesting: a unit that would open its own
// transaction runs inside this one), so the caller's own writes on `tx` and the runs it starts,
// enqueues or signals commit together, or — when `fn` throws — not at all. Over our native pool
// the units run in Rust on the transaction's connection (each behind a savepoint: a failing unit
// leaves nothing of itself behind); over any other `Sql` through its `tx` handle.
const c = require('./check');
const { backendOf } = require('./backend');
const { isNative, mysqlPool } = require('./sql');

/** The native pool opened once for a mysql2 pool handed to inTx (what the JS package takes). */
const forMysql2 = new WeakMap();

function sqlOf(x) {
  if (isNative(x)) return x;
  if (x && typeof x.query === 'function' && typeof x.exec === 'function' && typeof x.tx === 'function') return x;
  if (x && typeof x === 'object') {
    let sql = forMysql2.get(x);
    if (!sql) {
      sql = mysqlPool(x); // throws a TypeError for anything that is not a mysql2 pool either
      forMysql2.set(x, sql);
    }
    return sql;
  }
  throw c.typeError('inTx: expected mysqlPool(...), an Sql (query/exec/tx) or a mysql2 pool');
}

/**
 * Issue order over a wrapped `Sql` (the native path keeps it in Rust): the caller's statements on
 * `tx` and the backend's calls take turns on one chain, each sent once the one before settled, so
 * a unit's statements (which reach the bridge only after a trip through Rust) never fall behind a
 * statement the caller issued after it. The backend's own statements use `tx` itself.
 */
function inIssueOrder(tx) {
  let last = Promise.resolve();
  const turn = (send) => {
    const p = last.then(send);
    last = p.then(
      () => undefined,
      () => undefined,
    );
    return p;
  };
  /** Resolves once every call issued so far (and any issued meanwhile) has settled. */
  const drained = async () => {
    let seen;
    do {
      seen = last;
      await seen;
    } while (seen !== last);
  };
  // A handle of its own (not `tx` itself): a call on it always takes its turn; a nested `tx`
  // runs flat, inside this one, on the same handle.
  const handle = {
    query: (text, params) => turn(() => tx.query(text, params)),
    exec: (text, params) => turn(() => tx.exec(text, params)),
    tx: (f) => Promise.resolve().then(() => f(handle)),
  };
  return { handle, turn, drained };
}

/** inTx with `fallback` as the contract an absent `opts.contract` means. */
function inTxOf(poolOrSql, fn, opts, fallback) {
  let sql;
  try {
    if (typeof fn !== 'function') throw c.typeError('inTx: fn must be a function');
    sql = sqlOf(poolOrSql);
  } catch (e) {
    return Promise.reject(e);
  }
  const o = c.absent(opts) ? {} : opts;
  if (isNative(sql)) return sql.tx((tx) => fn(backendOf(tx, o, fallback, true), tx));
  return sql.tx(async (tx) => {
    const { handle, turn, drained } = inIssueOrder(tx);
    // The caller's transaction ends only after every call issued in it was sent and answered,
    // awaited by `fn` or not (as over our own pool).
    try {
      return await fn(backendOf(tx, o, fallback, true, turn), handle);
    } finally {
      await drained();
    }
  });
}

/** `inTx(poolOrSql, fn, opts?)`, defaulting to the 2.0.0-alpha.2 contract. */
const inTx = (poolOrSql, fn, opts) => inTxOf(poolOrSql, fn, opts, '2.0.0-alpha.2');

module.exports = { inTx, inTxOf };
