// Child process of the Group Replication drains (drain.mjs): a few engine-shaped workers, each
// with a pool of its own, claiming and driving runs with outboxes (../galera/outbox-runs.mjs),
// reporting every claim, every acknowledged terminal write and every error to the parent.
//
//   GR_WORKERS   JSON [{ name, url }], one worker (and pool) each
//   GR_LEASE_MS  lease of each claim
//   GR_LIMIT     claim batch size
//   GR_PACE_MS   pause after each run driven (so that a drain outlasts its faults)
//
// To the parent (IPC): { type: 'claim', worker, sentAt, at, port, leases: [{ runId, expiresAt }] }
// per claim that returned leases; { type: 'done', worker, runId, token } once a markTerminal
// resolved; { type: 'error', worker, where, runId, kind, errno, code, reran, message } per rejected
// call (`reran`: how many times the package ran its unit again before giving up);
// { type: 'exit', workers: [{ name, driven, retries }] } at the end. From the parent: 'stop'.
import m from '../../index.js';
import { drive } from '../galera/outbox-runs.mjs';

const specs = JSON.parse(process.env.GR_WORKERS);
const leaseMs = Number(process.env.GR_LEASE_MS);
const limit = Number(process.env.GR_LIMIT);
const paceMs = Number(process.env.GR_PACE_MS || 0);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let stop = false;
process.on('message', (msg) => {
  if (msg === 'stop') stop = true;
});
process.on('disconnect', () => {
  stop = true;
});
const send = (msg) => {
  if (process.connected) process.send(msg);
};

/** The port of the host a host-list pool sends its next checkout to (its first healthy host). */
function hostInUse(sql) {
  const hosts = sql.stats().hosts;
  if (!hosts || hosts.length < 2) return undefined;
  return hosts.find((h) => h.state === 'healthy')?.port;
}

/** A rejected call, with how many times the package re-ran its unit before giving up. */
const failure = (wk, where, e, runId) => ({
  type: 'error',
  worker: wk.name,
  where,
  runId,
  at: Date.now(),
  kind: e.kind,
  errno: e.errno,
  code: e.code,
  reran: wk.sql.stats().deadlockRetries - wk.retriesAtCall,
  message: String(e.message).split('\n')[0],
});

/**
 * `ports` with each method noting the pool's re-run count when it is called: a worker's calls
 * run one at a time, so a failed call's re-runs are the count's growth since.
 */
function noted(wk, ports) {
  return new Proxy(ports, {
    get(target, prop) {
      const v = target[prop];
      if (typeof v !== 'function') return v;
      return (...args) => {
        wk.retriesAtCall = wk.sql.stats().deadlockRetries;
        return v.apply(target, args);
      };
    },
  });
}

async function loop(wk) {
  while (!stop) {
    const sentAt = Date.now();
    let leases;
    try {
      leases = await wk.backend.queue.claim({ limit, leaseMs });
    } catch (e) {
      send(failure(wk, 'claim', e));
      await sleep(50);
      continue;
    }
    if (leases.length === 0) {
      await sleep(20);
      continue;
    }
    send({
      type: 'claim',
      worker: wk.name,
      sentAt,
      at: Date.now(),
      port: hostInUse(wk.sql),
      leases: leases.map((l) => ({ runId: l.runId, expiresAt: l.expiresAt.getTime() })),
    });
    for (const lease of leases) {
      try {
        const r = await drive(wk.backend, lease, (runId, token) =>
          send({ type: 'done', worker: wk.name, runId, token, at: Date.now(), expiresAt: lease.expiresAt.getTime() }),
        );
        if (r === 'done') wk.driven++;
      } catch (e) {
        // The lease is abandoned: it expires and the run is claimed again (as in core).
        send({ ...failure(wk, e.where, e, lease.runId), afterLease: Date.now() > lease.expiresAt.getTime() });
        await sleep(50);
      }
      if (paceMs) await sleep(paceMs);
    }
  }
}

const workers = specs.map(({ name, url }) => {
  const sql = m.mysqlPool(url);
  const wk = { name, sql, driven: 0, retriesAtCall: 0 };
  const backend = m.createMysqlBackend(sql);
  wk.backend = { store: noted(wk, backend.store), queue: noted(wk, backend.queue) };
  return wk;
});
send({ type: 'ready' });
await Promise.all(workers.map(loop));
const summary = workers.map((wk) => ({ name: wk.name, driven: wk.driven, retries: wk.sql.stats().deadlockRetries }));
await Promise.all(workers.map((wk) => wk.sql.close().catch(() => {})));
send({ type: 'exit', workers: summary });
process.disconnect?.();
