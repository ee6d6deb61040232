// What a pooled connection carries from one borrower to the next (docs/configuration.md, "Session
// state between borrowers"): nothing a statement of the user's may have changed — the connection
// is reset (and gets utf8mb4, READ COMMITTED and the pool's database back) before anyone else
// borrows it — while plain statements and the backend's own calls cost no reset.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { onMysql } from '../helpers/server.mjs';
import { applySchema, createMysqlBackend, mysqlPool, useDatabase } from './helpers.mjs';

const ctx = useDatabase('sql_carry', {
  init: async ({ sql, db }) => {
    await sql.query('CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(64))');
    await sql.query(`CREATE DATABASE IF NOT EXISTS \`${db.database}_other\``);
    await applySchema(sql);
  },
});

const isolationVar = () => (onMysql() ? '@@transaction_isolation' : '@@tx_isolation');

/** What the next borrower of a connection sees of its session. */
async function sessionOf(sql) {
  const [row] = await sql.query(
    `SELECT CONNECTION_ID() AS id, @@SESSION.sql_mode AS mode, @@SESSION.time_zone AS tz, @x AS x,
            @@autocommit AS ac, ${isolationVar()} AS iso, @@character_set_client AS cs,
            @@collation_connection AS coll, DATABASE() AS db, IS_USED_LOCK('carry_lock') AS locker`,
  );
  return row;
}

/** Calls that leave state in their session, each as one borrow of a connection. */
const LEAVERS = [
  ['SET sql_mode in a tx', (sql) => sql.tx((t) => t.query("SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES'"))],
  ['SET sql_mode', (sql) => sql.query("SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')")],
  ['SET time_zone', (sql) => sql.query("SET time_zone = '+05:00'")],
  ['a user variable', (sql) => sql.query('SET @x = 42')],
  ['a user variable in a SELECT', (sql) => sql.query('SELECT @x := 7 AS seven')],
  ['SET autocommit = 0', (sql) => sql.query('SET autocommit = 0')],
  ['an open BEGIN', (sql) => sql.query('BEGIN')],
  ['SET TRANSACTION ISOLATION LEVEL', (sql) => sql.query('SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE')],
  ['SET NAMES latin1', (sql) => sql.query('SET NAMES latin1')],
  ['USE another database', (sql) => sql.query(`USE \`${ctx.db.database}_other\``)],
  ['GET_LOCK', (sql) => sql.query("SELECT GET_LOCK('carry_lock', 0) AS got")],
  ['a temporary table', (sql) => sql.query('CREATE TEMPORARY TABLE tmp_carry (id INT)')],
  ['a multi-statement text', (sql) => sql.query("SELECT 1; SET SESSION sql_mode = 'ANSI_QUOTES'")],
];

test('a call that changed its session leaves nothing to the next borrower of its connection', async () => {
  const sql = mysqlPool(`${ctx.db.url}?connectionLimit=1`);
  try {
    const clean = await sessionOf(sql);
    assert.equal(clean.db, ctx.db.database);
    assert.equal(clean.cs, 'utf8mb4');
    assert.equal(clean.iso, 'READ-COMMITTED');
    for (const [label, leave] of LEAVERS) {
      await leave(sql);
      const next = await sessionOf(sql);
      assert.equal(next.id, clean.id, `${label}: the same connection (connectionLimit 1), reset, not replaced`);
      assert.deepEqual(next, clean, `${label}: the next borrower sees the session as it was`);
      await assert.rejects(sql.query('SELECT * FROM tmp_carry'), /tmp_carry/, `${label}: no temporary table left`);
    }
  } finally {
    await sql.close();
  }
});

test('the backend never runs in a session a user call changed', async () => {
  // Twelve connections, as in the report: transactions that set sql_mode on many of them.
  const sql = mysqlPool(`${ctx.db.url}?connectionLimit=12`);
  try {
    await Promise.all(
      Array.from({ length: 24 }, () =>
        sql.tx(async (t) => {
          await t.query("SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')");
          await t.query('SELECT SLEEP(0.02)');
        }),
      ),
    );
    // Every connection of the pool, held at once: none kept NO_BACKSLASH_ESCAPES.
    const modes = [];
    let release;
    const hold = new Promise((r) => (release = r));
    const held = Array.from({ length: 12 }, () =>
      sql.tx(async (t) => {
        const [{ mode, id }] = await t.query('SELECT @@SESSION.sql_mode AS mode, CONNECTION_ID() AS id');
        modes.push({ id, mode });
        if (modes.length === 12) release();
        await hold;
      }),
    );
    await Promise.all(held);
    assert.equal(new Set(modes.map((m) => m.id)).size, 12, 'twelve connections');
    assert.deepEqual(
      modes.filter((m) => /NO_BACKSLASH_ESCAPES/.test(m.mode)),
      [],
      'no connection carried NO_BACKSLASH_ESCAPES',
    );
    // A backend value with a backslash round-trips on every connection.
    const b = createMysqlBackend(sql);
    const runs = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        b.store.startRun({ name: 'carry', version: 1, input: { p: `C:\\dir\\${i}` }, idempotencyKey: `k\\${i}` }),
      ),
    );
    for (const [i, { runId }] of runs.entries()) {
      const [row] = await sql.query('SELECT idempotency_key AS k FROM run WHERE id = ?', [runId]);
      assert.equal(row.k, `k\\${i}`);
    }
  } finally {
    await sql.close();
  }
});

test('plain statements and backend calls keep their connection as it is (no reset)', async () => {
  const sql = mysqlPool(`${ctx.db.url}?connectionLimit=1`);
  try {
    const b = createMysqlBackend(sql);
    const { runId } = await b.store.startRun({ name: 'keep', version: 1, input: null });
    await b.store.loadRun(runId); // prepared on this connection
    const prepares = async () => Number((await sql.query("SHOW SESSION STATUS LIKE 'Com_stmt_prepare'"))[0].Value);
    const before = await prepares();
    for (let i = 0; i < 5; i++) {
      await b.store.loadRun(runId);
      await sql.query('SELECT * FROM t WHERE id = ?', [i]);
    }
    // A reset would have dropped the prepared statement and counted another prepare.
    assert.equal(await prepares(), before, 'loadRun stayed prepared: no reset in between');
    // LAST_INSERT_ID() of a plain INSERT is still there for the next call on the connection.
    const { insertId } = await sql.exec('INSERT INTO t (v) VALUES (?)', ['x']);
    const [{ last }] = await sql.query('SELECT LAST_INSERT_ID() AS last');
    assert.equal(Number(last), insertId);
  } finally {
    await sql.close();
  }
});

test('resetOnRelease: true resets after every call of the user, as mysql2 does', async () => {
  const sql = mysqlPool({ url: `${ctx.db.url}?connectionLimit=1`, resetOnRelease: true });
  try {
    const { insertId } = await sql.exec('INSERT INTO t (v) VALUES (?)', ['y']);
    assert.ok(insertId > 0);
    const [{ last }] = await sql.query('SELECT LAST_INSERT_ID() AS last');
    assert.equal(Number(last), 0, 'the connection was reset after the INSERT');
    const after = await sessionOf(sql);
    assert.deepEqual([after.cs, after.iso, after.db], ['utf8mb4', 'READ-COMMITTED', ctx.db.database]);
  } finally {
    await sql.close();
  }
});

/** Statements that change the session, each as the server reads it whatever its spelling. */
const CHANGERS = [
  'SET @x = 42',
  'SET autocommit = 0',
  "SET SESSION sql_mode = 'ANSI_QUOTES'",
  "SET time_zone = '+05:00'",
  () => `USE \`${ctx.db.database}_other\``,
  "SELECT GET_LOCK('carry_lock', 0) AS got",
  "SELECT `GET_LOCK`('carry_lock', 0) AS got",
  'CREATE TEMPORARY TABLE tmp_carry (id INT)',
];

/**
 * Spellings a user or a tool may wrap a statement in. The version-gated comments hold text the
 * server skips (a version above its own; `/*M!` is a plain comment on MySQL), so the statement
 * after them is the one that runs.
 */
const SPELLINGS = [
  ['as is', (s) => s],
  ['first word in lower case', (s) => s.replace(/^\w+/, (w) => w.toLowerCase())],
  ['leading whitespace', (s) => ` \n\t ${s}`],
  ['a block comment first', (s) => `/* why */ ${s}`],
  ['a -- comment first', (s) => `-- why\n${s}`],
  ['a # comment first', (s) => `# why\n${s}`],
  ['after a gated comment the server skips', (s) => `/*!99999 SELECT */ ${s}`],
  ['after a MariaDB comment', (s) => `/*M!999999 SELECT */ ${s}`],
  ['second of two statements', (s) => `SELECT 1; ${s}`],
  ['after a string holding ;', (s) => `SELECT 'a;b' AS x;\n${s}`],
  ['after an optimizer hint', (s) => `SELECT /*+ MAX_EXECUTION_TIME(1000) */ 1; ${s}`],
];

test('every spelling of a session-changing statement leaves nothing to the next borrower', async () => {
  const sql = mysqlPool(`${ctx.db.url}?connectionLimit=1`);
  try {
    const clean = await sessionOf(sql);
    for (const changer of CHANGERS) {
      const statement = typeof changer === 'function' ? changer() : changer;
      for (const [how, spell] of SPELLINGS) {
        const text = spell(statement);
        const label = `${JSON.stringify(text)} (${how})`;
        await sql.query(text);
        const next = await sessionOf(sql);
        assert.deepEqual(next, clean, `${label}: the next borrower sees the session as it was`);
        await assert.rejects(sql.query('SELECT * FROM tmp_carry'), /tmp_carry/, `${label}: no temporary table left`);
      }
    }
  } finally {
    await sql.close();
  }
});

test('setIsolation: false — a reset still gives the pool its own database back', async () => {
  const sql = mysqlPool({ url: `${ctx.db.url}?connectionLimit=1`, setIsolation: false });
  try {
    await sql.query(`USE \`${ctx.db.database}_other\``);
    const [{ db }] = await sql.query('SELECT DATABASE() AS db');
    assert.equal(db, ctx.db.database, 'the next borrower is in the pool database');
    const b = createMysqlBackend(sql);
    await sql.query(`USE \`${ctx.db.database}_other\``);
    const { runId } = await b.store.startRun({ name: 'use-carry', version: 1, input: null });
    const [{ n }] = await sql.query('SELECT COUNT(*) AS n FROM run WHERE id = ?', [runId]);
    assert.equal(Number(n), 1, "the run is in the pool's database, not the one the user chose");
  } finally {
    await sql.close();
  }
});
