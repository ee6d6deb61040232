// Last-resort clean-up of the servers a test process started: on exit, and on SIGINT / SIGTERM /
// SIGHUP when nobody else handles them, `killSync` runs for everything still in `live`.
import os from 'node:os';

const registered = new Set();

/** Registers `killSync(item)` for every item left in `live` when the process ends (once per set). */
export function killOnExit(live, killSync) {
  if (registered.has(live)) return;
  registered.add(live);
  const killAll = () => {
    for (const item of [...live]) killSync(item);
  };
  process.on('exit', killAll);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => {
      // Only act as the default handler would (terminate) when nobody else listens for this
      // signal (ours: one per registered set); otherwise the other listener decides, and the
      // 'exit' hook still cleans up.
      if (process.listenerCount(sig) > registered.size) return;
      killAll();
      process.exit(128 + os.constants.signals[sig]);
    });
  }
}
