// Reliability 2 — SQL injection through every string field.
//
// Classic injection strings go through names, keys, ids, cursor keys, shapes, signal names, cron
// names, tags and payloads (see roundtrip.mjs for the full field list), on the native path and on
// the wrapped (user Sql) path. Each value must round-trip exactly, a bystander run's rows must be
// untouched, and all six tables (plus a canary table under another prefix) must be intact.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { closeAdmin } from '../helpers/db.mjs';
import { startPrivateServer } from '../helpers/server.mjs';
import { applySchema, countAll, createMysqlBackend, freshPool, mysqlPool, tableNames, TABLES } from './helpers.mjs';
import { exercise, wrapSql } from './roundtrip.mjs';

after(closeAdmin);

let env;
before(async () => {
  env = await freshPool('rel_inject');
  await applySchema(env.sql, 'canary_');
});
after(async () => env && env.close());

const INJECTIONS = [
  "' OR 1=1 --",
  "' OR '1'='1",
  "' OR 1=1 #",
  "' OR 1=1 /*",
  '" OR 1=1 --',
  '"; DROP TABLE run; --',
  "'; DROP TABLE run; --",
  "'); DROP TABLE `job`; --",
  "x'; DELETE FROM `signal`; SELECT '",
  "x'; UPDATE run SET status='done'; --",
  "x' UNION SELECT id, name, version FROM run --",
  "\\'; DROP TABLE step; --",
  "\\\\'; DROP TABLE step; --",
  "\\' OR 1=1 --",
  "\\\\\\' OR '1'='1",
  '\\',
  '\\\\',
  "'\\",
  '\\0',
  "\0' OR 1=1 --",
  "x\0'; DROP TABLE cron; --",
  "%' OR name LIKE '%",
  "' AND SLEEP(3) --",
  '1; SELECT SLEEP(3)',
  '`; DROP TABLE `timer`; --',
  '?; DROP TABLE run; -- ?',
  "' || (SELECT @@version) || '",
  '0x27204f5220313d31202d2d',
  "_utf8mb4 X'27' OR 1=1 --",
  "'\u00bf' OR 1=1 --",
  '\u02bc OR 1=1 --',
  "'/**/OR/**/1=1--",
  "admin'--",
  "') OR ('a'='a",
];

test('classic injection strings round-trip through every string field; all tables intact', async (t) => {
  const canary = createMysqlBackend(env.sql, { prefix: 'canary_' });
  const sentinel = await canary.store.startRun({ name: 'canary', version: 1, input: { alive: true } });
  await canary.queue.enqueue(sentinel.runId);
  const canaryBefore = await countAll(env.sql, 'canary_');

  const plain = createMysqlBackend(env.sql);
  const wrapped = wrapSql(env.sql);
  let calls = 0;
  const t0 = performance.now();
  for (const v of INJECTIONS) {
    calls += await exercise(
      env.sql,
      plain,
      (id) => createMysqlBackend(env.sql, { id }),
      v,
      `native ${JSON.stringify(v)}`,
    );
    calls += await exercise(
      env.sql,
      plain,
      (id) => createMysqlBackend(wrapped, { id }),
      v,
      `wrapped ${JSON.stringify(v)}`,
    );
  }
  const ms = performance.now() - t0;
  // No SLEEP(3) was ever executed: 2 × 34 full exercises finish far below 3 s each.
  assert.ok(ms / (INJECTIONS.length * 2) < 3000, 'no injected SLEEP ran');

  const expected = [...TABLES, ...TABLES.map((n) => `canary_${n}`)].sort();
  assert.deepEqual(await tableNames(env.sql), expected, 'all twelve tables still exist');
  assert.deepEqual(await countAll(env.sql, 'canary_'), canaryBefore, 'canary tables untouched');
  const c = await canary.store.loadRunRow(sentinel.runId);
  assert.deepEqual([c.status, c.input], ['pending', { alive: true }]);
  t.diagnostic(
    `injection: ${INJECTIONS.length} strings × every string field × 2 Sql paths = ${calls} port calls; all values exact, 12/12 tables intact`,
  );
});

test('injection strings in arguments that are not free text are refused by validation', async (t) => {
  const b = createMysqlBackend(env.sql);
  let n = 0;
  for (const v of INJECTIONS) {
    const probes = [
      [() => b.store.listRuns({}, { limit: 1, cursor: v }), 'page.cursor'],
      [() => b.store.listRuns({ status: v }, { limit: 1 }), 'filter.status'],
      [() => b.store.suspendRun('r', v), 'status'],
      [() => b.store.markTerminal('r', { status: v }), 'outcome.status'],
      [() => b.store.checkpointStep({ runId: 'r', cursorKey: 'k', status: v, attempts: 1 }), 'checkpoint.status'],
      [
        () =>
          b.store.upsertCron({
            name: 'c',
            schedule: '* * * * *',
            flowName: 'f',
            flowVersion: 1,
            overlap: v,
            nextRunAt: new Date(),
          }),
        'spec.overlap',
      ],
      [() => b.queue.claim({ limit: v, leaseMs: 1000 }), 'opts.limit'],
      [() => b.store.orphanedRuns(v), 'limit'],
      [() => b.store.startRun({ name: 'f', version: v, input: 1 }), 'spec.version'],
    ];
    for (const [call, name] of probes) {
      n++;
      await assert.rejects(
        call(),
        (e) => e instanceof TypeError && e.message.includes(name),
        `${name} = ${JSON.stringify(v)}`,
      );
    }
  }
  // Strings passed as user query parameters are data, never SQL.
  for (const v of INJECTIONS) {
    const [row] = await env.sql.query('SELECT ? AS v, CHAR_LENGTH(?) AS n', [v, v]);
    assert.equal(row.v, v);
    assert.equal(Number(row.n), [...v].length);
    n++;
  }
  assert.deepEqual(await tableNames(env.sql), [...TABLES, ...TABLES.map((x) => `canary_${x}`)].sort());
  t.diagnostic(
    `injection: ${n} further probes (cursor/status/overlap/limit/version fields refused; user query params stayed data)`,
  );
});

/** Every injection string through every field, native and wrapped, over `sql`. */
async function allInjections(sql) {
  const plain = createMysqlBackend(sql);
  const wrapped = wrapSql(sql);
  let calls = 0;
  for (const v of INJECTIONS) {
    calls += await exercise(sql, plain, (id) => createMysqlBackend(sql, { id }), v, `native ${JSON.stringify(v)}`);
    calls += await exercise(sql, plain, (id) => createMysqlBackend(wrapped, { id }), v, `wrapped ${JSON.stringify(v)}`);
  }
  return calls;
}

test(
  'a pool whose calls disagree on NO_BACKSLASH_ESCAPES: every value still round-trips, and no call leaves it behind',
  { timeout: 60_000 },
  async (t) => {
    const sql = mysqlPool(`${env.url}${env.url.includes('?') ? '&' : '?'}connectionLimit=4`);
    try {
      // A session setting lasts for the call that makes it: the pool resets the connection
      // before its next borrower (docs/configuration.md). So the backend meets
      // NO_BACKSLASH_ESCAPES inside a transaction that set it (joined to it: inTx, natively and
      // over a wrapped Sql), and plain sessions everywhere else — both on the same pool.
      let calls = 0;
      for (const nbe of [true, false, true]) {
        calls += await sql.tx(async (h) => {
          if (nbe) await h.query("SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')");
          const [row] = await h.query("SELECT @@sql_mode LIKE '%NO_BACKSLASH_ESCAPES%' AS nbe");
          assert.equal(Number(row.nbe), nbe ? 1 : 0);
          return allInjections(h);
        });
      }
      calls += await allInjections(sql);
      // Four transactions at once pin the four connections: none kept the setting.
      let arrived = 0;
      let go;
      const all = new Promise((r) => {
        go = r;
      });
      const seen = await Promise.all(
        [0, 1, 2, 3].map(() =>
          sql.tx(async (h) => {
            if (++arrived === 4) go();
            await all;
            const [row] = await h.query(
              "SELECT CONNECTION_ID() AS id, @@sql_mode LIKE '%NO_BACKSLASH_ESCAPES%' AS nbe",
            );
            return [Number(row.id), Number(row.nbe)];
          }),
        ),
      );
      assert.equal(new Set(seen.map((x) => x[0])).size, 4, 'four distinct connections');
      assert.deepEqual(
        seen.map((x) => x[1]),
        [0, 0, 0, 0],
        'no connection kept NO_BACKSLASH_ESCAPES',
      );
      assert.deepEqual(await tableNames(env.sql), [...TABLES, ...TABLES.map((x) => `canary_${x}`)].sort());
      t.diagnostic(
        `injection: NO_BACKSLASH_ESCAPES in some transactions of a pool of 4: ${calls} port calls, all values exact`,
      );
    } finally {
      await sql.close();
    }
  },
);

test(
  'a server running with NO_BACKSLASH_ESCAPES globally: every value still round-trips',
  { timeout: 90_000 },
  async (t) => {
    const server = await startPrivateServer({
      extraArgs: [
        '--sql-mode=NO_BACKSLASH_ESCAPES,STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION',
      ],
    });
    let sql;
    try {
      const boot = mysqlPool(server.url);
      await boot.query('CREATE DATABASE nbe CHARACTER SET utf8mb4');
      await boot.close();
      sql = mysqlPool(`${server.url}nbe`);
      const [{ mode }] = await sql.query('SELECT @@sql_mode AS mode');
      assert.match(mode, /NO_BACKSLASH_ESCAPES/);
      await applySchema(sql);
      const calls = await allInjections(sql);
      const [{ v }] = await sql.query('SELECT ? AS v', ["\\' OR 1=1 -- \\"]);
      assert.equal(v, "\\' OR 1=1 -- \\");
      assert.deepEqual(await tableNames(sql), [...TABLES].sort());
      t.diagnostic(`injection: server-wide NO_BACKSLASH_ESCAPES: ${calls} port calls, all values exact`);
    } finally {
      if (sql) await sql.close();
      await server.stop();
    }
  },
);
