// The 3.0.0 layout (/work/shared/CONTRACT-3.0.md §2): `ddl(prefix, { contract: '3.0.0' })`,
// `applySchema(sql, prefix, { contract: '3.0.0', pendingWork? })` — a fresh 3.0 layout equals an
// upgraded 2.0.0-alpha.2 one column by column, the upgrade loses no row, applying is idempotent
// and safe from several pools and processes at once, `pending_work(flow_names, as_of)` counts what
// §2 says, and a user without CREATE ROUTINE gets a clear error (or skips the function).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import { createRequire } from 'node:module';

import { adminQuery, freshDatabase } from '../helpers/db.mjs';
import { m, server, within } from './helpers.mjs';
import { columnsOf, dump, layout } from '../helpers/layout.mjs';
import { onMysql } from '../helpers/server.mjs';

const require = createRequire(import.meta.url);
const v3 = require('../../v3.js');
const V3 = { contract: '3.0.0' };
const BASES = ['run', 'step', 'job', 'timer', 'signal', 'cron'];
const T = Date.parse('2030-01-01T00:00:00Z');
const at = (n = 0) => new Date(T + n);
const TO = { timeout: 30_000 };

/** A fresh database and a native pool on it; `done()` closes and drops. */
async function database(label, url = (d) => d.url) {
  const db = await freshDatabase(label);
  const sql = m.mysqlPool(url(db));
  return {
    db,
    sql,
    async done() {
      try {
        await sql.close();
      } finally {
        await db.drop();
      }
    },
  };
}

const RUN_V3 = [
  'id',
  'seq',
  'name',
  'version',
  'status',
  'input',
  'output',
  'error',
  'attempts',
  'idempotency_key',
  'tags',
  'parent_run_id',
  'parent_cursor_key',
  'depth',
  'join_remaining',
  'priority',
  'created_at',
];
const SIGNAL_V3 = ['id', 'seq', 'run_id', 'name', 'payload', 'idem_key', 'consumed'];

// ---------------------------------------------------------------------------------------------
// ddl
// ---------------------------------------------------------------------------------------------

test('ddl: 8 statements under 3.0 (six tables, then the function dropped and created), 6 under alpha.2', TO, () => {
  assert.equal(m.ddl().length, 6);
  assert.equal(m.ddl('p_').length, 6);
  assert.equal(v3.ddl('', { contract: '2.0.0-alpha.2' }).length, 6);
  assert.deepEqual(v3.ddl('p_', { contract: '2.0.0-alpha.2' }), m.ddl('p_'));
  for (const stmts of [m.ddl('p_', V3), v3.ddl('p_'), v3.ddl('p_', V3)]) {
    assert.equal(stmts.length, 8);
    stmts
      .slice(0, 6)
      .forEach((s, i) => assert.ok(s.startsWith(`CREATE TABLE IF NOT EXISTS \`p_${BASES[i]}\``), s.slice(0, 60)));
    assert.equal(stmts[6], 'DROP FUNCTION IF EXISTS `p_pending_work`');
    assert.match(stmts[7], /^CREATE FUNCTION `p_pending_work`\(flow_names JSON, as_of BIGINT\)\s+RETURNS BIGINT/);
    assert.match(
      stmts[0],
      /join_remaining\s+INT NOT NULL DEFAULT 0,\s+priority\s+INT NOT NULL DEFAULT 0,\s+created_at/,
    );
    assert.match(stmts[4], /idem_key VARCHAR\(191\),\s+consumed TINYINT\(1\) NOT NULL DEFAULT 0,/);
  }
  assert.deepEqual(m.ddl('p_', V3), v3.ddl('p_'));
  // the alpha.2 statements have neither column
  assert.ok(!m.ddl()[0].includes('priority') && !m.ddl()[4].includes('consumed'));
  assert.throws(() => m.ddl('', { contract: '4.0.0' }), TypeError);
  assert.throws(() => v3.ddl('', { contract: 'latest' }), TypeError);
});

test('ddl(3.0) run statement by statement builds the same layout as applySchema(3.0)', TO, async () => {
  const a = await database('schema3_ddl_a');
  const b = await database('schema3_ddl_b');
  try {
    for (const stmt of v3.ddl('q_')) await a.sql.query(stmt);
    await v3.applySchema(b.sql, 'q_');
    const la = await layout(a.sql, 'q_');
    const lb = await layout(b.sql, 'q_');
    assert.equal(la.routines.length, 1);
    assert.deepEqual(la, lb);
  } finally {
    await a.done();
    await b.done();
  }
});

// ---------------------------------------------------------------------------------------------
// fresh vs upgraded
// ---------------------------------------------------------------------------------------------

test('a fresh 3.0 layout equals an upgraded alpha.2 layout, column by column (prefixes "" and "p_")', TO, async () => {
  const fresh = await database('schema3_fresh');
  const upgraded = await database('schema3_upgr');
  try {
    for (const prefix of ['', 'p_']) {
      await v3.applySchema(fresh.sql, prefix);
      await m.applySchema(upgraded.sql, prefix); // alpha.2
      const alpha2 = await layout(upgraded.sql, prefix);
      assert.deepEqual(alpha2.routines, [], 'alpha.2 has no function');
      assert.ok(!columnsOf(alpha2, `${prefix}run`).includes('priority'));
      assert.ok(!columnsOf(alpha2, `${prefix}signal`).includes('consumed'));
      // the main entry with { contract } upgrades as the v3 entry does
      await m.applySchema(upgraded.sql, prefix, V3);
      const lf = await layout(fresh.sql, prefix);
      const lu = await layout(upgraded.sql, prefix);
      assert.deepEqual(lu.columns, lf.columns, `columns, prefix ${JSON.stringify(prefix)}`);
      assert.deepEqual(lu.indexes, lf.indexes);
      assert.deepEqual(lu.options, lf.options);
      assert.deepEqual(lu.routines, lf.routines);
      assert.deepEqual(lu.params, lf.params);
      assert.deepEqual(lu.create, lf.create, 'SHOW CREATE TABLE texts');
      assert.deepEqual(columnsOf(lf, `${prefix}run`), RUN_V3);
      assert.deepEqual(columnsOf(lf, `${prefix}signal`), SIGNAL_V3);
      const col = (table, name) =>
        lf.columns.find((c) => c.TABLE_NAME === `${prefix}${table}` && c.COLUMN_NAME === name);
      assert.deepEqual(
        [
          col('run', 'priority').COLUMN_TYPE,
          col('run', 'priority').IS_NULLABLE,
          String(col('run', 'priority').COLUMN_DEFAULT),
        ],
        // MySQL 8.0.19+ shows no display width for integer types; MariaDB does.
        [onMysql() ? 'int' : 'int(11)', 'NO', '0'],
      );
      assert.deepEqual(
        [
          col('signal', 'consumed').COLUMN_TYPE,
          col('signal', 'consumed').IS_NULLABLE,
          String(col('signal', 'consumed').COLUMN_DEFAULT),
        ],
        ['tinyint(1)', 'NO', '0'],
      );
      // the upgrade changes nothing else: the alpha.2 columns, minus the two new ones, match
      const strip = (cols) =>
        cols
          .filter(
            (c) =>
              !(c.COLUMN_NAME === 'priority' && c.TABLE_NAME === `${prefix}run`) && !(c.COLUMN_NAME === 'consumed'),
          )
          .map(({ ORDINAL_POSITION, ...rest }) => rest);
      assert.deepEqual(strip(lf.columns), strip(alpha2.columns));
      assert.deepEqual(lf.indexes, alpha2.indexes, 'no index added or changed');
      assert.equal(lf.routines.length, 1);
      assert.deepEqual(
        lf.params.map((p) => [p.PARAMETER_NAME, p.DATA_TYPE]),
        [
          // JSON is MariaDB's alias of LONGTEXT; MySQL's own type.
          ['flow_names', onMysql() ? 'json' : 'longtext'],
          ['as_of', 'bigint'],
        ],
      );
      assert.equal(lf.routines[0].DATA_TYPE, 'bigint');
      assert.equal(lf.routines[0].SQL_DATA_ACCESS, 'READS SQL DATA');
    }
  } finally {
    await fresh.done();
    await upgraded.done();
  }
});

test('the upgrade keeps every row: alpha.2 data read back through the 3.0 backend', TO, async () => {
  const d = await database('schema3_rows');
  try {
    await m.applySchema(d.sql);
    const a2 = m.createMysqlBackend(d.sql);
    const s = a2.store;
    const start = async (spec) =>
      (await s.startRun({ name: 'flow', version: 1, input: null, createdAt: at(0), ...spec })).runId;
    const ids = {
      pending: await start({ idempotencyKey: 'k1', tags: ['t', 'u'], input: { a: [1, 'x'] } }),
      running: await start({ name: 'other', version: 2 }),
      sleeping: await start({}),
      waiting: await start({ tags: null }),
      done: await start({}),
      failed: await start({}),
      canceled: await start({}),
      parent: await start({ name: 'parent' }),
    };
    await s.markRunning(ids.running);
    await s.checkpointStep({
      runId: ids.sleeping,
      cursorKey: 's0',
      status: 'ok',
      result: { t: 1 },
      attempts: 1,
      shape: 'step:a',
    });
    await s.checkpointStep({
      runId: ids.sleeping,
      cursorKey: 's1',
      status: 'ok',
      result: '2030-01-01T00:00:05.000Z',
      attempts: 1,
      shape: 'sleep',
    });
    await s.suspendRun(ids.sleeping, 'sleeping', { timers: [{ runId: ids.sleeping, fireAt: at(5000) }] });
    await s.postSignal(ids.waiting, 'go', { n: 1 }, { idempotencyKey: 'sk' });
    await s.postSignal(ids.waiting, 'go', { n: 2 });
    await s.postSignal(ids.waiting, 'eaten', 0);
    const eaten = (await s.loadRun(ids.waiting)).signals.find((x) => x.name === 'eaten');
    await s.checkpointStep(
      { runId: ids.waiting, cursorKey: 's0', status: 'ok', result: 0, attempts: 1, shape: 'signal' },
      { consumeSignals: [eaten.id] },
    );
    await s.suspendRun(ids.waiting, 'awaiting_signal');
    await s.markTerminal(ids.done, { status: 'done', output: { ok: true } });
    await s.markTerminal(ids.failed, { status: 'failed', error: { code: 'E', message: 'm', stack: 'st' } });
    await s.markTerminal(ids.canceled, { status: 'canceled' });
    await s.checkpointStep(
      { runId: ids.parent, cursorKey: 's0', status: 'ok', result: 'kid', attempts: 1, shape: 'invoke' },
      {
        spawn: [
          {
            runId: 'kid',
            spec: {
              name: 'child',
              version: 1,
              input: 7,
              parentRunId: ids.parent,
              parentCursorKey: 's0',
              depth: 1,
              createdAt: at(1),
            },
          },
        ],
        joinTarget: { runId: ids.parent, count: 1 },
      },
    );
    await s.suspendRun(ids.parent, 'awaiting_child');
    await a2.queue.enqueue(ids.pending, { priority: 3, runAt: at(10) });
    await a2.queue.enqueue(ids.running, { priority: -1 }); // claimed first, below
    const [lease] = await a2.queue.claim({ limit: 1, leaseMs: 60_000, now: at(0) });
    assert.equal(lease.runId, ids.running);
    await s.upsertCron({
      name: 'cron-a',
      schedule: '* * * * *',
      flowName: 'flow',
      flowVersion: 1,
      input: { c: 1 },
      overlap: 'skip',
      nextRunAt: at(60_000),
    });
    await s.upsertCron({
      name: 'cron-b',
      schedule: '0 * * * *',
      flowName: 'other',
      flowVersion: 2,
      input: null,
      nextRunAt: at(0),
    });
    await s.advanceCron('cron-b', at(0), at(3_600_000), at(0));

    const before = await dump(d.sql);
    const allIds = [...Object.values(ids), 'kid'];
    const rowsBefore = await s.loadRunRows(allIds);
    const snapsBefore = await Promise.all(allIds.map((id) => s.loadRun(id)));
    const cronsBefore = await s.dueCrons(at(10 ** 9), 10);

    await v3.applySchema(d.sql);

    // raw rows: identical, plus the new columns at their defaults
    const after = await dump(d.sql);
    assert.deepEqual(
      after.run,
      before.run.map((r) => ({ ...r, priority: 0 })),
    );
    assert.deepEqual(
      after.signal,
      before.signal.map((r) => ({ ...r, consumed: 0 })),
    );
    for (const b of ['step', 'job', 'timer', 'cron']) assert.deepEqual(after[b], before[b], b);
    assert.equal(after.run.length, 9);
    assert.equal(after.step.length, 4);
    assert.equal(after.signal.length, 2);

    // and through the 3.0 backend
    const b3 = v3.createMysqlBackend(d.sql);
    assert.deepEqual(await b3.store.loadRunRows(allIds), rowsBefore);
    for (const [i, id] of allIds.entries()) {
      const snap = await b3.store.loadRun(id);
      const old = snapsBefore[i];
      assert.deepEqual(snap.run, old.run, id);
      assert.deepEqual(snap.signals, old.signals, `${id} signals`);
      assert.deepEqual(
        [...snap.steps].map(([k, st]) => [k, st]),
        [...old.steps].map(([k, { shape, ...st }]) => [k, { ...st, call: shape }]),
        `${id} steps (shape ⇒ call)`,
      );
    }
    assert.deepEqual(
      await b3.store.listCrons(),
      [...cronsBefore].sort((x, y) => (x.name < y.name ? -1 : 1)),
    );
    assert.deepEqual(await b3.store.runStats(), await s.runStats());
    // the queue and timers carry on: the alpha.2 lease is still held and acks through 3.0
    // (jobs: `waiting` from its three signals, `kid` from the spawn, `pending` due at T+10,
    // `running` leased by alpha.2 until T+60000)
    assert.deepEqual(await b3.queue.depth(at(10)), { claimable: 3, leased: 1, oldestClaimableAgeMs: T + 10 });
    const leases = await b3.queue.claim({ limit: 10, leaseMs: 1000, now: at(10) });
    assert.deepEqual(
      leases.map((l) => [l.runId, l.version]).sort(),
      [
        [ids.pending, 1],
        [ids.waiting, 3],
        ['kid', 1],
      ].sort(),
      'the alpha.2 lease is still held; the rest is claimable with the stored versions',
    );
    assert.equal(leases.at(-1).runId, ids.pending, 'priority 3 comes last');
    await b3.queue.ack(lease, { now: at(20) });
    assert.equal(
      (await d.sql.query('SELECT COUNT(*) AS n FROM job WHERE run_id = ?', [ids.running]))[0].n,
      0,
      'the alpha.2 lease acks through 3.0',
    );
    assert.deepEqual(await b3.timer.dueBatch({ now: at(5000), limit: 10 }), [ids.sleeping]);
    // the signal key posted under alpha.2 still dedups; a new run continues the seq
    assert.deepEqual(await b3.store.postSignal(ids.waiting, 'go', 3, { idempotencyKey: 'sk' }), { delivered: false });
    const fresh = await b3.store.startRun({ name: 'flow', version: 1, input: null, priority: 2 });
    const [{ seq }] = await d.sql.query('SELECT seq FROM run WHERE id = ?', [fresh.runId]);
    assert.ok(Number(seq) > Math.max(...before.run.map((r) => Number(r.seq))));
  } finally {
    await d.done();
  }
});

test(
  'applySchema(3.0) twice changes nothing: layout, function and data (fresh and upgraded; alpha.2 after 3.0)',
  TO,
  async () => {
    const fresh = await database('schema3_idem_f');
    const upgraded = await database('schema3_idem_u');
    try {
      await v3.applySchema(fresh.sql);
      await m.applySchema(upgraded.sql);
      await v3.applySchema(upgraded.sql);
      for (const d of [fresh, upgraded]) {
        const first = await layout(d.sql);
        await d.sql.exec(
          `INSERT INTO run (id, name, version, status, created_at, priority) VALUES ('r1', 'f', 1, 'pending', 0, 5)`,
        );
        await d.sql.exec(`INSERT INTO \`signal\` (id, run_id, name, consumed) VALUES ('s1', 'r1', 'n', 1)`);
        const data = await dump(d.sql);
        await v3.applySchema(d.sql);
        await v3.applySchema(d.sql, '', { contract: '3.0.0', pendingWork: true });
        assert.deepEqual(await layout(d.sql), first);
        assert.deepEqual(await dump(d.sql), data, 'priority 5 and consumed 1 kept');
        // the alpha.2 applySchema on a 3.0 database leaves it as it is (function included)
        await m.applySchema(d.sql);
        assert.deepEqual(await layout(d.sql), first);
        assert.deepEqual(await dump(d.sql), data);
      }
      assert.deepEqual(await layout(fresh.sql), await layout(upgraded.sql));
    } finally {
      await fresh.done();
      await upgraded.done();
    }
  },
);

// ---------------------------------------------------------------------------------------------
// concurrency
// ---------------------------------------------------------------------------------------------

/**
 * A child process that loads the package, connects, says `ready`, and runs applySchema(3.0) on
 * `url` when told `go` on stdin. `child.result` resolves with its exit code and output.
 */
async function childApplier(url) {
  const code = `
    const v3 = require(${JSON.stringify(require.resolve('../../v3.js'))});
    const sql = v3.mysqlPool(process.env.TARGET_URL);
    sql.query('SELECT 1').then(() => {
      process.stdout.write('ready;');
      process.stdin.once('data', () => v3.applySchema(sql).then(
        async () => { await sql.close(); process.stdout.write('ok'); process.exit(0); },
        async (e) => { process.stdout.write('fail: ' + (e && e.message)); process.exit(1); },
      ));
    });`;
  const child = spawn(process.execPath, ['-e', code], {
    env: { ...process.env, TARGET_URL: url },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let onReady;
  const ready = new Promise((r) => (onReady = r));
  child.stdout.on('data', (x) => {
    out += x;
    if (out.includes('ready;')) onReady();
  });
  child.stderr.on('data', (x) => (out += x));
  const result = new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (status) => {
      onReady();
      resolve({ status, out });
    });
  });
  await within(ready, 15_000, 'the child process getting ready');
  return { go: () => child.stdin.end('go\n'), result };
}

test(
  '5 concurrent applySchema(3.0) from separate pools and one from a child process: fresh and alpha.2 databases',
  TO,
  async () => {
    const reference = await database('schema3_conc_ref');
    const targets = [await database('schema3_conc_fresh'), await database('schema3_conc_alpha2')];
    try {
      await v3.applySchema(reference.sql);
      const expected = await layout(reference.sql);
      await m.applySchema(targets[1].sql);
      await targets[1].sql.exec(
        `INSERT INTO run (id, name, version, status, created_at) VALUES ('keep', 'f', 1, 'pending', 0)`,
      );
      for (const target of targets) {
        const pools = Array.from({ length: 5 }, () => m.mysqlPool(target.db.url));
        try {
          // every pool connected first, so that the six calls really start together
          await Promise.all(pools.map((p) => p.query('SELECT 1')));
          const child = await childApplier(target.db.url);
          child.go();
          const results = await within(
            Promise.allSettled([...pools.map((p) => v3.applySchema(p)), child.result]),
            25_000,
            'concurrent applySchema',
          );
          for (const [i, r] of results.slice(0, 5).entries())
            assert.equal(r.status, 'fulfilled', `pool ${i}: ${r.reason && r.reason.message}`);
          assert.equal(results[5].status, 'fulfilled');
          assert.deepEqual(results[5].value, { status: 0, out: 'ready;ok' }, 'the child process');
        } finally {
          await Promise.all(pools.map((p) => p.close()));
        }
        assert.deepEqual(await layout(target.sql), expected, target.db.database);
      }
      assert.deepEqual(
        (await targets[1].sql.query('SELECT id, priority FROM run')).map((r) => ({ ...r })),
        [{ id: 'keep', priority: 0 }],
      );
      // the function works where it was raced for
      assert.equal(Number((await targets[0].sql.query('SELECT pending_work(NULL, 0) AS n'))[0].n), 0);
    } finally {
      await reference.done();
      for (const t of targets) await t.done();
    }
  },
);

test('re-applying the 3.0 schema never makes pending_work fail for a concurrent caller', TO, async () => {
  const d = await database('schema3_replace');
  const pools = Array.from({ length: 3 }, () => m.mysqlPool(d.db.url));
  try {
    await v3.applySchema(d.sql);
    let stop = false;
    let calls = 0;
    const failures = [];
    const poll = (async () => {
      while (!stop) {
        try {
          await d.sql.query('SELECT pending_work(NULL, 0) AS n');
          calls++;
        } catch (e) {
          failures.push(e.message);
        }
      }
    })();
    for (let i = 0; i < 4; i++) await Promise.all(pools.map((p) => v3.applySchema(p)));
    stop = true;
    await poll;
    assert.deepEqual(failures, []);
    assert.ok(calls > 0);
  } finally {
    await Promise.all(pools.map((p) => p.close()));
    await d.done();
  }
});

// ---------------------------------------------------------------------------------------------
// pending_work
// ---------------------------------------------------------------------------------------------

test(
  'pending_work(flow_names, as_of): due unleased jobs + due timers + due crons, by flow; orphans; [] and NULL',
  TO,
  async () => {
    const d = await database('schema3_pw');
    try {
      await v3.applySchema(d.sql);
      await v3.applySchema(d.sql, 'pw_');
      const run = (id, name) =>
        d.sql.exec(`INSERT INTO run (id, name, version, status, created_at) VALUES (?, ?, 1, 'pending', 0)`, [
          id,
          name,
        ]);
      for (const [id, name] of [
        ['a1', 'alpha'],
        ['a2', 'alpha'],
        ['a3', 'alpha'],
        ['b1', 'beta'],
      ])
        await run(id, name);
      const job = (id, runAt, leaseExpires = null) =>
        d.sql.exec(
          `INSERT INTO job (run_id, run_at, priority, version, lease_token, lease_expires) VALUES (?, ?, 0, 1, ?, ?)`,
          [id, runAt, leaseExpires === null ? null : `tok:${id}`, leaseExpires],
        );
      await job('a1', T - 10); // due
      await job('a2', T + 10); // not yet
      await job('a3', 0, T); // lease expires exactly at as_of: not live, counts
      await job('b1', 0, T + 100); // live lease until T+100
      await job('ghost-job', T); // no run row; due (inclusive)
      const timer = (id, fireAt) => d.sql.exec('INSERT INTO timer (run_id, fire_at) VALUES (?, ?)', [id, fireAt]);
      await timer('a1', T - 5);
      await timer('b1', T); // inclusive
      await timer('ghost-timer', T - 1); // no run row
      await timer('a2', T + 1);
      const cron = (name, flow, next) =>
        d.sql.exec(
          `INSERT INTO cron (name, schedule, flow_name, flow_version, next_run_at) VALUES (?, '* * * * *', ?, 1, ?)`,
          [name, flow, next],
        );
      await cron('c1', 'alpha', T - 1);
      await cron('c2', 'beta', T);
      await cron('c3', 'gamma', T + 5);
      // another prefix's tables are not counted by this prefix's function, and the reverse
      await d.sql.exec('INSERT INTO pw_job (run_id, run_at, version) VALUES (?, 0, 1)', ['other']);

      const pw = async (flows, asOf, fn = 'pending_work') => {
        const [row] = await d.sql.query(`SELECT \`${fn}\`(?, ?) AS n`, [
          flows === null ? null : JSON.stringify(flows),
          asOf,
        ]);
        return Number(row.n);
      };
      const cases = [
        [null, T, 3 + 3 + 2],
        [['alpha'], T, 3 + 2 + 1], // jobs a1, a3, ghost; timers a1, ghost; cron c1
        [['beta'], T, 1 + 2 + 1], // job ghost (b1 leased); timers b1, ghost; cron c2
        [['gamma'], T, 1 + 1 + 0], // only the orphans (c3 not due yet)
        [['alpha', 'beta'], T, 8],
        [['alpha', 'beta', 'gamma'], T, 8],
        [[], T, 0],
        [[], T + 10 ** 6, 0],
        [null, T + 10, 4 + 4 + 3], // a2 due, b1 still leased; timer a2; cron c3
        [null, T + 100, 5 + 4 + 3], // b1's lease ends at as_of
        [null, T - 11, 0], // a3 and b1 (run_at 0) still hold live leases then; nothing else is due
      ];
      const b3 = v3.createMysqlBackend(d.sql);
      for (const [flows, asOf, expected] of cases) {
        const label = `pending_work(${JSON.stringify(flows)}, T${asOf - T >= 0 ? '+' : ''}${asOf - T})`;
        assert.equal(await pw(flows, asOf), expected, label);
        // the backend's own counters agree
        const now = new Date(asOf);
        const names = flows === null ? undefined : flows;
        const sum =
          (await b3.queue.depth(now, names)).claimable +
          (await b3.timer.dueCount(now, names)) +
          (await b3.store.dueCronCount(now, names));
        assert.equal(sum, expected, `${label} vs depth + dueCount + dueCronCount`);
      }
      assert.equal(await pw(null, T, 'pw_pending_work'), 1);
      assert.equal(await pw(['alpha'], T, 'pw_pending_work'), 1, 'an orphan job in pw_job');
      assert.equal(await pw([], T, 'pw_pending_work'), 0);
    } finally {
      await d.done();
    }
  },
);

// ---------------------------------------------------------------------------------------------
// privileges
// ---------------------------------------------------------------------------------------------

test(
  'without CREATE ROUTINE: applySchema(3.0) rejects with ER_NO_CREATE_ROUTINE; { pendingWork: false } works',
  TO,
  async () => {
    const fresh = await database('schema3_priv_f');
    const old = await database('schema3_priv_a');
    const user = `ifw_nr_${crypto.randomBytes(4).toString('hex')}`;
    const password = 'no-routine-pw';
    await adminQuery(`CREATE USER ?@'%' IDENTIFIED BY ?`, [user, password]);
    const { host, port } = server();
    const pools = [];
    const limited = (db) => {
      const p = m.mysqlPool({ host, port, user, password, database: db.database });
      pools.push(p);
      return p;
    };
    try {
      for (const d of [fresh, old]) {
        await adminQuery(
          `GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX, DROP ON \`${d.db.database}\`.* TO ?@'%'`,
          [user],
        );
      }
      await m.applySchema(old.sql); // alpha.2 layout, made by root
      const sqlF = limited(fresh.db);
      const sqlA = limited(old.db);
      const noRoutine = (e) => {
        assert.ok(e instanceof Error);
        assert.equal(e.code, 'ER_NO_CREATE_ROUTINE');
        assert.match(e.message, /CREATE ROUTINE/);
        return true;
      };
      await assert.rejects(v3.applySchema(sqlF), noRoutine);
      await assert.rejects(m.applySchema(sqlA, '', V3), noRoutine);
      assert.deepEqual((await layout(fresh.sql)).routines, []);

      // skipping the function: the tables and columns, no routine
      await v3.applySchema(sqlF, '', { pendingWork: false });
      await v3.applySchema(sqlA, '', { contract: '3.0.0', pendingWork: false });
      for (const d of [fresh, old]) {
        const l = await layout(d.sql);
        assert.deepEqual(columnsOf(l, 'run'), RUN_V3, d.db.database);
        assert.deepEqual(columnsOf(l, 'signal'), SIGNAL_V3);
        assert.deepEqual(l.routines, []);
      }
      // and the limited user's 3.0 backend works on it
      const b = v3.createMysqlBackend(sqlA);
      const r = await b.store.startRun({ name: 'f', version: 1, input: null, priority: 4 });
      await b.queue.enqueue(r.runId);
      const [l] = await b.queue.claim({ limit: 1, leaseMs: 1000, now: at(0) });
      assert.equal(l.runId, r.runId);
      assert.equal(Number((await old.sql.query('SELECT priority FROM job'))[0].priority), 4);

      // once root created the function, { pendingWork: false } leaves it; the default still needs the privilege
      await v3.applySchema(fresh.sql);
      const withFn = await layout(fresh.sql);
      assert.equal(withFn.routines.length, 1);
      await v3.applySchema(sqlF, '', { pendingWork: false });
      assert.deepEqual(await layout(fresh.sql), withFn);
      await assert.rejects(v3.applySchema(sqlF), noRoutine);
      assert.deepEqual(await layout(fresh.sql), withFn);
    } finally {
      await Promise.all(pools.map((p) => p.close()));
      await adminQuery(`DROP USER IF EXISTS ?@'%'`, [user]);
      await fresh.done();
      await old.done();
    }
  },
);

test(
  '{ pendingWork: false } as root: the 3.0 tables without the function; a later default call adds it',
  TO,
  async () => {
    const d = await database('schema3_nopw');
    try {
      await v3.applySchema(d.sql, '', { pendingWork: false });
      const l = await layout(d.sql);
      assert.deepEqual(l.routines, []);
      assert.deepEqual(columnsOf(l, 'run'), RUN_V3);
      await v3.applySchema(d.sql);
      assert.equal((await layout(d.sql)).routines.length, 1);
      await assert.rejects(v3.applySchema(d.sql, '', { pendingWork: 'no' }), TypeError);
      await assert.rejects(v3.applySchema(d.sql, '', { contract: '9' }), TypeError);
    } finally {
      await d.done();
    }
  },
);
