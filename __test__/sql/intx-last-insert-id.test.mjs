// inTx: a backend unit run inside the caller's transaction leaves the session's
// `LAST_INSERT_ID()` as the caller's last statement left it. `markRunning` and `arriveAtJoin`
// hand their new count back through `LAST_INSERT_ID(expr)` outside a transaction; inside the
// caller's they must not, or the caller's next `INSERT … VALUES (LAST_INSERT_ID())` stores the
// backend's value. Over our pool and over a plain JS `Sql` wrapped around it (whose tx handle is
// the same session), for both entries.
import { before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

import { m, useDatabase } from './helpers.mjs';
import { wrapSql } from '../reliability/roundtrip.mjs';

const require = createRequire(import.meta.url);
const v3 = require('../../v3.js');
const T = Date.parse('2030-01-01T00:00:00Z');

const ENTRIES = [
  { label: 'main entry (2.0.0-alpha.2)', lib: m, prefix: 'a2_' },
  { label: 'v3 entry (3.0.0)', lib: v3, prefix: 'v3_' },
];

const ctx = useDatabase('sql_intx_lii', {
  init: async ({ sql }) => {
    for (const { lib, prefix } of ENTRIES) await lib.applySchema(sql, prefix);
    await sql.query('CREATE TABLE parent (id INT AUTO_INCREMENT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB');
    await sql.query('CREATE TABLE child (parent_id BIGINT NOT NULL, via VARCHAR(32) NOT NULL) ENGINE=InnoDB');
  },
});

for (const entry of ENTRIES) {
  for (const executor of ['native', 'wrapped']) {
    describe(`${entry.label}, ${executor}`, () => {
      const run = `${entry.prefix}run`;
      const inTx = (fn) =>
        entry.lib.inTx(executor === 'native' ? ctx.sql : wrapSql(ctx.sql), fn, { prefix: entry.prefix });

      before(async () => {
        // A running run and a parent waiting for two children.
        await ctx.sql.exec(`DELETE FROM ${run}`);
        await ctx.sql.exec(
          `INSERT INTO ${run} (id, name, version, status, attempts, join_remaining, created_at) VALUES ` +
            "('r1', 'f', 1, 'running', 1, 0, ?), ('p1', 'f', 1, 'awaiting_child', 1, 2, ?)",
          [T, T],
        );
      });
      beforeEach(() => ctx.sql.exec('DELETE FROM child'));

      for (const [method, call, answer] of [
        ['markRunning', (b) => b.store.markRunning('r1'), (n) => n > 1],
        ['arriveAtJoin', (b) => b.store.arriveAtJoin('p1'), (n) => n >= 0 && n < 2],
      ]) {
        test(`${method} leaves the caller's LAST_INSERT_ID() alone`, async () => {
          const seen = await inTx(async (b, tx) => {
            const { insertId } = await tx.exec('INSERT INTO parent (v) VALUES (1)');
            const got = await call(b);
            await tx.exec("INSERT INTO child (parent_id, via) VALUES (LAST_INSERT_ID(), 'sql')");
            const [{ id }] = await tx.query('SELECT LAST_INSERT_ID() AS id');
            return { insertId, got, id: Number(id) };
          });
          assert.ok(answer(seen.got), `${method} answered ${seen.got}`);
          assert.equal(seen.id, seen.insertId, 'SELECT LAST_INSERT_ID() after the unit');
          const rows = await ctx.sql.query('SELECT parent_id FROM child');
          assert.deepEqual(
            rows.map((r) => Number(r.parent_id)),
            [seen.insertId],
          );
        });
      }
    });
  }
}
