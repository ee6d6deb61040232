// docs/contract.md §12.2 (Queue, 15 checks) plus §4 details: depth(), lease versions, token format.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EXECUTORS, setup, at, T, LEASE, UUID_V4 } from './fixture.mjs';

/** The group's tests, over the backend `ctx` holds (one executor). */
function suite(ctx) {
  const claim = (n, limit = 10, leaseMs = LEASE) => ctx.queue.claim({ limit, leaseMs, now: at(n) });
  const jobRow = async (runId) =>
    (
      await ctx.rows(
        `SELECT run_at, priority, version, lease_token, lease_expires FROM ${ctx.t.job} WHERE run_id = ?`,
        [runId],
      )
    )[0];

  // ---------------------------------------------------------------------------------------------
  // §12.2 checklist
  // ---------------------------------------------------------------------------------------------

  test('12.2.1 enqueue + claim at T+0 => one lease with a non-empty token and expiresAt T+1000', async () => {
    await ctx.queue.enqueue('r1');
    const leases = await claim(0);
    assert.equal(leases.length, 1);
    const [l] = leases;
    assert.equal(l.runId, 'r1');
    assert.equal(typeof l.token, 'string');
    assert.ok(l.token.length > 0);
    assert.ok(l.expiresAt instanceof Date);
    assert.equal(l.expiresAt.getTime(), T + 1000);
    assert.equal(l.version, 1);
    const row = await jobRow('r1');
    assert.equal(row.lease_token, l.token);
    assert.equal(Number(row.lease_expires), T + 1000);
  });

  test('12.2.2 runAt T+5000 is not claimable at T+0 but is at T+5000', async () => {
    await ctx.queue.enqueue('r1', { runAt: at(5000) });
    assert.deepEqual(await claim(0), []);
    assert.deepEqual(await claim(4999), []);
    const leases = await claim(5000);
    assert.deepEqual(
      leases.map((l) => l.runId),
      ['r1'],
    );
  });

  test('12.2.3 a second claim at T+500 gets nothing', async () => {
    await ctx.queue.enqueue('r1');
    assert.equal((await claim(0)).length, 1);
    assert.deepEqual(await claim(500), []);
  });

  test('12.2.4 claim after expiry (T+1001) re-leases with a new token', async () => {
    await ctx.queue.enqueue('r1');
    const [a] = await claim(0);
    const [b] = await claim(1001);
    assert.ok(b);
    assert.equal(b.runId, 'r1');
    assert.notEqual(b.token, a.token);
    assert.equal(b.expiresAt.getTime(), T + 2001);
    assert.equal(b.version, 1);
    assert.equal((await jobRow('r1')).lease_token, b.token);
  });

  test('12.2.5 heartbeat at T+500 extends to T+1500', async () => {
    await ctx.queue.enqueue('r1');
    const [l] = await claim(0);
    const hb = await ctx.queue.heartbeat(l, { leaseMs: LEASE, now: at(500) });
    assert.equal(hb.expiresAt.getTime(), T + 1500);
    assert.ok(hb.expiresAt instanceof Date);
    assert.equal(hb.token, l.token);
    assert.equal(hb.runId, 'r1');
    assert.equal(hb.version, l.version);
    assert.deepEqual(await claim(1001), []);
    assert.deepEqual(
      (await claim(1501)).map((x) => x.runId),
      ['r1'],
    );
  });

  test('12.2.6 heartbeat with a superseded token rejects', async () => {
    await ctx.queue.enqueue('r1');
    const [old] = await claim(0);
    const [fresh] = await claim(1001);
    await assert.rejects(async () => ctx.queue.heartbeat(old, { leaseMs: LEASE, now: at(1002) }));
    // the current holder is unaffected
    assert.equal(Number((await jobRow('r1')).lease_expires), fresh.expiresAt.getTime());
  });

  test('12.2.7 after ack nothing is claimable, even at T+2000', async () => {
    await ctx.queue.enqueue('r1');
    const [l] = await claim(0);
    await ctx.queue.ack(l, { now: at(10) });
    assert.deepEqual(await claim(2000), []);
    assert.equal(await ctx.count('job'), 0);
  });

  test('12.2.8 ack with a superseded token does not remove the job; claimable again at T+2002', async () => {
    await ctx.queue.enqueue('r1');
    const [old] = await claim(0);
    const [cur] = await claim(1001);
    await ctx.queue.ack(old, { now: at(1002) });
    assert.equal(await ctx.count('job'), 1);
    assert.equal((await jobRow('r1')).lease_token, cur.token);
    const again = await claim(2002);
    assert.deepEqual(
      again.map((x) => x.runId),
      ['r1'],
    );
  });

  test('12.2.9 enqueue during the lease, then ack => job survives, claimable at T+2', async () => {
    await ctx.queue.enqueue('r1');
    const [l] = await claim(0);
    await ctx.queue.enqueue('r1');
    await ctx.queue.ack(l, { now: at(1) });
    const row = await jobRow('r1');
    assert.ok(row, 'job survives');
    assert.equal(row.lease_token, null);
    assert.equal(row.lease_expires, null);
    const again = await claim(2);
    assert.equal(again.length, 1);
    assert.equal(again[0].runId, 'r1');
    assert.equal(again[0].version, 2);
  });

  test('12.2.10 ack at T+1001 of a lease expiring at T+1000 is a no-op; claimable at T+1002', async () => {
    await ctx.queue.enqueue('r1');
    const [l] = await claim(0);
    await ctx.queue.ack(l, { now: at(1001) });
    assert.equal(await ctx.count('job'), 1);
    assert.deepEqual(
      (await claim(1002)).map((x) => x.runId),
      ['r1'],
    );
  });

  test('12.2.11 heartbeat at T+1001 of a lease expiring at T+1000 rejects', async () => {
    await ctx.queue.enqueue('r1');
    const [l] = await claim(0);
    await assert.rejects(async () => ctx.queue.heartbeat(l, { leaseMs: LEASE, now: at(1001) }));
    assert.equal(Number((await jobRow('r1')).lease_expires), T + 1000);
  });

  test('12.2.12 re-enqueue (priority 1) during a lease does not make it claimable at T+500', async () => {
    await ctx.queue.enqueue('r1');
    const [l] = await claim(0);
    await ctx.queue.enqueue('r1', { priority: 1 });
    assert.deepEqual(await claim(500), []);
    const row = await jobRow('r1');
    assert.equal(row.lease_token, l.token, 'the active lease is not yanked');
    assert.equal(Number(row.priority), 1);
    assert.equal(Number(row.version), 2);
  });

  test('12.2.13 5 jobs, claim limit 2 => exactly 2 leases', async () => {
    for (let i = 0; i < 5; i++) await ctx.queue.enqueue(`r${i}`);
    const leases = await claim(0, 2);
    assert.equal(leases.length, 2);
    assert.equal(new Set(leases.map((l) => l.runId)).size, 2);
    assert.equal(await ctx.count('job', 'lease_token IS NOT NULL'), 2);
    assert.equal((await claim(0, 10)).length, 3);
  });

  test('12.2.14 priority 1 is claimed before priority 10', async () => {
    await ctx.queue.enqueue('low', { priority: 10 });
    await ctx.queue.enqueue('high', { priority: 1 });
    assert.deepEqual(
      (await claim(0, 1)).map((l) => l.runId),
      ['high'],
    );
    assert.deepEqual(
      (await claim(0, 1)).map((l) => l.runId),
      ['low'],
    );
  });

  test('12.2.15 enqueue twice => one lease', async () => {
    await ctx.queue.enqueue('r1');
    await ctx.queue.enqueue('r1');
    const leases = await claim(0);
    assert.equal(leases.length, 1);
    assert.equal(leases[0].version, 2);
    assert.equal(await ctx.count('job'), 1);
  });

  // ---------------------------------------------------------------------------------------------
  // §4 details
  // ---------------------------------------------------------------------------------------------

  test('§4.1 enqueue writes run_at 0 / priority 0 / version 1, upserts bump the version', async () => {
    await ctx.queue.enqueue('r1');
    let row = await jobRow('r1');
    assert.equal(Number(row.run_at), 0);
    assert.equal(Number(row.priority), 0);
    assert.equal(Number(row.version), 1);
    assert.equal(row.lease_token, null);
    await ctx.queue.enqueue('r1', { runAt: at(700), priority: 5 });
    row = await jobRow('r1');
    assert.equal(Number(row.run_at), T + 700);
    assert.equal(Number(row.priority), 5);
    assert.equal(Number(row.version), 2);
    await ctx.queue.enqueue('r1');
    row = await jobRow('r1');
    assert.equal(Number(row.run_at), 0, 'latest enqueue wins (earlier too)');
    assert.equal(Number(row.priority), 0);
    assert.equal(Number(row.version), 3);
    const [l] = await claim(0);
    assert.equal(l.version, 3);
    assert.equal(typeof l.version, 'number');
  });

  test('§4.2 lease tokens have the form <uuid>:<runId>', async () => {
    await ctx.queue.enqueue('run:with:colons');
    await ctx.queue.enqueue('r2');
    const leases = await claim(0);
    assert.equal(leases.length, 2);
    for (const l of leases) {
      assert.ok(l.token.endsWith(`:${l.runId}`), l.token);
      assert.match(l.token.slice(0, 36), UUID_V4);
      assert.equal(l.token[36], ':');
      assert.equal(l.token.slice(37), l.runId);
    }
    assert.notEqual(leases[0].token.slice(0, 36), leases[1].token.slice(0, 36));
  });

  test('§4.2 claim orders by priority then run_at; lease validity is exclusive at expiry', async () => {
    await ctx.queue.enqueue('late', { runAt: at(-10) });
    await ctx.queue.enqueue('early', { runAt: at(-500) });
    await ctx.queue.enqueue('now'); // run_at 0 sorts first within priority 0
    await ctx.queue.enqueue('p1', { priority: -1, runAt: at(-1) });
    const leases = await claim(0, 10);
    assert.deepEqual(
      leases.map((l) => l.runId),
      ['p1', 'now', 'early', 'late'],
    );
    // at exactly T+1000 the leases have expired (expires > now is false)
    assert.equal((await claim(1000, 10)).length, 4);
  });

  test('§4.2 claim without now uses the wall clock', async () => {
    await ctx.queue.enqueue('r1', { runAt: new Date(Date.now() - 1000) });
    await ctx.queue.enqueue('future', { runAt: at(0) }); // 2030: not due on the wall clock
    const before = Date.now();
    const leases = await ctx.queue.claim({ limit: 10, leaseMs: 60_000 });
    const after = Date.now();
    assert.deepEqual(
      leases.map((l) => l.runId),
      ['r1'],
    );
    const exp = leases[0].expiresAt.getTime();
    assert.ok(exp >= before + 60_000 && exp <= after + 60_000, String(exp - before));
  });

  test('§4.2 limit 0 claims nothing', async () => {
    await ctx.queue.enqueue('r1');
    assert.deepEqual(await claim(0, 0), []);
    assert.equal(await ctx.count('job', 'lease_token IS NOT NULL'), 0);
  });

  test('§4.3 heartbeat producing the same expiry succeeds (found-rows)', async () => {
    await ctx.queue.enqueue('r1');
    const [l] = await claim(0);
    const a = await ctx.queue.heartbeat(l, { leaseMs: 1000, now: at(0) });
    assert.equal(a.expiresAt.getTime(), T + 1000);
    const b = await ctx.queue.heartbeat(a, { leaseMs: 1000, now: at(0) });
    assert.equal(b.expiresAt.getTime(), T + 1000);
  });

  test('§4.3 heartbeat at exactly the expiry instant rejects; heartbeat after ack rejects', async () => {
    await ctx.queue.enqueue('r1');
    const [l] = await claim(0);
    await assert.rejects(async () => ctx.queue.heartbeat(l, { leaseMs: LEASE, now: at(1000) }));
    const [l2] = await claim(1000);
    await ctx.queue.ack(l2, { now: at(1001) });
    await assert.rejects(async () => ctx.queue.heartbeat(l2, { leaseMs: LEASE, now: at(1002) }));
  });

  test('§4.4 ack release discards a mid-lease runAt (run_at = 0) and keeps the new priority', async () => {
    await ctx.queue.enqueue('r1');
    const [l] = await claim(0);
    await ctx.queue.enqueue('r1', { runAt: at(60_000), priority: 3 });
    await ctx.queue.ack(l, { now: at(5) });
    const row = await jobRow('r1');
    assert.equal(Number(row.run_at), 0);
    assert.equal(Number(row.priority), 3);
    assert.equal(Number(row.version), 2);
    assert.equal(row.lease_token, null);
    assert.equal(row.lease_expires, null);
    assert.deepEqual(
      (await claim(6)).map((x) => x.runId),
      ['r1'],
    );
  });

  test('§4.4 ack of a missing job or a bogus lease is a silent no-op', async () => {
    await ctx.queue.ack({ runId: 'nothing', token: 'x:nothing', expiresAt: at(1000), version: 1 }, { now: at(0) });
    await ctx.queue.enqueue('r1');
    await ctx.queue.ack({ runId: 'r1', token: 'bogus:r1', expiresAt: at(1000), version: 1 }, { now: at(0) });
    assert.equal(await ctx.count('job'), 1);
  });

  test('§4.4 ack without now uses the wall clock', async () => {
    await ctx.queue.enqueue('r1');
    const [l] = await claim(0); // expires in 2030, long after the wall clock
    await ctx.queue.ack(l);
    assert.equal(await ctx.count('job'), 0);
  });

  test('§4.5 depth of an empty queue', async () => {
    assert.deepEqual(await ctx.queue.depth(at(0)), { claimable: 0, leased: 0, oldestClaimableAgeMs: null });
  });

  test('§4.5 depth counts claimable / leased; future unleased jobs in neither', async () => {
    await ctx.queue.enqueue('a', { runAt: at(-500) });
    await ctx.queue.enqueue('b', { runAt: at(-100) });
    await ctx.queue.enqueue('c', { runAt: at(5000) });
    await ctx.queue.enqueue('d', { runAt: at(-1000), priority: -5 });
    const [l] = await claim(0, 1);
    assert.equal(l.runId, 'd');
    assert.deepEqual(await ctx.queue.depth(at(0)), { claimable: 2, leased: 1, oldestClaimableAgeMs: 500 });
    // at the expiry instant d is claimable again
    assert.deepEqual(await ctx.queue.depth(at(1000)), { claimable: 3, leased: 0, oldestClaimableAgeMs: 2000 });
    // a leased job counts as leased whatever its run_at
    await ctx.queue.enqueue('d', { runAt: at(9000) });
    assert.deepEqual(await ctx.queue.depth(at(500)), { claimable: 2, leased: 1, oldestClaimableAgeMs: 1000 });
    // c becomes claimable at its run_at
    assert.deepEqual(await ctx.queue.depth(at(5000)), { claimable: 3, leased: 0, oldestClaimableAgeMs: 5500 });
  });

  test('§4.5 depth quirk: an immediately-due job (run_at 0) ages from the epoch', async () => {
    await ctx.queue.enqueue('r1');
    const d = await ctx.queue.depth(at(0));
    assert.deepEqual(d, { claimable: 1, leased: 0, oldestClaimableAgeMs: T });
    assert.equal(typeof d.oldestClaimableAgeMs, 'number');
  });
}

for (const executor of EXECUTORS) describe(executor, () => suite(setup('conf_queue', { executor })));
