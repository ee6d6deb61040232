// Sql.tx when something inside it fails: COMMIT goes to the server only after every statement
// issued before it has finished, and never after a failure that ended the transaction on the
// server (a deadlock rolls the whole transaction back; later statements would autocommit alone).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { deferred, useDatabase, within } from './helpers.mjs';

const ctx = useDatabase('sql_tx_fail', {
  init: ({ sql }) => sql.query('CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(32) NOT NULL) ENGINE=InnoDB'),
});

const rows = async () => (await ctx.sql.query('SELECT id, v FROM t ORDER BY id')).map((r) => `${r.id}:${r.v}`);

test(
  'a deadlock caught inside fn: later statements and the commit reject, nothing is stored',
  { timeout: 30_000 },
  async () => {
    await ctx.sql.exec('DELETE FROM t');
    await ctx.sql.exec("INSERT INTO t (id, v) VALUES (1, 'a'), (2, 'b')");
    const aHolds1 = deferred();
    const bHolds2 = deferred();
    const outcomes = {};
    // Two transactions lock rows 1 and 2 in opposite order: InnoDB picks one as the victim.
    const body = (mine, theirs, iHold, theyHold, name) => async (t) => {
      await t.exec('UPDATE t SET v = ? WHERE id = ?', [name, mine]);
      iHold.resolve();
      await theyHold.promise;
      try {
        await t.exec('UPDATE t SET v = ? WHERE id = ?', [name, theirs]);
        outcomes[name] = 'second update ok';
      } catch (e) {
        outcomes[name] = `deadlock ${e.errno}`;
        // Carry on as if the error did not matter: the rows written next must not be committed.
        const after = await t.exec('INSERT INTO t (id, v) VALUES (?, ?)', [name === 'A' ? 10 : 20, name]).then(
          () => 'insert ok',
          (e2) => `insert rejected ${e2.errno}`,
        );
        outcomes[`${name} after`] = after;
      }
    };
    const a = ctx.sql.tx(body(1, 2, aHolds1, bHolds2, 'A')).then(
      () => 'committed',
      (e) => `rejected ${e.errno}`,
    );
    const b = ctx.sql.tx(body(2, 1, bHolds2, aHolds1, 'B')).then(
      () => 'committed',
      (e) => `rejected ${e.errno}`,
    );
    const [ra, rb] = await within(Promise.all([a, b]), 20_000, 'the two transactions');
    const victim = outcomes.A?.startsWith('deadlock') ? 'A' : 'B';
    const winner = victim === 'A' ? 'B' : 'A';
    assert.equal(outcomes[victim], 'deadlock 1213', JSON.stringify(outcomes));
    assert.equal(
      outcomes[`${victim} after`],
      'insert rejected 1213',
      'a statement after the deadlock is refused with its errno',
    );
    assert.equal(victim === 'A' ? ra : rb, 'rejected 1213', 'the commit of the victim rejects');
    assert.equal(victim === 'A' ? rb : ra, 'committed');
    assert.deepEqual(
      await rows(),
      [`1:${winner}`, `2:${winner}`],
      'only the winner is stored, and nothing written after the deadlock',
    );
    // The pool is healthy afterwards.
    assert.deepEqual(await ctx.sql.tx((t) => t.query('SELECT 1 AS one')), [{ one: 1 }]);
  },
);

test('statements fn did not await finish before COMMIT is sent', { timeout: 20_000 }, async () => {
  await ctx.sql.exec('DELETE FROM t');
  let pending;
  await ctx.sql.tx((t) => {
    // Fire and forget: the commit must still wait for this statement.
    pending = t.exec("INSERT INTO t (id, v) SELECT 5, 'late' FROM DUAL WHERE SLEEP(0.3) = 0");
  });
  await pending;
  assert.deepEqual(await rows(), ['5:late']);
});

test('an un-awaited statement that fails with a deadlock makes the commit reject', { timeout: 30_000 }, async () => {
  await ctx.sql.exec('DELETE FROM t');
  await ctx.sql.exec("INSERT INTO t (id, v) VALUES (1, 'a'), (2, 'b')");
  const aHolds1 = deferred();
  const bHolds2 = deferred();
  let forgotten;
  const a = ctx.sql.tx(async (t) => {
    await t.exec("UPDATE t SET v = 'A' WHERE id = 1");
    aHolds1.resolve();
    await bHolds2.promise;
    await t.exec("INSERT INTO t (id, v) VALUES (30, 'A')");
    forgotten = t.exec("UPDATE t SET v = 'A' WHERE id = 2"); // not awaited
    forgotten.catch(() => {});
  });
  const b = ctx.sql.tx(async (t) => {
    await t.exec("UPDATE t SET v = 'B' WHERE id = 2");
    // More rows written than A: InnoDB rolls back the lighter transaction, so A is the victim.
    await t.exec("INSERT INTO t (id, v) VALUES (40, 'B'), (41, 'B'), (42, 'B'), (43, 'B')");
    bHolds2.resolve();
    await aHolds1.promise;
    // Wait until A's forgotten UPDATE is queued on row 2, then close the cycle.
    await new Promise((r) => setTimeout(r, 300));
    await t.exec("UPDATE t SET v = 'B' WHERE id = 1");
  });
  const [ra, rb] = await within(Promise.allSettled([a, b]), 20_000, 'the two transactions');
  // A, the victim, learns of the deadlock from its commit; B commits.
  assert.equal(ra.status, 'rejected', 'the commit after a failed forgotten statement rejects');
  assert.equal(ra.reason.errno, 1213, ra.reason.message);
  assert.equal(rb.status, 'fulfilled');
  assert.deepEqual(await rows(), ['1:B', '2:B', '40:B', '41:B', '42:B', '43:B'], 'nothing of A committed');
});
