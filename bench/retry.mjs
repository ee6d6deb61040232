// Retrying the operations that meet a deadlock or lock-wait timeout, and counting the retries
// (the `retries` column). The pauses are inside the timed region: a caller has to retry too.

/** Deadlocks (1213) and lock-wait timeouts (1205) are transient: the bench retries the operation. */
const isTransient = (e) =>
  e?.errno === 1213 || e?.errno === 1205 || /deadlock|lock wait timeout/i.test(String(e?.message ?? ''));
let transientRetries = 0;

/**
 * Re-runs `fn` after a deadlock or lock-wait timeout, up to `attempts` times, after a short random
 * pause (0 … a ms at attempt a) so that the same racers do not collide again at once: 16
 * concurrent seed dueBatch calls met 10 deadlocks in a row on one call in one run.
 */
export async function withRetry(fn, attempts = 30) {
  for (let a = 1; ; a++) {
    try {
      return await fn();
    } catch (e) {
      if (!isTransient(e) || a >= attempts) throw e;
      transientRetries += 1;
      await new Promise((r) => setTimeout(r, Math.random() * a));
    }
  }
}

/** Runs op(i) for i in [0, n) with `conc` in flight (each op retried on deadlock). */
export async function runOps(n, conc, op) {
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      await withRetry(() => op(i));
    }
  };
  await Promise.all(Array.from({ length: Math.min(conc, n) }, worker));
}

/** Retries so far in this process (execute.mjs takes the difference over a measured region). */
export const retriesSoFar = () => transientRetries;
