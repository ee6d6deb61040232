// The coordinating side of the multi-process flow: forks the flow workers (bench/flow-worker.mjs),
// warms them up, starts them together and stops them once their completions reach the total.
import { fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

import { flowOpts } from '../options.mjs';

const WORKER = fileURLToPath(new URL('../flow-worker.mjs', import.meta.url));

/** Sends an IPC message unless the worker is gone (its exit is reported separately). */
function tell(w, m) {
  if (w.exited || !w.child.connected) return;
  try {
    w.child.send(m, (e) => {
      if (e) w.error ??= e;
    });
  } catch (e) {
    w.error ??= e;
  }
}

/** Forks `count` flow workers for `impl` (its URL, its prefix), each with its own pool; resolves once all are warm. */
export async function spawnWorkers(impl, count) {
  const workers = [];
  try {
    for (let k = 0; k < count; k++) {
      const child = fork(WORKER, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      const w = { child, handler: undefined, exited: false, error: undefined };
      child.on('error', (e) => {
        w.error ??= e;
      });
      child.on('message', (m) => {
        if (m?.type === 'error') w.error = new Error(`flow worker ${k} (${impl.name}): ${m.message}`);
        w.handler?.(m);
      });
      child.on('exit', (code) => {
        w.exited = true;
        if (code) w.error ??= new Error(`flow worker ${k} (${impl.name}) exited with code ${code}`);
        w.handler?.({ type: 'exit', code });
      });
      workers.push(w);
    }
    await Promise.all(
      workers.map(
        (w) =>
          new Promise((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error('flow worker not ready after 60 s')), 60_000);
            w.handler = (m) => {
              if (m.type === 'ready') {
                clearTimeout(timer);
                resolve();
              } else if (m.type === 'error' || m.type === 'exit') {
                clearTimeout(timer);
                reject(w.error ?? new Error('flow worker exited'));
              }
            };
            tell(w, {
              type: 'init',
              impl: impl.name,
              url: impl.url,
              prefix: impl.prefix,
              nativeModule: impl.nativeModule,
              env: impl.env,
              flowOpts: flowOpts(),
            });
          }),
      ),
    );
  } catch (e) {
    await closeWorkers(workers);
    throw e;
  }
  return workers;
}

export async function closeWorkers(workers) {
  await Promise.all(
    workers.map(
      (w) =>
        new Promise((resolve) => {
          if (w.exited) return resolve();
          const timer = setTimeout(() => {
            w.child.kill('SIGKILL');
            resolve();
          }, 10_000);
          w.child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          tell(w, { type: 'close' });
        }),
    ),
  );
}

/**
 * The timed part of the multi-process flow: 'go' to every worker; once their 'done' reports add
 * up to `n` roots, 'stop'; the workers answer with their CPU and stats. Times go → last root done.
 */
export async function runWorkers(workers, ids, n) {
  let done = 0;
  let t0;
  let tEnd;
  const results = await new Promise((resolve, reject) => {
    const out = new Array(workers.length);
    let pending = workers.length;
    const stopAll = () => {
      for (const w of workers) tell(w, { type: 'stop' });
    };
    workers.forEach((w, k) => {
      w.handler = (m) => {
        if (m.type === 'done') {
          done += m.n;
          if (done >= n && tEnd === undefined) {
            tEnd = performance.now();
            stopAll();
          }
        } else if (m.type === 'result') {
          out[k] = m;
          if (--pending === 0) resolve(out);
        } else if (m.type === 'error' || m.type === 'exit') {
          stopAll();
          reject(w.error ?? new Error('flow worker exited early'));
        }
      };
    });
    t0 = performance.now();
    for (const w of workers) tell(w, { type: 'go', roots: ids });
  });
  const sum = (k) => results.reduce((a, r) => a + r[k], 0);
  return {
    ops: n,
    ms: tEnd - t0,
    cpuUs: sum('cpuUs'),
    mainCpuUs: sum('mainCpuUs'),
    elu: sum('elu') / results.length,
    retries: sum('retries') + sum('internalRetries'),
    perWorker: results.map((r) => ({ roots: r.stats.done, ticks: r.stats.ticks, emptyTicks: r.stats.emptyTicks })),
    stats: results.reduce(
      (a, r) => {
        for (const k of ['ticks', 'emptyTicks', 'due', 'claimed']) a[k] += r.stats[k];
        for (const [k, v] of Object.entries(r.stats.results)) a.results[k] = (a.results[k] ?? 0) + v;
        return a;
      },
      { ticks: 0, emptyTicks: 0, due: 0, claimed: 0, results: {} },
    ),
  };
}
