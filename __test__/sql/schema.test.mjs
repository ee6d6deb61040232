// ddl / applySchema / tables / createMysqlBackend prefix handling, against the published seed's
// statements and a real server. The comparisons with the seed skip when it is missing (see
// helpers/seed.mjs; not under CI=true); the other checks always run.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import mysql from 'mysql2/promise';

import { freshDatabase } from '../helpers/db.mjs';
import { loadSeed, skipWithoutSeed } from '../helpers/seed.mjs';
import { applySchema, createMysqlBackend, ddl, mysqlPool, server, tables, useDatabase } from './helpers.mjs';

const ctx = useDatabase('sql_schema');
const BASES = ['run', 'step', 'job', 'timer', 'signal', 'cron'];
const BAD_PREFIXES = ['a-b', 'x;DROP', 'a b', '`', 'é', 'x.y', "q'", 'tab\t', 'new\nline', 'p_`; DROP TABLE run; --'];

// Reason to skip the comparisons with the seed (false when it is there or required); the seed
// itself is loaded only by the tests that use it.
const noSeed = skipWithoutSeed();

/** `SHOW CREATE TABLE` text of every table with `prefix`, AUTO_INCREMENT counters removed. */
async function definitions(sql, prefix) {
  const out = {};
  for (const b of BASES) {
    const [row] = await sql.query(`SHOW CREATE TABLE \`${prefix}${b}\``);
    out[b] = row['Create Table'].replace(/ AUTO_INCREMENT=\d+/, '');
  }
  return out;
}

async function tableNames(sql) {
  return (await sql.query('SHOW TABLES')).map((r) => Object.values(r)[0]).sort();
}

test("ddl('') and ddl('p_') equal the seed's statements exactly", { skip: noSeed }, async () => {
  const seed = await loadSeed();
  for (const prefix of ['', 'p_', 'App_2', '_']) {
    const ours = ddl(prefix);
    assert.equal(ours.length, 6);
    assert.deepEqual(ours, seed.ddl(prefix), `ddl(${JSON.stringify(prefix)})`);
  }
  assert.deepEqual(ddl(), seed.ddl(), 'default prefix');
  assert.deepEqual(ddl(), ddl(''));
  // Order and quoting: run, step, job, timer, signal, cron, each back-quoted with the prefix.
  ddl('p_').forEach((stmt, i) => {
    assert.ok(stmt.startsWith(`CREATE TABLE IF NOT EXISTS \`p_${BASES[i]}\``), stmt.slice(0, 60));
  });
  // A fresh array each call (callers may mutate it).
  const a = ddl('');
  a.pop();
  assert.equal(ddl('').length, 6);
});

test('tables(prefix) names the six back-quoted tables', () => {
  assert.deepEqual(tables(''), {
    run: '`run`',
    step: '`step`',
    job: '`job`',
    timer: '`timer`',
    signal: '`signal`',
    cron: '`cron`',
  });
  assert.deepEqual(tables('app_'), {
    run: '`app_run`',
    step: '`app_step`',
    job: '`app_job`',
    timer: '`app_timer`',
    signal: '`app_signal`',
    cron: '`app_cron`',
  });
});

test('applySchema creates the six tables; a second run is a no-op (definitions and data unchanged)', async () => {
  for (const prefix of ['', 'p_']) {
    await applySchema(ctx.sql, prefix);
    const names = await tableNames(ctx.sql);
    for (const b of BASES) assert.ok(names.includes(`${prefix}${b}`), `${prefix}${b} exists`);
    const first = await definitions(ctx.sql, prefix);
    await ctx.sql.exec(
      `INSERT INTO \`${prefix}run\` (id, name, version, status, created_at) VALUES ('r1', 'f', 1, 'pending', 0)`,
    );
    await applySchema(ctx.sql, prefix);
    await applySchema(ctx.sql, prefix);
    assert.deepEqual(
      await definitions(ctx.sql, prefix),
      first,
      `prefix ${JSON.stringify(prefix)}: definitions unchanged`,
    );
    assert.deepEqual(await ctx.sql.query(`SELECT id FROM \`${prefix}run\``), [{ id: 'r1' }], 'data kept');
  }
  // Exactly the twelve tables, nothing else.
  assert.deepEqual(await tableNames(ctx.sql), [...BASES.map((b) => b), ...BASES.map((b) => `p_${b}`)].sort());
});

test("applySchema's tables are identical to the seed's applySchema on another database", { skip: noSeed }, async () => {
  const seed = await loadSeed();
  const other = await freshDatabase('sql_schema_seed');
  const { host, port, user, password } = server();
  const pool = mysql.createPool({ host, port, user, password, database: other.database, connectionLimit: 2 });
  try {
    await seed.applySchema(seed.mysqlPool(pool), 'cmp_');
    await applySchema(ctx.sql, 'cmp_');
    const theirs = await definitions({ query: async (t) => (await pool.query(t))[0] }, 'cmp_');
    assert.deepEqual(await definitions(ctx.sql, 'cmp_'), theirs);
  } finally {
    await pool.end();
    await other.drop();
  }
});

test('a bad prefix is refused synchronously by ddl, tables and createMysqlBackend, naming it', async (t) => {
  const fakeSql = {
    query: async () => assert.fail('no statement may run'),
    exec: async () => assert.fail('no statement may run'),
    tx: async () => assert.fail('no statement may run'),
  };
  for (const bad of BAD_PREFIXES) {
    const named = (e) => {
      assert.ok(e instanceof Error, 'an Error');
      assert.ok(
        e.message.includes(bad) || e.message.includes(JSON.stringify(bad)),
        `message names ${JSON.stringify(bad)}: ${e.message}`,
      );
      assert.match(e.message, /prefix/i);
      return true;
    };
    assert.throws(() => ddl(bad), named, `ddl(${JSON.stringify(bad)})`);
    assert.throws(() => tables(bad), named, `tables(${JSON.stringify(bad)})`);
    assert.throws(
      () => createMysqlBackend(fakeSql, { prefix: bad }),
      named,
      `createMysqlBackend(${JSON.stringify(bad)})`,
    );
    assert.throws(() => createMysqlBackend(ctx.sql, { prefix: bad }), named);
  }
  await t.test('the seed refuses the same prefixes', { skip: noSeed }, async () => {
    const seed = await loadSeed();
    for (const bad of BAD_PREFIXES) {
      assert.throws(() => seed.ddl(bad));
    }
  });
});

test('applySchema with a bad prefix returns a rejected promise and touches nothing', async () => {
  const sql = mysqlPool(ctx.db.url);
  const statements = [];
  const spy = {
    query: (t, p) => {
      statements.push(t);
      return sql.query(t, p);
    },
  };
  const before = await tableNames(ctx.sql);
  try {
    for (const bad of BAD_PREFIXES) {
      let p;
      assert.doesNotThrow(() => {
        p = applySchema(spy, bad);
      }, 'no synchronous throw');
      assert.ok(p && typeof p.then === 'function', 'a promise');
      await assert.rejects(p, (e) => {
        assert.ok(e.message.includes(bad) || e.message.includes(JSON.stringify(bad)), e.message);
        return true;
      });
    }
  } finally {
    await sql.close();
  }
  assert.deepEqual(statements, [], 'no statement was sent');
  assert.deepEqual(await tableNames(ctx.sql), before);
});

test('good prefixes are accepted everywhere', () => {
  for (const ok of ['', 'a', 'A_9', '___', 'abcXYZ019_']) {
    assert.equal(ddl(ok).length, 6);
    assert.equal(tables(ok).run, `\`${ok}run\``);
    const b = createMysqlBackend(ctx.sql, { prefix: ok });
    for (const k of ['store', 'queue', 'timer', 'wakeup']) assert.ok(b[k], k);
  }
});
