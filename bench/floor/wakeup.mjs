// The floor's wakeup (docs/contract.md §6): in process, a set of waiters per run id.
export function floorWakeup() {
  const waiters = new Map();
  return {
    wait(runId, timeoutMs) {
      return new Promise((resolve) => {
        const set = waiters.get(runId) ?? new Set();
        waiters.set(runId, set);
        const done = () => {
          clearTimeout(timer);
          set.delete(done);
          if (set.size === 0 && waiters.get(runId) === set) waiters.delete(runId);
          resolve(undefined);
        };
        const timer = setTimeout(done, timeoutMs);
        set.add(done);
      });
    },
    async signal(runId) {
      for (const done of [...(waiters.get(runId) ?? [])]) done();
    },
  };
}
