// docs/contract.md §12.3 (Timer, 6 checks) plus §5 details.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EXECUTORS, setup, at, T } from './fixture.mjs';

/** The group's tests, over the backend `ctx` holds (one executor). */
function suite(ctx) {
  const due = (n, limit = 10) => ctx.timer.dueBatch({ now: at(n), limit });

  test('12.3.1 a deadline at T+1000: nothing at T+999, returned at T+1000', async () => {
    await ctx.timer.schedule('r1', at(1000));
    assert.deepEqual(await due(999), []);
    assert.deepEqual(await due(1000), ['r1']);
  });

  test('12.3.2 a returned deadline is not returned again', async () => {
    await ctx.timer.schedule('r1', at(1000));
    assert.deepEqual(await due(1000), ['r1']);
    assert.deepEqual(await due(1000), []);
    assert.deepEqual(await due(1_000_000), []);
    assert.equal(await ctx.count('timer'), 0);
  });

  test('12.3.3 rescheduling later moves it (not due at T+2000, due at T+5000)', async () => {
    await ctx.timer.schedule('r1', at(1000));
    await ctx.timer.schedule('r1', at(5000));
    assert.deepEqual(await due(2000), []);
    assert.deepEqual(await due(5000), ['r1']);
  });

  test('12.3.4 rescheduling earlier also moves it (due at T+1000)', async () => {
    await ctx.timer.schedule('r1', at(5000));
    await ctx.timer.schedule('r1', at(1000));
    assert.deepEqual(await due(1000), ['r1']);
    assert.deepEqual(await due(5000), []);
  });

  test('12.3.5 cancel removes it', async () => {
    await ctx.timer.schedule('r1', at(1000));
    await ctx.timer.schedule('r2', at(1000));
    await ctx.timer.cancel('r1');
    assert.deepEqual(await due(1_000_000), ['r2']);
    assert.equal(await ctx.count('timer'), 0);
  });

  test('12.3.6 three deadlines, limit 2 => the two earliest, earliest first', async () => {
    await ctx.timer.schedule('r1', at(3000));
    await ctx.timer.schedule('r2', at(1000));
    await ctx.timer.schedule('r3', at(2000));
    assert.deepEqual(await due(5000, 2), ['r2', 'r3']);
    assert.deepEqual(await ctx.rows(`SELECT run_id FROM ${ctx.t.timer}`).then((r) => r.map((x) => x.run_id)), ['r1']);
    assert.deepEqual(await due(5000, 2), ['r1']);
  });

  test('§5 one row per run; fire_at stored as epoch ms', async () => {
    await ctx.timer.schedule('r1', at(1000));
    await ctx.timer.schedule('r1', at(1234));
    const rows = await ctx.rows(`SELECT run_id, fire_at FROM ${ctx.t.timer}`);
    assert.equal(rows.length, 1);
    assert.equal(Number(rows[0].fire_at), T + 1234);
  });

  test('§5 cancel without a timer is a silent no-op', async () => {
    await ctx.timer.cancel('never-scheduled');
    assert.equal(await ctx.count('timer'), 0);
  });

  test('§5 dueBatch without now uses the wall clock; limit 0 returns nothing', async () => {
    await ctx.timer.schedule('past', new Date(Date.now() - 1000));
    await ctx.timer.schedule('future', at(0)); // 2030
    assert.deepEqual(await ctx.timer.dueBatch({ limit: 0, now: at(0) }), []);
    assert.deepEqual(await ctx.timer.dueBatch({ limit: 10 }), ['past']);
    assert.deepEqual(await ctx.rows(`SELECT run_id FROM ${ctx.t.timer}`).then((r) => r.map((x) => x.run_id)), [
      'future',
    ]);
  });

  test('§5 schedule needs no run row; concurrent dueBatch never returns a deadline twice', async () => {
    for (let i = 0; i < 30; i++) await ctx.timer.schedule(`t${String(i).padStart(2, '0')}`, at(i));
    const settled = await Promise.allSettled(
      Array.from({ length: 4 }, () => ctx.timer.dueBatch({ now: at(100), limit: 10 })),
    );
    // A transient lock error (deadlock / lock wait) may surface on a batch: it then took nothing.
    for (const s of settled) {
      if (s.status === 'rejected') assert.match(String(s.reason?.message), /deadlock|lock wait/i);
    }
    const batches = settled.filter((s) => s.status === 'fulfilled').map((s) => s.value);
    assert.ok(batches.length >= 1);
    const seen = batches.flat();
    assert.equal(new Set(seen).size, seen.length, 'no duplicates across concurrent batches');
    const rest = await ctx.timer.dueBatch({ now: at(100), limit: 100 });
    assert.equal(seen.length + rest.length, 30);
    assert.equal(new Set([...seen, ...rest]).size, 30);
    for (const b of batches) {
      const times = b.map((id) => Number(id.slice(1)));
      assert.deepEqual(
        times,
        [...times].sort((x, y) => x - y),
        'each batch ascending by fire_at',
      );
    }
  });
}

for (const executor of EXECUTORS) describe(executor, () => suite(setup('conf_timer', { executor })));
