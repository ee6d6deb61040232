// Push on a single-primary group (docs/push.md, "Where it does not reach"): every write, park and
// ring goes to the one primary — the pool's probe sets the secondaries aside — so a worker in
// another process, on a host list naming all three members, is rung as on one server, after a
// switchover too. The pool's stats() show each member's role and whether the primary is listed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import m from '../../index.js';
import { useGroup } from '../helpers/group-replication.mjs';
import { forkChild } from '../push/helpers.mjs';
import { hostList } from './drain.mjs';

const gr = useGroup({ mode: 'single' });
const { skip } = gr;
const PARK_MS = 20_000;

/** A database with the schema; its host list (every member); a ringing backend on it. */
async function setUp(t) {
  const db = await gr.group.createDatabase('gr_push');
  const url = hostList(gr.group, db);
  const sql = m.mysqlPool(url);
  t.after(() => sql.close());
  await m.applySchema(sql);
  const listener = m.createMysqlListener(sql); // never started: it rings
  t.after(() => listener.close());
  return { db, url, sql, backend: m.createMysqlBackend(sql, { listener }), listener };
}

/** Makes work and answers how long the parked child took to wake (ms after the enqueue). */
async function wakeAfterWork(child, backend) {
  child.send({ type: 'wait', timeoutMs: PARK_MS + 5000 });
  await new Promise((r) => setTimeout(r, 500)); // parked by now
  const { runId } = await backend.store.startRun({ name: 'push', version: 1, input: 1 });
  const madeAt = Date.now();
  await backend.queue.enqueue(runId);
  const woke = await child.next('woke', PARK_MS + 10_000);
  await backend.queue.claim({ limit: 10, leaseMs: 60_000 }); // nothing claimable for the next park
  return woke.at - madeAt;
}

test(
  'a worker parked on the primary through a host list is rung by a submitter on the same list, after a switchover too',
  { skip, timeout: 180_000 },
  async (t) => {
    const env = await setUp(t);
    const child = await forkChild(env.url, { PUSH_INTERVAL_MS: String(PARK_MS) });
    t.after(() => child.close());
    const before = await wakeAfterWork(child, env.backend);
    t.diagnostic(`single-primary group: woke ${before} ms after the enqueue`);
    // Ended by the ring, not the 20 s park.
    assert.ok(before < PARK_MS / 2, `woke ${before} ms after the work was made`);

    child.send({ type: 'stats' });
    const { stats } = await child.next('stats');
    assert.equal(stats.mode, 'doorbell', JSON.stringify(stats));
    assert.equal(stats.cluster, 'group-replication single-primary');
    assert.ok(stats.rung >= 1, `the park was rung (${JSON.stringify(stats)})`);

    const hosts = env.sql.stats().hosts;
    const seen = hosts.filter((h) => h.group);
    assert.ok(seen.length >= 1, `the probe recorded the members' views (${JSON.stringify(hosts)})`);
    for (const h of seen) {
      assert.equal(h.group.singlePrimary, true);
      assert.equal(h.group.primaryListed, true, 'the primary is one of the pool hosts');
    }
    const primary = await gr.group.primary();
    assert.ok(
      seen.some((h) => h.port === primary.port && h.group.role === 'PRIMARY'),
      JSON.stringify(hosts),
    );

    // A planned switchover: parks and rings follow the new primary.
    const next = gr.group.members.find((mb) => mb !== primary && mb.running);
    await gr.group.setPrimary(next);
    let after;
    for (let attempt = 0; attempt < 3 && after === undefined; attempt++) {
      try {
        after = await wakeAfterWork(child, env.backend);
      } catch (e) {
        // A call in flight at the handover may fail once (its connection was the old primary's).
        t.diagnostic(`after the switchover, attempt ${attempt}: ${e.message}`);
      }
    }
    t.diagnostic(`after a switchover: woke ${after} ms after the enqueue`);
    assert.ok(after < PARK_MS / 2, `woke ${after} ms after the work was made, on the new primary`);
  },
);

test(
  "doctor knows the group: the member's state and role, whether the pool's hosts name the primary, the queues",
  { skip, timeout: 120_000 },
  async (t) => {
    const env = await setUp(t);
    const { checkDatabase } = m;
    const byName = (r) => Object.fromEntries(r.checks.map((c) => [c.name, c]));
    const listed = byName(await checkDatabase(env.url));
    assert.equal(listed.group.verdict, 'ok', listed.group.detail);
    assert.equal(listed.group.value.mode, 'single-primary');
    assert.equal(listed.group.value.online, 3);
    assert.equal(listed['group.primary'].verdict, 'ok', listed['group.primary'].detail);
    assert.equal(listed['group.queues'].verdict, 'ok', listed['group.queues'].detail);

    // A pool of one secondary only: its writes would be refused.
    const primary = await gr.group.primary();
    const secondary = gr.group.members.find((mb) => mb !== primary && mb.running);
    const alone = byName(await checkDatabase(`mysql://root@127.0.0.1:${secondary.port}/${env.db.name}`));
    assert.equal(alone.group.value.role, 'SECONDARY', alone.group.detail);
    assert.notEqual(alone['group.primary'].verdict, 'ok', alone['group.primary'].detail);
    assert.match(alone['group.primary'].detail, /do not include the primary/);
  },
);
