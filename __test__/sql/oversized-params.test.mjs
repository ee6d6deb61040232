// A parameter that makes a statement larger than the server's max_allowed_packet is refused as
// an argument error (RangeError, kind `argument`) before anything is sent — for sql.query,
// sql.exec, statements inside tx and backend calls alike. Sent, the server would close the
// connection on it, and the call failed as a lost connection although nothing had run.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { createMysqlBackend, applySchema, useDatabase } from './helpers.mjs';

const ctx = useDatabase('sql_oversized', {
  init: async ({ sql }) => {
    await applySchema(sql);
    await sql.query('CREATE TABLE big (id INT PRIMARY KEY, body LONGTEXT) ENGINE=InnoDB');
  },
});

const isArgument = (what) => (e) => {
  assert.ok(e instanceof RangeError, `${what}: a RangeError, got ${e && e.constructor.name}: ${e && e.message}`);
  assert.equal(e.kind, 'argument', what);
  assert.match(e.message, /max_allowed_packet/, what);
  return true;
};

test('an over-sized parameter is an argument error on every path; the connection and tx live on', async () => {
  const [{ max }] = await ctx.sql.query('SELECT @@max_allowed_packet AS max');
  const huge = 'x'.repeat(Number(max) + 10);
  const b = createMysqlBackend(ctx.sql);

  await assert.rejects(ctx.sql.query('SELECT LENGTH(?) AS n', [huge]), isArgument('sql.query'));
  await assert.rejects(ctx.sql.exec('INSERT INTO big (id, body) VALUES (1, ?)', [huge]), isArgument('sql.exec'));
  await ctx.sql.tx(async (t) => {
    await t.exec("INSERT INTO big (id, body) VALUES (2, 'kept')");
    await assert.rejects(t.exec('INSERT INTO big (id, body) VALUES (3, ?)', [huge]), isArgument('tx statement'));
    // Nothing was sent: the transaction is intact and commits its first row.
  });
  await assert.rejects(b.store.startRun({ name: 'f', version: 1, input: huge }), isArgument('startRun'));
  await assert.rejects(
    b.store.startManyRuns([
      { name: 'f', version: 1, input: 1 },
      { name: 'f', version: 1, input: huge },
    ]),
    isArgument('startManyRuns'),
  );

  assert.deepEqual(await ctx.sql.query('SELECT id, body FROM big ORDER BY id'), [{ id: 2, body: 'kept' }]);
  const [{ runs }] = await ctx.sql.query('SELECT COUNT(*) AS runs FROM `run`');
  assert.equal(Number(runs), 0);
});
