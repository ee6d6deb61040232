// loadRun reads run, steps and signals as one UNION ALL statement natively. These pin what that
// one statement must get right: signals in seq order whatever order the index returns them in,
// tables whose collations differ (created under different server defaults), a run with nothing
// but its row, a missing run whose steps and signals are still there, and the wrapped path
// (three plain SELECTs) answering the same.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { applySchema, createMysqlBackend, useDatabase } from './helpers.mjs';

const ctx = useDatabase('sql_load_run', {
  init: async (c) => {
    await applySchema(c.sql, 'lr_');
    await applySchema(c.sql, 'lc_');
    // Steps and signals under another collation than the run table, as after a server upgrade
    // that changed the default between two applySchema runs.
    for (const t of ['lc_step', 'lc_signal']) {
      await c.sql.query(`ALTER TABLE ${t} CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
    }
  },
});

/** A wrapped Sql over the same native pool: the backend takes its JS-bridge path. */
function wrapped(sql) {
  return {
    query: (text, params) => sql.query(text, params),
    exec: (text, params) => sql.exec(text, params),
    tx: (fn) => sql.tx(fn),
  };
}

async function seed(b, { signals = 0, steps = 0 } = {}) {
  const { runId } = await b.store.startRun({ name: 'lr', version: 3, input: { n: [1, 'two', null] } });
  for (let i = 0; i < steps; i++) {
    await b.store.checkpointStep({ runId, cursorKey: `s${i}`, status: 'ok', result: { i }, attempts: 1 });
  }
  // Names that sort differently from their posting order, ids (uuids) in random order.
  for (let i = 0; i < signals; i++) await b.store.postSignal(runId, `sig-${signals - i}`, { i });
  return runId;
}

function comparable(snap) {
  return {
    run: { ...snap.run, createdAt: snap.run.createdAt.getTime() },
    steps: [...snap.steps].sort(([a], [b]) => (a < b ? -1 : 1)),
    signals: snap.signals.map((s) => ({ name: s.name, payload: s.payload })),
  };
}

for (const prefix of ['lr_', 'lc_']) {
  test(`loadRun (${prefix === 'lr_' ? 'one collation' : 'steps and signals under another collation'}): signals in posting order, steps whole`, async () => {
    const b = createMysqlBackend(ctx.sql, { prefix });
    const runId = await seed(b, { signals: 40, steps: 5 });
    const snap = await b.store.loadRun(runId);
    assert.equal(snap.run.id, runId);
    assert.deepEqual(snap.run.input, { n: [1, 'two', null] });
    assert.equal(snap.run.version, 3);
    assert.ok(snap.run.createdAt instanceof Date);
    assert.deepEqual(
      snap.signals.map((s) => s.payload.i),
      Array.from({ length: 40 }, (_, i) => i),
      'signals in the order they were posted (seq)',
    );
    assert.equal(snap.steps.size, 5);
    for (let i = 0; i < 5; i++) {
      const m = snap.steps.get(`s${i}`);
      assert.deepEqual(
        { status: m.status, result: m.result, attempts: m.attempts },
        { status: 'ok', result: { i }, attempts: 1 },
      );
    }

    const w = createMysqlBackend(wrapped(ctx.sql), { prefix });
    assert.deepEqual(comparable(await w.store.loadRun(runId)), comparable(snap), 'the wrapped path reads the same');
  });
}

test('loadRun of a run with nothing but its row, and of a run that is gone', async () => {
  const b = createMysqlBackend(ctx.sql, { prefix: 'lr_' });
  const bare = await seed(b);
  const snap = await b.store.loadRun(bare);
  assert.equal(snap.run.id, bare);
  assert.equal(snap.steps.size, 0);
  assert.deepEqual(snap.signals, []);

  const gone = await seed(b, { signals: 2, steps: 2 });
  await ctx.sql.query('DELETE FROM lr_run WHERE id = ?', [gone]);
  const left = await ctx.sql.query('SELECT COUNT(*) AS n FROM lr_step WHERE run_id = ?', [gone]);
  assert.equal(Number(left[0].n), 2, 'its steps are still there');
  assert.equal(await b.store.loadRun(gone), undefined);
  assert.equal(await b.store.loadRun('no-such-run'), undefined);
});
