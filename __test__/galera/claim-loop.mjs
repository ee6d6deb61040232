// The workers of the cluster claim and drain tests (galera/, group-replication/multi-primary):
// their small pools, closed when the test ends, and the claiming loop — claim → heartbeat each
// lease at once → ack until the queue looks empty to its member or the round's deadline passes.
// The tests judge what it saw.
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs worker `wk` ({ name, sql, backend }) until three empty claims in a row (with leases that
 * never expire, an empty queue on its member means every job is taken or done: a member that lags
 * sees more jobs, not fewer) or `deadline`. Reports through the callbacks: `claimed(leases)` for each
 * successful claim (an empty one too), `claimFailed(e, reran)` with the pool's re-runs during that claim (a worker's
 * calls run one at a time, so they are this call's), `heartbeatFailed(lease, e)` ("no longer held"
 * right after a claim means the claim never committed), `ackFailed(e)`.
 */
export async function claimUntilEmpty(
  wk,
  { limit, leaseMs, deadline, claimed, claimFailed, heartbeatFailed, ackFailed },
) {
  const { queue } = wk.backend;
  let empty = 0;
  while (empty < 3 && Date.now() < deadline) {
    let leases;
    const retries0 = wk.sql.stats().deadlockRetries;
    try {
      leases = await queue.claim({ limit, leaseMs });
    } catch (e) {
      claimFailed(e, wk.sql.stats().deadlockRetries - retries0);
      await sleep(20);
      continue;
    }
    claimed(leases);
    if (leases.length === 0) {
      empty++;
      await sleep(30);
      continue;
    }
    empty = 0;
    for (const lease of leases) {
      try {
        await queue.heartbeat(lease, { leaseMs });
      } catch (e) {
        heartbeatFailed(lease, e);
      }
      try {
        await queue.ack(lease);
      } catch (e) {
        ackFailed(e);
      }
    }
  }
}

/**
 * A maker of small pools for one test's workers (2 connections each, 20 s to acquire one), every
 * one closed when test `t` ends, whatever happened.
 */
export function workerPools(t, mysqlPool) {
  const pools = [];
  t.after(async () => {
    for (const p of pools) if (!p.closed) await p.close();
  });
  return (url) => {
    const p = mysqlPool(`${url}?connectionLimit=2&acquireTimeoutMs=20000`);
    pools.push(p);
    return p;
  };
}
