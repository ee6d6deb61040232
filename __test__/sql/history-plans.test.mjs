// The calls about live work must not read the finished history: over a database of 30,000 runs
// (filled in SQL by helpers/history.mjs, with parents and children), every
// statement such a call sends reads the run table only through a key look-up or an index range
// (EXPLAIN type eq_ref, ref, range, …) — never the whole table (`ALL`) nor the whole of one
// index (`index`, such as a walk of `seq` from the newest run). The statements are the ones the
// backend really sends (recorded through a wrapped Sql), under both contracts; the plans are
// the server's, so this runs on MariaDB and on MySQL. Times are never asserted: the plan is
// what stays wrong on a slow machine and right on a fast one.
//
// A tenth of the finished runs are turned into runs awaiting a signal (18 % live in all): a plan
// chosen by cost flips with the share the optimizer estimates. At a million runs with 7 % live
// MySQL already estimates about 20 % (its index dives overcount a NOT IN range) and scans the
// table; at this size it needs the larger share to show the same plan.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import mysql from 'mysql2/promise';

import { applySchema, createMysqlBackend, mysqlPool, tables } from './helpers.mjs';
import { freshDatabase } from '../helpers/db.mjs';
import { fillHistory } from '../helpers/history.mjs';
import { boundedAccess, explain, explainable, planText, recording } from '../helpers/plans.mjs';

const RUNS = 30_000;
const NOW = new Date(Date.parse('2030-01-01T00:00:00Z'));
const ACTIVE = ['pending', 'running', 'sleeping', 'awaiting_signal', 'awaiting_child', 'retrying'];
/** The tables: prefix → contract and whether some runs have parents (without any, the
 * statistics of `run_parent` say that every run shares one parent: plans must not follow them). */
const TABLES = {
  hp2_: { contract: '2.0.0-alpha.2', families: true },
  hp3_: { contract: '3.0.0', families: true },
  hpn_: { contract: '3.0.0', families: false },
};

const ctx = { db: undefined, sql: undefined, parent: undefined };

before(async () => {
  ctx.db = await freshDatabase('history_plans');
  ctx.sql = mysqlPool(ctx.db.url);
  const conn = await mysql.createConnection({ uri: ctx.db.url });
  try {
    for (const [prefix, { contract, families }] of Object.entries(TABLES)) {
      await applySchema(ctx.sql, prefix, { contract });
      const t = tables(prefix);
      await fillHistory(conn, t, { runs: RUNS, now: NOW, families });
      await conn.query(`UPDATE ${t.run} SET status = 'awaiting_signal' WHERE status = 'done' AND seq % 100 < 10`);
      await conn.query(`ANALYZE TABLE ${t.run}`);
    }
  } finally {
    await conn.end();
  }
  const [row] = await ctx.sql.query(
    `SELECT parent_run_id AS id FROM hp2_run WHERE parent_run_id IS NOT NULL ORDER BY seq DESC LIMIT 1`,
  );
  ctx.parent = row.id;
});

after(async () => {
  await ctx.sql?.close();
  await ctx.db?.drop();
});

/** The calls about live work, by name: `(backend) => promise`; `v3` ones need the 3.0 contract. */
const CALLS = [
  ['orphanedRuns(100)', (b) => b.store.orphanedRuns(100)],
  [
    'cron overlap: listRuns(live statuses, tag), limit 1',
    (b) => b.store.listRuns({ status: ACTIVE, tag: 'cron:hourly' }, { limit: 1 }),
  ],
  [
    'cron overlap, a later page',
    (b) => b.store.listRuns({ status: ACTIVE, tag: 'cron:hourly' }, { limit: 1, cursor: '1000' }),
  ],
  ['childrenOf', (b) => b.store.childrenOf(ctx.parent)],
  ['depth', (b) => b.queue.depth(NOW)],
  ['claim', (b) => b.queue.claim({ limit: 20, leaseMs: 0, now: NOW })],
  ['timer.dueBatch', (b) => b.timer.dueBatch({ now: NOW, limit: 20 })],
  ['depth with names', (b) => b.queue.depth(NOW, ['flow-1']), true],
  ['claim with names', (b) => b.queue.claim({ limit: 20, leaseMs: 0, now: NOW, names: ['flow-1'] }), true],
  ['claim with names of no job', (b) => b.queue.claim({ limit: 20, leaseMs: 0, now: NOW, names: ['none'] }), true],
  ['timer.dueCount', (b) => b.timer.dueCount(NOW), true],
  ['timer.dueCount with names', (b) => b.timer.dueCount(NOW, ['flow-2']), true],
  ['timer.nextDueAt', (b) => b.timer.nextDueAt(NOW), true],
  ['cancelRuns by status', (b) => b.store.cancelRuns({ status: 'awaiting_signal' }, 5), true],
  ['cancelRuns by tag (every live status)', (b) => b.store.cancelRuns({ tag: 'cron:hourly' }, 5), true],
  ['retryRuns by status', (b) => b.store.retryRuns({ status: 'failed' }, 5), true],
  ['deleteRuns by status', (b) => b.store.deleteRuns({ status: 'done' }, 5), true],
];

/** The EXPLAIN of every statement `call` sends that reads one of the prefix's tables. */
async function plansOf(call, contract, prefix) {
  const log = [];
  const backend = createMysqlBackend(recording(ctx.sql, log), { contract, prefix });
  await call(backend);
  const mine = log.filter((s) => explainable(s.text) && s.text.includes(`\`${prefix}`));
  assert.ok(mine.length > 0, 'the call sent no statement on its tables');
  const out = [];
  for (const s of mine) out.push({ text: s.text, plan: await explain(ctx.sql, s.text, s.params) });
  return out;
}

/** Which table an EXPLAIN row reads, by the aliases the statements use. */
function tableOf(row, prefix) {
  const name = row.table ?? '';
  if (['r', 's', 'c', 'p', `${prefix}run`].includes(name)) return 'run';
  if (['j', `${prefix}job`].includes(name)) return 'job';
  if (['tm', `${prefix}timer`].includes(name)) return 'timer';
  return null;
}

for (const [prefix, { contract, families }] of Object.entries(TABLES)) {
  describe(`plans over ${RUNS} runs, ${contract}${families ? '' : ', no run with a parent'}`, () => {
    for (const [name, call, v3Only] of CALLS) {
      if (v3Only && contract !== '3.0.0') continue;
      test(`${name}: the run table through an index only`, async () => {
        for (const { text, plan } of await plansOf(call, contract, prefix)) {
          const where = `${text}\n  plan: ${planText(plan)}`;
          for (const row of plan) {
            const table = tableOf(row, prefix);
            if (table === 'run') assert.ok(boundedAccess(row), `reads the run table by ${row.type}: ${where}`);
            // Jobs and timers are live work only: an index or, for depth's counts, all of them.
            if (table && table !== 'run' && !name.startsWith('depth')) {
              assert.ok(row.key !== null, `reads ${table} without an index: ${where}`);
            }
          }
        }
      });
    }

    test('runStats: one pass over the status index, no row read', async () => {
      const plans = await plansOf((b) => b.store.runStats(), contract, prefix);
      assert.equal(plans.length, 1);
      const [row] = plans[0].plan;
      assert.equal(row.key, 'run_status', planText(plans[0].plan));
      assert.match(row.Extra, /Using index/, planText(plans[0].plan));
    });
  });
}
