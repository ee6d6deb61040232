// Single-statement units run prepared (binary protocol) unless statementCacheSize is 0: the
// server's own per-session counters show which protocol each call used, and the answers (the
// attempts markRunning hands back through the OK packet, first-writer-wins checkpoints, acks)
// are the same either way.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { applySchema, createMysqlBackend, mysqlPool, useDatabase } from './helpers.mjs';

const ctx = useDatabase('sql_prepared', { init: (c) => applySchema(c.sql) });

/** The prepare / execute counters of the pool's only session (connectionLimit=1). */
async function counters(sql) {
  const rows = await sql.query(
    "SHOW SESSION STATUS WHERE Variable_name IN ('Com_stmt_prepare', 'Com_stmt_execute', 'Com_stmt_close')",
  );
  const by = Object.fromEntries(rows.map((r) => [r.Variable_name.toLowerCase(), Number(r.Value)]));
  return { prepare: by.com_stmt_prepare, execute: by.com_stmt_execute, close: by.com_stmt_close };
}

/** One run: startRun (no key: one INSERT), markRunning ×3, two checkpoints of one step (the first wins), markTerminal, loadRun. */
async function workload(b, label) {
  const { runId } = await b.store.startRun({ name: `prep-${label}`, version: 1, input: { label } });
  const attempts = [];
  for (let i = 0; i < 3; i++) attempts.push(await b.store.markRunning(runId));
  const first = await b.store.checkpointStep({ runId, cursorKey: 'k', status: 'ok', result: { v: 1 }, attempts: 1 });
  const second = await b.store.checkpointStep({ runId, cursorKey: 'k', status: 'ok', result: { v: 2 }, attempts: 2 });
  await b.store.markTerminal(runId, { status: 'done', output: { ok: label } });
  const loaded = await b.store.loadRun(runId);
  return { attempts, first, second, status: loaded.run.status, output: loaded.run.output };
}

const EXPECTED = (label) => ({
  attempts: [1, 2, 3],
  first: { status: 'ok', result: { v: 1 }, attempts: 1 },
  second: { status: 'ok', result: { v: 1 }, attempts: 1 },
  status: 'done',
  output: { ok: label },
});

function pick(r) {
  const memo = (m) => ({ status: m.status, result: m.result, attempts: m.attempts });
  return { ...r, first: memo(r.first), second: memo(r.second) };
}

test('single-statement units are prepared once per connection and executed after', { timeout: 30_000 }, async () => {
  const sql = mysqlPool(`${ctx.db.url}?connectionLimit=1`);
  try {
    const b = createMysqlBackend(sql);
    const c0 = await counters(sql);
    assert.deepEqual(pick(await workload(b, 'a')), EXPECTED('a'));
    const c1 = await counters(sql);
    assert.deepEqual(pick(await workload(b, 'b')), EXPECTED('b'));
    const c2 = await counters(sql);
    // startRun, markRunning ×3, checkpoint ×2 (the second loses and reads the winner back),
    // markTerminal, loadRun: nine prepared executions each.
    assert.equal(c1.execute - c0.execute, 9, JSON.stringify({ c0, c1 }));
    assert.equal(c2.execute - c1.execute, 9, JSON.stringify({ c1, c2 }));
    // Six distinct statements, prepared on first use only.
    assert.equal(c1.prepare - c0.prepare, 6, JSON.stringify({ c0, c1 }));
    assert.equal(c2.prepare - c1.prepare, 0, 'the second workload reuses the cached statements');
  } finally {
    await sql.close();
  }
});

test('statementCacheSize=0 sends everything as text, with the same answers', { timeout: 30_000 }, async () => {
  const sql = mysqlPool({ url: `${ctx.db.url}?connectionLimit=1`, statementCacheSize: 0 });
  try {
    const b = createMysqlBackend(sql);
    const c0 = await counters(sql);
    assert.deepEqual(pick(await workload(b, 'c')), EXPECTED('c'));
    const c1 = await counters(sql);
    assert.equal(c1.execute - c0.execute, 0, JSON.stringify({ c0, c1 }));
    assert.equal(c1.prepare - c0.prepare, 0, JSON.stringify({ c0, c1 }));
  } finally {
    await sql.close();
  }
});

test(
  'a cache smaller than the working set evicts and re-prepares, answers unchanged',
  { timeout: 30_000 },
  async () => {
    const sql = mysqlPool(`${ctx.db.url}?connectionLimit=1&statementCacheSize=1`);
    try {
      const b = createMysqlBackend(sql);
      const c0 = await counters(sql);
      assert.deepEqual(pick(await workload(b, 'd')), EXPECTED('d'));
      const c1 = await counters(sql);
      assert.equal(c1.execute - c0.execute, 9);
      // Repeats back to back reuse one handle; each new statement evicts (and closes) the one before.
      assert.equal(c1.prepare - c0.prepare, 6, JSON.stringify({ c0, c1 }));
      assert.ok(c1.close - c0.close >= 5, `evicted statements are closed on the server: ${JSON.stringify({ c0, c1 })}`);
    } finally {
      await sql.close();
    }
  },
);

test('bad statementCacheSize values are refused before any connection', () => {
  for (const bad of ['-1', '1.5', '100000', 'x']) {
    assert.throws(() => mysqlPool(`${ctx.db.url}?statementCacheSize=${bad}`), {
      name: 'TypeError',
      message: /statementCacheSize/,
    });
  }
  assert.throws(() => mysqlPool({ url: ctx.db.url, statementCacheSize: -3 }), {
    name: 'TypeError',
    message: /statementCacheSize/,
  });
});
