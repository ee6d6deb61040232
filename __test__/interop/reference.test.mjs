// The reference loader (__test__/helpers/reference.mjs) on its own: the core-helper shim's rules,
// the extraction and cache, the MariaDB test shim, and the published @iterativeflow/mysql 3.0.0 and
// 2.5.0 running against MariaDB 10.11 through it (schema, starts, claims with and without names,
// checkpoints with outboxes and fencing, stickiness, retention). Nothing of this package is used.
//
// The shim tests need nothing; the others need the reference tarballs (/work/shared/reference or
// ITERATIVEFLOW_REFERENCE_DIR): without them they skip with the reason, except under CI=true.
//
//   node __test__/run.mjs __test__/interop/reference.test.mjs

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { after, before, describe, test } from 'node:test';

import mysql from 'mysql2/promise';

import { freshDatabase } from '../helpers/db.mjs';
import {
  ACTIVE_STATUSES,
  CRON_OVERLAPS,
  STEP_STATUSES,
  TERMINAL_STATUSES,
  assertSqlIdentifier,
  decodeFlowError,
  decodeOneOf,
  decodeTags,
  distinctEnqueues,
  loadReference,
  mariadbCompatPool,
  mariadbCompatText,
  prepareReference,
  purgeWhereSql,
  queueDepthOf,
  referenceAvailability,
  runSetWhereSql,
  skipWithoutReference,
  statusList,
} from '../helpers/reference.mjs';
import { onMysql } from '../helpers/server.mjs';

const T = Date.parse('2030-01-01T00:00:00Z');
const at = (n = 0) => new Date(T + n);

const DIALECT = {
  placeholder: () => '?',
  time: (d) => d.getTime(),
  statusTuple: (ss) => `(${ss.map((s) => `'${s}'`).join(',')})`,
  tag: (p) => `JSON_CONTAINS(tags, JSON_QUOTE(${p}))`,
};

describe('core helper shim (our implementation of what the reference imports)', () => {
  test('statusList, decodeOneOf, decodeFlowError, decodeTags', () => {
    assert.equal(statusList(undefined), undefined);
    assert.deepStrictEqual(statusList('done'), ['done']);
    const list = ['done', 'failed'];
    const copy = statusList(list);
    assert.deepStrictEqual(copy, list);
    assert.notEqual(copy, list);

    assert.equal(decodeOneOf(['a', 'b'], 'b', 'w'), 'b');
    assert.throws(() => decodeOneOf(['a'], 'x', 'mysql: column "status"'), {
      message: 'mysql: column "status": unexpected value "x"',
    });
    assert.deepStrictEqual(STEP_STATUSES, ['ok']);
    assert.deepStrictEqual(CRON_OVERLAPS, ['allow', 'skip']);

    assert.equal(decodeFlowError(undefined, 'w'), undefined);
    const e = { code: 'E', message: 'm', stack: 's' };
    assert.equal(decodeFlowError(e, 'w'), e);
    for (const bad of [null, 'x', 1, [], { code: 'E' }, { message: 'm' }, { code: 1, message: 'm' }]) {
      assert.throws(() => decodeFlowError(bad, 'where-e'), /where-e/);
    }

    assert.equal(decodeTags(undefined, 'w'), undefined);
    assert.equal(decodeTags(null, 'w'), null);
    assert.deepStrictEqual(decodeTags(['a', 'b'], 'w'), ['a', 'b']);
    for (const bad of ['a', 1, {}, ['a', 1], [null]]) assert.throws(() => decodeTags(bad, 'where-t'), /where-t/);
  });

  test('distinctEnqueues: one entry per run, first position, last opts', () => {
    const a1 = { priority: 1 };
    const a2 = { runAt: at(5) };
    assert.deepStrictEqual(distinctEnqueues([]), []);
    assert.deepStrictEqual(
      distinctEnqueues([
        { runId: 'a', opts: a1 },
        { runId: 'b' },
        { runId: 'a', opts: a2 },
        { runId: 'c', opts: a1 },
        { runId: 'b', opts: a1 },
      ]),
      [
        ['a', a2],
        ['b', a1],
        ['c', a1],
      ],
    );
    assert.deepStrictEqual(distinctEnqueues([{ runId: 'a', opts: a1 }, { runId: 'a' }]), [['a', undefined]]);
  });

  test('purgeWhereSql: predicates, terminal intersection, empty filter, empty intersection', () => {
    assert.throws(() => purgeWhereSql({}, DIALECT), {
      name: 'TypeError',
      message: 'deleteRuns: the filter needs at least one of before, name, version, status, tag',
    });
    assert.throws(() => purgeWhereSql({ name: undefined, tag: null }, DIALECT), TypeError);
    assert.deepStrictEqual(purgeWhereSql({ before: at(7) }, DIALECT), {
      where: "created_at < ? AND status IN ('done','failed','canceled')",
      params: [T + 7],
    });
    assert.deepStrictEqual(
      purgeWhereSql({ name: 'n', version: 2, tag: 't', status: ['canceled', 'running', 'done'] }, DIALECT),
      {
        where: "name = ? AND version = ? AND JSON_CONTAINS(tags, JSON_QUOTE(?)) AND status IN ('done','canceled')",
        params: ['n', 2, 't'],
      },
    );
    assert.deepStrictEqual(purgeWhereSql({ status: 'failed' }, DIALECT), { where: "status IN ('failed')", params: [] });
    assert.equal(purgeWhereSql({ status: 'running' }, DIALECT), null);
    assert.equal(purgeWhereSql({ status: [] }, DIALECT), null);
  });

  test('runSetWhereSql: the same over the given statuses, the method named in the TypeError', () => {
    assert.throws(() => runSetWhereSql({}, ACTIVE_STATUSES, 'cancelRuns', DIALECT), {
      name: 'TypeError',
      message: 'cancelRuns: the filter needs at least one of before, name, version, status, tag',
    });
    assert.deepStrictEqual(runSetWhereSql({ name: 'x' }, ['failed'], 'retryRuns', DIALECT), {
      where: "name = ? AND status IN ('failed')",
      params: ['x'],
    });
    assert.deepStrictEqual(
      runSetWhereSql({ status: ['done', 'sleeping', 'pending'] }, ACTIVE_STATUSES, 'cancelRuns', DIALECT),
      {
        where: "status IN ('pending','sleeping')",
        params: [],
      },
    );
    assert.equal(runSetWhereSql({ status: TERMINAL_STATUSES }, ACTIVE_STATUSES, 'cancelRuns', DIALECT), null);
    const noTag = { ...DIALECT, tag: undefined };
    assert.throws(() => runSetWhereSql({ tag: 't' }, ['failed'], 'retryRuns', noTag), TypeError);
  });

  test('queueDepthOf([]), assertSqlIdentifier, the MariaDB rewrite', () => {
    assert.deepStrictEqual(queueDepthOf([], T), { claimable: 0, leased: 0, oldestClaimableAgeMs: null });
    assert.doesNotThrow(() => assertSqlIdentifier(''));
    assert.doesNotThrow(() => assertSqlIdentifier('p_1'));
    assert.throws(() => assertSqlIdentifier('bad-prefix'), /bad-prefix/);
    assert.equal(
      mariadbCompatText('SELECT 1 FROM j LIMIT ? FOR UPDATE OF j SKIP LOCKED'),
      'SELECT 1 FROM j LIMIT ? FOR UPDATE SKIP LOCKED',
    );
    assert.equal(mariadbCompatText('SELECT 1 FOR UPDATE SKIP LOCKED'), 'SELECT 1 FOR UPDATE SKIP LOCKED');
  });
});

for (const version of ['3.0.0', '2.5.0']) {
  describe(`the published ${version} on MariaDB, through the test shim`, () => {
    const skip = skipWithoutReference(version);
    let mod;
    let db;
    let raw;
    let compat;
    let sql;
    let admin;

    before(async () => {
      if (skip) return;
      mod = await loadReference(version);
      db = await freshDatabase(`ref${version.replaceAll('.', '')}`);
      raw = mysql.createPool({ uri: db.url, connectionLimit: 4 });
      compat = mariadbCompatPool(raw);
      sql = mod.mysqlPool(compat);
      admin = await mysql.createConnection({ uri: db.url });
    });

    after(async () => {
      await admin?.end();
      await raw?.end();
      await db?.drop();
    });

    test('extraction: a cached, rewritten entry; the same path on a second call', { skip }, () => {
      assert.equal(referenceAvailability(version).available, true);
      const entry = prepareReference(version);
      assert.equal(prepareReference(version), entry);
      const text = readFileSync(entry, 'utf8');
      assert.ok(!text.includes('@iterativeflow/core'));
      assert.ok(text.includes('from "./core-backend.mjs"'));
      assert.ok(existsSync(`${dirname(entry)}/core-backend.mjs`));
    });

    test('applySchema twice; the six tables, the new columns and pending_work exist', { skip }, async () => {
      await mod.applySchema(sql, 's_');
      await mod.applySchema(sql, 's_');
      assert.equal(mod.ddl('s_').length, 8);
      const [cols] = await admin.query(
        `SELECT table_name AS t, column_name AS c FROM information_schema.columns
          WHERE table_schema = DATABASE() AND table_name LIKE 's\\_%' ORDER BY table_name, ordinal_position`,
      );
      const byTable = {};
      for (const r of cols) (byTable[r.t] ??= []).push(r.c);
      assert.deepStrictEqual(Object.keys(byTable).sort(), [
        's_cron',
        's_job',
        's_run',
        's_signal',
        's_step',
        's_timer',
      ]);
      assert.ok(byTable.s_signal.includes('consumed'));
      assert.equal(byTable.s_run.includes('priority'), version === '3.0.0');
      const [[fn]] = await admin.query('SELECT `s_pending_work`(NULL, ?) AS n', [T]);
      assert.equal(Number(fn.n), 0);
    });

    test(
      'start, enqueue, claim with and without names (rewritten for MariaDB), checkpoint with an outbox, fencing',
      { skip },
      async () => {
        let n = 0;
        const b = mod.createMysqlBackend(sql, { prefix: 's_', id: () => `${version}-${++n}` });
        const v3 = version === '3.0.0';
        const memo = v3 ? 'call' : 'shape';
        const a = await b.store.startRun({
          name: 'flow',
          version: 1,
          input: { x: 1 },
          idempotencyKey: 'k',
          priority: 4,
          createdAt: at(0),
        });
        assert.deepStrictEqual(a, { runId: `${version}-1`, created: true, status: 'pending' });
        assert.deepStrictEqual(
          await b.store.startRun({ name: 'FLOW', version: 1, input: null, idempotencyKey: 'K', createdAt: at(1) }),
          {
            runId: a.runId,
            created: false,
            status: 'pending',
          },
        );
        await b.queue.enqueue(a.runId);
        await b.queue.enqueue('no-run', { runAt: at(10) });
        const [[job]] = await admin.query('SELECT priority, version FROM s_job WHERE run_id = ?', [a.runId]);
        assert.deepStrictEqual({ ...job }, { priority: v3 ? 4 : 0, version: 1 }); // 3.0 inherits the run's priority

        const before = { ...compat.stats };
        assert.deepStrictEqual(await b.queue.claim({ limit: 5, leaseMs: 1000, now: at(0), names: [] }), []);
        assert.deepStrictEqual(await b.queue.depth(at(20), ['other']), {
          claimable: 1,
          leased: 0,
          oldestClaimableAgeMs: 10,
        });
        const [lease] = await b.queue.claim({ limit: 5, leaseMs: 1000, now: at(0), names: ['Flow'] });
        assert.deepStrictEqual(lease, {
          runId: a.runId,
          token: `${version}-3:${a.runId}`,
          expiresAt: at(1000),
          version: 1,
        });
        const [orphanJob] = await b.queue.claim({ limit: 5, leaseMs: 1000, now: at(20) });
        assert.equal(orphanJob.runId, 'no-run');
        assert.ok(compat.stats.seen > before.seen, "claim ran the reference's FOR UPDATE OF");
        if (onMysql()) assert.equal(compat.stats.rewrites, 0, 'on MySQL the reference runs unpatched');
        else assert.ok(compat.stats.rewrites > before.rewrites, 'on MariaDB claim went through the rewrite');
        assert.deepStrictEqual(await b.queue.depth(at(30)), { claimable: 0, leased: 2, oldestClaimableAgeMs: null });

        assert.equal(await b.store.markRunning(a.runId), 1);
        assert.deepStrictEqual(await b.store.postSignal(a.runId, 'go', { ok: 1 }, { idempotencyKey: 'sig' }), {
          delivered: true,
        });
        const snap = await b.store.loadRun(a.runId);
        assert.deepStrictEqual(
          snap.signals.map((s) => s.name),
          ['go'],
        );
        const c = { runId: a.runId, cursorKey: 's0', status: 'ok', result: { r: 1 }, attempts: 1, [memo]: 'step:x' };
        const fx = {
          spawn: [
            {
              runId: 'kid',
              spec: {
                name: 'kid',
                version: 1,
                input: null,
                parentRunId: a.runId,
                parentCursorKey: 's0',
                depth: 1,
                priority: 2,
                createdAt: at(2),
              },
            },
          ],
          enqueue: [{ runId: a.runId, opts: { priority: 9 } }],
          timers: [{ runId: a.runId, fireAt: at(500) }],
          consumeSignals: [snap.signals[0].id],
          joinTarget: { runId: a.runId, count: 1 },
          requireVersion: 2, // the signal's enqueue bumped the job to version 2
        };
        assert.deepStrictEqual(await b.store.checkpointStep(c, fx), {
          status: 'ok',
          result: { r: 1 },
          error: undefined,
          attempts: 1,
          [memo]: 'step:x',
        });
        assert.deepStrictEqual(await b.store.checkpointStep({ ...c, cursorKey: 's1' }, { requireVersion: 1 }), {
          status: 'ok',
          attempts: 1,
          committed: false,
        });
        const after = await b.store.loadRun(a.runId);
        assert.deepStrictEqual([...after.steps.keys()], ['s0']);
        assert.deepStrictEqual(after.signals, []);
        assert.deepStrictEqual(await b.store.postSignal(a.runId, 'go', null, { idempotencyKey: 'sig' }), {
          delivered: false,
        });
        const [[kidJob]] = await admin.query('SELECT priority FROM s_job WHERE run_id = ?', ['kid']);
        assert.equal(kidJob.priority, v3 ? 2 : 0);
        assert.deepStrictEqual(await b.timer.dueCount(at(500), ['flow']), 1);
        assert.deepStrictEqual(await b.timer.nextDueAt(at(0)), at(500));

        await b.store.markTerminal(a.runId, { status: 'done', output: 1 });
        await b.store.markTerminal(a.runId, { status: 'failed', error: { code: 'E', message: 'late' } });
        assert.equal((await b.store.loadRunRow(a.runId)).status, v3 ? 'done' : 'failed'); // 3.0: every terminal state is sticky
        await assert.rejects(b.store.deleteRuns({}, 10), TypeError);
        assert.equal(await b.store.cancelRuns({ name: 'kid' }, 10), 1);
        assert.equal(await b.store.deleteRuns({ status: ['canceled', 'running'] }, 10), 1);
        assert.equal(await b.store.loadRun('kid'), undefined);
      },
    );
  });
}
