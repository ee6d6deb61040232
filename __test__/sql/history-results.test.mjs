// The statements that stopped reading the finished history answer exactly as the previous ones
// did (fixtures/previous-statements.mjs, what the JavaScript packages send too): same rows, same
// order, on seeded data full of edge cases — orphans of every kind and of two kinds at once,
// spread through `seq` and cut at every limit boundary, `created_at` ties, statuses in another
// case and unknown ones, a job whose run id differs in case, flow-name filters, and tags with
// commas, brackets, quotes, escapes, regular-expression characters, whitespace and nesting.
//
// Rows whose tags hold an escaped lone surrogate are where the previous filter had no answer
// (MySQL refused the statement, MariaDB answered NULL for the row): there the new one answers
// as the tags' JSON reads in JavaScript — a lone-surrogate string equals no tag, the row's
// other tags match — on both servers; checked against that oracle in the `lone` tables.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import mysql from 'mysql2/promise';

import { applySchema, createMysqlBackend, mysqlPool, tables } from './helpers.mjs';
import { freshDatabase } from '../helpers/db.mjs';
import { fillHistory } from '../helpers/history.mjs';
import * as previous from './fixtures/previous-statements.mjs';

const NOW = Date.parse('2030-01-01T00:00:00Z');
const ACTIVE = ['pending', 'running', 'sleeping', 'awaiting_signal', 'awaiting_child', 'retrying'];

/** Tag texts both servers parse and read alike; each is stored on a live and a finished run. */
const TAG_TEXTS = [
  '["cron:x"]',
  '["a","cron:x"]',
  '["cron:xy"]',
  '["xcron:x"]',
  '["CRON:X"]',
  '["cron:x\\"q"]',
  '["back\\\\slash","cron:x"]',
  '["new\\nline"]',
  '["a,",",b"]',
  '[","]',
  '["]","x"]',
  '["é","😀"]',
  '["cron:x.*"]',
  '["a\\\\ud800"]',
  '[]',
  'null',
  null,
  '["a", "cron:x"]',
  '[ "cron:x" ]',
  '[["cron:x"]]',
  '{"cron:x":1}',
  '"cron:x"',
];
/** Written by hand with escapes JSON.stringify never writes: each server keeps its own reading. */
const NON_CANONICAL = ['["\\u0063ron:x"]', '["cron\\/x"]', '["\\ud83d\\ude00"]'];
/** Escaped lone surrogates (JSON.stringify's output for them): only in the `lone` tables. */
const LONE = [
  '["cron:x","x\\ud800y"]',
  '["x\\ud800y"]',
  '["\\udc00",","]',
  '["a,","\\ud800",",b"]',
  '["a,",",b","\\ud800"]',
];
const QUERY_TAGS = [
  'cron:x',
  'a',
  'a,',
  ',',
  ',b',
  ']',
  'cron:x"q',
  'back\\slash',
  'new\nline',
  'é',
  '😀',
  'cron:x.*',
  'CRON:X',
  'x\uD800y',
  'a\\ud800',
  'cron/x',
];

const ctx = { db: undefined, sql: undefined, conn: undefined };

/** Inserts one run row (created_at ties: a handful of distinct values only). */
async function insertRun(t, id, { status, parent = null, tags = null, name = 'f', at = 0 }) {
  await ctx.sql.query(
    `INSERT INTO ${t.run} (id, name, version, status, input, tags, parent_run_id, created_at) VALUES (?, ?, 1, ?, NULL, ?, ?, ?)`,
    [id, name, status, tags, parent, NOW - 1000 + (at % 3)],
  );
}

/** The orphan cases and their neighbours: [id, row, job?, timer?], in a fixed shuffled order. */
const CASES = [
  ['st-pending', { status: 'pending' }],
  ['st-running', { status: 'running' }],
  ['st-sleeping', { status: 'sleeping' }],
  ['st-retrying', { status: 'retrying' }],
  ['st-upper', { status: 'PENDING' }],
  ['ok-pending', { status: 'pending' }, 'job'],
  ['ok-sleeping', { status: 'sleeping' }, null, 'timer'],
  ['ok-running-case', { status: 'running' }, 'JOB-UPPER'],
  ['lw-all-done', { status: 'awaiting_child' }],
  ['lw-all-done-c1', { status: 'done', parent: 'lw-all-done' }],
  ['lw-all-done-c2', { status: 'done', parent: 'lw-all-done' }],
  ['lw-failed', { status: 'awaiting_child' }],
  ['lw-failed-c1', { status: 'failed', parent: 'lw-failed' }, 'job'],
  ['lw-failed-c2', { status: 'running', parent: 'lw-failed' }, 'job'],
  ['lw-live', { status: 'awaiting_child' }],
  ['lw-live-c', { status: 'sleeping', parent: 'lw-live' }, null, 'timer'],
  ['lw-none', { status: 'awaiting_child' }],
  ['lw-job', { status: 'awaiting_child' }, 'job'],
  ['lw-job-c', { status: 'done', parent: 'lw-job' }],
  ['lw-zombie', { status: 'awaiting_child' }],
  ['lw-zombie-c', { status: 'zombie', parent: 'lw-zombie' }],
  ['p-failed', { status: 'failed' }],
  ['p-canceled', { status: 'canceled' }],
  ['p-done', { status: 'done' }],
  ['ab-running', { status: 'running', parent: 'p-failed' }, 'job'],
  ['ab-sleeping', { status: 'sleeping', parent: 'p-canceled' }, null, 'timer'],
  ['ab-done', { status: 'done', parent: 'p-failed' }],
  ['ab-of-done', { status: 'running', parent: 'p-done' }, 'job'],
  ['ab-of-missing', { status: 'running', parent: 'p-missing' }, 'job'],
  ['ab-zombie', { status: 'zombie', parent: 'p-failed' }],
  ['ab-and-stranded', { status: 'pending', parent: 'p-failed' }],
  ['ab-upper', { status: 'RUNNING', parent: 'p-canceled' }, 'job'],
];

/** One prefix's tables: some history, the cases, the tagged runs, jobs in every state. */
async function seed(prefix, contract, { lone = false } = {}) {
  await applySchema(ctx.sql, prefix, { contract });
  const t = tables(prefix);
  await fillHistory(ctx.conn, t, { runs: 1500, now: NOW - 60_000, families: true });
  const order = CASES.map((c, n) => [(n * 7919) % CASES.length, c]).sort((a, b) => a[0] - b[0]);
  let n = 0;
  for (const [, [id, row, job, timer]] of order) {
    await insertRun(t, id, { ...row, at: n++ });
    if (job) {
      const runId = job === 'JOB-UPPER' ? id.toUpperCase() : id;
      await ctx.sql.query(`INSERT INTO ${t.job} (run_id, run_at) VALUES (?, ?)`, [runId, NOW]);
    }
    if (timer) await ctx.sql.query(`INSERT INTO ${t.timer} (run_id, fire_at) VALUES (?, ?)`, [id, NOW + 1]);
    if (n % 5 === 0) await fillHistory(ctx.conn, t, { runs: 40, first: 10_000 + n * 100, now: NOW - 30_000 });
  }
  // 3.0 reads rows strictly: tags other than a list of strings (or null) are refused on read.
  const listable = (text) =>
    text === null ||
    [JSON.parse(text)].every((v) => v === null || (Array.isArray(v) && v.every((x) => typeof x === 'string')));
  const texts = [...TAG_TEXTS, ...(lone ? LONE : NON_CANONICAL)].filter((x) => contract !== '3.0.0' || listable(x));
  for (const [k, tags] of texts.entries()) {
    await insertRun(t, `tag-${k}-live`, { status: ACTIVE[k % ACTIVE.length], tags, name: k % 2 ? 'f' : 'g', at: k });
    await insertRun(t, `tag-${k}-done`, { status: k % 3 ? 'done' : 'failed', tags, name: 'f', at: k });
    await ctx.sql.query(`INSERT INTO ${t.job} (run_id, run_at) VALUES (?, ?)`, [`tag-${k}-live`, NOW]);
  }
  // Jobs in every state for depth: due, due later, leased, lease run out but due later, of a
  // run of flow g, of no run at all.
  const jobs = [
    ['d-due', NOW - 5, null],
    ['d-later', NOW + 50, null],
    ['d-leased', NOW - 5, NOW + 100],
    ['d-leased-later', NOW + 50, NOW + 100],
    ['d-lapsed-later', NOW + 50, NOW - 1],
    ['d-ghost', NOW - 7, null],
  ];
  for (const [id, runAt, lease] of jobs) {
    if (id !== 'd-ghost') await insertRun(t, id, { status: 'pending', name: id.endsWith('later') ? 'g' : 'f' });
    await ctx.sql.query(`INSERT INTO ${t.job} (run_id, run_at, lease_token, lease_expires) VALUES (?, ?, ?, ?)`, [
      id,
      runAt,
      lease ? `tok-${id}` : null,
      lease,
    ]);
  }
  await ctx.sql.query(`ANALYZE TABLE ${t.run}`);
  return t;
}

const TABLES = {};

before(async () => {
  ctx.db = await freshDatabase('history_results');
  ctx.sql = mysqlPool(ctx.db.url);
  ctx.conn = await mysql.createConnection({ uri: ctx.db.url });
  for (const contract of ['2.0.0-alpha.2', '3.0.0']) {
    const v = contract === '3.0.0' ? 3 : 2;
    TABLES[`plain${v}`] = { contract, prefix: `hr${v}_`, t: await seed(`hr${v}_`, contract) };
    TABLES[`lone${v}`] = { contract, prefix: `hs${v}_`, t: await seed(`hs${v}_`, contract, { lone: true }) };
  }
});

after(async () => {
  await ctx.conn?.end();
  await ctx.sql?.close();
  await ctx.db?.drop();
});

const backendOf = ({ contract, prefix }) => createMysqlBackend(ctx.sql, { contract, prefix });
const run = ({ sql, params }) => ctx.sql.query(sql, params);

/** Whether the JSON text `text` holds the string `tag` as the tag filter reads it (see header). */
function holds(text, tag) {
  if (text === null) return false;
  const want = tag.toWellFormed();
  const has = (v) => (typeof v === 'string' ? v === want : Array.isArray(v) && v.some(has));
  return has(JSON.parse(text));
}

/** listRuns answered by the previous statement, or, in the lone tables, by the oracle. */
async function expectedPage(k, f, page) {
  const { t } = TABLES[k];
  if (k.startsWith('plain')) {
    const rows = await run(previous.listRuns(t, f, page));
    return {
      ids: rows.map((r) => r.id),
      cursor: rows.length === page.limit && rows.length ? String(rows.at(-1).seq) : undefined,
    };
  }
  const all = await ctx.sql.query(`SELECT id, seq, status, name, version, tags FROM ${t.run} ORDER BY seq DESC`);
  const st = f.status === undefined ? undefined : [f.status].flat();
  const rows = all
    .filter((r) => !st || st.includes(String(r.status).toLowerCase()))
    .filter((r) => !f.name || r.name === f.name)
    .filter((r) => !f.tag || holds(r.tags, f.tag))
    .filter((r) => page.cursor === undefined || Number(r.seq) < Number(page.cursor))
    .slice(0, page.limit);
  return {
    ids: rows.map((r) => r.id),
    cursor: rows.length === page.limit && rows.length ? String(rows.at(-1).seq) : undefined,
  };
}

for (const k of ['plain2', 'plain3', 'lone2', 'lone3']) {
  describe(`${k}: the new statements answer as the previous ones`, () => {
    if (k.startsWith('plain')) {
      test('orphanedRuns at every limit boundary', async () => {
        const { t } = TABLES[k];
        const all = (await run(previous.orphanedRuns(t, 1000))).map((r) => r.id);
        assert.ok(all.length >= 12, `the seed has orphans of every kind: ${all}`);
        for (const limit of [0, 1, 2, all.length - 1, all.length, all.length + 1, 100]) {
          const want = (await run(previous.orphanedRuns(t, limit))).map((r) => r.id);
          assert.deepEqual(await backendOf(TABLES[k]).store.orphanedRuns(limit), want, `limit ${limit}`);
        }
      });

      test('depth, with and without flow names, at several instants', async () => {
        const { t, contract } = TABLES[k];
        const lists = contract === '3.0.0' ? [undefined, ['f'], ['g'], ['f', 'g'], ['none']] : [undefined];
        for (const at of [NOW - 10, NOW - 5, NOW, NOW + 50, NOW + 100, NOW + 200]) {
          for (const names of lists) {
            const [row] = await run(previous.depth(t, at, names));
            const want = {
              claimable: Number(row.claimable),
              leased: Number(row.leased),
              oldestClaimableAgeMs: row.oldest === null ? null : at - Number(row.oldest),
            };
            assert.deepEqual(await backendOf(TABLES[k]).queue.depth(new Date(at), names), want, `${at} ${names}`);
          }
        }
      });
    }

    test('listRuns with a tag: every filter shape, limit and page', async () => {
      const shapes = [
        (tag) => ({ status: ACTIVE, tag }),
        (tag) => ({ tag }),
        (tag) => ({ status: ['done', 'running'], tag }),
      ];
      shapes.push((tag) => ({ status: ACTIVE, tag, name: 'f' }));
      if (TABLES[k].contract === '3.0.0') shapes.push((tag) => ({ status: ACTIVE, tag, version: 1 }));
      const b = backendOf(TABLES[k]);
      for (const tag of QUERY_TAGS) {
        for (const shape of shapes) {
          for (const limit of [1, 3, 200]) {
            const f = shape(tag);
            const got = await b.store.listRuns(f, { limit });
            const want = await expectedPage(k, f, { limit });
            assert.deepEqual(
              { ids: got.runs.map((r) => r.id), cursor: got.cursor },
              want,
              `${JSON.stringify(f)} limit ${limit}`,
            );
          }
        }
        // Page through the cron overlap check's filter one run at a time.
        const f = { status: ACTIVE, tag };
        for (let cursor, pages = 0; pages < 50; pages++) {
          const got = await b.store.listRuns(f, { limit: 1, cursor });
          const want = await expectedPage(k, f, { limit: 1, cursor });
          assert.deepEqual({ ids: got.runs.map((r) => r.id), cursor: got.cursor }, want, `${tag} after ${cursor}`);
          if (!got.cursor) break;
          cursor = got.cursor;
        }
      }
    });

    if (k.endsWith('3')) {
      test('cancelRuns, retryRuns, deleteRuns by tag pick the same runs', async () => {
        const { t } = TABLES[k];
        const b = backendOf(TABLES[k]);
        const ops = [
          ['cancelRuns', ACTIVE, (id) => `SELECT status = 'canceled' AS hit FROM ${t.run} WHERE id = ?`],
          ['retryRuns', ['failed'], (id) => `SELECT status = 'pending' AS hit FROM ${t.run} WHERE id = ?`],
          [
            'deleteRuns',
            ['done', 'failed', 'canceled'],
            (id) => `SELECT COUNT(*) = 0 AS hit FROM ${t.run} WHERE id = ?`,
          ],
        ];
        for (const tag of ['cron:x', ',', 'a,', 'x\uD800y', 'é']) {
          for (const [op, statuses, changed] of ops) {
            const all = await ctx.sql.query(`SELECT id, status, tags FROM ${t.run}`);
            const want = k.startsWith('plain')
              ? (await run(previous.bulkPick(t, statuses, tag, 1000))).map((r) => r.id).sort()
              : all
                  .filter((r) => statuses.includes(String(r.status).toLowerCase()) && holds(r.tags, tag))
                  .map((r) => r.id)
                  .sort();
            assert.equal(await b.store[op]({ tag }, 1000), want.length, `${op} ${tag}`);
            for (const id of want)
              assert.equal(Number((await ctx.sql.query(changed(id), [id]))[0].hit), 1, `${op} ${tag}: ${id}`);
          }
        }
      });
    }
  });
}
