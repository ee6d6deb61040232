// Another client holding every prepared statement the server allows (`max_prepared_stmt_count`
// is server-wide) must not break the backend: a statement the server refuses to prepare (ER
// 1461) is sent as text instead, and counted in `stats().preparedFallbacks`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import mysql from 'mysql2/promise';

import { startPrivateServer } from '../helpers/server.mjs';
import { applySchema, createMysqlBackend, mysqlPool } from './helpers.mjs';

test(
  'startRun, enqueue and schedule succeed while another connection holds every prepared statement',
  { timeout: 120_000 },
  async () => {
    const server = await startPrivateServer();
    const hog = await mysql.createConnection({ uri: server.url });
    let sql;
    try {
      await hog.query('CREATE DATABASE prep');
      const [[{ max }]] = await hog.query('SELECT @@GLOBAL.max_prepared_stmt_count AS max');
      await hog.query('SET GLOBAL max_prepared_stmt_count = 32');
      try {
        sql = mysqlPool(`${server.url}prep`);
        await applySchema(sql);
        // Take every statement the server has left.
        let refused;
        for (let i = 0; i < 1000 && !refused; i++) {
          await hog.prepare(`SELECT ${i} AS n`).catch((e) => (refused = e));
        }
        assert.equal(refused && refused.errno, 1461, 'the other connection used up max_prepared_stmt_count');

        const b = createMysqlBackend(sql);
        const before = sql.stats().preparedFallbacks;
        const { runId } = await b.store.startRun({ name: 'f', version: 1, input: { a: 1 } });
        await b.queue.enqueue(runId);
        await b.timer.schedule(runId, new Date('2030-01-01T00:00:00Z'));
        const snap = await b.store.loadRun(runId);
        assert.equal(snap.run.status, 'pending');
        assert.deepEqual(snap.run.input, { a: 1 });
        const [{ n }] = await sql.query('SELECT COUNT(*) AS n FROM `timer` WHERE run_id = ?', [runId]);
        assert.equal(Number(n), 1);
        const fallbacks = sql.stats().preparedFallbacks - before;
        assert.ok(fallbacks >= 3, `prepared fallbacks counted: ${fallbacks}`);
      } finally {
        await hog.query('SET GLOBAL max_prepared_stmt_count = ?', [max]);
      }
    } finally {
      if (sql) await sql.close();
      await hog.end();
      await server.stop();
    }
  },
);
