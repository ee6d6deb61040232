// Several hosts in one pool (issue #24, points 1 and 3): two standalone private servers in one
// host list.
//
// - `sequential` sends every connection to the first host, `loadbalance` spreads them;
// - a host that stops is set aside (`stats().hosts`), calls move to the other, and once it is
//   back and its backoff has run out, a sequential pool moves back to it;
// - a demoted primary: `SET GLOBAL read_only = 1` on the host in use under a load of backend
//   writes. Bound stated: no backend unit fails (a unit refused with 1290 applied nothing and
//   runs again on the other host), and at most `connectionLimit` plain `sql.exec` writes fail
//   (those already on the demoted host's connections), each with errno 1290; every run is
//   stored exactly once across the two servers. The time from the fault to the first write on
//   the other host is printed.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import mysql from 'mysql2/promise';
import { startPrivateServer } from '../helpers/server.mjs';
import { applySchema, createAppUser, createMysqlBackend, mysqlPool, settle, sleep } from './helpers.mjs';

const POOL = 4;
const WRITERS = 8;

let servers = [];
let roots = [];
let app;

before(async () => {
  servers = await Promise.all([startPrivateServer(), startPrivateServer()]);
  roots = await Promise.all(servers.map((s) => mysql.createConnection({ uri: s.url })));
  for (const [i, root] of roots.entries()) {
    app = await createAppUser(root, 'fo');
    const one = mysqlPool(`mysql://${app}@127.0.0.1:${servers[i].port}/fo`);
    await applySchema(one);
    await one.exec('CREATE TABLE w (k INT PRIMARY KEY, port INT NOT NULL)');
    await one.close();
  }
});
after(async () => {
  await Promise.all(roots.map((r) => r.end().catch(() => {})));
  await Promise.all(servers.map((s) => s.stop()));
});

function listUrl(params = '') {
  const [a, b] = servers.map((s) => `127.0.0.1:${s.port}`);
  return `mysql://${app}@${a},${b}/fo?connectionLimit=${POOL}&acquireTimeoutMs=4000${params}`;
}

async function portOf(sql) {
  const [{ port }] = await sql.query('SELECT @@port AS port');
  return Number(port);
}

test('sequential sends every connection to the first host; loadbalance spreads them', { timeout: 60_000 }, async () => {
  const seq = mysqlPool(listUrl());
  const lb = mysqlPool(listUrl('&failover=loadbalance'));
  try {
    const seqPorts = new Set(await Promise.all(Array.from({ length: 40 }, () => portOf(seq))));
    assert.deepEqual([...seqPorts], [servers[0].port]);
    const lbPorts = new Set(await Promise.all(Array.from({ length: 40 }, () => portOf(lb))));
    assert.deepEqual([...lbPorts].sort(), servers.map((s) => s.port).sort());
    const hosts = seq.stats().hosts;
    assert.deepEqual(
      hosts.map((h) => [h.host, h.port, h.state]),
      servers.map((s) => ['127.0.0.1', s.port, 'healthy']),
    );
  } finally {
    await seq.close();
    await lb.close();
  }
});

test(
  'a host that stops is set aside and calls move to the next; it is used again once back',
  { timeout: 90_000 },
  async () => {
    const sql = mysqlPool(listUrl());
    try {
      assert.equal(await portOf(sql), servers[0].port);
      await servers[0].halt();
      const t0 = performance.now();
      // The idle connection to the stopped host fails the call it is given (sent, so not
      // retried); calls after it go to the other host.
      const first = await settle(portOf(sql));
      if (!first.ok) assert.equal(first.error.kind, 'connection', first.error.message);
      assert.equal(await portOf(sql), servers[1].port);
      console.log(
        `# stopped host: answered by the other host ${(performance.now() - t0).toFixed(0)} ms after the stop`,
      );
      const [a, b] = sql.stats().hosts;
      assert.equal(a.state, 'aside');
      assert.ok(a.reason && a.reason.length > 0, 'a reason is given');
      assert.equal(b.state, 'healthy');

      await servers[0].resume();
      await roots[0].end().catch(() => {});
      roots[0] = await mysql.createConnection({ uri: servers[0].url });
      let port;
      for (let i = 0; i < 200 && port !== servers[0].port; i++) {
        await sleep(50);
        port = await portOf(sql);
      }
      assert.equal(port, servers[0].port, 'back on the first host once it is up again');
      assert.equal(sql.stats().hosts[0].state, 'healthy');
    } finally {
      await sql.close();
    }
  },
);

test('a demoted primary: writes move to the other host, none written twice', { timeout: 120_000 }, async () => {
  const sql = mysqlPool(listUrl());
  const b = createMysqlBackend(sql);
  const runs = new Map(); // idempotency key -> run id
  const execFailures = [];
  const unitFailures = [];
  let next = 0;
  let demotedAt = 0;
  let firstOnOther = 0;
  let stop = false;
  const writer = async () => {
    while (!stop) {
      const k = next++;
      const unit = await settle(b.store.startRun({ name: 'fo', version: 1, input: { k }, idempotencyKey: `k${k}` }));
      if (unit.ok) runs.set(`k${k}`, unit.value.runId);
      else unitFailures.push(unit.error);
      const plain = await settle(sql.exec('INSERT INTO w (k, port) VALUES (?, @@port)', [k]));
      if (!plain.ok) execFailures.push(plain.error);
      else if (demotedAt && !firstOnOther && (await portOf(sql)) === servers[1].port) firstOnOther = performance.now();
    }
  };
  try {
    const writers = Array.from({ length: WRITERS }, writer);
    await sleep(500);
    await roots[0].query('SET GLOBAL read_only = 1');
    demotedAt = performance.now();
    await sleep(1500);
    stop = true;
    await Promise.all(writers);
    console.log(
      `# demoted primary: ${next} writes, first write on the other host ${(firstOnOther - demotedAt).toFixed(0)} ms after read_only; ${execFailures.length} plain writes failed`,
    );

    assert.deepEqual(
      unitFailures.map((e) => `${e.code}: ${e.message}`),
      [],
      'no backend unit failed',
    );
    assert.ok(execFailures.length <= POOL, `${execFailures.length} plain writes failed (bound: ${POOL})`);
    for (const e of execFailures) assert.equal(e.errno, 1290, e.message);
    assert.ok(firstOnOther > 0, 'writes reached the other host');

    const [a, other] = sql.stats().hosts;
    assert.equal(a.state, 'aside');
    assert.match(a.reason, /read.only|1290/i);
    assert.equal(other.state, 'healthy');

    // Every run stored exactly once, over both servers together.
    const stored = [];
    for (const root of roots) {
      const [rows] = await root.query(
        'SELECT idempotency_key AS k, COUNT(*) AS n FROM fo.run GROUP BY idempotency_key',
      );
      stored.push(...rows);
    }
    const byKey = new Map();
    for (const { k, n } of stored) byKey.set(k, (byKey.get(k) || 0) + Number(n));
    assert.equal(byKey.size, runs.size, 'one stored run per acknowledged startRun');
    for (const [k, n] of byKey) assert.equal(n, 1, `run ${k} stored ${n} times`);
    const [[onA]] = await roots[0].query('SELECT COUNT(*) AS n FROM fo.w');
    const [[onB]] = await roots[1].query('SELECT COUNT(*) AS n FROM fo.w');
    assert.ok(Number(onB.n) > 0, 'plain writes reached the other host');
    assert.equal(Number(onA.n) + Number(onB.n) + execFailures.length, next, 'each plain write stored once or failed');
  } finally {
    stop = true;
    await roots[0].query('SET GLOBAL read_only = 0');
    await sql.close();
  }
});
