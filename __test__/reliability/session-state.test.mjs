// Reliability — bound values under every session state a user can set.
//
// A literal must mean the same whatever the session is in: `sql_mode` with or without
// NO_BACKSLASH_ESCAPES (by SET, for one statement — MariaDB's `SET STATEMENT … FOR`, MySQL's
// `SET_VAR` hint — by a procedure), and any character set a user can name (`SET NAMES latin1 |
// gbk | big5 | sjis | utf8mb4`). A state a call sets lasts for that call only (the pool resets
// the connection afterwards: __test__/sql/session-carry.test.mjs), so each state is set inside
// a transaction, and values built to break out of a literal under one reading or another go
// through user statements in it and through every string field of the backend joined to it
// (inTx), natively and over a wrapped Sql. Nothing may be stored but the values themselves,
// read back exactly; no secret may leak; no table may go; an idempotency key with backslashes
// must still find its run.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { closeAdmin } from '../helpers/db.mjs';
import { onMysql } from '../helpers/server.mjs';
import { createMysqlBackend, freshPool, mysqlPool, tableNames, TABLES } from './helpers.mjs';
import { exercise, wrapSql } from './roundtrip.mjs';

after(closeAdmin);

const SECRET = 'top-secret-42';

/** Values that escape a literal rendered for the wrong backslash mode or character set. */
const BREAKOUTS = [
  "x\\'), ((SELECT v FROM secret)) -- ",
  "x'), ((SELECT v FROM secret)) -- ",
  "x\\\\'), ((SELECT v FROM secret)) -- ",
  "\u4e2d'), ((SELECT v FROM secret)) -- ", // UTF-8 E4 B8 AD 27: AD reads as a gbk lead byte
  "\u00bf'), ((SELECT v FROM secret)) -- ", // C2 BF 27: the classic gbk / big5 case
  "\u8868\\'), ((SELECT v FROM secret)) -- ", // 表: E8 A1 A8, then a backslash (sjis 0x5C trail)
  'C:\\new\\table',
  "it's",
  '\\',
  '\0\\\u001a\r\n',
];

/**
 * A statement run under `mode` that leaves the session's own sql_mode as it was: MariaDB's
 * `SET STATEMENT … FOR`, MySQL's `SET_VAR` optimizer hint.
 */
const underMode = (mode) =>
  onMysql() ? `SELECT /*+ SET_VAR(sql_mode = '${mode}') */ 1` : `SET STATEMENT sql_mode = '${mode}' FOR SELECT 1`;
const ONE_STATEMENT = onMysql() ? 'SET_VAR' : 'SET STATEMENT … FOR';

/** Session states, each as the statements a user runs to get there. */
const STATES = [
  {
    label: 'sql_mode NO_BACKSLASH_ESCAPES by SET',
    set: ["SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')"],
  },
  {
    label: `NO_BACKSLASH_ESCAPES on, last statement ran without it (${ONE_STATEMENT})`,
    set: ["SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')", underMode('')],
  },
  {
    label: `NO_BACKSLASH_ESCAPES off, last statement ran with it (${ONE_STATEMENT})`,
    set: [underMode('NO_BACKSLASH_ESCAPES')],
  },
  { label: 'a procedure whose body changes sql_mode', set: ['CALL set_mode_in_body()'] },
  ...['latin1', 'gbk', 'big5', 'sjis', 'utf8mb4'].map((cs) => ({ label: `SET NAMES ${cs}`, set: [`SET NAMES ${cs}`] })),
  { label: 'SET CHARACTER SET gbk', set: ['SET CHARACTER SET gbk'] },
];

let env;
before(async () => {
  env = await freshPool('rel_session', { connectionLimit: 1 });
  await env.sql.query('CREATE TABLE secret (v VARCHAR(64))');
  await env.sql.query('INSERT INTO secret VALUES (?)', [SECRET]);
  await env.sql.query('CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, v TEXT) DEFAULT CHARSET = utf8mb4');
  await env.sql.query(
    "CREATE PROCEDURE set_mode_in_body() BEGIN SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES'; SELECT 1; END",
  );
  await env.sql.query(
    "CREATE FUNCTION results_in_latin1() RETURNS INT DETERMINISTIC BEGIN SET character_set_results = 'latin1'; RETURN 1; END",
  );
});
after(async () => env && env.close());

async function enter(sql, state) {
  for (const s of state.set) await sql.query(s);
}

async function expectIntact(sql) {
  assert.deepEqual(await tableNames(sql), [...TABLES, 'secret', 't'].sort(), 'every table is still there');
}

for (const state of STATES) {
  test(`user statements: bound values stay data under ${state.label}`, async () => {
    const { sql } = env;
    await sql.query('DELETE FROM t');
    for (const v of BREAKOUTS) {
      await sql.tx(async (tx) => {
        await enter(tx, state);
        await tx.exec('INSERT INTO t (v) VALUES (?)', [v]);
        await enter(tx, state);
        const [row] = await tx.query('SELECT ? AS v, CHAR_LENGTH(?) AS n', [v, v]);
        assert.equal(row.v, v, `SELECT ? echoes ${JSON.stringify(v)}`);
        assert.equal(Number(row.n), [...v].length);
      });
    }
    // Where the grammar takes only a plain quoted string, values are quoted for the state read
    // from the session just before: still data, and still accepted.
    for (const v of BREAKOUTS) {
      await sql.tx(async (tx) => {
        await enter(tx, state);
        const found = await tx.query('SHOW TABLES LIKE ?', [v]);
        // (The server cuts a LIKE pattern at NUL, so that one may match tables: still data.)
        if (!v.includes('\0')) assert.deepEqual(found, [], `SHOW TABLES LIKE ${JSON.stringify(v)}`);
      });
    }
    await sql.tx(async (tx) => {
      await enter(tx, state);
      // Under NO_BACKSLASH_ESCAPES MySQL's LIKE has no escape character (MariaDB's keeps `\`):
      // there the pattern's backslashes are themselves, and nothing matches — the value stayed data.
      const [{ mode }] = await tx.query('SELECT @@SESSION.sql_mode AS mode');
      const literalBackslash = onMysql() && /NO_BACKSLASH_ESCAPES/.test(mode);
      const found = await tx.query('SHOW VARIABLES LIKE ?', ['max\\_allowed\\_packet']);
      assert.equal(found.length, literalBackslash ? 0 : 1);
      assert.equal((await tx.query('SHOW VARIABLES LIKE ?', ['max_allowed_packet'])).length, 1);
    });
    const rows = await sql.query('SELECT v FROM t ORDER BY id');
    assert.deepEqual(
      rows.map((r) => r.v),
      BREAKOUTS,
      'one row per insert, each holding exactly its value',
    );
    assert.ok(!rows.some((r) => r.v === SECRET), 'the secret never reached a row');
    // The same inside one transaction, statements not awaited one by one.
    await sql.tx(async (tx) => {
      for (const s of state.set) await tx.query(s);
      await Promise.all(BREAKOUTS.map((v) => tx.exec('INSERT INTO t (v) VALUES (?)', [v])));
    });
    const [{ n }] = await sql.query('SELECT COUNT(*) AS n FROM t WHERE v = ?', [SECRET]);
    assert.equal(Number(n), 0);
    assert.equal((await sql.query('SELECT v FROM t')).length, BREAKOUTS.length * 2);
    await expectIntact(sql);
  });

  test(`backend units: keys, names and payloads stay data under ${state.label}`, async (t) => {
    const { sql } = env;
    for (const [path, over] of [
      ['native', (tx) => tx],
      ['wrapped', (tx) => wrapSql(tx)],
    ]) {
      // The backend joined to a transaction (inTx) runs in the caller's session, state and all.
      await sql.tx(async (tx) => {
        await enter(tx, state);
        const b = createMysqlBackend(over(tx));
        const key = 'C:\\new\\table';
        const spec = {
          name: "\u4e2d'x",
          version: 1,
          input: { p: 'C:\\new\\table', q: "\u00bf'" },
          idempotencyKey: key,
        };
        const first = await b.store.startRun(spec);
        await enter(tx, state);
        const again = await b.store.startRun(spec);
        assert.equal(again.created, false, `${path}: the same key finds the same run`);
        assert.equal(again.runId, first.runId);
        await enter(tx, state);
        const snap = await b.store.loadRun(first.runId);
        assert.deepEqual([snap.run.name, snap.run.idempotencyKey, snap.run.input], [spec.name, key, spec.input]);
        const [raw] = await tx.query('SELECT idempotency_key AS k, name FROM run WHERE id = ?', [first.runId]);
        assert.deepEqual([raw.k, raw.name], [key, spec.name], `${path}: stored bytes are the values`);
      });
      for (const v of BREAKOUTS.slice(0, 6)) {
        await sql.tx(async (tx) => {
          await enter(tx, state);
          await exercise(
            tx,
            createMysqlBackend(tx),
            (id) => createMysqlBackend(over(tx), { id }),
            v,
            `${path} ${JSON.stringify(v)}`,
          );
        });
      }
    }
    await expectIntact(sql);
    t.diagnostic(`${state.label}: ${BREAKOUTS.length} values, native and wrapped`);
  });
}

test('a session moved off utf8mb4 where no statement shows it is discarded, never misread', async () => {
  // A stored function may set character_set_results; nothing in `SELECT f()` names it.
  const sql = mysqlPool(env.url);
  try {
    await sql.query('SELECT results_in_latin1() AS one');
    await assert.rejects(
      sql.query('SELECT ? AS v', ['\u00e9\u4e2d']),
      (e) => e.kind === 'connection' && e.code === 'ER_CHARSET_CHANGED' && /latin1/.test(e.message),
      'text that would arrive in latin1 is refused',
    );
    const [row] = await sql.query('SELECT ? AS v', ['\u00e9\u4e2d']);
    assert.equal(row.v, '\u00e9\u4e2d', 'the next call runs on a fresh connection in utf8mb4');
    const b = createMysqlBackend(sql);
    const { runId } = await b.store.startRun({ name: 'f', version: 1, input: { s: '\u00e9' } });
    await sql.query('SELECT results_in_latin1() AS one');
    await assert.rejects(b.store.loadRun(runId), (e) => e.kind === 'connection' && e.code === 'ER_CHARSET_CHANGED');
    assert.deepEqual((await b.store.loadRun(runId)).run.input, { s: '\u00e9' });
  } finally {
    await sql.close();
  }
});

test('literals of both forms share one collation: the server default for utf8mb4', async () => {
  // A hex literal (`_utf8mb4 X'…'`) takes utf8mb4's default collation and a quoted one the
  // connection's: they must be the same, or comparing the two fails with "Illegal mix of
  // collations" (MySQL 8 and MariaDB ≥ 11.4, whose default is not the handshake's general_ci).
  const sql = mysqlPool(env.url);
  try {
    const [{ c, d }] = await sql.query(
      "SELECT @@collation_connection AS c, (SELECT COLLATION_NAME FROM information_schema.COLLATIONS WHERE CHARACTER_SET_NAME = 'utf8mb4' AND IS_DEFAULT = 'Yes') AS d",
    );
    assert.equal(c, d);
    const [row] = await sql.query("SELECT ? = 'x' AS eq, CONCAT('%', ?, '%') AS pattern", ['\u00e9', '\u4e2d']);
    assert.deepEqual([Number(row.eq), row.pattern], [0, '%\u4e2d%']);
    // A user's change of the collation is put back too.
    await sql.query('SET collation_connection = utf8mb4_unicode_ci');
    const [again] = await sql.query('SELECT @@collation_connection AS c');
    assert.equal(again.c, d);
  } finally {
    await sql.close();
  }
});
