'use strict';
// Per-call observers of a pool: functions told of every port call's method, duration and error
// when it settles — what an OpenTelemetry histogram needs (one value per call), which counters in
// Rust cannot give. Keyed by the pool's `server` object (tracing.serverOf), which its transaction
// handles share, so that inTx calls count too. Without an observer a call pays one WeakMap look-up.

/** server → Set<(method, seconds, error?) => void>. */
const observers = new WeakMap();

/** Adds `fn` to `server`'s observers; answers a function that removes it. */
function observeCalls(server, fn) {
  if (!observers.has(server)) observers.set(server, new Set());
  const set = observers.get(server);
  set.add(fn);
  return () => set.delete(fn);
}

/** Whether `server` has observers (without, a call is not timed here). */
function observed(server) {
  const set = server ? observers.get(server) : undefined;
  return set !== undefined && set.size > 0;
}

/** Runs `start()` (a port call answering a promise); tells `server`'s observers when it settles. */
function timedCall(server, method, start) {
  const set = server ? observers.get(server) : undefined;
  if (!set || set.size === 0) return start();
  const t0 = performance.now();
  const tell = (error) => {
    const seconds = (performance.now() - t0) / 1000;
    for (const fn of set) {
      try {
        fn(method, seconds, error);
      } catch {
        // an observer's failure is not the call's
      }
    }
  };
  const p = start();
  p.then(
    () => tell(undefined),
    (e) => tell(e ?? new Error('rejected')),
  );
  return p;
}

module.exports = { observeCalls, observed, timedCall };
