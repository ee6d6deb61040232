// queryTimeoutMs: a call that rejects because its round trip went unanswered must not apply
// afterwards. A statement blocked on a row lock is the case that matters: the server keeps it
// waiting, and unless its session is killed it applies the moment the lock is released, long
// after the caller was told it failed. Whatever the statement's text looks like (a template
// literal's leading newline, a 4-byte character early on, a comment first), the session is
// found and killed; and a session that is not ours — the same connection id on another server,
// reached through a load balancer — is never killed.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import mysql from 'mysql2/promise';

import { closeAdmin } from '../helpers/db.mjs';
import { startPrivateServer, processList } from '../helpers/server.mjs';
import { createMysqlBackend, freshPool, mysqlPool, settle, sleep, withParams } from './helpers.mjs';

after(closeAdmin);

const BOUND_MS = 400;

let env;
before(async () => {
  env = await freshPool('rel_kill');
  await env.sql.exec(
    'CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL, note VARCHAR(64) CHARACTER SET utf8mb4) ENGINE=InnoDB',
  );
});
after(async () => env && env.close());

/** Polls `check` until it holds, failing with `what` after `ms`. */
async function eventually(check, ms, what) {
  const until = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > until) assert.fail(`${what} within ${ms} ms`);
    await sleep(50);
  }
}

/**
 * Holds a row lock (`lockSql` inside a transaction of the setup pool) until the returned
 * `release()` is called.
 */
async function holdLock(lockSql, params) {
  let release;
  const released = new Promise((r) => (release = r));
  let locked;
  const isLocked = new Promise((r) => (locked = r));
  const done = env.sql.tx(async (t) => {
    await t.query(lockSql, params);
    locked();
    await released;
  });
  await isLocked;
  return async () => {
    release();
    await done;
  };
}

/** Sessions other than the setup pool's that wait on a lock with `fragment` in their statement. */
async function waiting(fragment) {
  const rows = await env.sql.query(
    `SELECT ID FROM ${processList()} WHERE DB = DATABASE() AND INFO LIKE CONCAT('%', ?, '%') AND ID <> CONNECTION_ID()`,
    [fragment],
  );
  return rows.length;
}

/**
 * Runs `call` (which blocks on the lock `release` holds) to its queryTimeoutMs rejection, checks
 * that the blocked session goes away, then releases the lock.
 */
async function timesOutAndIsKilled(label, call, fragment, release) {
  try {
    const r = await settle(call());
    assert.equal(r.ok, false, `${label}: the blocked call rejects`);
    assert.equal(r.error.code, 'ETIMEDOUT', `${label}: ${r.error.message}`);
    await eventually(async () => (await waiting(fragment)) === 0, 5000, `${label}: the blocked session was killed`);
  } finally {
    await release();
  }
}

test(
  'sql.exec: a timed-out UPDATE blocked on a row lock never applies, whatever its text looks like',
  { timeout: 90_000 },
  async () => {
    await env.sql.exec("INSERT INTO t (id, v, note) VALUES (1, 0, 'start')");
    const sql = mysqlPool(withParams(env.url, { queryTimeoutMs: BOUND_MS, connectionLimit: 2 }));
    const variants = [
      ['leading spaces', '      UPDATE t SET v = v + 1 WHERE id = 1'],
      ['a template literal', '\n        UPDATE t\n        SET v = v + 1\n        WHERE id = 1\n      '],
      ['a 4-byte character early', "UPDATE t SET note = '😀😀', v = v + 1 WHERE id = 1"],
      ['a long comment first', `/* ${'why this update exists: '.repeat(4)} */ UPDATE t SET v = v + 1 WHERE id = 1`],
      ['tabs and a 4-byte character', "\t\tUPDATE t SET note = '𝒳', v = v + 1 WHERE id = ?"],
    ];
    try {
      for (const [label, text] of variants) {
        const release = await holdLock('SELECT v FROM t WHERE id = 1 FOR UPDATE');
        await timesOutAndIsKilled(label, () => sql.exec(text, text.includes('?') ? [1] : []), 'v = v + 1', release);
        // The lock is gone: had the statement survived, it would have applied by now. The read
        // below waits for nothing, and shows the row as the setup left it.
        const [row] = await env.sql.query('SELECT v, note FROM t WHERE id = 1');
        assert.deepEqual({ ...row }, { v: 0, note: 'start' }, `${label}: the timed-out UPDATE applied later`);
      }
      assert.deepEqual(await sql.query('SELECT 1 AS one'), [{ one: 1 }], 'the pool carries on');
    } finally {
      await sql.close();
    }
  },
);

test(
  'a backend call that timed out on a row lock never applies, over the text and the prepared path',
  { timeout: 90_000 },
  async () => {
    for (const [path, params] of [
      ['text', { statementCacheSize: 0 }],
      ['prepared', {}],
    ]) {
      const runId = `😀-kill-${path}`;
      const setup = createMysqlBackend(env.sql);
      await setup.timer.schedule(runId, new Date(Date.now() + 60_000));
      const sql = mysqlPool(withParams(env.url, { queryTimeoutMs: BOUND_MS, connectionLimit: 2, ...params }));
      try {
        const b = createMysqlBackend(sql);
        const release = await holdLock('SELECT run_id FROM `timer` WHERE run_id = ? FOR UPDATE', [runId]);
        await timesOutAndIsKilled(`${path}: timer.cancel`, () => b.timer.cancel(runId), 'DELETE FROM `timer`', release);
        const [{ n }] = await env.sql.query('SELECT COUNT(*) AS n FROM `timer` WHERE run_id = ?', [runId]);
        assert.equal(Number(n), 1, `${path}: the timed-out cancel applied later`);
      } finally {
        await sql.close();
      }
    }
  },
);

/**
 * A TCP load balancer on loopback: each new connection goes to `lb.target` (a port) as it is at
 * connect time. `lb.opened(port)` counts the connections sent to `port`, `lb.live(port)` those
 * still open.
 */
async function loadBalancer(target) {
  const opened = new Map();
  const live = new Map();
  const bump = (m, port, d) => m.set(port, (m.get(port) || 0) + d);
  const server = net.createServer((client) => {
    const port = lb.target;
    bump(opened, port, 1);
    bump(live, port, 1);
    const upstream = net.connect({ host: '127.0.0.1', port });
    client.pipe(upstream);
    upstream.pipe(client);
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      bump(live, port, -1);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const lb = {
    target,
    port: server.address().port,
    opened: (port) => opened.get(port) || 0,
    live: (port) => live.get(port) || 0,
    close: () => new Promise((r) => server.close(r)),
  };
  return lb;
}

test(
  'behind a load balancer, the killer never kills another client’s session that has the same id on another server',
  { timeout: 120_000 },
  async () => {
    const other = await startPrivateServer();
    {
      // Servers behind one balancer hold the same databases.
      const boot = await mysql.createConnection({ uri: other.url });
      await boot.query(`CREATE DATABASE \`${env.db.database}\``);
      await boot.end();
    }
    const mainPort = Number(new URL(env.url).port);
    const lb = await loadBalancer(mainPort);
    const viaLb = new URL(env.url);
    viaLb.host = `127.0.0.1:${lb.port}`;
    const held = [];
    let sql;
    let twin;
    try {
      // Our pooled connection on the main server, and another client's session with the same
      // id on the other server (ids are counted per server: open sessions there until one has it).
      for (let tries = 0; tries < 50 && !twin; tries++) {
        if (sql) await sql.close();
        lb.target = mainPort;
        sql = mysqlPool(withParams(viaLb.toString(), { queryTimeoutMs: BOUND_MS, connectionLimit: 1 }));
        const [{ id }] = await sql.query('SELECT CONNECTION_ID() AS id');
        for (;;) {
          const c = await mysql.createConnection({ uri: other.url });
          if (c.threadId === Number(id)) {
            twin = c;
            break;
          }
          await c.end();
          if (c.threadId > Number(id)) break; // the other server is ahead: a new id here
        }
      }
      assert.ok(twin, 'found a session with the same id on the other server');
      // The twin runs exactly the statement ours will time out on, as the same user.
      const text = 'SELECT SLEEP(6) AS s';
      const twinRun = twin.query(text).then(
        ([rows]) => rows[0].s,
        (e) => e,
      );
      held.push(twin);
      await sleep(100);
      lb.target = other.port; // the killer's own connection now reaches the other server
      const before = lb.opened(other.port);
      const r = await settle(sql.query(text));
      assert.equal(r.ok, false, 'our statement timed out');
      assert.equal(r.error.code, 'ETIMEDOUT');
      // The killer connected to the other server, looked, and left.
      await eventually(
        async () => lb.opened(other.port) > before && lb.live(other.port) === 0,
        10_000,
        'the killer came and went',
      );
      assert.equal(await twinRun, 0, 'the other client’s session was not killed (its SLEEP ran to the end)');
    } finally {
      for (const c of held) await c.end().catch(() => undefined);
      if (sql) await sql.close();
      await lb.close();
      await other.stop();
    }
  },
);
