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
        const ms = Number.isFinite(timeoutMs) && timeoutMs > 0 ? Math.min(timeoutMs, 2 ** 31 - 1) : 0;
        const timer = setTimeout(done, ms);
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
