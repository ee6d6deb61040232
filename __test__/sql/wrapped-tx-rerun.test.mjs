// A wrapped `Sql` whose `tx(fn)` calls `fn` again — the usual advice on Galera is a `tx` that
// re-runs its callback after errno 1213, e.g. a certification failure at COMMIT. The backend
// drives one unit per backend call through `fn`; a second call of `fn` is refused at once (it
// rejects, so the user's tx ends and gives its connection back), and the backend call rejects
// promptly with ERR_UNIT_ABORTED (transient: nothing of the unit was committed; re-run the call).
//
// The wrapper here is a plain mysql2 one with that retry. Its first attempt really fails with
// errno 1213: after `fn` resolved (the unit's statements are in its transaction) it takes part
// in a real deadlock with a second connection, which has written more rows and so is not the one
// InnoDB picks as the victim.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';

import mysql from 'mysql2/promise';

import { m, settle, useDatabase, within } from './helpers.mjs';

const T = Date.parse('2030-01-01T00:00:00Z');
/** How long the backend call may take to settle (the defect: it never did, or after ~8 s). */
const BOUND_MS = 5_000;
const TO = { timeout: 60_000 };

const ctx = useDatabase('sql_wrapped_rerun', {
  init: async ({ sql }) => {
    await m.applySchema(sql);
    await sql.query('CREATE TABLE locks (id VARCHAR(8) PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB');
    await sql.query("INSERT INTO locks (id, n) VALUES ('a', 0), ('b', 0)");
    await sql.query('CREATE TABLE ballast (id INT AUTO_INCREMENT PRIMARY KEY, pad VARCHAR(64) NOT NULL) ENGINE=InnoDB');
    // Set up here: root-level `before` hooks are not ordered reliably in Node 20.
    pool = mysql.createPool({ uri: ctx.db.url, connectionLimit: 4 });
    other = await mysql.createConnection({ uri: ctx.db.url });
    admin = await mysql.createConnection({ uri: ctx.db.url });
  },
});

let pool; // the wrapper's mysql2 pool
let other; // the deadlock's other side
let admin; // watches for the lock wait
after(async () => {
  await pool?.end();
  await other?.end();
  await admin?.end();
});

/** mysql2 connections of `pool` checked out and not released. */
const checkedOut = () => pool.pool._allConnections.length - pool.pool._freeConnections.length;

/** An `Sql` over a mysql2 connection (a transaction's handle; `tx` nests flat). */
function handleOf(conn) {
  const self = {
    query: async (text, params) => (await conn.query(text, params))[0],
    exec: async (text, params) => (await conn.query(text, params))[0],
    tx: (fn) => fn(self),
  };
  return self;
}

/**
 * An `Sql` over the mysql2 pool whose `tx` re-runs `fn` after errno 1213 (up to 3 attempts);
 * `beforeCommit(conn, attempt)` runs after `fn` resolved, before COMMIT.
 */
function retryingSql(beforeCommit) {
  const sql = {
    attempts: 0,
    query: async (text, params) => (await pool.query(text, params))[0],
    exec: async (text, params) => (await pool.query(text, params))[0],
    async tx(fn) {
      for (let attempt = 1; ; attempt++) {
        sql.attempts = attempt;
        const conn = await pool.getConnection();
        try {
          await conn.beginTransaction();
          const out = await fn(handleOf(conn));
          await beforeCommit(conn, attempt);
          await conn.commit();
          return out;
        } catch (e) {
          await conn.rollback().catch(() => undefined);
          if (e.errno !== 1213 || attempt >= 3) throw e;
        } finally {
          conn.release();
        }
      }
    },
  };
  return sql;
}

/**
 * Resolves once the other connection's transaction (session `id`) waits for a row lock: other
 * test files share the server, so only its own wait counts.
 */
async function someoneWaits(id) {
  for (let i = 0; i < 500; i++) {
    const [[{ n }]] = await admin.query(
      "SELECT COUNT(*) AS n FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT' AND trx_mysql_thread_id = ?",
      [id],
    );
    if (Number(n) > 0) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('the other connection never waited for the lock');
}

/**
 * Makes the attempt's transaction (on `conn`) the victim of a real deadlock: it locks row a,
 * the other connection (holding row b and many written rows) waits for a, then `conn` asks for b.
 */
async function deadlock(conn) {
  await other.query('BEGIN');
  await other.query(`INSERT INTO ballast (pad) VALUES ${Array(300).fill("('ballast')").join(', ')}`);
  await other.query("SELECT n FROM locks WHERE id = 'b' FOR UPDATE");
  await conn.query("SELECT n FROM locks WHERE id = 'a' FOR UPDATE");
  const [[{ id }]] = await other.query('SELECT CONNECTION_ID() AS id');
  const waiting = other.query("UPDATE locks SET n = n + 1 WHERE id = 'a'");
  try {
    await someoneWaits(id);
    await conn.query("UPDATE locks SET n = n + 1 WHERE id = 'b'");
  } finally {
    await waiting.catch(() => undefined);
    await other.query('ROLLBACK');
  }
}

async function unitRows(runId) {
  const [[r]] = await admin.query(
    'SELECT (SELECT COUNT(*) FROM step WHERE run_id = ?) AS step, (SELECT COUNT(*) FROM job WHERE run_id = ?) AS job',
    [runId, runId],
  );
  return { step: Number(r.step), job: Number(r.job) };
}

test(
  'a wrapped tx that re-runs fn after a real deadlock: the call rejects promptly as ERR_UNIT_ABORTED, nothing written, no connection left out',
  TO,
  async () => {
    const runId = 'r-rerun';
    await ctx.sql.exec(
      "INSERT INTO run (id, name, version, status, attempts, created_at) VALUES (?, 'f', 1, 'running', 1, ?)",
      [runId, T],
    );
    let deadlocks = 1;
    const sql = retryingSql(async (conn) => {
      if (deadlocks-- > 0) await deadlock(conn);
    });
    const { store } = m.createMysqlBackend(sql);
    const checkpoint = () =>
      store.checkpointStep(
        { runId, cursorKey: 's0', status: 'ok', result: { v: 1 }, attempts: 1 },
        { enqueue: [{ runId }] },
      );

    const t0 = performance.now();
    const out = await settle(() => within(checkpoint(), BOUND_MS, 'checkpointStep'));
    const ms = performance.now() - t0;
    assert.equal(sql.attempts, 2, 'the first attempt was the deadlock victim, the wrapper called fn again');
    assert.equal(out.ok, false, 'the call rejects');
    assert.equal(out.error.code, 'ERR_UNIT_ABORTED', out.error.stack);
    assert.match(out.error.message, /called its function again/);
    assert.deepEqual(await unitRows(runId), { step: 0, job: 0 }, 'nothing of the unit was committed');
    assert.equal(checkedOut(), 0, 'every mysql2 connection was released');
    console.log(`# the call rejected after ${ms.toFixed(0)} ms`);

    // Re-run as a whole (as a caller does after a transient error), without a deadlock: all of it.
    await checkpoint();
    assert.equal(sql.attempts, 1);
    assert.deepEqual(await unitRows(runId), { step: 1, job: 1 }, 'the re-run call wrote all of the unit');
    assert.equal(checkedOut(), 0);
  },
);
