// The one-statement fast paths of the hot calls answer exactly what a read-back would:
// a winning checkpoint returns the memo as stored (built from the checkpoint itself, not re-read),
// markRunning returns the count from the UPDATE's OK packet, and ack deletes or releases with the
// release statement only sent when needed. Each answer is compared with what the database holds.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EXECUTORS, setup, at, LEASE } from './fixture.mjs';

/** The group's tests, over the backend `ctx` holds (one executor). */
function suite(ctx) {
  const storedStep = async (runId, cursorKey) => (await ctx.store.loadRun(runId)).steps.get(cursorKey);

  const awkwardResults = [
    null,
    0,
    -1.5e-300,
    1e21,
    '',
    'quote \' double " backslash \\ nul \u0000 newline \n tab \t',
    'emoji 😀 and 𝄞 and ü',
    { nested: { a: [1, 'two', null, { three: 3 }] }, empty: {}, list: [] },
    [[], [[]], {}],
    'x'.repeat(70_000),
  ];

  test('a winning checkpoint returns the memo exactly as loadRun reads it back', async () => {
    const run = await ctx.newRun();
    let i = 0;
    for (const result of awkwardResults) {
      const cursorKey = `k${i++}`;
      const returned = await ctx.store.checkpointStep({ runId: run, cursorKey, status: 'ok', result, attempts: 3 });
      assert.deepStrictEqual(
        returned,
        await storedStep(run, cursorKey),
        `result ${JSON.stringify(result).slice(0, 40)}`,
      );
      assert.deepStrictEqual(returned.result, result);
    }
  });

  test('a winning checkpoint echoes shape, error, attempts extremes and an undefined result like the stored row', async () => {
    const run = await ctx.newRun();
    const cases = [
      { cursorKey: 'a', status: 'ok', result: undefined, attempts: 0 },
      { cursorKey: 'b', status: 'ok', result: 1, attempts: 2 ** 31 - 1, shape: 'step:b' },
      { cursorKey: 'c', status: 'ok', result: 1, attempts: -(2 ** 31), shape: '' },
      {
        cursorKey: 'd',
        status: 'ok',
        result: { r: 1 },
        error: { message: 'boom', stack: 'at x\n  at y' },
        attempts: 1,
        shape: 'ü 😀',
      },
      { cursorKey: 'trailing spaces  ', status: 'ok', result: 'v  ', attempts: 1, shape: 'sp  ' },
      { cursorKey: 'é'.repeat(191), status: 'ok', result: 1, attempts: 1, shape: '😀'.repeat(191) },
    ];
    for (const c of cases) {
      const returned = await ctx.store.checkpointStep({ runId: run, ...c });
      const stored = await storedStep(run, c.cursorKey);
      assert.ok(stored, `step ${c.cursorKey.slice(0, 10)} stored`);
      assert.deepStrictEqual(returned, stored, `case ${c.cursorKey.slice(0, 10)}`);
      assert.deepStrictEqual(Object.keys(returned).sort(), Object.keys(stored).sort());
    }
  });

  test('a losing checkpoint returns the winner, and an unknown run throws without writing', async () => {
    const run = await ctx.newRun();
    await ctx.store.checkpointStep({
      runId: run,
      cursorKey: 's',
      status: 'ok',
      result: 'first',
      attempts: 1,
      shape: 'one',
    });
    const lost = await ctx.store.checkpointStep({
      runId: run,
      cursorKey: 's',
      status: 'ok',
      result: 'second',
      attempts: 2,
    });
    assert.deepStrictEqual(lost, { status: 'ok', result: 'first', error: undefined, attempts: 1, shape: 'one' });
    await assert.rejects(
      ctx.store.checkpointStep({ runId: 'no-such-run', cursorKey: 's', status: 'ok', result: 1, attempts: 1 }),
      /checkpointStep: run no-such-run not found/,
    );
    assert.equal(await ctx.count('step', 'run_id = ?', ['no-such-run']), 0);
  });

  test('16 racing checkpoints of one step all return the single stored winner', async () => {
    const run = await ctx.newRun();
    const answers = await Promise.all(
      Array.from({ length: 16 }, (_, n) =>
        ctx.store.checkpointStep({ runId: run, cursorKey: 'race', status: 'ok', result: { n }, attempts: n }),
      ),
    );
    const stored = await storedStep(run, 'race');
    for (const a of answers) assert.deepStrictEqual(a, stored);
    assert.equal(await ctx.count('step', 'run_id = ?', [run]), 1);
  });

  test('a winning checkpoint with an outbox answers the stored memo; a losing one the winner, applying nothing', async () => {
    const run = await ctx.newRun();
    const child = await ctx.newRun();
    const won = await ctx.store.checkpointStep(
      { runId: run, cursorKey: 'o', status: 'ok', result: { big: 'x'.repeat(5000), n: -0.5 }, attempts: 4, shape: 's' },
      { enqueue: [{ runId: child }], timers: [{ runId: run, fireAt: at(9) }] },
    );
    assert.deepStrictEqual(won, await storedStep(run, 'o'));
    assert.equal(await ctx.count('job', 'run_id = ?', [child]), 1, 'outbox enqueue applied');
    assert.equal(await ctx.count('timer', 'run_id = ?', [run]), 1, 'outbox timer applied');
    const other = await ctx.newRun();
    const lost = await ctx.store.checkpointStep(
      { runId: run, cursorKey: 'o', status: 'ok', result: 'late', attempts: 5 },
      { enqueue: [{ runId: other }] },
    );
    assert.deepStrictEqual(lost, won, 'the loser gets the stored winner');
    assert.equal(await ctx.count('job', 'run_id = ?', [other]), 0, 'the losing outbox applied nothing');
  });

  test('arriveAtJoin answers the count it stored (from the UPDATE), undefined for an unknown run', async () => {
    const parent = await ctx.newRun();
    for (const start of [3, 0, 2 ** 31 - 1, -(2 ** 31) + 1]) {
      await ctx.rows(`UPDATE ${ctx.t.run} SET join_remaining = ? WHERE id = ?`, [start, parent]);
      assert.equal(await ctx.store.arriveAtJoin(parent), start - 1, `from ${start}`);
      assert.equal(
        (await ctx.rows(`SELECT join_remaining FROM ${ctx.t.run} WHERE id = ?`, [parent]))[0].join_remaining,
        start - 1,
      );
    }
    assert.equal(await ctx.store.arriveAtJoin('no-such-run'), undefined);
  });

  test('claim and dueBatch after an empty answer cost one statement, and still find work that arrives later', async () => {
    // The backend's statements are counted by our pool; over a wrapped `Sql` it sees none of them.
    const counted = ctx.executor === 'native';
    // Statements as sent plus round trips: a transaction's COMMIT is a round trip of its own.
    const stats = () => {
      const st = ctx.sql.stats();
      return st.statements + st.roundTrips;
    };
    // Two empty polls: the second starts from "the last one found nothing".
    assert.deepEqual(await ctx.queue.claim({ limit: 5, leaseMs: LEASE, now: at(0) }), []);
    assert.deepEqual(await ctx.timer.dueBatch({ now: at(0), limit: 5 }), []);
    let before = stats();
    assert.deepEqual(await ctx.queue.claim({ limit: 5, leaseMs: LEASE, now: at(0) }), []);
    if (counted) assert.equal(stats() - before, 2, 'an idle claim is one statement in one round trip');
    before = stats();
    assert.deepEqual(await ctx.timer.dueBatch({ now: at(0), limit: 5 }), []);
    if (counted) assert.equal(stats() - before, 2, 'an idle dueBatch is one statement in one round trip');

    const run = await ctx.newRun();
    await ctx.queue.enqueue(run, { runAt: at(1) });
    await ctx.timer.schedule(run, at(1));
    assert.deepEqual(await ctx.queue.claim({ limit: 5, leaseMs: LEASE, now: at(0) }), [], 'not due yet');
    assert.deepEqual(await ctx.timer.dueBatch({ now: at(0), limit: 5 }), [], 'not due yet');
    const leases = await ctx.queue.claim({ limit: 5, leaseMs: LEASE, now: at(1) });
    assert.deepEqual(
      leases.map((l) => l.runId),
      [run],
      'due now: claimed',
    );
    assert.deepEqual(await ctx.timer.dueBatch({ now: at(1), limit: 5 }), [run], 'due now: fired');
    assert.equal(await ctx.count('timer'), 0);
    // A job leased by someone else is not claimable, probe or not.
    assert.deepEqual(await ctx.queue.claim({ limit: 5, leaseMs: LEASE, now: at(2) }), []);
  });

  test('markRunning counts from the UPDATE, and reads the row only for terminal or unknown runs', async () => {
    const run = await ctx.newRun();
    for (let n = 1; n <= 3; n++) {
      assert.equal(await ctx.store.markRunning(run), n);
      assert.equal((await ctx.store.loadRunRow(run)).attempts, n);
    }
    await ctx.store.markTerminal(run, { status: 'done', output: 1 });
    assert.equal(await ctx.store.markRunning(run), 3, 'terminal: current attempts, nothing written');
    assert.equal((await ctx.store.loadRunRow(run)).status, 'done');
    await assert.rejects(ctx.store.markRunning('no-such-run'), /markRunning: run no-such-run not found/);
    const racing = await ctx.newRun();
    const counts = await Promise.all(Array.from({ length: 12 }, () => ctx.store.markRunning(racing)));
    assert.deepStrictEqual(
      [...counts].sort((a, b) => a - b),
      Array.from({ length: 12 }, (_, k) => k + 1),
    );
  });

  test('ack deletes a job in one statement and releases one re-enqueued during the lease', async () => {
    const plain = await ctx.newRun();
    const again = await ctx.newRun();
    await ctx.queue.enqueue(plain, { runAt: at(0) });
    await ctx.queue.enqueue(again, { runAt: at(0) });
    const leases = await ctx.queue.claim({ limit: 10, leaseMs: LEASE, now: at(0) });
    assert.equal(leases.length, 2);
    await ctx.queue.enqueue(again, { runAt: at(0) }); // a new version while leased
    for (const l of leases) await ctx.queue.ack(l, { now: at(1) });
    assert.equal(await ctx.count('job', 'run_id = ?', [plain]), 0, 'plain job deleted');
    const [row] = await ctx.rows(`SELECT lease_token, lease_expires FROM ${ctx.t.job} WHERE run_id = ?`, [again]);
    assert.ok(row, 're-enqueued job kept');
    assert.equal(row.lease_token, null);
    assert.equal(row.lease_expires, null);
    assert.deepEqual(await ctx.claimIds(at(2)), [again], 'released job is claimable again at once');
  });

  test('a step row left behind by a deleted run never answers for it: the checkpoint still throws', async () => {
    await ctx.rows(
      `INSERT INTO ${ctx.t.step} (run_id, cursor_key, status, result, error, attempts, shape) VALUES ('gone', 's', 'ok', '1', NULL, 1, NULL)`,
    );
    await assert.rejects(
      ctx.store.checkpointStep({ runId: 'gone', cursorKey: 's', status: 'ok', result: 2, attempts: 1 }),
      /checkpointStep: run gone not found/,
    );
    await assert.rejects(
      ctx.store.checkpointStep(
        { runId: 'gone', cursorKey: 's', status: 'ok', result: 2, attempts: 1 },
        { enqueue: [{ runId: 'gone' }] },
      ),
      /checkpointStep: run gone not found/,
    );
    assert.equal(await ctx.count('job'), 0, 'no outbox applied');
  });
}

for (const executor of EXECUTORS) describe(executor, () => suite(setup('conf_fastpath', { executor })));
