// Galera 4 — push across the nodes of a 3-node MariaDB Galera cluster (issue #22).
//
// The listener's probe is a plain read of the backend's tables, so a process attached to node B
// sees work committed on node A as soon as B has applied the write set. Each test forks a child
// (../push/fixtures/child.mjs) whose pool and listener are on node 2 while this process writes on
// node 1, on a database of its own:
//   - an idle `waitForWork(20 s)` in the child is released by an enqueue, a spawn through a
//     checkpoint's outbox and a timer falling due, each made on node 1 — by the work, not by its
//     timeout;
//   - an idle resident engine loop (core's `engine.run()` semantics, tickMs 5 s: an idle wait of
//     at least 5 s between claims) starts runs submitted on node 1 within BOUND_MS, while the same
//     loop with push off, same set-up, has not started its run by then (its next claim is seconds
//     away);
//   - core's result() loop in the child (a 20 s re-read) returns soon after node 1 finishes the run.
// And mysqlClassify on the Galera class: a node that refuses service answers 1047, transient.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import mysql from 'mysql2/promise';
import m from '../../index.js';
import { useGaleraCluster } from '../helpers/galera.mjs';
import { WAYS, forkChild, pushDatabase, sleep } from '../push/helpers.mjs';

const { mysqlClassify, mysqlPool } = m;

/** The waiters' timeout: far longer than any bound asserted, so a wake before it is push's. */
const LONG = 20_000;
/** "Promptly", for one wake across nodes: generous for a loaded 2-core box and a debug build. */
const PROMPT_MS = 3000;
/** The engine loop's tickMs: with it, the polling loop's next claim is ≥ 5 s after its last. */
const TICK_MS = 5000;
/** Submit → first step start, push on; the push-off control must not have started by then. */
const BOUND_MS = 2000;
const RUNS = 3;

const galera = useGaleraCluster();
const { skip } = galera;

/**
 * A fresh database; `env` writes on node 1 (schema applied there), the child (push on unless
 * `childEnv.PUSH_OFF`) runs on node 2. Runs `body(env, child)`, then cleans up.
 */
async function acrossNodes(label, childEnv, body) {
  const { cluster } = galera;
  const db = await cluster.createDatabase(label);
  const env = await pushDatabase(label, db.urls[0]);
  await cluster.waitForSync(); // the schema is on node 2 before its child probes
  const child = await forkChild(db.urls[1], childEnv);
  try {
    await body(env, child);
  } finally {
    await child.close();
    await env.close();
  }
}

for (const [way, make] of Object.entries(WAYS)) {
  test(
    `work made by ${way} on node 1 wakes an idle waitForWork(20 s) of a process on node 2`,
    { skip, timeout: 60_000 },
    async (t) => {
      await acrossNodes('galera_push_wait', {}, async (env, child) => {
        assert.equal(child.ready.state, 'listening');
        child.send({ type: 'wait', timeoutMs: LONG });
        await sleep(300); // the child waits now, and has probed node 2 a few times finding nothing
        const madeAt = Date.now();
        await make(env);
        const woke = await child.next('woke', LONG + 5000);
        t.diagnostic(`woke ${woke.at - madeAt} ms after the work was committed on node 1 (waited ${woke.ms} ms)`);
        assert.ok(woke.ms < LONG - 5000, `resolved by the work, not by its timeout (waited ${woke.ms} ms)`);
        assert.ok(woke.at - madeAt < PROMPT_MS, `woke ${woke.at - madeAt} ms after the work was committed`);
      });
    },
  );
}

// On a cluster the listener knows a ring reaches one node: it parks no longer than a probe
// interval (so the tests above wake across nodes), and a ring on its own node still ends a park
// at once — here a 10 s one (intervalMs 10 000 set by hand), rung by a submitter on node 2.
test(
  'on a Galera node the doorbell says it reaches that node only, and a ring there wakes at once',
  { skip, timeout: 60_000 },
  async (t) => {
    const { cluster } = galera;
    const db = await cluster.createDatabase('galera_bell');
    const env = await pushDatabase('galera_bell', db.urls[0]);
    await cluster.waitForSync();
    const near = await pushDatabase('galera_bell', db.urls[1], { ring: true });
    const plain = await forkChild(db.urls[1]);
    const child = await forkChild(db.urls[1], { PUSH_INTERVAL_MS: '10000' });
    try {
      plain.send({ type: 'stats' });
      const { stats } = await plain.next('stats');
      assert.equal(stats.mode, 'doorbell-node');
      assert.equal(stats.intervalMs, 50, 'parks as short as the probes on a cluster');
      child.send({ type: 'wait', timeoutMs: LONG });
      await sleep(300);
      const madeAt = Date.now();
      await near.backend.queue.enqueue(await near.run());
      const woke = await child.next('woke', LONG + 5000);
      t.diagnostic(`a ring on node 2 woke a 10 s park on node 2 ${woke.at - madeAt} ms after the enqueue`);
      assert.ok(woke.at - madeAt < PROMPT_MS, `woke ${woke.at - madeAt} ms after the enqueue`);
    } finally {
      await child.close();
      await plain.close();
      await near.close();
      await env.close();
    }
  },
);

/** Submits a run on node 1 and waits at most `ms` for the child's engine to start it: lag, or undefined. */
async function submitAndTime(env, child, ms) {
  const runId = await env.run();
  const submittedAt = Date.now();
  await env.backend.queue.enqueue(runId);
  const started = await child.next('started', ms).catch(() => undefined);
  if (started === undefined) return undefined;
  assert.equal(started.runId, runId);
  return started.at - submittedAt;
}

test(
  `an idle engine loop on node 2 starts runs submitted on node 1 within ${BOUND_MS} ms with push, not without`,
  { skip, timeout: 90_000 },
  async (t) => {
    // Control: push off, the same loop. Its first claim (found nothing) is long done after 2 s,
    // and its next is TICK_MS × 2 later: the run must still be waiting at BOUND_MS.
    await acrossNodes('galera_push_off', { PUSH_OFF: '1' }, async (env, child) => {
      assert.equal(child.ready.state, 'off');
      child.send({ type: 'engine', tickMs: TICK_MS });
      await sleep(2000);
      const lag = await submitAndTime(env, child, BOUND_MS);
      t.diagnostic(`push off: ${lag === undefined ? `not started within ${BOUND_MS} ms` : `started after ${lag} ms`}`);
      assert.equal(lag, undefined, `with push off the run waits for the loop's next claim (started after ${lag} ms)`);
    });

    await acrossNodes('galera_push_engine', {}, async (env, child) => {
      assert.equal(child.ready.state, 'listening');
      child.send({ type: 'engine', tickMs: TICK_MS });
      await sleep(2000);
      const lags = [];
      for (let i = 0; i < RUNS; i++) {
        if (i > 0) await sleep(1000); // the loop waits again (≥ TICK_MS without push)
        lags.push(await submitAndTime(env, child, LONG));
      }
      t.diagnostic(`push on: submit on node 1 → first step on node 2, ms: ${lags.join(', ')}`);
      for (const lag of lags) assert.ok(lag !== undefined && lag < BOUND_MS, `started after ${lag} ms (all: ${lags})`);
    });
  },
);

test('result() on node 2 returns soon after node 1 finishes the run', { skip, timeout: 60_000 }, async (t) => {
  await acrossNodes('galera_push_done', {}, async (env, child) => {
    const runId = await env.run();
    await galera.cluster.waitForSync(); // node 2 has the pending row the child reads first
    child.send({ type: 'result', runId, timeoutMs: 2 * LONG, pollMs: LONG });
    await sleep(300); // the child has read the pending row and waits
    const doneAt = Date.now();
    await env.backend.store.markTerminal(runId, { status: 'done', output: 42 });
    const settled = await child.next('settled', LONG + 5000);
    t.diagnostic(`result() on node 2 returned ${settled.at - doneAt} ms after markTerminal on node 1`);
    assert.equal(settled.status, 'done');
    assert.ok(settled.at - doneAt < PROMPT_MS, `returned ${settled.at - doneAt} ms after the run ended`);
  });
});

// A node that refuses service (as one that dropped out of the primary component does, or one set
// to `wsrep_reject_queries = ALL` for maintenance) answers 1047 ER_UNKNOWN_COM_ERROR "WSREP has
// not yet prepared node for application use": the next attempt reaches another node, or this one
// once it is back, so transient. wsrep_reject_queries gives the same answer at once, without the
// seconds a node takes to notice it is cut off.
test(
  'mysqlClassify: a Galera node that refuses queries (1047) is transient, through both drivers',
  { skip, timeout: 60_000 },
  async () => {
    const { cluster } = galera;
    const db = await cluster.createDatabase('galera_classify');
    await cluster.nodes[0].query(`CREATE TABLE \`${db.name}\`.t (id INT PRIMARY KEY)`);
    await cluster.waitForSync();
    const node = cluster.nodes[1];
    const native = mysqlPool(db.urls[1]);
    const direct = await mysql.createConnection({ uri: db.urls[1] });
    try {
      await node.query('SET GLOBAL wsrep_reject_queries = ALL');
      const errors = {};
      for (const [driver, query] of [
        ['native', () => native.query('SELECT id FROM t')],
        ['mysql2', () => direct.query('SELECT id FROM t')],
      ]) {
        errors[driver] = await query().then(
          () => assert.fail(`${driver}: the node answered a query it should refuse`),
          (e) => e,
        );
      }
      for (const [driver, e] of Object.entries(errors)) {
        assert.equal(e.errno, 1047, `${driver}: ${e.message}`);
        assert.equal(mysqlClassify(e), 'transient', driver);
        assert.equal(mysqlClassify(new Error('wrapped', { cause: e })), 'transient', driver);
      }
    } finally {
      await node.query('SET GLOBAL wsrep_reject_queries = NONE');
      await native.close();
      await direct.end().catch(() => {});
    }
  },
);
