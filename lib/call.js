'use strict';
// One call into Rust per port method. Arguments are validated and encoded synchronously (a bad
// one rejects the returned promise before anything is sent); Rust then runs the whole unit of
// work — on our native pool, or statement by statement through a user's `Sql` via the bridge —
// and decides by itself which units are transactions.
const c = require('./check');
const binding = require('./binding');
const { bridge } = require('./bridge');
const { nativeOf, nativeTxOf, serverInfoOf, settled } = require('./sql');
const tracing = require('./observe/tracing');
const { observed, timedCall } = require('./observe/calls');

/**
 * `call(method, build)`: `build()` returns the native method's arguments (or throws). `joined`:
 * `sql` is a handle of a transaction the caller holds (inTx); `turn(send)` then orders a wrapped
 * call among the caller's statements (lib/intx.js).
 */
function createCaller(sql, prefix, contract, joined = false, turn = (send) => send()) {
  const native = nativeOf(sql);
  const nativeTx = nativeTxOf(sql);
  const server = serverInfoOf(sql);
  let run;
  if (nativeTx) {
    // inTx over our pool: every unit runs inside the caller's transaction, in Rust.
    const nb = binding.NativeBackend.joined(nativeTx, prefix, contract);
    run = (method, args) => nb[method](...args);
  } else if (native) {
    const nb = binding.NativeBackend.native(native, prefix, contract);
    run = (method, args) => sql.track(() => nb[method](...args));
  } else {
    if (!sql || typeof sql.query !== 'function' || typeof sql.exec !== 'function' || typeof sql.tx !== 'function') {
      throw c.typeError('createMysqlBackend: sql must be mysqlPool(...) or an object with query, exec and tx');
    }
    const nb = binding.NativeBackend.wrapped(prefix, contract, joined);
    // The caller's own driver error (with its code/errno) is rethrown, not Rust's copy of it.
    // `traced`: the call's context on the tracing channel, when it has a subscriber.
    run = (method, args, traced) =>
      turn(() => {
        const seen = { error: undefined };
        const tap = traced === undefined ? undefined : tracing.bridgeTap(traced);
        return nb[method](...args, bridge(sql, seen, tap)).catch((e) => {
          throw seen.error !== undefined ? seen.error : e;
        });
      });
  }
  /** The call, traced when its channel has a subscriber. */
  const send = (method, args) => {
    if (!tracing.wanted(server)) return run(method, args);
    const info = { method, ...tracing.subjectOf(method, args), contract };
    return tracing.traceCall(server, info, Boolean(native || nativeTx), (ctx) => run(method, args, ctx));
  };
  return (method, build) => {
    let args;
    try {
      args = build();
    } catch (e) {
      return Promise.reject(e);
    }
    // Timed for the pool's call observers (an OpenTelemetry histogram), when it has any. A
    // rejection gets the caller's stack (lib/failure.js).
    if (!observed(server)) return settled(send(method, args));
    return settled(timedCall(server, method, () => send(method, args)));
  };
}

module.exports = { createCaller };
