// Galera 3 — node loss under an engine-shaped drain (issue #24, point 3).
//
// A 3-node cluster; WORKERS workers, each with its own pool, claim and drive runs with outboxes
// (outbox-runs.mjs) while a fault hits the node they use:
//   - a host list of the three nodes, `failover=sequential` (every worker on node 1):
//     (a) node 1 SIGKILLed mid-drain, restarted later (it rejoins by SST: a crash leaves no
//         saved position);
//     (b) node 1 split off (`gmcast.isolate = 1`: it drops out of the primary component and
//         answers 1047), healed later (`= 0`, it rejoins by IST);
//     (c) a rolling restart: each node in turn shut down cleanly and started again;
//   - (d) one HAProxy address in front of the three nodes (n1 active, n2/n3 backup, a MySQL
//     health check): node 1 SIGKILLed, restarted later.
// Each: no run leased twice while a lease was live, runs lost 0, done twice 0, outboxes partial
// 0, every error that reached a worker a `kind: 'connection'` or a 1213 that the package's
// retries did not absorb (counted); CHECKSUM TABLE identical on every node afterwards. Printed:
// the time from the fault to the first successful claim on another node (a claim sent after the
// fault that returned leases, from a pool no longer on the faulted host).
//
// Workers pace themselves (PACE_MS after each run) so that the drain outlasts the faults.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import m from '../../index.js';
import { freePorts, useGaleraCluster } from '../helpers/galera.mjs';
import { which } from '../helpers/server-tools.mjs';
import { sleep } from '../reliability/engine.mjs';
import { TABLES, assertJudged, drainProgress, drive, judge, seedRuns } from './outbox-runs.mjs';

const { mysqlPool, applySchema, createMysqlBackend } = m;

const WORKERS = 6;
const LIMIT = 2;
// A lease abandoned after an error comes back after this: it bounds the recovery wait, and must
// outlast the cluster's write stall after a node dies (≈ 6 s here, evs.suspect_timeout): with 6 s,
// a stalled worker's markTerminal and the re-claimer's both resolved (the later one a silent
// no-op, as the contract has it), which the test counts as done twice; with 10 s it happened
// once on a loaded machine (the stall plus CPU contention), so 20 s.
const LEASE_MS = 20_000;
const DRAIN_DEADLINE_MS = 120_000;

const galera = useGaleraCluster();
const { skip } = galera;

/** Why HAProxy cannot run here (or false); never a skip under CI=true. */
function haproxySkip() {
  if (skip) return skip;
  if (which('haproxy') || process.env.CI === 'true') return false;
  return 'haproxy is not installed (apt-get install haproxy)';
}

/** A surfaced error the package may hand a worker during a node loss. */
function acceptable(e) {
  return e.kind === 'connection' || e.errno === 1213;
}

/** The port of the host a host-list pool sends its next checkout to (its first healthy host). */
function hostInUse(sql) {
  const hosts = sql.stats().hosts;
  return hosts && hosts.length > 1 ? hosts.find((h) => h.state === 'healthy')?.port : undefined;
}

/**
 * Seeds `main` runs, drains them with WORKERS workers on pools made by `workerUrl(db)` while
 * `fault(ctx)` runs, and checks the outcome. `ctx.waitDone(f)` resolves once a fraction `f` of
 * the runs is done; `ctx.mark(label, port)` records a fault on the node with SQL port `port`.
 */
async function drainUnderFault(t, { label, main, paceMs, workerUrl, fault }) {
  const { cluster } = galera;
  const db = await cluster.createDatabase(label);
  const pools = [];
  t.after(async () => {
    for (const p of pools) if (!p.closed) await p.close();
  });
  // Reads on the first node that answers once it caught up (a faulted node refuses or says 1047).
  const q = async (sql, params) => {
    let last;
    for (const n of cluster.nodes) {
      try {
        return await n.queryCausal(sql.replaceAll('`T.', `\`${db.name}\`.\``), params);
      } catch (e) {
        last = e;
      }
    }
    throw last;
  };

  const setup = mysqlPool(db.urls[0]);
  pools.push(setup);
  await applySchema(setup);
  const seeded = await seedRuns(createMysqlBackend(setup), main);
  await setup.close();
  await cluster.waitForSync();

  const doneBy = new Map();
  // Terminal writes that failed on a lost connection: applied or not, nobody knows (a node died
  // after committing, before answering). A run stored done by one of them is not "never done".
  const terminalUnknown = new Set();
  const leasesOf = new Map();
  const claims = []; // { at, sentAt, port } per claim that returned leases
  const errors = [];
  const faults = []; // { label, at, port }
  let stop = false;
  const workers = Array.from({ length: WORKERS }, (_, w) => {
    const sql = mysqlPool(workerUrl(db));
    pools.push(sql);
    return { name: `w${w}`, sql, backend: createMysqlBackend(sql), driven: 0 };
  });
  let progress = { done: 0, jobs: -1 };
  const loop = async (wk) => {
    while (!stop) {
      let leases;
      const sentAt = performance.now();
      try {
        leases = await wk.backend.queue.claim({ limit: LIMIT, leaseMs: LEASE_MS });
      } catch (e) {
        errors.push({ worker: wk.name, where: 'claim', kind: e.kind, errno: e.errno, message: e.message });
        await sleep(50);
        continue;
      }
      if (leases.length === 0) {
        await sleep(20);
        continue;
      }
      const at = Date.now();
      claims.push({ at: performance.now(), sentAt, port: hostInUse(wk.sql) });
      for (const lease of leases)
        leasesOf.set(lease.runId, [
          ...(leasesOf.get(lease.runId) || []),
          { worker: wk.name, at, expiresAt: lease.expiresAt.getTime() },
        ]);
      for (const lease of leases) {
        try {
          const r = await drive(wk.backend, lease, (runId, token) => {
            doneBy.set(runId, [...(doneBy.get(runId) || []), { worker: wk.name, token }]);
          });
          if (r === 'done') wk.driven++;
        } catch (e) {
          // The lease is abandoned: it expires and the run is claimed again (as in core).
          if (String(e.where).startsWith('markTerminal') && e.kind === 'connection') terminalUnknown.add(lease.runId);
          errors.push({
            worker: wk.name,
            where: e.where,
            runId: lease.runId,
            kind: e.kind,
            errno: e.errno,
            message: e.message,
          });
          await sleep(50);
        }
        await sleep(paceMs);
      }
    }
  };

  const t0 = performance.now();
  const running = workers.map(loop);
  const ctx = {
    async waitDone(fraction) {
      while (progress.done < fraction * seeded.expectedRuns && !stop) await sleep(100);
    },
    mark(what, port) {
      // Whether many runs were still left to claim (progress is read every 250 ms): a fault as
      // the drain ends (the last node of a rolling restart) may find nothing left to claim.
      faults.push({ label: what, at: performance.now(), port, pending: progress.done < 0.9 * seeded.expectedRuns });
    },
  };
  let faultError = null;
  const faulting = fault(ctx).catch((e) => {
    faultError = e;
  });
  let faultDone = false;
  faulting.then(() => {
    faultDone = true;
  });
  const deadline = Date.now() + DRAIN_DEADLINE_MS;
  for (;;) {
    progress = await drainProgress(q, seeded, progress);
    if ((progress.drained && faultDone) || Date.now() > deadline || faultError) break;
    await sleep(250);
  }
  stop = true;
  await Promise.all(running);
  await faulting;
  const drainMs = performance.now() - t0;
  if (faultError) throw faultError;

  const sums = await cluster.checksum(db.name, TABLES);
  const out = await judge(q, seeded, doneBy, leasesOf);
  const retries = workers.reduce((n, wk) => n + wk.sql.stats().deadlockRetries, 0);
  const differing = TABLES.filter((tb) => new Set(sums.map((s) => s.sums[tb])).size !== 1);
  const byKind = {};
  for (const e of errors) {
    const k = e.kind === 'connection' ? 'connection' : `${e.kind} ${e.errno ?? ''}`.trim();
    byKind[k] = (byKind[k] || 0) + 1;
  }
  const unexpected = errors.filter((e) => !acceptable(e));
  // Per fault: the first claim sent after it that returned leases from a pool off the faulted node.
  const failovers = faults.map((f) => {
    const c = claims.find((c) => c.sentAt > f.at);
    const off = claims.find((c) => c.sentAt > f.at && c.port !== undefined && c.port !== f.port);
    return `${f.label}: ${c ? `${Math.round(c.at - f.at)} ms` : 'none'}${off ? ` (pool off it: ${Math.round(off.at - f.at)} ms)` : ''}`;
  });
  const summary =
    `${label}: ${seeded.expectedRuns} runs, ${WORKERS} workers, lease ${LEASE_MS / 1000} s; ` +
    `fault to first claim on another node: ${failovers.join(', ')}; ` +
    `leased twice ${out.doubleLeases.length}, done twice ${out.doneTwice.length}, not done ${out.notDone.length}, ` +
    `wrong steps ${out.badSteps.length}, outbox rows missing ${out.missingOutbox.length}; ` +
    `errors that reached a worker ${errors.length} ${JSON.stringify(byKind)}, ${retries} 1213s retried inside the package; ` +
    `terminal writes whose answer was lost ${terminalUnknown.size} (applied ${out.neverDone.length}); ` +
    `checksums ${differing.length ? `DIFFER in ${differing.join(', ')}` : 'identical on every node'}; drain ${Math.round(drainMs)} ms`;
  t.diagnostic(summary);
  console.log(`# ${summary}`);
  if (errors.length)
    t.diagnostic(
      `first errors: ${errors
        .slice(0, 4)
        .map((e) => `${e.worker} ${e.where}: ${e.message}`)
        .join(' | ')}`,
    );

  assert.ok(faults.length > 0, 'the fault happened');
  assertJudged(out, seeded, terminalUnknown, summary);
  assert.deepEqual(
    unexpected.slice(0, 10).map((e) => `${e.where}: ${e.kind} ${e.errno}: ${e.message}`),
    [],
    'every surfaced error is a connection error or a 1213',
  );
  assert.ok(faults[0].pending, 'the first fault landed with runs left to claim');
  assert.ok(
    faults.every((f) => !f.pending || claims.some((c) => c.sentAt > f.at)),
    'claims succeeded after every fault that left runs to claim',
  );
  assert.deepEqual(differing, [], 'identical CHECKSUM TABLE on every node');
}

/** The three nodes as one host list, sequential: every worker on node 1 while it is fit. */
const hostList = (db) => {
  const hosts = galera.cluster.nodes.map((n) => `127.0.0.1:${n.port}`).join(',');
  return `mysql://root@${hosts}/${db.name}?failover=sequential&connectionLimit=2&acquireTimeoutMs=20000`;
};

test('host list: node 1 SIGKILLed mid-drain, restarted later', { skip, timeout: 180_000 }, async (t) => {
  const n1 = galera.cluster.nodes[0];
  await drainUnderFault(t, {
    label: 'fo_kill',
    main: 300,
    paceMs: 20,
    workerUrl: hostList,
    async fault(ctx) {
      await ctx.waitDone(0.2);
      ctx.mark('SIGKILL n1', n1.port);
      await n1.kill();
      await sleep(2000);
      await n1.start();
    },
  });
});

test('host list: node 1 split off (gmcast.isolate) mid-drain, healed later', { skip, timeout: 180_000 }, async (t) => {
  const { cluster } = galera;
  const n1 = cluster.nodes[0];
  const isolate = (on) => n1.query(`SET GLOBAL wsrep_provider_options = 'gmcast.isolate = ${on ? 1 : 0}'`);
  await drainUnderFault(t, {
    label: 'fo_isolate',
    main: 300,
    paceMs: 20,
    workerUrl: hostList,
    async fault(ctx) {
      await ctx.waitDone(0.2);
      ctx.mark('isolate n1', n1.port);
      await isolate(true);
      await sleep(4000);
      await isolate(false);
      await cluster.waitForSync();
    },
  });
});

test('host list: a rolling restart of all three nodes during the drain', { skip, timeout: 240_000 }, async (t) => {
  const { cluster } = galera;
  await drainUnderFault(t, {
    label: 'fo_rolling',
    // Enough runs that the last node's restart still lands mid-drain with a release build.
    main: 600,
    paceMs: 60,
    workerUrl: hostList,
    async fault(ctx) {
      await ctx.waitDone(0.1);
      for (const n of cluster.nodes) {
        ctx.mark(`restart ${n.name}`, n.port);
        await n.shutdown();
        await n.start();
      }
    },
  });
});

/** A HAProxy config: one loopback frontend, node 1 active and the others backup, MySQL checks. */
function haproxyConfig(listenPort, nodes, checkUser) {
  return [
    'global',
    '  maxconn 512',
    'defaults',
    '  mode tcp',
    '  timeout connect 1s',
    '  timeout client 120s',
    '  timeout server 120s',
    // A connect refused by a dead node goes to another server instead of failing the client.
    '  retries 2',
    '  option redispatch',
    'listen galera',
    `  bind 127.0.0.1:${listenPort}`,
    `  option mysql-check user ${checkUser} post-41`,
    ...nodes.map(
      (n, k) =>
        `  server ${n.name} 127.0.0.1:${n.port} check inter 500 fall 2 rise 2 on-marked-down shutdown-sessions${k ? ' backup' : ''}`,
    ),
    '',
  ].join('\n');
}

/** Starts `haproxy -db` on `cfgText`; resolves once its frontend accepts connections. */
async function startHaproxy(t, dir, cfgText, port) {
  const cfg = path.join(dir, 'haproxy.cfg');
  fs.writeFileSync(cfg, cfgText);
  const proc = spawn(which('haproxy'), ['-f', cfg, '-db'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => {
    stderr = (stderr + d).slice(-4000);
  });
  const exited = new Promise((r) => proc.once('exit', r));
  t.after(async () => {
    try {
      process.kill(proc.pid, 'SIGKILL');
    } catch {}
    await exited;
  });
  for (let i = 0; i < 100; i++) {
    if (proc.exitCode !== null) break;
    const ok = await new Promise((r) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.destroy();
        r(true);
      });
      s.once('error', () => r(false));
    });
    if (ok) return proc;
    await sleep(50);
  }
  throw new Error(`haproxy did not start: ${stderr}`);
}

test(
  'HAProxy in front of the cluster: node 1 SIGKILLed mid-drain, restarted later',
  { skip: haproxySkip(), timeout: 180_000 },
  async (t) => {
    const { cluster } = galera;
    const [n1] = cluster.nodes;
    // The health check logs in without a password and runs nothing: an account with no privileges.
    await n1.query("CREATE USER IF NOT EXISTS 'haproxy_check'@'127.0.0.1'");
    await cluster.waitForSync();
    const [port] = await freePorts(1);
    await startHaproxy(t, cluster.dir, haproxyConfig(port, cluster.nodes, 'haproxy_check'), port);
    await drainUnderFault(t, {
      label: 'fo_haproxy',
      main: 300,
      paceMs: 20,
      workerUrl: (db) => `mysql://root@127.0.0.1:${port}/${db.name}?connectionLimit=2&acquireTimeoutMs=20000`,
      async fault(ctx) {
        await ctx.waitDone(0.2);
        ctx.mark('SIGKILL n1', n1.port);
        await n1.kill();
        await sleep(2000);
        await n1.start();
      },
    });
  },
);
