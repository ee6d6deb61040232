'use strict';
// Which server a pool talks to — `mariadb` or `mysql`, the OpenTelemetry `db.system.name` — asked
// of the server itself (`SELECT VERSION()`), once per pool, the first time telemetry needs it. The
// question goes straight to the native pool: it is never published on the tracing channels nor
// counted as a port call. A wrapped `Sql` cannot be asked; its spans use the fallback.

/** A pool's `server` object (tracing.serverOf) → its native pool, which the question goes to. */
const natives = new WeakMap();
/** → 'mariadb' | 'mysql', once known. */
const known = new WeakMap();
/** → the question under way, or the time it last failed. */
const asking = new WeakMap();

/** How long a telemetry event waits for the answer before it goes on with the fallback, ms. */
const WAIT_MS = 1_000;
/** After a failed question, the next one is asked no sooner than this, ms. */
const RETRY_MS = 5_000;

/** Records that `server` (a frozen object per pool) can be asked through `native`. */
function askable(server, native) {
  if (server && native && typeof native.query === 'function') natives.set(server, native);
}

/** `mariadb` / `mysql` of a `VERSION()` text. */
const kindOf = (version) => (/mariadb/i.test(String(version)) ? 'mariadb' : 'mysql');

/** The pool's `db.system.name` when known, else undefined. */
const systemOf = (server) => (server ? known.get(server) : undefined);

/**
 * Resolves once the pool's system is known, or when it cannot be now (never rejects): at most
 * WAIT_MS, so that an event never waits long for it (a saturated pool, a server that is down).
 */
function detectSystem(server) {
  if (!server || known.has(server)) return Promise.resolve(systemOf(server));
  const native = natives.get(server);
  if (!native) return Promise.resolve(undefined);
  let q = asking.get(server);
  if (typeof q === 'number') {
    if (Date.now() - q < RETRY_MS) return Promise.resolve(undefined);
    q = undefined;
  }
  if (!q) {
    q = Promise.resolve()
      .then(() => native.query('SELECT VERSION() AS v', undefined))
      .then(
        (rows) => {
          known.set(server, kindOf(rows?.[0]?.v));
          asking.delete(server);
        },
        () => asking.set(server, Date.now()),
      );
    asking.set(server, q);
  }
  let timer;
  const late = new Promise((resolve) => {
    timer = setTimeout(resolve, WAIT_MS);
    timer.unref?.();
  });
  return Promise.race([q, late]).then(() => {
    clearTimeout(timer);
    return systemOf(server);
  });
}

/** Whether an event for `server` should wait for detectSystem() first (not while a failure is recent). */
function shouldAsk(server) {
  if (!server || known.has(server) || !natives.has(server)) return false;
  const q = asking.get(server);
  return typeof q !== 'number' || Date.now() - q >= RETRY_MS;
}

module.exports = { askable, systemOf, detectSystem, shouldAsk, kindOf };
