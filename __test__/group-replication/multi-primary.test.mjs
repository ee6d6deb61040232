// Group Replication, multi-primary: workers on every member write at once, and the group
// certifies each transaction against the others at commit. The loser of a conflict is rolled
// back everywhere and its client gets errno 3101 (ER_TRANSACTION_ROLLBACK_DURING_COMMIT) at
// COMMIT; `SKIP LOCKED` only sees locks taken on its own member, so workers on different members
// take the same head-of-queue jobs and collide there. The package re-runs such a unit (as after a
// Galera certification failure, 1213), so nothing of it reaches the caller and every job is still
// leased once.
//
// (a) claims: rounds of jobs enqueued on member 1, 3 claiming workers on each member (in this
//     process, each with its own pool to its member), each lease heartbeated at once (a claim
//     reported done that the group rolled back fails it), then acked: no job leased twice;
// (b) an engine-shaped drain with outboxes (drain.mjs), 3 worker processes, one per member,
//     3 workers each on that member: every run done exactly once, outboxes complete, members
//     identical.
// In both, no error reaches a caller, a conflict (3101, or a local deadlock with a certified
// remote transaction: 1213, 1180 "Lock deadlock") included: the package runs a unit again for at
// least 8 attempts and for up to 5 s after its first. Most conflicts are at the head of the
// queue, where every member's workers take the same jobs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import m from '../../index.js';
import { claimUntilEmpty, workerPools } from '../galera/claim-loop.mjs';
import { APP_USER, useGroup } from '../helpers/group-replication.mjs';
import { conflictAfterReruns, drainUnderFault } from './drain.mjs';

const { mysqlPool, applySchema, createMysqlBackend } = m;

const JOBS = 1500; // per round
const LIMITS = [1, 2, 4];
const WORKERS_PER_MEMBER = 3;
const LEASE_MS = 10 * 60_000;
const ROUND_DEADLINE_MS = 60_000;

const gr = useGroup({ mode: 'multi' });
const { skip } = gr;

/** Conflicts the group's certifier has found so far (each member certifies every transaction). */
async function conflicts() {
  const facts = await gr.group.facts();
  return Math.max(...facts.map((f) => f.conflicts ?? 0));
}

const memberUrl = (k, db) => `mysql://${APP_USER}@127.0.0.1:${gr.group.members[k].port}/${db.name}`;

test(
  `${LIMITS.length} rounds of ${JOBS} jobs, ${WORKERS_PER_MEMBER} claiming workers on each of 3 primaries: no job leased twice`,
  { skip, timeout: 300_000 },
  async (t) => {
    const { group } = gr;
    const db = await group.createDatabase('gr_mp_claims');
    const pool = workerPools(t, mysqlPool);
    const setup = pool(`${group.members[0].url}${db.name}`);
    await applySchema(setup);
    const b1 = createMysqlBackend(setup);
    const workers = [];
    group.members.forEach((mb, k) => {
      for (let w = 0; w < WORKERS_PER_MEMBER; w++) {
        const sql = pool(memberUrl(k, db));
        workers.push({ name: `${mb.name}w${w}`, sql, backend: createMysqlBackend(sql) });
      }
    });

    const claimsOf = new Map();
    const heartbeatFailures = [];
    const errors = [];
    let exhausted = 0; // claims whose conflicts outlasted the package's re-runs (they wrote nothing)
    const rounds = [];
    const conflicts0 = await conflicts();
    for (const [r, limit] of LIMITS.entries()) {
      const ids = Array.from({ length: JOBS }, (_, i) => `r${r}-job-${String(i).padStart(5, '0')}`);
      for (let k = 0; k < ids.length; k += 50)
        await Promise.all(ids.slice(k, k + 50).map((id) => b1.queue.enqueue(id)));
      await group.waitForSync();
      const round = { limit, leases: 0, retries: 0 };
      const retries0 = workers.reduce((n, wk) => n + wk.sql.stats().deadlockRetries, 0);
      const deadline = Date.now() + ROUND_DEADLINE_MS;
      const tr = Date.now();
      await Promise.all(
        workers.map((wk) =>
          claimUntilEmpty(wk, {
            limit,
            leaseMs: LEASE_MS,
            deadline,
            claimed(leases) {
              round.leases += leases.length;
              for (const lease of leases) claimsOf.set(lease.runId, [...(claimsOf.get(lease.runId) || []), wk.name]);
            },
            claimFailed(e, reran) {
              if (conflictAfterReruns({ errno: e.errno, message: e.message, reran })) exhausted++;
              errors.push(`${wk.name} claim (re-run ${reran} times): ${e.errno ?? e.code} ${e.message}`);
            },
            heartbeatFailed(lease, e) {
              heartbeatFailures.push(`${wk.name} ${lease.runId}: ${e.message}`);
            },
            ackFailed(e) {
              errors.push(`${wk.name} ack: ${e.errno ?? e.code} ${e.message}`);
            },
          }),
        ),
      );
      round.ms = Date.now() - tr;
      round.retries = workers.reduce((n, wk) => n + wk.sql.stats().deadlockRetries, 0) - retries0;
      await group.waitForSync();
      round.left = (await group.rowCounts(db.name, ['job'])).map((c) => c.counts.job);
      round.never = ids.filter((id) => !claimsOf.has(id)).length;
      rounds.push(round);
      t.diagnostic(
        `round ${r}: limit ${limit}: ${round.leases} leases, never claimed ${round.never}, re-run ${round.retries}, jobs left ${round.left.join('/')}, ${round.ms} ms`,
      );
      if (round.left.some((c) => c > 0)) break;
    }
    const found = (await conflicts()) - conflicts0;
    const doubles = [...claimsOf].filter(([, list]) => list.length > 1);
    const retries = rounds.reduce((n, r) => n + r.retries, 0);
    const summary =
      `multi-primary claims: ${rounds.length} × ${JOBS} jobs (limits ${LIMITS.join('/')}), 3 members × ${WORKERS_PER_MEMBER} workers; ` +
      `jobs leased twice ${doubles.length}, heartbeats failed right after the claim ${heartbeatFailures.length}; ` +
      `certification conflicts: ${found} on the group, ${retries} units re-run inside the package; ` +
      `claims whose conflicts outlasted the re-runs ${exhausted}, errors that reached a caller ${errors.length}; group start-up ${group.startupMs} ms ${JSON.stringify(group.phases)}`;
    t.diagnostic(summary);
    console.log(`# ${summary}`);

    assert.equal(rounds.length, LIMITS.length, `every round drained its queue (${summary})`);
    assert.ok(found > 0, 'the members conflicted (else this test proves nothing)');
    assert.deepEqual(doubles.slice(0, 20), [], `no job leased twice (${summary})`);
    assert.deepEqual(heartbeatFailures.slice(0, 20), [], 'every heartbeat right after its claim succeeded');
    assert.deepEqual(
      errors.slice(0, 20),
      [],
      'no error reached a caller, a conflict included (the package re-runs it inside)',
    );
    assert.equal(claimsOf.size, rounds.length * JOBS, 'every job claimed exactly once');
  },
);

test(
  'an engine-shaped drain with workers on all three primaries: each run done once, conflicts re-run inside',
  { skip, timeout: 300_000 },
  async (t) => {
    const before = await conflicts();
    const { retries } = await drainUnderFault(t, gr.group, {
      label: 'gr_mp_drain',
      main: 600,
      paceMs: 0,
      leaseMs: 60_000,
      processes: (db) =>
        gr.group.members.map((mb, k) =>
          Array.from({ length: WORKERS_PER_MEMBER }, (_, w) => ({ name: `${mb.name}w${w}`, url: memberUrl(k, db) })),
        ),
      // A claim is where workers on different members collide: its conflicts are re-run inside.
      acceptable: () => false,
    });
    const found = (await conflicts()) - before;
    t.diagnostic(`certification conflicts on the group ${found}, units re-run inside the package ${retries}`);
    assert.ok(found > 0, 'the members conflicted (else this test proves nothing)');
  },
);
