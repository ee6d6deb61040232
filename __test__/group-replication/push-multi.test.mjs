// Push across a multi-primary group (docs/push.md, "Where it does not reach"): a run submitted on
// one member wakes a worker parked on another. A ring reaches the parks of the members in the
// ringer's own pool only, so a listener on a multi-primary member parks as briefly as it probes
// (`doorbell-node`): the worker hears of work made elsewhere at its next park.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import m from '../../index.js';
import { APP_USER, useGroup } from '../helpers/group-replication.mjs';
import { forkChild } from '../push/helpers.mjs';

const gr = useGroup({ mode: 'multi' });
const { skip } = gr;
const WAIT_MS = 20_000;

test('a run submitted on one member wakes a worker parked on another', { skip, timeout: 180_000 }, async (t) => {
  const db = await gr.group.createDatabase('gr_push_multi');
  const on = (k) => `mysql://${APP_USER}@127.0.0.1:${gr.group.members[k].port}/${db.name}`;
  const sql = m.mysqlPool(on(0));
  t.after(() => sql.close());
  await m.applySchema(sql);
  await gr.group.waitForSync();
  const listener = m.createMysqlListener(sql);
  t.after(() => listener.close());
  const backend = m.createMysqlBackend(sql, { listener });
  const child = await forkChild(on(1)); // parked on member 2
  t.after(() => child.close());

  const woke = [];
  for (let i = 0; i < 5; i++) {
    child.send({ type: 'wait', timeoutMs: WAIT_MS });
    await new Promise((r) => setTimeout(r, 300));
    const { runId } = await backend.store.startRun({ name: 'push', version: 1, input: i }); // on member 1
    const madeAt = Date.now();
    await backend.queue.enqueue(runId);
    const w = await child.next('woke', WAIT_MS + 10_000);
    woke.push(w.at - madeAt);
    await backend.queue.claim({ limit: 10, leaseMs: 60_000 });
    await gr.group.waitForSync();
  }
  t.diagnostic(
    `multi-primary, submitted on member 1, worker on member 2: woke ${woke.join(', ')} ms after the enqueue`,
  );
  for (const ms of woke)
    assert.ok(ms < WAIT_MS / 2, `woke ${ms} ms after the work was made elsewhere, not at its timeout`);

  child.send({ type: 'stats' });
  const { stats } = await child.next('stats');
  assert.equal(stats.mode, 'doorbell-node', JSON.stringify(stats));
  assert.equal(stats.cluster, 'group-replication multi-primary');
});
