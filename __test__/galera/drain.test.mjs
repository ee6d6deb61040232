// Galera 2 — an engine-shaped drain across the three nodes of a MariaDB Galera cluster.
//
// MAIN runs are started and enqueued on node 1; WORKERS_PER_NODE workers on every node, each with
// its own pool to its node, claim and drive them: loadRun → markRunning → 3 × checkpointStep →
// markTerminal → ack. A third of the runs spawn a child from a step's outbox (and schedule a timer
// from markTerminal's), a third enqueue a side run and schedule a timer from a step's outbox, so
// that a unit of work aborted by Galera but reported as done shows as a missing child, side run,
// timer or step. Expectations, read after every node applied everything:
//   - no run handed out by a claim while an earlier lease of it was live;
//   - every run (main, child, side) done exactly once: one acknowledged terminal write, and the
//     stored output is that write's;
//   - exactly 3 step rows per run; every outbox complete: each step that should have spawned,
//     enqueued or scheduled did (the child exists and finished, the side run finished, the timer
//     row is there), nothing else was written, the queue is empty;
//   - CHECKSUM TABLE of the six tables identical on every node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import m from '../../index.js';
import { countConflicts, useGaleraCluster } from '../helpers/galera.mjs';
import { sleep } from '../reliability/engine.mjs';
import { workerPools } from './claim-loop.mjs';
import { TABLES, drive, judge, seedRuns } from './outbox-runs.mjs';

const { mysqlPool, applySchema, createMysqlBackend } = m;

const MAIN = 1200; // 400 plain, 400 parents (+400 children), 400 fan-outs (+400 side runs)
const WORKERS_PER_NODE = 3;
const LIMIT = 2;
// Long enough never to expire while a worker drives a run; a lease abandoned after an error
// comes back after this, so it also bounds the recovery wait.
const LEASE_MS = 15_000;
const DRAIN_DEADLINE_MS = 90_000;

const galera = useGaleraCluster();
const { skip } = galera;

test(
  `${MAIN} runs with outboxes drained by ${WORKERS_PER_NODE} workers on each of 3 Galera nodes: each done once, outboxes complete, nodes identical`,
  { skip, timeout: 150_000 },
  async (t) => {
    const { cluster } = galera;
    const db = await cluster.createDatabase('galera_drain');
    const pool = workerPools(t, mysqlPool);
    // Verification reads on node 1 once it caught up; `T.run` names the table in the test database.
    const q = (sql, params) => cluster.nodes[0].queryCausal(sql.replaceAll('`T.', `\`${db.name}\`.\``), params);

    // ---- runs started and enqueued on node 1 -----------------------------------------------------
    const setup = pool(db.urls[0]);
    await applySchema(setup);
    const seeded = await seedRuns(createMysqlBackend(setup), MAIN);
    const { parents, sides, expectedRuns } = seeded;
    await cluster.waitForSync();

    // ---- the drain --------------------------------------------------------------------------------
    const doneBy = new Map(); // runId -> [{ worker, token }], one per acknowledged terminal write
    // runId -> [{ worker, at, expiresAt }] per successful claim. A claim that returned a run while an
    // earlier lease of it was still live (returned before that lease's expiry) is a double lease;
    // re-claims after an abandoned lease expired are legitimate.
    const leasesOf = new Map();
    const errors = [];
    let stop = false;
    const workers = [];
    cluster.nodes.forEach((node, k) => {
      for (let w = 0; w < WORKERS_PER_NODE; w++) {
        const sql = pool(db.urls[k]);
        workers.push({ name: `${node.name}w${w}`, sql, backend: createMysqlBackend(sql), driven: 0 });
      }
    });
    const conflicts = await countConflicts(cluster);
    const t0 = performance.now();
    const loop = async (wk) => {
      while (!stop) {
        let leases;
        try {
          leases = await wk.backend.queue.claim({ limit: LIMIT, leaseMs: LEASE_MS });
        } catch (e) {
          errors.push({ worker: wk.name, where: 'claim', message: e.message });
          await sleep(30);
          continue;
        }
        if (leases.length === 0) {
          await sleep(20);
          continue;
        }
        const at = Date.now();
        for (const lease of leases) {
          leasesOf.set(lease.runId, [
            ...(leasesOf.get(lease.runId) || []),
            { worker: wk.name, at, expiresAt: lease.expiresAt.getTime() },
          ]);
        }
        for (const lease of leases) {
          try {
            const r = await drive(wk.backend, lease, (runId, token) => {
              doneBy.set(runId, [...(doneBy.get(runId) || []), { worker: wk.name, token }]);
            });
            if (r === 'done') wk.driven++;
          } catch (e) {
            // The lease is abandoned: it expires and the run is claimed again (as in core).
            errors.push({ worker: wk.name, where: e.where, runId: lease.runId, message: e.message });
            await sleep(30);
          }
        }
      }
    };
    const running = workers.map(loop);
    // Finished when every run is done and the queue is empty, as node 1 sees it after catching up.
    const deadline = Date.now() + DRAIN_DEADLINE_MS;
    let progress;
    for (;;) {
      const [row] = await q(
        "SELECT (SELECT COUNT(*) FROM `T.run` WHERE status = 'done') AS done, (SELECT COUNT(*) FROM `T.job`) AS jobs",
      );
      progress = { done: Number(row.done), jobs: Number(row.jobs) };
      if ((progress.done >= expectedRuns && progress.jobs === 0) || Date.now() > deadline) break;
      await sleep(250);
    }
    stop = true;
    await Promise.all(running);
    const drainMs = performance.now() - t0;

    // ---- accounting --------------------------------------------------------------------------------
    const sums = await cluster.checksum(db.name, TABLES);
    const { certFailures, bfAborts } = await conflicts();
    const retries = workers.reduce((n, wk) => n + wk.sql.stats().deadlockRetries, 0);

    const {
      rows,
      jobs,
      notDone,
      doubleLeases,
      doneTwice,
      wrongOutput,
      neverDone,
      badSteps,
      strayStepRuns,
      missingOutbox,
      strayTimers,
    } = await judge(q, seeded, doneBy, leasesOf);
    const sumText = sums.map((s) => `${s.node} ${TABLES.map((tb) => s.sums[tb]).join(',')}`).join(' | ');
    const differing = TABLES.filter((tb) => new Set(sums.map((s) => s.sums[tb])).size !== 1);

    const perNode = cluster.nodes
      .map(
        (n) =>
          `${n.name}:${workers.filter((wk) => wk.name.startsWith(`${n.name}w`)).reduce((x, wk) => x + wk.driven, 0)}`,
      )
      .join(' ');
    const summary =
      `galera drain: ${MAIN} main runs + ${parents.length} children + ${sides} side runs, 3 nodes × ` +
      `${WORKERS_PER_NODE} workers, limit ${LIMIT}, lease ${LEASE_MS / 1000} s; done per node ${perNode}; ` +
      `leased twice ${doubleLeases.length}, done twice ${doneTwice.length}, not done ${notDone.length}, wrong steps ${badSteps.length}, outbox rows missing ${missingOutbox.length}; ` +
      `certification conflicts: ${certFailures} cert failures + ${bfAborts} BF aborts on the servers, ${retries} retried inside the package; ` +
      `errors that reached the caller ${errors.length}; checksums ${differing.length ? `DIFFER in ${differing.join(', ')}` : 'identical on every node'}; ` +
      `drain ${Math.round(drainMs)} ms (${Math.round((expectedRuns / drainMs) * 1000)} runs/s); cluster start-up ${cluster.startupMs} ms (install-db ${cluster.phases.installDbMs}, bootstrap ${cluster.phases.bootstrapMs}, ` +
      `2 joins by SST ${cluster.phases.joinMs})`;
    t.diagnostic(summary);
    if (errors.length) {
      const by = {};
      for (const e of errors) by[e.where] = (by[e.where] || 0) + 1;
      t.diagnostic(
        `errors by call: ${JSON.stringify(by)}; first: ${errors
          .slice(0, 3)
          .map((e) => `${e.worker} ${e.where}${e.runId ? ` ${e.runId}` : ''}: ${e.message}`)
          .join(' | ')}`,
      );
    }
    if (differing.length) t.diagnostic(`checksums: ${sumText}`);

    assert.equal(rows.length, expectedRuns, `every run exists, no other (${summary})`);
    assert.deepEqual(doubleLeases.slice(0, 20), [], `no run leased twice (${summary})`);
    assert.deepEqual(doneTwice.slice(0, 20), [], `no run done twice (${summary})`);
    assert.deepEqual(notDone.slice(0, 20), [], 'every run done');
    assert.deepEqual(neverDone.slice(0, 20), [], 'every stored done came from an acknowledged terminal write');
    assert.deepEqual(wrongOutput.slice(0, 20), [], "the stored output is the acknowledged write's");
    assert.deepEqual(badSteps.slice(0, 20), [], 'exactly 3 step rows per run');
    assert.deepEqual(strayStepRuns, [], 'no step rows without a run');
    assert.deepEqual(missingOutbox.slice(0, 20), [], 'every outbox complete');
    assert.equal(strayTimers, 0, "no timer rows besides the outboxes'");
    assert.equal(jobs, 0, 'every job acked');
    assert.deepEqual(differing, [], `identical CHECKSUM TABLE on every node (${sumText})`);
  },
);
