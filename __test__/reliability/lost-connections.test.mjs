// Reliability 3 — lost connections under load.
//
// A private MariaDB (started here, so restarting it disturbs no other test file) carries a load
// of 1,000 runs: a submitter (startManyRuns + enqueue) and several concurrent engine-shaped
// workers (claim → loadRun → markRunning → 3 × checkpointStep → markTerminal → ack) plus a
// reconciler. Mid-load we (a) KILL every server connection of the backend's user, twice, and
// (b) in a second load, crash-restart the server. Expectations:
//   - calls that were in flight reject promptly (bounded by acquireTimeoutMs, plus slack);
//   - the first call after each fault succeeds, on a fresh connection;
//   - after the load settles (reconcile + drain) every run is done, none lost, none duplicated:
//     one run per idempotency key, exactly 3 step rows per run, at most one acknowledged terminal
//     write per run and the stored output is that write's.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import mysql from 'mysql2/promise';
import { onMysql, startPrivateServer, PASSWORD_USER, processList } from '../helpers/server.mjs';
import { applySchema, createMysqlBackend, mysqlPool, settle, sleep } from './helpers.mjs';
import { reconcile, workerLoop } from './engine.mjs';

const RUNS = 1000;
const WORKERS = 6;
const BATCH = 50;
const LEASE_MS = 3000;
const ACQUIRE_MS = 1000;
const POOL = 8;
const SLACK_MS = 5000; // scheduling slack on a loaded 2-core box (debug builds included)

let server;
let adminConn = null;

async function admin() {
  if (!adminConn) {
    adminConn = await mysql.createConnection({
      host: '127.0.0.1',
      port: server.port,
      user: 'root',
      password: '',
      connectTimeout: 5000,
    });
    adminConn.on('error', () => {
      adminConn = null;
    });
  }
  return adminConn;
}
async function adminQuery(text, params) {
  try {
    return (await (await admin()).query(text, params))[0];
  } catch (e) {
    if (e && (e.fatal || /closed state/i.test(e.message || ''))) {
      adminConn = null;
      return (await (await admin()).query(text, params))[0];
    }
    throw e;
  }
}

before(async () => {
  server = await startPrivateServer();
});
after(async () => {
  if (adminConn) await adminConn.end().catch(() => {});
  if (server) await server.stop();
});

/** KILLs every connection of the backend's user; returns the killed ids. */
async function killBackendConnections() {
  const rows = await adminQuery(`SELECT ID AS id FROM ${processList()} WHERE USER = ?`, [PASSWORD_USER.user]);
  const killed = [];
  for (const { id } of rows) {
    try {
      await adminQuery(`KILL CONNECTION ${Number(id)}`);
      killed.push(Number(id));
    } catch {
      // already gone
    }
  }
  // KILL returns once the session is flagged; it closes its socket a moment later. Wait until
  // they are gone, so "the next call" below really comes after the fault (bounded).
  for (const until = Date.now() + 5000; killed.length > 0 && Date.now() < until; await sleep(10)) {
    const left = await adminQuery(`SELECT COUNT(*) AS n FROM ${processList()} WHERE ID IN (${killed.join(',')})`);
    if (Number(left[0].n) === 0) break;
  }
  return killed;
}

/**
 * Runs one load of RUNS runs with `faults` (an array of { at: doneCount, run: async () => info })
 * injected as the done count crosses each threshold. Returns figures; asserts the accounting.
 */
async function load(t, label, faults) {
  const dbName = `rel_lost_${label}_${crypto.randomBytes(4).toString('hex')}`;
  await adminQuery(`CREATE DATABASE \`${dbName}\``);
  const url =
    `mysql://${PASSWORD_USER.user}:${PASSWORD_USER.password}@127.0.0.1:${server.port}/${dbName}` +
    `?connectionLimit=${POOL}&acquireTimeoutMs=${ACQUIRE_MS}`;
  const sql = mysqlPool(url);
  await applySchema(sql);
  const b = createMysqlBackend(sql);

  const fig = {
    label,
    runs: RUNS,
    workers: WORKERS,
    calls: 0,
    failedCalls: 0,
    maxRejectMs: 0,
    errorKinds: new Map(),
    faults: [],
  };
  const onCall = (name, p) => {
    fig.calls++;
    const t0 = performance.now();
    return p.catch((e) => {
      const ms = performance.now() - t0;
      fig.failedCalls++;
      fig.maxRejectMs = Math.max(fig.maxRejectMs, ms);
      const kind = String(e && e.message)
        .replace(/\d+/g, 'N')
        .slice(0, 80);
      fig.errorKinds.set(kind, (fig.errorKinds.get(kind) || 0) + 1);
      throw e;
    });
  };
  const acked = new Map(); // runId -> tokens whose markTerminal resolved
  let doneCount = 0;
  const hooks = {
    afterTerminal(runId, token) {
      const list = acked.get(runId) || [];
      list.push(token);
      acked.set(runId, list);
      doneCount++;
    },
  };

  let stop = false;
  const t0 = performance.now();
  // submitter: batches of BATCH, engine-style (enqueue only what was created; reconcile heals the rest)
  const submitter = (async () => {
    for (let from = 0; from < RUNS; from += BATCH) {
      const specs = Array.from({ length: BATCH }, (_, j) => ({
        name: 'load',
        version: 1,
        input: { i: from + j },
        idempotencyKey: `load-${from + j}`,
      }));
      let res;
      for (let attempt = 0; !res; attempt++) {
        if (attempt > 200) throw new Error('submitter: startManyRuns kept failing');
        const r = await settle(onCall('startManyRuns', b.store.startManyRuns(specs)));
        if (r.ok) res = r.value;
        else await sleep(30);
      }
      await Promise.all(
        res.filter((x) => x.created).map((x) => onCall('enqueue', b.queue.enqueue(x.runId)).catch(() => {})),
      );
    }
  })();
  const workers = Array.from({ length: WORKERS }, () =>
    workerLoop(b, {
      limit: 5,
      leaseMs: LEASE_MS,
      steps: 3,
      shouldStop: () => stop,
      hooks,
      onCall,
    }),
  );
  const reconciler = (async () => {
    while (!stop) {
      await sleep(250);
      await reconcile(b).catch(() => {});
    }
  })();
  let done = 0;
  let jobs = -1;
  try {
    // fault injector
    for (const f of faults) {
      const deadline = Date.now() + 60_000;
      while (doneCount < f.at && Date.now() < deadline) await sleep(5);
      assert.ok(doneCount >= f.at, `${label}: load reached ${f.at} done runs before the fault`);
      const info = await f.run(sql, b);
      fig.faults.push({ at: doneCount, ...info });
    }
    await submitter;
    // settle: reconcile + drain until every run is done and every job acked (bounded)
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      const r = await settle(Promise.all([b.store.runStats(), sql.query('SELECT COUNT(*) AS n FROM `job`')]));
      if (r.ok) {
        done = r.value[0].done;
        jobs = Number(r.value[1][0].n);
        if (done === RUNS && jobs === 0) break;
      }
      await sleep(100);
    }
  } finally {
    stop = true;
    await Promise.allSettled([submitter, ...workers, reconciler]);
  }
  fig.elapsedMs = Math.round(performance.now() - t0);

  // ---- accounting -----------------------------------------------------------------------------
  const [counts] = await sql.query('SELECT COUNT(*) AS n, COUNT(DISTINCT idempotency_key) AS k FROM `run`');
  assert.equal(Number(counts.n), RUNS, `${label}: exactly ${RUNS} runs (none lost, none duplicated)`);
  assert.equal(Number(counts.k), RUNS, `${label}: one run per idempotency key`);
  const byStatus = await sql.query('SELECT status, COUNT(*) AS n FROM `run` GROUP BY status');
  assert.deepEqual(
    byStatus.map((r) => [r.status, Number(r.n)]),
    [['done', RUNS]],
    `${label}: every run done after reconcile + drain`,
  );
  const badSteps = await sql.query('SELECT run_id, COUNT(*) AS n FROM `step` GROUP BY run_id HAVING COUNT(*) <> 3');
  assert.deepEqual(badSteps, [], `${label}: exactly 3 step rows per run`);
  const [steps] = await sql.query('SELECT COUNT(*) AS n, COUNT(DISTINCT run_id) AS r FROM `step`');
  assert.deepEqual([Number(steps.n), Number(steps.r)], [3 * RUNS, RUNS]);
  assert.equal(jobs, 0, `${label}: every job acked`);
  const outputs = await sql.query('SELECT id, output FROM `run`');
  let unacknowledged = 0;
  for (const { id, output } of outputs) {
    const list = acked.get(id) || [];
    assert.ok(list.length <= 1, `${label}: run ${id} was acknowledged terminal ${list.length} times`);
    if (list.length === 1)
      assert.equal(JSON.parse(output).token, list[0], `${label}: stored output of ${id} is the acknowledged write`);
    else unacknowledged++; // committed, but its reply was lost to a fault
  }
  fig.lost = RUNS - done;
  fig.duplicated = 0;
  fig.terminalWritesWithLostReply = unacknowledged;
  await sql.close();
  await adminQuery(`DROP DATABASE \`${dbName}\``);
  return fig;
}

function report(t, fig) {
  const faults = fig.faults
    .map(
      (f) =>
        `${f.kind}@${f.at}${f.killed !== undefined ? `(${f.killed} conns)` : ''}${f.downMs !== undefined ? `(down ${f.downMs} ms)` : ''}`,
    )
    .join(', ');
  t.diagnostic(
    `lost-connections/${fig.label}: ${fig.runs} runs, ${fig.workers} workers, pool ${POOL}, acquireTimeoutMs ${ACQUIRE_MS}, lease ${LEASE_MS} ms; ` +
      `faults: ${faults}; ${fig.calls} calls, ${fig.failedCalls} rejected (max ${Math.round(fig.maxRejectMs)} ms to reject); ` +
      `runs lost ${fig.lost}, duplicated ${fig.duplicated}, terminal writes whose reply was lost ${fig.terminalWritesWithLostReply}; ${fig.elapsedMs} ms`,
  );
  for (const [k, n] of fig.errorKinds) t.diagnostic(`  ${n} × ${k}`);
}

test(
  'KILLing the backend connections mid-load: calls fail fast, new calls use fresh connections, nothing lost or duplicated',
  { timeout: 120_000 },
  async (t) => {
    const killFault = async (sql) => {
      const killed = await killBackendConnections();
      assert.ok(killed.length > 0, 'the backend had server connections to kill');
      // the very next call must succeed, on a connection that was not killed
      const r = await settle(sql.query('SELECT CONNECTION_ID() AS id'));
      assert.ok(r.ok, `first call after KILL succeeds: ${r.error && r.error.message}`);
      assert.ok(!killed.includes(Number(r.value[0].id)), 'it runs on a fresh connection');
      return { kind: 'KILL', killed: killed.length };
    };
    const fig = await load(t, 'kill', [
      { at: 150, run: killFault },
      { at: 400, run: killFault },
      { at: 650, run: killFault },
    ]);
    report(t, fig);
    assert.ok(
      fig.maxRejectMs <= ACQUIRE_MS + SLACK_MS,
      `rejections bounded by acquireTimeoutMs: ${fig.maxRejectMs} ms`,
    );
  },
);

test(
  'restarting (crashing) the server mid-load: calls fail fast, calls after the restart succeed, nothing lost or duplicated',
  { timeout: 120_000 },
  async (t) => {
    const restartFault = async (sql, b) => {
      const t0 = performance.now();
      await server.restart({ hard: true, downtimeMs: 500 });
      const downMs = Math.round(performance.now() - t0);
      adminConn = null;
      const r = await settle(b.store.runStats());
      assert.ok(r.ok, `first backend call after the restart succeeds: ${r.error && r.error.message}`);
      const q = await settle(sql.query('SELECT 1 AS one'));
      assert.ok(q.ok, `first query after the restart succeeds: ${q.error && q.error.message}`);
      return { kind: 'crash-restart', downMs };
    };
    const fig = await load(t, 'restart', [{ at: 400, run: restartFault }]);
    report(t, fig);
    assert.ok(fig.failedCalls > 0, 'the restart did hit in-flight calls');
    assert.ok(
      fig.maxRejectMs <= ACQUIRE_MS + SLACK_MS,
      `rejections bounded by acquireTimeoutMs: ${fig.maxRejectMs} ms`,
    );
  },
);

test(
  'a long query / an open tx on a KILLed connection, or during a crash, reject promptly; the pool recovers',
  { timeout: 60_000 },
  async (t) => {
    const dbName = `rel_lost_inflight_${crypto.randomBytes(4).toString('hex')}`;
    await adminQuery(`CREATE DATABASE \`${dbName}\``);
    const url = `mysql://${PASSWORD_USER.user}:${PASSWORD_USER.password}@127.0.0.1:${server.port}/${dbName}?connectionLimit=4&acquireTimeoutMs=${ACQUIRE_MS}`;
    const sql = mysqlPool(url);
    await applySchema(sql);
    const b = createMysqlBackend(sql);
    const idOf = async (marker) => {
      for (let i = 0; i < 100; i++) {
        const rows = await adminQuery(
          `SELECT ID AS id FROM ${processList()} WHERE USER = ? AND DB = ? AND INFO LIKE ? AND ID <> CONNECTION_ID()`,
          [PASSWORD_USER.user, dbName, `%${marker}%`],
        );
        if (rows.length) return Number(rows[0].id);
        await sleep(10);
      }
      throw new Error(`no server thread runs ${marker}`);
    };
    const lines = [];
    try {
      // 1. a 30 s query whose connection is KILLed rejects at once
      const long = settle(sql.query("SELECT SLEEP(30) AS s, 'marker-kill-1' AS m"));
      const killId = await idOf('marker-kill-1');
      await adminQuery(`KILL CONNECTION ${killId}`);
      const r1 = await long;
      assert.equal(r1.ok, false, 'the killed query rejects');
      assert.ok(r1.ms < 5000, `and promptly (${r1.ms.toFixed(0)} ms)`);
      lines.push(`KILL during SLEEP(30): rejected after ${r1.ms.toFixed(0)} ms (${r1.error.message.slice(0, 60)})`);

      // 2. an open user tx whose connection is KILLed: its next statement and the tx reject; nothing commits
      let step = 0;
      const tx = settle(
        sql.tx(async (h) => {
          await h.exec(
            "INSERT INTO `cron` (name, schedule, flow_name, flow_version, next_run_at) VALUES ('killed-tx', 's', 'f', 1, 0)",
          );
          await h.query("SELECT 'marker-kill-2', SLEEP(0.5)");
          step = 1;
          await h.query('SELECT 1');
          step = 2;
        }),
      );
      await adminQuery(`KILL CONNECTION ${await idOf('marker-kill-2')}`);
      const r2 = await tx;
      assert.equal(r2.ok, false, 'the tx rejects');
      assert.equal(step, 0, 'the statement in flight rejected');
      assert.ok(r2.ms < 5000, `promptly (${r2.ms.toFixed(0)} ms)`);
      assert.deepEqual(
        await sql.query("SELECT COUNT(*) AS n FROM `cron` WHERE name = 'killed-tx'"),
        [{ n: 0 }],
        'nothing committed',
      );
      lines.push(`KILL during an open tx: rejected after ${r2.ms.toFixed(0)} ms, nothing committed`);

      // 3. a port call right after succeeds
      const { runId } = await b.store.startRun({ name: 'after-kill', version: 1, input: 1 });
      assert.equal((await b.store.loadRunRow(runId)).status, 'pending');

      // 4. a crash-restart while a 30 s query and a backend transaction are in flight
      const long2 = settle(sql.query("SELECT SLEEP(30) AS s, 'marker-crash' AS m"));
      await idOf('marker-crash');
      const t0 = performance.now();
      await server.restart({ hard: true, downtimeMs: 300 });
      adminConn = null;
      const r3 = await long2;
      assert.equal(r3.ok, false, 'the query in flight during the crash rejects');
      assert.ok(r3.ms < 5000, `promptly (${r3.ms.toFixed(0)} ms)`);
      lines.push(
        `crash-restart during SLEEP(30): rejected after ${r3.ms.toFixed(0)} ms; server back after ${(performance.now() - t0).toFixed(0)} ms`,
      );
      assert.deepEqual(await sql.query('SELECT 1 AS one'), [{ one: 1 }], 'first query after the restart succeeds');
      assert.equal((await b.store.loadRunRow(runId)).status, 'pending', 'committed data survived the crash');

      // 5. a graceful restart (SIGTERM, same port and datadir) with an in-flight query and an idle pool
      const long3 = settle(sql.query("SELECT SLEEP(30) AS s, 'marker-graceful' AS m"));
      await idOf('marker-graceful');
      const t1 = performance.now();
      await server.restart();
      adminConn = null;
      const r4 = await long3;
      // The shutdown ends the statement: MariaDB's SLEEP fails with it; MySQL's answers 1 (an
      // interrupted SLEEP), and the answer still reaches the client before the connection goes.
      if (onMysql() && r4.ok) assert.equal(Number(r4.value?.[0]?.s), 1, 'the SLEEP in flight was interrupted');
      else assert.equal(r4.ok, false, 'the query in flight during the shutdown rejects');
      assert.ok(r4.ms < 10_000, `promptly (${r4.ms.toFixed(0)} ms)`);
      const after = await settle(b.store.loadRunRow(runId));
      assert.ok(after.ok, `first port call after the graceful restart succeeds: ${after.error && after.error.message}`);
      lines.push(
        `graceful restart during SLEEP(30): rejected after ${r4.ms.toFixed(0)} ms; server back after ${(performance.now() - t1).toFixed(0)} ms; next port call OK`,
      );
    } finally {
      // never wait for a leftover SLEEP(30) of a failed run
      const left = await adminQuery(`SELECT ID AS id FROM ${processList()} WHERE USER = ? AND DB = ?`, [
        PASSWORD_USER.user,
        dbName,
      ]);
      for (const { id } of left) await adminQuery(`KILL CONNECTION ${Number(id)}`).catch(() => {});
      await sql.close();
      await adminQuery(`DROP DATABASE \`${dbName}\``);
    }
    for (const l of lines) t.diagnostic(`lost-connections: ${l}`);
  },
);

test(
  'a server that accepts TCP but never answers: calls reject after acquireTimeoutMs, close() does not hang',
  { timeout: 30_000 },
  async (t) => {
    const net = await import('node:net');
    const sockets = new Set();
    const blackhole = net.createServer((s) => {
      sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => sockets.delete(s));
    });
    await new Promise((r) => blackhole.listen(0, '127.0.0.1', r));
    const { port } = blackhole.address();
    const sql = mysqlPool(
      `mysql://${PASSWORD_USER.user}:${PASSWORD_USER.password}@127.0.0.1:${port}/x?acquireTimeoutMs=300`,
    );
    const b = createMysqlBackend(sql);
    const lines = [];
    try {
      for (const [what, call] of [
        ['query', () => sql.query('SELECT 1')],
        ['tx', () => sql.tx(async (h) => h.query('SELECT 1'))],
        ['store.startRun', () => b.store.startRun({ name: 'f', version: 1, input: 1 })],
        ['queue.claim', () => b.queue.claim({ limit: 1, leaseMs: 1000 })],
      ]) {
        const r = await settle(call());
        assert.equal(r.ok, false, `${what} must not succeed`);
        assert.match(r.error.message, /timed out|acquireTimeoutMs/i, `${what}: timeout error: ${r.error.message}`);
        assert.ok(r.ms >= 250 && r.ms < 300 + SLACK_MS, `${what}: bounded by acquireTimeoutMs (${r.ms.toFixed(0)} ms)`);
        assert.ok(!r.error.message.includes(PASSWORD_USER.password));
        lines.push(`${what} ${r.ms.toFixed(0)} ms`);
      }
      const c = await settle(sql.close());
      assert.ok(c.ok && c.ms < 2000, `close() returns promptly (${c.ms.toFixed(0)} ms)`);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((r) => blackhole.close(r));
    }
    t.diagnostic(`lost-connections: silent server, acquireTimeoutMs 300: calls rejected after ${lines.join(', ')}`);
  },
);
