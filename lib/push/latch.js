'use strict';
// The dispatch side of a listener: waiters of `waitForWork(timeoutMs, signal?)`, released all at
// once by `fire()`. A fire that lands while nobody waits (the worker loop is mid-tick) is kept
// for the next call, which then returns at once: without it a wake would cost a full timeout.
const c = require('../check');

/** Node's setTimeout limit; a longer wait is a wait of that long (the backstop timeout anyway). */
const MAX_TIMER = 2 ** 31 - 1;

function createLatch() {
  const waiters = new Set(); // () => void
  let pending = false;

  return {
    /** Resolves every waiter now; with none, latches the wake for the next `wait`. */
    fire() {
      if (waiters.size === 0) {
        pending = true;
        return;
      }
      const all = [...waiters];
      waiters.clear();
      for (const w of all) w();
    },
    /** Drops a latched wake (a closed listener does not keep one). */
    clear() {
      pending = false;
    },
    /** How many calls wait now. */
    get size() {
      return waiters.size;
    },
    /** When the first waiter's timeout ends (epoch ms; Infinity with none). */
    soonest() {
      let min = Infinity;
      for (const w of waiters) min = Math.min(min, w.until);
      return min;
    },
    /**
     * Resolves (never rejects) on the next `fire()`, a latched one, `timeoutMs`, or `signal`
     * aborting. A bad argument throws a TypeError at once, before anything waits.
     */
    wait(timeoutMs, signal) {
      if (typeof timeoutMs !== 'number' || Number.isNaN(timeoutMs)) {
        throw c.typeError(`waitForWork: timeoutMs must be a number, got ${typeof timeoutMs}`);
      }
      if (!c.absent(signal) && (typeof signal !== 'object' || typeof signal.addEventListener !== 'function')) {
        throw c.typeError('waitForWork: signal must be an AbortSignal');
      }
      if (signal?.aborted) return Promise.resolve();
      if (pending) {
        pending = false;
        return Promise.resolve();
      }
      return new Promise((resolve) => {
        const done = () => {
          clearTimeout(timer);
          waiters.delete(done);
          signal?.removeEventListener('abort', done);
          resolve();
        };
        const ms = Math.min(Math.max(timeoutMs, 0), MAX_TIMER);
        const timer = setTimeout(done, ms);
        done.until = Date.now() + ms;
        waiters.add(done);
        signal?.addEventListener('abort', done, { once: true });
      });
    },
  };
}

module.exports = { createLatch };
