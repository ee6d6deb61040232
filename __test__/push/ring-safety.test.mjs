// What a ring can touch (docs/push.md, "What a ring can and cannot touch"): only a park, of the
// same database and table prefix, on the server the ring looked it up on. Each test attacks one
// way a ring used to reach something else — a lookup on one server and a KILL on another (a
// load-balanced pool, a TCP balancer in front of two servers), a bound value that carries a park's
// mark, a second database with the same prefix and account — and a close() that waited out an
// idle park. On MariaDB a KILL names one statement (KILL QUERY ID); on MySQL it names a connection
// and parks run on a connection of their own: each test runs on both, for what each server does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import mysql from 'mysql2/promise';
import m from '../../index.js';
import { adminQuery, closeAdmin, freshDatabase, uniqueName } from '../helpers/db.mjs';
import { onMysql, startPrivateServer } from '../helpers/server.mjs';
import { pushDatabase, sleep } from './helpers.mjs';

test.after(closeAdmin);

/** Resolves once `listener` has a park in the database (its stats count one). */
async function parked(listener, ms = 10_000) {
  for (const until = Date.now() + ms; Date.now() < until; await sleep(10)) {
    if (listener.stats().parks > 0) return;
  }
  assert.fail(`the listener did not park within ${ms} ms (${JSON.stringify(listener.stats())})`);
}

/** `count` sessions on `url` each running SELECT SLEEP(seconds): resolves their answers (or errors). */
async function sleepers(url, count, seconds) {
  const conns = await Promise.all(Array.from({ length: count }, () => mysql.createConnection({ uri: url })));
  const answers = conns.map((c) =>
    c.query(`SELECT SLEEP(${seconds}) AS r`).then(
      ([rows]) => Number(rows[0].r),
      (e) => e,
    ),
  );
  return {
    async results() {
      const out = await Promise.all(answers);
      await Promise.all(conns.map((c) => c.end().catch(() => {})));
      return out;
    },
  };
}

/** A statement ended early: an error (MariaDB: 1317), or MySQL's SLEEP answering 1. */
const interrupted = (results) => results.filter((r) => r !== 0);

/**
 * Advances `url`'s statement counter (MariaDB's query ids) to just below `target`, so that the
 * next statements there get the ids another server's parks are getting now — the collision a
 * lookup on one server and a KILL on another needs.
 */
async function alignQueryIds(url, target) {
  const conn = await mysql.createConnection({ uri: url, multipleStatements: true });
  try {
    const [[{ q }]] = await conn.query(
      "SELECT COALESCE(MAX(QUERY_ID), 0) AS q FROM information_schema.PROCESSLIST WHERE COMMAND = 'Query'",
    );
    for (let n = Number(target) - Number(q) - 5; n > 0; n -= 200) {
      await conn.query(Array(Math.min(n, 200)).fill('SELECT 1').join(';'));
    }
  } finally {
    await conn.end();
  }
}

/** The highest statement id on `url` right now (MariaDB query ids, MySQL connection ids). */
async function latestId(url) {
  const conn = await mysql.createConnection({ uri: url });
  try {
    const [[{ q }]] = onMysql()
      ? await conn.query('SELECT CONNECTION_ID() AS q')
      : await conn.query('SELECT MAX(QUERY_ID) AS q FROM information_schema.PROCESSLIST');
    return Number(q);
  } finally {
    await conn.end();
  }
}

/**
 * Two private servers A and B with the same database and schema. A listener parks on A (a pool of
 * A only); B has `count` sessions of the same account sleeping; a backend whose pool is `ringerUrl(a, b)`
 * makes work `rounds` times. Answers what B's sleepers, the parked listener and the ringer saw.
 */
async function twoServers(t, ringerPool, { rounds = 6, count = 120, seconds = 12, busy = 0 } = {}) {
  const [a, b] = await Promise.all([startPrivateServer(), startPrivateServer()]);
  t.after(() => Promise.all([a.stop(), b.stop()]));
  const dbName = uniqueName('two');
  const dbUrl = (s) => `${s.url}${dbName}`;
  for (const s of [a, b]) {
    const root = await mysql.createConnection({ uri: s.url });
    await root.query(`CREATE DATABASE ${dbName}`);
    await root.end();
    const sql = m.mysqlPool(dbUrl(s));
    await m.applySchema(sql);
    await sql.close();
  }
  const parkedSql = m.mysqlPool(dbUrl(a));
  const listener = m.createMysqlListener(parkedSql, { intervalMs: 20_000 });
  const worker = m.createMysqlBackend(parkedSql, { listener });
  const ringerSql = await ringerPool(a, b, dbName);
  const ringer = m.createMysqlListener(ringerSql);
  const submitter = m.createMysqlBackend(ringerSql, { listener: ringer });
  // The work itself goes to A (a pool of A without a listener: it does not ring); the ringer's
  // enqueue, wherever its pool sends it, is what rings.
  const onA = m.createMysqlBackend(parkedSql);
  try {
    listener.start();
    let waiting = worker.queue.waitForWork(30_000);
    await parked(listener);
    // Put B's statements where A's parks are: B's ids overlap A's, statement for statement.
    if (!onMysql()) await alignQueryIds(dbUrl(b), await latestId(dbUrl(a)));
    const sleeping = await sleepers(dbUrl(b), count, seconds);
    await sleep(300);
    let woken = 0;
    // `busy` loops of other statements on the ringer's pool: the ring's statements then take
    // whichever of its connections is free, as in a busy process.
    let stop = false;
    const loops = Array.from({ length: busy }, async () => {
      while (!stop) await ringerSql.query('SELECT SLEEP(0.005)');
    });
    for (let round = 0; round < rounds; round++) {
      await onA.queue.enqueue(`a-${round}`);
      // Every other round one more checkout first, so that a pool taking hosts in turn sends
      // the ring's statements to A in some rounds and to B in others.
      if (round % 2 === 1) await ringerSql.query('SELECT 1');
      await submitter.queue.enqueue(`ring-${round}`);
      const went = await Promise.race([waiting.then(() => true), sleep(1500).then(() => false)]);
      if (went) {
        woken++;
        await worker.queue.claim({ limit: 100, leaseMs: 60_000 }); // take the work: the next park sleeps
        waiting = worker.queue.waitForWork(30_000);
      }
      await sleep(100);
    }
    stop = true;
    await Promise.all(loops);
    return { results: await sleeping.results(), listener: listener.stats(), ringer: ringer.stats(), woken };
  } finally {
    await listener.close();
    await ringer.close();
    await parkedSql.close();
    await ringerSql.close();
  }
}

test(
  'a ring over a load-balanced pool of two servers ends only the park, on its own server',
  { timeout: 180_000 },
  async (t) => {
    const seen = await twoServers(t, (a, b, db) =>
      m.mysqlPool({
        hosts: [
          { host: '127.0.0.1', port: a.port },
          { host: '127.0.0.1', port: b.port },
        ],
        failover: 'loadbalance',
        user: 'root',
        database: db,
      }),
    );
    assert.deepEqual(
      interrupted(seen.results),
      [],
      `no statement on the other server was interrupted (${JSON.stringify(seen)})`,
    );
    assert.ok(seen.listener.rung >= 1, `the park on A was rung (${JSON.stringify(seen.listener)})`);
    assert.ok(seen.woken >= 1, 'the parked worker woke for the work');
  },
);

/** A TCP balancer on loopback that sends each new connection to the next of `ports`, in turn. */
async function roundRobin(t, ports) {
  let next = 0;
  const sockets = new Set();
  const server = net.createServer((client) => {
    const port = ports[next++ % ports.length];
    const upstream = net.connect(port, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    for (const s of sockets) s.destroy();
    return new Promise((resolve) => server.close(resolve));
  });
  return server.address().port;
}

test(
  'a ring through a TCP balancer in front of two servers never ends a statement on the other',
  { timeout: 180_000 },
  async (t) => {
    // One host as far as the pool knows; each of its connections may reach either server.
    const seen = await twoServers(
      t,
      async (a, b, db) => {
        const port = await roundRobin(t, [a.port, b.port]);
        return m.mysqlPool({ host: '127.0.0.1', port, user: 'root', database: db, connectionLimit: 4 });
      },
      { rounds: 12, busy: 3 },
    );
    assert.deepEqual(
      interrupted(seen.results),
      [],
      `no statement on the other server was interrupted (${JSON.stringify(seen)})`,
    );
    assert.ok(seen.ringer.lookups >= 1, `the ringer rang (${JSON.stringify(seen.ringer)})`);
  },
);

test(
  "a bound value carrying a park's mark never makes its statement a ring's target",
  { timeout: 60_000 },
  async () => {
    const env = await pushDatabase('bell_forged', undefined, { ring: true });
    const user = m.mysqlPool(env.db.url);
    const holder = await mysql.createConnection({ uri: env.db.url });
    try {
      await user.query('CREATE TABLE note (id INT PRIMARY KEY, note TEXT)');
      await user.query("INSERT INTO note VALUES (1, 'first')");
      const [[{ db }]] = await holder.query('SELECT LOWER(HEX(DATABASE())) AS db');
      // Every mark a park has carried, the way a value could spell it: this package's and the
      // earlier one's, for every kind, with and without the pool's round-trip tag before it.
      const marks = [
        `SELECT /*ifw-bell:${db}::0123456789ab:wd:all*/ IF(1, 'go', 0)`,
        `/*ifw:0000000000000001:1:1*/ SELECT /*ifw-bell:${db}::0123456789ab:w:-*/`,
        '/*ifw-bell-w::0123456789ab:*/ /*ifw-bell-d::0123456789ab:all*/',
      ];
      // The row is locked: the user's UPDATE waits (a statement in flight) while the rings go.
      await holder.query('BEGIN');
      await holder.query("UPDATE note SET note = 'held' WHERE id = 1");
      const updates = marks.map((mark, i) =>
        i === 0
          ? user.exec('UPDATE note SET note = ? WHERE id = 1', [mark])
          : user.query('SELECT note FROM note WHERE id = 1 AND note <> ? FOR UPDATE', [mark]),
      );
      await sleep(300);
      for (let i = 0; i < 5; i++) {
        await env.backend.queue.enqueue(await env.run()); // a 'w' ring
        await env.backend.timer.schedule(await env.run(), new Date(Date.now() + 60_000)); // another
        await sleep(150);
      }
      await holder.query('COMMIT');
      const settled = await Promise.allSettled(updates);
      for (const [i, s] of settled.entries()) {
        assert.equal(s.status, 'fulfilled', `statement ${i} was not interrupted: ${s.reason?.message}`);
      }
      assert.equal(settled[0].value.affectedRows, 1, 'the UPDATE carrying a mark applied');
      assert.ok(env.listener.stats().lookups >= 1, 'the rings looked');
      assert.equal(env.listener.stats().kills, 0, 'and found no park to end');
    } finally {
      await holder.end().catch(() => {});
      await user.close();
      await env.close();
    }
  },
);

test(
  'a ring reaches the parks of its own database only, though prefix and account are the same',
  { timeout: 60_000 },
  async () => {
    const one = await pushDatabase('bell_db_one', undefined, { ring: true });
    const two = await pushDatabase('bell_db_two');
    const sql = m.mysqlPool(two.db.url);
    const listener = m.createMysqlListener(sql, { intervalMs: 2500 });
    const backend = m.createMysqlBackend(sql, { listener });
    try {
      listener.start();
      const waited = backend.queue.waitForWork(3000);
      await parked(listener);
      for (let i = 0; i < 10; i++) {
        await one.backend.queue.enqueue(await one.run()); // work in database one: rings there
        await sleep(60);
      }
      await waited;
      const stats = listener.stats();
      assert.equal(stats.rung, 0, `no ring of the other database reached this park (${JSON.stringify(stats)})`);
      assert.ok(stats.slept >= 1, `the park slept out (${JSON.stringify(stats)})`);
      const rang = one.listener.stats();
      assert.ok(rang.lookups >= 1, `database one rang (${JSON.stringify(rang)})`);
      assert.equal(rang.kills, 0, 'and found nobody parked in its own database');
    } finally {
      await listener.close();
      await sql.close();
      await two.close();
      await one.close();
    }
  },
);

test('sql.close() ends an idle park at once instead of waiting it out', { timeout: 60_000 }, async () => {
  const env = await pushDatabase('bell_close');
  const sql = m.mysqlPool(env.db.url);
  const listener = m.createMysqlListener(sql, { intervalMs: 20_000 });
  const backend = m.createMysqlBackend(sql, { listener });
  try {
    listener.start();
    const waited = backend.queue.waitForWork(30_000);
    await parked(listener);
    await sleep(200); // the park is in the database, sleeping
    const t0 = Date.now();
    await sql.close(); // the listener was not closed first
    const took = Date.now() - t0;
    // Bounded far below the park's 20 s: the pool ended the park, it did not wait for it.
    assert.ok(took < 8000, `close() took ${took} ms with a 20 s park in flight`);
    assert.equal(listener.state(), 'stopped', 'closing the pool stopped its listener');
    await waited; // released by the listener's close
  } finally {
    await listener.close();
    await sql.close();
    await env.close();
  }
});

/** `GRANT … TO user` for the privileges that let an account see and end other accounts' statements. */
const reachGrant = (user) =>
  onMysql()
    ? `GRANT PROCESS, CONNECTION_ADMIN ON *.* TO '${user}'@'%'`
    : `GRANT PROCESS, CONNECTION ADMIN ON *.* TO '${user}'@'%'`;

test(
  'rings across accounts: reached only with PROCESS and CONNECTION ADMIN, and stats() says so',
  { timeout: 90_000 },
  async () => {
    const db = await freshDatabase('bell_accounts');
    const names = { worker: uniqueName('w'), submitter: uniqueName('s') };
    const pw = 'pw-accounts';
    for (const name of Object.values(names)) {
      await adminQuery(`CREATE USER '${name}'@'%' IDENTIFIED BY '${pw}'`);
      await adminQuery(`GRANT SELECT, INSERT, UPDATE, DELETE, CREATE ON \`${db.database}\`.* TO '${name}'@'%'`);
    }
    const as = (name) => {
      const u = new URL(db.url);
      u.username = name;
      u.password = pw;
      return u.toString();
    };
    const workerSql = m.mysqlPool(as(names.worker));
    await m.applySchema(workerSql);
    const listener = m.createMysqlListener(workerSql, { intervalMs: 1500 });
    const worker = m.createMysqlBackend(workerSql, { listener });
    /** One submitter pool as the other account: makes work three times, answers both sides' stats. */
    const submitOnce = async () => {
      const sql = m.mysqlPool(as(names.submitter));
      const ringer = m.createMysqlListener(sql);
      const submitter = m.createMysqlBackend(sql, { listener: ringer });
      try {
        const before = listener.stats();
        const waited = worker.queue.waitForWork(5000);
        await sleep(300);
        const { runId } = await submitter.store.startRun({ name: 'acc', version: 1, input: 1 });
        await submitter.queue.enqueue(runId);
        await waited;
        await worker.queue.claim({ limit: 10, leaseMs: 60_000 });
        await sleep(100);
        const after = listener.stats();
        return { ringer: ringer.stats(), rung: after.rung - before.rung };
      } finally {
        await ringer.close();
        await sql.close();
      }
    };
    try {
      listener.start();
      const without = await submitOnce();
      assert.equal(
        without.ringer.reach,
        'account',
        `without the privileges a ring reaches its own account (${JSON.stringify(without)})`,
      );
      assert.equal(without.ringer.account.split('@')[0], names.submitter, 'stats() names the account');
      assert.equal(without.ringer.kills, 0, "the submitter's ring did not reach the worker's park");
      assert.equal(without.rung, 0, 'the worker was not rung');
      assert.ok(
        listener.stats().unannounced >= 1,
        `the worker counts the work no ring announced (${JSON.stringify(listener.stats())})`,
      );
      assert.equal(listener.stats().account.split('@')[0], names.worker, 'the worker says which account it parks as');

      await adminQuery(reachGrant(names.submitter));
      const granted = await submitOnce();
      assert.equal(
        granted.ringer.reach,
        'server',
        `with the privileges a ring reaches every account (${JSON.stringify(granted)})`,
      );
      assert.ok(granted.ringer.kills >= 1, `the ring ended the worker's park (${JSON.stringify(granted)})`);
      assert.ok(granted.rung >= 1, 'the worker was rung');
    } finally {
      await listener.close();
      await workerSql.close();
      for (const name of Object.values(names)) await adminQuery(`DROP USER IF EXISTS '${name}'@'%'`);
      await db.drop();
    }
  },
);
