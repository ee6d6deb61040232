'use strict';
// In-process, edge-triggered wakeup (docs/contract.md, "Wakeup"): a signal resolves the waiters present at that
// moment and is otherwise forgotten.

function createWakeup() {
  const waiters = new Map(); // runId -> Set<() => void>
  return {
    wait(runId, timeoutMs) {
      return new Promise((resolve) => {
        let set = waiters.get(runId);
        if (!set) waiters.set(runId, (set = new Set()));
        const done = () => {
          clearTimeout(timer);
          set.delete(done);
          if (set.size === 0 && waiters.get(runId) === set) waiters.delete(runId);
          resolve(undefined);
        };
        // Node's own coercion, as the JavaScript package gets it: '60' waits 60 ms; NaN, a
        // negative or an over-large value (≥ 2^31, with Node's TimeoutOverflowWarning) 1 ms.
        const timer = setTimeout(done, timeoutMs);
        set.add(done);
      });
    },
    async signal(runId) {
      const set = waiters.get(runId);
      if (!set) return undefined;
      for (const done of [...set]) done();
      return undefined;
    },
  };
}

module.exports = { createWakeup };
