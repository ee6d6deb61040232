// Two (or more) engines with their own backends and pools, ticking the same database
// concurrently. Leases are exclusive, so no run may complete twice and no step body may run twice:
// every run gets exactly one markTerminal from exactly one engine, and every step row corresponds
// to exactly one execution of its body.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, plainSql } from './fixture.mjs';

const ctx = setup('eng_concurrency');

const realSleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Shared flow definitions; `execs` counts step-body executions per `${runId}/${step}`. */
function registerFlows(e, execs) {
  const step = (c, name, fn) =>
    c.step(name, () => {
      const k = `${c.runId}/${name}`;
      execs.set(k, (execs.get(k) ?? 0) + 1);
      return fn();
    });
  e.register('chain', 1, async (c, n) => {
    const a = await step(c, 'a', () => n + 1);
    await c.sleep(1_000 * (n % 3));
    const b = await step(c, 'b', () => a * 2);
    return step(c, 'c', () => b + 1);
  });
  e.register('leaf', 1, async (c, n) => {
    if (n % 4 === 0) await c.sleep(2_000);
    return step(c, 'sq', () => n * n);
  });
  e.register('fan', 1, async (c, n) => {
    const outs = await c.all(Array.from({ length: n }, (_, i) => ({ flow: 'leaf', version: 1, input: i })));
    return step(c, 'sum', () => outs.reduce((x, y) => x + y, 0));
  });
  e.register('nest', 1, async (c, n) => {
    const v = await c.invoke('fan', 1, n);
    const w = await c.invoke('chain', 1, n);
    return step(c, 'total', () => v + w);
  });
  e.register('sig', 1, async (c, n) => {
    const got = await c.waitForSignal('go');
    return step(c, 'echo', () => got * 100 + n);
  });
}

const chainOut = (n) => (n + 1) * 2 + 1;
const fanOut = (n) => Array.from({ length: n }, (_, i) => i * i).reduce((x, y) => x + y, 0);

function workers(count, opts = {}) {
  const execs = new Map();
  const list = Array.from({ length: count }, (_, i) => {
    const e = ctx.engine({ name: `W${i}`, batchMax: 4, leaseMs: 36_000_000, ...opts }, ctx.pool());
    registerFlows(e, execs);
    return e;
  });
  return { list, execs };
}

/** The invariants: one terminal write per run overall, one body execution per step row. */
async function assertExactlyOnce(list, execs) {
  for (const e of list) assert.deepEqual(e.errors, [], `${e.events[0]?.engine}: no tick threw`);
  const writes = new Map();
  for (const e of list) {
    for (const [id, statuses] of e.terminalWrites) writes.set(id, [...(writes.get(id) ?? []), ...statuses]);
  }
  const runs = await ctx.rows(`SELECT id, status FROM ${ctx.t.run}`);
  assert.equal(writes.size, runs.length, 'every run was completed by some engine');
  for (const r of runs) {
    assert.equal(r.status, 'done', `run ${r.id}`);
    assert.deepEqual(writes.get(r.id), ['done'], `run ${r.id} completed exactly once`);
  }
  const stepRows = await ctx.rows(`SELECT run_id, shape FROM ${ctx.t.step} WHERE shape LIKE 'step:%'`);
  assert.equal(stepRows.length, execs.size, 'one body execution per step row');
  for (const s of stepRows) assert.equal(execs.get(`${s.run_id}/${s.shape.slice(5)}`), 1, `${s.run_id}/${s.shape}`);
  assert.ok(
    [...execs.values()].every((n) => n === 1),
    'no step body ran twice',
  );
  assert.equal(await ctx.count('job'), 0);
  assert.equal(await ctx.count('timer'), 0);
}

test('two tick loops, 40 independent chain runs: each completes exactly once', async () => {
  const { list, execs } = workers(2);
  const ids = [];
  for (let n = 0; n < 40; n++) ids.push((await list[n % 2].submit('chain', 1, n)).runId);
  await ctx.drive(list, ctx.allTerminal(ids), { advanceMs: 1_000 });
  await assertExactlyOnce(list, execs);
  for (let n = 0; n < 40; n++) assert.equal(await list[0].result(ids[n]), chainOut(n));
  assert.equal(execs.size, 120);
  // 26 of the 40 runs park on a real sleep (n % 3 != 0): each deadline is handed out by dueBatch to
  // exactly one worker, and each run is leased exactly once per dispatch (40 starts + 26 wakes).
  const sum = (k) => list.reduce((n, e) => n + e.stats[k], 0);
  assert.equal(sum('due'), 26);
  assert.equal(sum('claimed'), 66);
  assert.ok(
    list.every((e) => e.stats.claimed > 0),
    `both engines worked: ${list.map((e) => e.stats.claimed)}`,
  );
});

test('two tick loops, fan-outs (45 children) and nested invokes: joins count every child exactly once', async () => {
  const { list, execs } = workers(2);
  const big = (await list[0].submit('fan', 1, 45)).runId;
  const nests = [];
  for (let n = 3; n < 8; n++) nests.push({ n, id: (await list[1].submit('nest', 1, n)).runId });
  await ctx.drive(list, ctx.allTerminal([big, ...nests.map((x) => x.id)]), { advanceMs: 1_000 });
  await assertExactlyOnce(list, execs);
  assert.equal(await list[0].result(big), fanOut(45));
  for (const { n, id } of nests) assert.equal(await list[1].result(id), fanOut(n) + chainOut(n));
  const joins = await ctx.rows(`SELECT join_remaining FROM ${ctx.t.run} WHERE name IN ('fan', 'nest')`);
  assert.ok(
    joins.every((j) => Number(j.join_remaining) === 0),
    'every join drained to exactly 0',
  );
  assert.equal(await ctx.count('run', "name = 'leaf'"), 45 + [3, 4, 5, 6, 7].reduce((a, b) => a + b, 0));
  assert.ok(
    list.every((e) => e.stats.claimed > 0),
    `both engines worked: ${list.map((e) => e.stats.claimed)}`,
  );
});

test('three free-running loops with a moving clock, signals posted concurrently: nothing lost, nothing doubled', async () => {
  const { list, execs } = workers(3, { batchMax: 3 });
  const client = list[0];
  const ids = [];
  const sigs = [];
  for (let n = 0; n < 6; n++) ids.push((await client.submit('nest', 1, n + 2)).runId);
  for (let n = 0; n < 15; n++) {
    const id = (await client.submit('sig', 1, n)).runId;
    ids.push(id);
    sigs.push({ id, n });
  }
  for (let n = 0; n < 15; n++) ids.push((await client.submit('chain', 1, n)).runId);

  const allDone = ctx.allTerminal(ids);
  let stop = false;
  const loop = async (e) => {
    while (!stop) {
      const r = await e.tickOnce();
      if (r.claimed === 0) await realSleep(2);
    }
  };
  const loops = list.map(loop);
  const clock = (async () => {
    while (!stop) {
      await realSleep(5);
      ctx.clock.advance(500);
    }
  })();
  const signaller = (async () => {
    for (const { id, n } of sigs) {
      await list[1 + (n % 2)].signal(id, 'go', n);
      await realSleep(3);
    }
  })();
  const deadline = Date.now() + 20_000;
  try {
    await signaller;
    while (!(await allDone())) {
      if (Date.now() > deadline) throw new Error('runs did not finish within 20 s');
      await realSleep(20);
    }
  } finally {
    stop = true;
    await Promise.all([...loops, clock]);
  }
  await assertExactlyOnce(list, execs);
  for (const { id, n } of sigs) assert.equal(await client.result(id), n * 100 + n);
  assert.equal(await ctx.count('signal'), 0, 'every signal consumed exactly once');
  assert.ok(
    list.filter((e) => e.stats.claimed > 0).length >= 2,
    `work was shared: ${list.map((e) => e.stats.claimed)}`,
  );
});

test('two engines reconciling and dispatching at the same time: a stranded run still runs once', async () => {
  const { list, execs } = workers(2);
  const ids = [];
  for (let n = 0; n < 10; n++) {
    ids.push((await list[0].backend.store.startRun({ name: 'chain', version: 1, input: n })).runId);
  }
  const [ra, rb] = await Promise.all(list.map((e) => e.reconcile({ limit: 100 })));
  // Depending on timing one or both see the orphans; a double enqueue is harmless.
  assert.deepEqual([...new Set([...ra, ...rb])].sort(), [...ids].sort());
  await ctx.drive(list, ctx.allTerminal(ids), { advanceMs: 1_000 });
  await assertExactlyOnce(list, execs);
});

test('a native-pool engine and a bridged (plain JS Sql) engine sharing the work: still exactly once', async () => {
  const execs = new Map();
  const counter = { statements: 0 };
  const native = ctx.engine({ name: 'native', batchMax: 3, leaseMs: 36_000_000 }, ctx.pool());
  const bridged = ctx.engine({ name: 'bridged', batchMax: 3, leaseMs: 36_000_000 }, plainSql(ctx.pool(), counter));
  for (const e of [native, bridged]) registerFlows(e, execs);
  const ids = [];
  ids.push((await bridged.submit('fan', 1, 45)).runId);
  for (let n = 0; n < 4; n++) ids.push((await native.submit('nest', 1, n + 2)).runId);
  const sig = (await bridged.submit('sig', 1, 9)).runId;
  ids.push(sig);
  await ctx.quiesce([native, bridged]);
  await bridged.signal(sig, 'go', 3);
  await ctx.drive([native, bridged], ctx.allTerminal(ids), { advanceMs: 1_000 });
  await assertExactlyOnce([native, bridged], execs);
  assert.equal(await native.result(ids[0]), fanOut(45));
  assert.equal(await native.result(sig), 309);
  assert.ok(counter.statements > 0, 'the bridged engine really went through the JS Sql');
  assert.ok(native.stats.claimed > 0 && bridged.stats.claimed > 0, `${native.stats.claimed}/${bridged.stats.claimed}`);
});
