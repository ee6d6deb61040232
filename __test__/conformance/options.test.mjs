// docs/contract.md §1: the `id` option, prefixes and table names, ddl/applySchema, the on-disk
// format, and the Sql semantics the ports rely on (found rows, READ COMMITTED, flat tx, rollback).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import mysql from 'mysql2/promise';
import { EXECUTORS, setup, at, T, mysqlPool, applySchema, ddl, tables, createMysqlBackend } from './fixture.mjs';

/** The group's tests, over the backend `ctx` holds (one executor). */
function suite(ctx) {
  const BAD_PREFIXES = ['bad-prefix', 'a b', 'x.y', 'q`', 'é', 'semi;', 'new\nline'];

  // ---------------------------------------------------------------------------------------------
  // §1.2 the id option
  // ---------------------------------------------------------------------------------------------

  test('§1.2 a custom id generator names runs, signals and the first half of lease tokens', async () => {
    let n = 0;
    const b = ctx.makeBackend({ id: () => `id${++n}` });
    const r1 = await b.store.startRun({ name: 'f', version: 1, input: 1 });
    assert.equal(r1.runId, 'id1');
    const many = await b.store.startManyRuns([
      { name: 'f', version: 1, input: 2 },
      { name: 'f', version: 1, input: 3 },
    ]);
    assert.deepEqual(
      many.map((r) => r.runId),
      ['id2', 'id3'],
    );
    assert.deepEqual(await b.store.postSignal('id1', 'go', 1), { delivered: true });
    const [sig] = (await b.store.loadRun('id1')).signals;
    assert.equal(sig.id, 'id4');
    const [lease] = await b.queue.claim({ limit: 1, leaseMs: 1000, now: at(0) });
    assert.equal(lease.runId, 'id1');
    assert.equal(lease.token, 'id5:id1');
    // spawned children are named by the caller, never generated
    const before = n;
    await b.store.checkpointStep(
      { runId: 'id1', cursorKey: 's0', status: 'ok', result: 'kid', attempts: 1 },
      { spawn: [{ runId: 'kid', spec: { name: 'c', version: 1, input: null } }] },
    );
    assert.equal(n, before, 'no id generated for a spawn');
    assert.ok(await b.store.loadRunRow('kid'));
    // the default backend of the same pool still uses UUIDs
    const other = await ctx.store.startRun({ name: 'f', version: 1, input: 0 });
    assert.match(other.runId, /^[0-9a-f-]{36}$/);
  });

  test('§3.1 a key-less startRun whose generated id already exists rejects (driver error)', async () => {
    const b = ctx.makeBackend({ id: () => 'fixed' });
    await b.store.startRun({ name: 'f', version: 1, input: 1 });
    await assert.rejects(async () => b.store.startRun({ name: 'f', version: 1, input: 2 }));
    assert.equal(await ctx.count('run'), 1);
    assert.equal((await ctx.store.loadRunRow('fixed')).input, 1);
  });

  test('§1.2 constructing a backend touches nothing and returns the four ports', async () => {
    const log = [];
    const sql = {
      query: async (t) => {
        log.push(t);
        return [];
      },
      exec: async (t) => {
        log.push(t);
        return { affectedRows: 0, insertId: 0 };
      },
      tx: (fn) => fn(sql),
    };
    const b = createMysqlBackend(sql);
    for (const k of ['store', 'queue', 'timer', 'wakeup']) assert.ok(b[k], k);
    assert.equal(log.length, 0);
    assert.equal(typeof b.queue.waitForWork, 'undefined', 'no push hook at this version');
  });

  // ---------------------------------------------------------------------------------------------
  // §1.4 / §1.5 prefixes, tables, ddl, applySchema
  // ---------------------------------------------------------------------------------------------

  test('§1.5 invalid prefixes throw synchronously from createMysqlBackend and ddl', () => {
    for (const p of BAD_PREFIXES) {
      assert.throws(
        () => createMysqlBackend(ctx.sql, { prefix: p }),
        /prefix|schema|identifier|letters/i,
        JSON.stringify(p),
      );
      assert.throws(() => ddl(p), /prefix|schema|identifier|letters/i, JSON.stringify(p));
    }
    for (const p of ['', 'app_', 'A1_b2', '_', '123']) {
      assert.doesNotThrow(() => createMysqlBackend(ctx.sql, { prefix: p }));
      assert.equal(ddl(p).length, 6);
    }
  });

  test('§1.4 applySchema with an invalid prefix rejects', async () => {
    let p;
    assert.doesNotThrow(() => {
      p = applySchema(ctx.sql, 'bad-prefix');
    }, 'a rejected promise, not a throw');
    await assert.rejects(p);
  });

  test('§1.5 table names are back-quoted prefix + base name', () => {
    assert.deepEqual(
      { ...tables('') },
      { run: '`run`', step: '`step`', job: '`job`', timer: '`timer`', signal: '`signal`', cron: '`cron`' },
    );
    assert.deepEqual(
      { ...tables('app_') },
      {
        run: '`app_run`',
        step: '`app_step`',
        job: '`app_job`',
        timer: '`app_timer`',
        signal: '`app_signal`',
        cron: '`app_cron`',
      },
    );
  });

  test('§1.4 ddl returns six CREATE TABLE IF NOT EXISTS statements in order run, step, job, timer, signal, cron', () => {
    const names = ['run', 'step', 'job', 'timer', 'signal', 'cron'];
    for (const [prefix, stmts] of [
      ['', ddl()],
      ['', ddl('')],
      ['app_', ddl('app_')],
    ]) {
      assert.equal(stmts.length, 6);
      stmts.forEach((s, i) => {
        assert.equal(typeof s, 'string');
        assert.match(s, /^\s*CREATE TABLE IF NOT EXISTS /i);
        assert.ok(s.includes(`\`${prefix}${names[i]}\``), `${prefix}${names[i]}`);
        assert.match(s, /ENGINE\s*=\s*InnoDB/i);
        assert.match(s, /utf8mb4/i);
      });
    }
  });

  test('§1.4 applySchema is idempotent and a prefixed schema is separate', async () => {
    await applySchema(ctx.sql);
    await applySchema(ctx.sql, '');
    await applySchema(ctx.sql, 'px_');
    await applySchema(ctx.sql, 'px_');
    const b = createMysqlBackend(ctx.sql, { prefix: 'px_' });
    const { runId } = await b.store.startRun({ name: 'f', version: 1, input: 'prefixed' });
    await b.queue.enqueue(runId);
    await b.timer.schedule(runId, at(1));
    await b.store.postSignal(runId, 's', 1);
    await b.store.upsertCron({ name: 'c', schedule: '* * * * *', flowName: 'f', flowVersion: 1, nextRunAt: at(0) });
    await b.store.checkpointStep({ runId, cursorKey: 's0', status: 'ok', result: 1, attempts: 1 });
    for (const k of ['run', 'step', 'job', 'timer', 'signal', 'cron']) {
      assert.equal(await ctx.count(k), 0, `nothing in the unprefixed ${k}`);
      const r = await ctx.rows(`SELECT COUNT(*) AS n FROM \`px_${k}\``);
      assert.equal(Number(r[0].n), 1, `px_${k}`);
    }
    assert.equal(await ctx.store.loadRun(runId), undefined);
    assert.equal((await b.store.loadRunRow(runId)).input, 'prefixed');
    for (const k of ['run', 'step', 'job', 'timer', 'signal', 'cron']) await ctx.rows(`DROP TABLE \`px_${k}\``);
  });

  // ---------------------------------------------------------------------------------------------
  // §1.6 on-disk format
  // ---------------------------------------------------------------------------------------------

  const EXPECTED_COLUMNS = {
    run: [
      ['id', 'varchar', 'NO'],
      ['seq', 'bigint', 'NO'],
      ['name', 'varchar', 'NO'],
      ['version', 'int', 'NO'],
      ['status', 'varchar', 'NO'],
      ['input', 'longtext', 'YES'],
      ['output', 'longtext', 'YES'],
      ['error', 'longtext', 'YES'],
      ['attempts', 'int', 'NO'],
      ['idempotency_key', 'varchar', 'YES'],
      ['tags', 'longtext', 'YES'],
      ['parent_run_id', 'varchar', 'YES'],
      ['parent_cursor_key', 'varchar', 'YES'],
      ['depth', 'int', 'NO'],
      ['join_remaining', 'int', 'NO'],
      ['created_at', 'bigint', 'NO'],
    ],
    step: [
      ['run_id', 'varchar', 'NO'],
      ['cursor_key', 'varchar', 'NO'],
      ['status', 'varchar', 'NO'],
      ['result', 'longtext', 'YES'],
      ['error', 'longtext', 'YES'],
      ['attempts', 'int', 'NO'],
      ['shape', 'varchar', 'YES'],
    ],
    job: [
      ['run_id', 'varchar', 'NO'],
      ['run_at', 'bigint', 'NO'],
      ['priority', 'int', 'NO'],
      ['version', 'bigint', 'NO'],
      ['lease_token', 'varchar', 'YES'],
      ['lease_expires', 'bigint', 'YES'],
    ],
    timer: [
      ['run_id', 'varchar', 'NO'],
      ['fire_at', 'bigint', 'NO'],
    ],
    signal: [
      ['id', 'varchar', 'NO'],
      ['seq', 'bigint', 'NO'],
      ['run_id', 'varchar', 'NO'],
      ['name', 'varchar', 'NO'],
      ['payload', 'longtext', 'YES'],
      ['idem_key', 'varchar', 'YES'],
    ],
    cron: [
      ['name', 'varchar', 'NO'],
      ['schedule', 'varchar', 'NO'],
      ['flow_name', 'varchar', 'NO'],
      ['flow_version', 'int', 'NO'],
      ['input', 'longtext', 'YES'],
      ['overlap', 'varchar', 'NO'],
      ['next_run_at', 'bigint', 'NO'],
      ['last_run_at', 'bigint', 'YES'],
    ],
  };

  const EXPECTED_INDEXES = {
    run: {
      PRIMARY: ['id', 0],
      seq: ['seq', 0],
      run_idem: ['name,version,idempotency_key', 0],
      run_created: ['created_at', 1],
      run_parent: ['parent_run_id', 1],
      run_status: ['status', 1],
    },
    step: { PRIMARY: ['run_id,cursor_key', 0] },
    job: { PRIMARY: ['run_id', 0], job_claimable: ['priority,run_at', 1] },
    timer: { PRIMARY: ['run_id', 0], timer_due: ['fire_at', 1] },
    signal: {
      PRIMARY: ['id', 0],
      seq: ['seq', 0],
      signal_inbox: ['run_id,seq', 1],
      signal_idem: ['run_id,idem_key', 0],
    },
    cron: { PRIMARY: ['name', 0], cron_due: ['next_run_at', 1] },
  };

  test('§1.6 columns (order, type, nullability), keys and engine match the on-disk format', async () => {
    const db = ctx.db.database;
    for (const [table, cols] of Object.entries(EXPECTED_COLUMNS)) {
      const rows = await ctx.rows(
        `SELECT COLUMN_NAME AS c, DATA_TYPE AS t, IS_NULLABLE AS n, CHARACTER_MAXIMUM_LENGTH AS len, COLUMN_DEFAULT AS d, EXTRA AS x
         FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`,
        [db, table],
      );
      assert.deepEqual(
        rows.map((r) => [r.c, String(r.t).toLowerCase(), r.n]),
        cols,
        table,
      );
      for (const r of rows) {
        if (String(r.t).toLowerCase() === 'varchar') {
          const want =
            table === 'cron' && r.c === 'schedule'
              ? 255
              : table === 'cron' && r.c === 'overlap'
                ? 16
                : r.c === 'status'
                  ? 32
                  : 191;
          assert.equal(Number(r.len), want, `${table}.${r.c} length`);
        }
        if (r.c === 'seq') assert.match(String(r.x), /auto_increment/i);
      }
      const defaults = Object.fromEntries(
        rows.map((r) => [r.c, r.d == null ? null : String(r.d).replace(/^'(.*)'$/, '$1')]),
      );
      if (table === 'run') {
        assert.equal(defaults.attempts, '0');
        assert.equal(defaults.depth, '0');
        assert.equal(defaults.join_remaining, '0');
      }
      if (table === 'job') {
        assert.equal(defaults.priority, '0');
        assert.equal(defaults.version, '0');
      }
      if (table === 'cron') assert.equal(defaults.overlap, 'allow');

      const idx = await ctx.rows(
        `SELECT INDEX_NAME AS i, COLUMN_NAME AS c, NON_UNIQUE AS u, SEQ_IN_INDEX AS s
         FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY INDEX_NAME, SEQ_IN_INDEX`,
        [db, table],
      );
      const got = {};
      for (const r of idx) {
        got[r.i] ??= [[], Number(r.u)];
        got[r.i][0].push(r.c);
      }
      const flat = Object.fromEntries(Object.entries(got).map(([k, [c, u]]) => [k, [c.join(','), u]]));
      assert.deepEqual(flat, EXPECTED_INDEXES[table], `${table} indexes`);

      const [tinfo] = await ctx.rows(
        `SELECT ENGINE AS e, TABLE_COLLATION AS col FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?`,
        [db, table],
      );
      assert.equal(String(tinfo.e).toLowerCase(), 'innodb');
      assert.match(String(tinfo.col), /^utf8mb4_/);
    }
    const fks = await ctx.rows(
      `SELECT COUNT(*) AS n FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = ?`,
      [db],
    );
    assert.equal(Number(fks[0].n), 0, 'no foreign keys');
  });

  // ---------------------------------------------------------------------------------------------
  // §1.3 Sql semantics
  // ---------------------------------------------------------------------------------------------

  test('§1.3 exec returns affectedRows / insertId; UPDATE counts matched rows (found rows)', async () => {
    const w = await ctx.sql.exec(`INSERT INTO ${ctx.t.signal} (id, run_id, name) VALUES (?, ?, ?)`, ['s1', 'r', 'n']);
    assert.equal(w.affectedRows, 1);
    assert.equal(typeof w.insertId, 'number');
    assert.ok(w.insertId >= 1);
    const same = await ctx.sql.exec(`UPDATE ${ctx.t.signal} SET name = ? WHERE id = ?`, ['n', 's1']);
    assert.equal(same.affectedRows, 1, 'an UPDATE that changes nothing still reports the matched row');
    const none = await ctx.sql.exec(`UPDATE ${ctx.t.signal} SET name = ? WHERE id = ?`, ['n', 'zz']);
    assert.equal(none.affectedRows, 0);
    const ign = await ctx.sql.exec(`INSERT IGNORE INTO ${ctx.t.signal} (id, run_id, name) VALUES (?, ?, ?)`, [
      's1',
      'r',
      'n',
    ]);
    assert.equal(ign.affectedRows, 0);
    const rows = await ctx.sql.query(`SELECT id, run_id, name, payload FROM ${ctx.t.signal} WHERE id = ?`, ['s1']);
    assert.deepEqual(
      rows.map((r) => ({ ...r })),
      [{ id: 's1', run_id: 'r', name: 'n', payload: null }],
    );
  });

  test("§1.3 tx commits fn's value, rolls back and rethrows on error", async () => {
    const v = await ctx.sql.tx(async (t) => {
      await t.exec(`INSERT INTO ${ctx.t.timer} (run_id, fire_at) VALUES (?, ?)`, ['a', 1]);
      return { ok: 42 };
    });
    assert.deepEqual(v, { ok: 42 });
    const boom = new Error('boom');
    await assert.rejects(
      ctx.sql.tx(async (t) => {
        await t.exec(`INSERT INTO ${ctx.t.timer} (run_id, fire_at) VALUES (?, ?)`, ['b', 2]);
        await t.tx(async (t2) => t2.exec(`INSERT INTO ${ctx.t.timer} (run_id, fire_at) VALUES (?, ?)`, ['c', 3]));
        throw boom;
      }),
      (e) => e === boom || /boom/.test(e.message),
    );
    const ids = (await ctx.sql.query(`SELECT run_id FROM ${ctx.t.timer} ORDER BY run_id`)).map((r) => r.run_id);
    assert.deepEqual(ids, ['a']);
  });

  test('§1.3 / §13.4 transactions run at READ COMMITTED (a committed outside write is visible mid-transaction)', async () => {
    await ctx.sql.exec(`INSERT INTO ${ctx.t.timer} (run_id, fire_at) VALUES (?, ?)`, ['rc', 1]);
    const seen = await ctx.sql.tx(async (t) => {
      const first = Number((await t.query(`SELECT fire_at FROM ${ctx.t.timer} WHERE run_id = ?`, ['rc']))[0].fire_at);
      await ctx.sql.exec(`UPDATE ${ctx.t.timer} SET fire_at = ? WHERE run_id = ?`, [2, 'rc']);
      const second = Number((await t.query(`SELECT fire_at FROM ${ctx.t.timer} WHERE run_id = ?`, ['rc']))[0].fire_at);
      return [first, second];
    });
    assert.deepEqual(seen, [1, 2]);
  });

  test('§1.3 LIMIT ? binds a number; BIGINT epoch ms survive', async () => {
    const big = T + 123;
    await ctx.sql.exec(`INSERT INTO ${ctx.t.timer} (run_id, fire_at) VALUES (?, ?), (?, ?)`, ['x', big, 'y', big + 1]);
    const rows = await ctx.sql.query(`SELECT run_id, fire_at FROM ${ctx.t.timer} ORDER BY fire_at LIMIT ?`, [1]);
    assert.equal(rows.length, 1);
    assert.equal(rows[0].run_id, 'x');
    assert.equal(Number(rows[0].fire_at), big);
  });

  test('§1.1 mysqlPool accepts a mysql2/promise pool', async () => {
    const pool = mysql.createPool(ctx.db.url);
    const sql = mysqlPool(pool);
    try {
      const b = createMysqlBackend(sql);
      const { runId } = await b.store.startRun({ name: 'via-mysql2', version: 1, input: { a: 1 } });
      assert.deepEqual((await ctx.store.loadRunRow(runId)).input, { a: 1 });
      await b.queue.enqueue(runId);
      const [l] = await b.queue.claim({ limit: 1, leaseMs: 1000, now: at(0) });
      assert.equal(l.runId, runId);
      assert.equal(await b.store.markRunning(runId), 1);
    } finally {
      if (typeof sql.close === 'function') {
        try {
          await sql.close();
        } catch {
          /* the caller's pool */
        }
      }
      try {
        await pool.end();
      } catch {
        /* already closed */
      }
    }
  });
}

for (const executor of EXECUTORS) describe(executor, () => suite(setup('conf_options', { executor })));
