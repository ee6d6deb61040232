// startManyRuns sent as ONE autocommit statement when the whole unit is one multi-row INSERT (a
// single chunk of specs without an idempotency key): InnoDB applies a statement whole or not at
// all, so no transaction is opened around it (issue #23, docs/coalescing.md). Checked here:
//   (a) such a unit is one statement in one round trip; a keyed spec or more than one chunk keeps
//       the transaction (two round trips or more), both contracts;
//   (b) a clash inside the one statement leaves no row (all or nothing), both contracts;
//   (c) with the fault proxy: a reset on the INSERT's packet never leaves some of its rows, and a
//       call that resolved wrote them all (the atomicity trials of atomicity.test.mjs, for the unit
//       that has no COMMIT to hit).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import mysql from 'mysql2/promise';
import { closeAdmin, freshDatabase } from '../helpers/db.mjs';
import { attackUnit, useFaultProxy } from './faults.mjs';
import { applySchema, createMysqlBackend, mysqlPool, settle, tables, withParams } from './helpers.mjs';

const CONTRACTS = ['2.0.0-alpha.2', '3.0.0'];
const TRIALS = Math.min(40, Number(process.env.ATOMICITY_TRIALS) || 40);
const SEED = Number(process.env.ATOMICITY_SEED) || 0x5a17;

let db;
let direct;
let sql;

before(async () => {
  db = await freshDatabase('start_many_ac');
  direct = await mysql.createConnection({ uri: db.url });
  sql = mysqlPool(withParams(db.url, { connectionLimit: 2 }));
});
after(async () => {
  await sql?.close();
  await direct?.end();
  await db?.drop();
  await closeAdmin();
});

const specs = (n, name, keyed = () => undefined) =>
  Array.from({ length: n }, (_, i) => ({ name, version: 1, input: { i }, idempotencyKey: keyed(i) }));

const runCount = async (prefix, name) =>
  Number((await direct.query(`SELECT COUNT(*) AS n FROM ${tables(prefix).run} WHERE name = ?`, [name]))[0][0].n);

for (const contract of CONTRACTS) {
  const prefix = contract === '3.0.0' ? 'v3_' : 'v2_';

  test(`(a) ${contract}: a chunk of key-less specs is one statement in one round trip`, async () => {
    await applySchema(sql, prefix, { contract });
    const b = createMysqlBackend(sql, { prefix, contract });
    await b.store.startRun({ name: 'warm', version: 1 });
    const cost = async (list) => {
      const s0 = sql.stats();
      const out = await b.store.startManyRuns(list);
      const s1 = sql.stats();
      assert.equal(out.length, list.length);
      return { statements: s1.statements - s0.statements, roundTrips: s1.roundTrips - s0.roundTrips };
    };
    assert.deepEqual(await cost(specs(1, 'one')), { statements: 1, roundTrips: 1 });
    assert.deepEqual(await cost(specs(100, 'hundred')), { statements: 1, roundTrips: 1 });
    // An empty key counts as none.
    assert.deepEqual(await cost(specs(400, 'chunk', () => '')), { statements: 1, roundTrips: 1 });
    // A keyed spec: INSERT IGNORE + lookup among the inserts, one transaction (BEGIN rides, COMMIT alone).
    const keyed = await cost(specs(10, 'keyed', (i) => (i === 5 ? `k-${contract}` : undefined)));
    assert.equal(keyed.roundTrips, 2, `keyed: ${JSON.stringify(keyed)}`);
    // Two chunks: two INSERTs (a round trip each), one transaction (COMMIT alone).
    const two = await cost(specs(401, 'two'));
    assert.deepEqual(two, { statements: 2, roundTrips: 3 });
    assert.equal(await runCount(prefix, 'two'), 401);
    assert.deepEqual(await b.store.startManyRuns([]), []);
  });

  test(`(b) ${contract}: a clash inside the one statement writes no row`, async () => {
    await applySchema(sql, prefix, { contract });
    // The third id repeats the first: the multi-row INSERT fails on its third row.
    const ids = ['c-1', 'c-2', 'c-1', 'c-4'];
    let n = 0;
    const b = createMysqlBackend(sql, { prefix, contract, id: () => ids[n++ % ids.length] });
    const s0 = sql.stats();
    const got = await settle(b.store.startManyRuns(specs(4, 'clash')));
    assert.equal(got.ok, false);
    assert.match(got.error.message, /Duplicate/i);
    assert.equal(sql.stats().roundTrips - s0.roundTrips, 1, 'one statement, no transaction');
    assert.equal(await runCount(prefix, 'clash'), 0, 'all or nothing');
    // Two chunks, the clash in the second: the first chunk's rows are rolled back with it.
    const many = Array.from({ length: 402 }, (_, i) => `m-${i}`);
    many[401] = 'm-0';
    let k = 0;
    const b2 = createMysqlBackend(sql, { prefix, contract, id: () => many[k++] });
    const got2 = await settle(b2.store.startManyRuns(specs(402, 'clash2')));
    assert.equal(got2.ok, false);
    assert.equal(await runCount(prefix, 'clash2'), 0, 'all or nothing across chunks');
  });
}

const holder = useFaultProxy();

attackUnit(
  holder,
  {
    name: 'startManyRuns of key-less specs (one autocommit INSERT)',
    targets: { write: /INTO `run`/ },
    async prepare(q, k) {
      return { name: `ac${k}`, k };
    },
    call({ b }, ctx) {
      return b.store.startManyRuns(
        Array.from({ length: 5 }, (_, i) => ({ name: ctx.name, version: i + 1, input: { i, k: ctx.k } })),
      );
    },
    async inspect(q, ctx) {
      const rows = await q('SELECT version, COUNT(*) AS n FROM `run` WHERE name = ? GROUP BY version', [ctx.name]);
      const have = new Map(rows.map((r) => [Number(r.version), Number(r.n)]));
      return Object.fromEntries(
        [1, 2, 3, 4, 5].map((v) => {
          const n = have.get(v) || 0;
          return [`spec${v}`, n === 0 ? false : n === 1 ? true : `${n} rows`];
        }),
      );
    },
    async verify(q, ctx, v) {
      if (!Array.isArray(v) || v.length !== 5 || !v.every((x) => x.created)) return [`answered ${JSON.stringify(v)}`];
      const rows = await q('SELECT id FROM `run` WHERE id IN (?)', [v.map((x) => x.runId)]);
      return rows.length === 5 ? [] : [`${rows.length} of the 5 returned run ids exist`];
    },
  },
  { trials: TRIALS, delayTrials: 4, seed: SEED, tag: 'start-many-autocommit' },
);
