#!/usr/bin/env node
// What the durable timeline costs the run path: runs/s of an engine drain (the engine-shaped mini
// engine of the tests, __test__/engine/mini-engine.mjs, 3-step runs, batches of 20) without a sink
// and with createMysqlEventSink at level 'all' (5 event rows per run; 'lifecycle': 2), interleaved
// A/B, medians.
//
//   node bench/timeline.mjs [--runs 300] [--reps 7] [--loops 1] [--linger <ms>] [--level all|lifecycle]
//
// MYSQL_URL names a server to use (a database is created and dropped); without it a private
// MariaDB is started (the test harness's). "drain" stops when the last run is done (what the run
// path sees); "with flush" also waits until every event row is written.
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { createEngine } from '../__test__/engine/mini-engine.mjs';
import { m, median, scratchDatabase } from './standalone.mjs';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '300' },
    reps: { type: 'string', default: '7' },
    loops: { type: 'string', default: '1' },
    linger: { type: 'string' }, // default: the sink's own
    level: { type: 'string', default: 'all' },
  },
});
const RUNS = Number(args.runs);
const REPS = Number(args.reps);
const LOOPS = Number(args.loops);
const LINGER_MS = args.linger === undefined ? undefined : Number(args.linger);
const STEPS = 3;
const LEVEL = args.level;
const ROWS_PER_RUN = LEVEL === 'all' ? STEPS + 2 : 2;

const scratch = await scratchDatabase('timeline');
const sql = scratch.pool();

async function once(withSink) {
  for (const t of [...Object.values(m.tables('')), '`event`']) await sql.query(`TRUNCATE TABLE ${t}`);
  const backend = m.createMysqlBackend(sql);
  const sink = withSink ? m.createMysqlEventSink(sql, '', { lingerMs: LINGER_MS }) : undefined;
  const engines = Array.from({ length: LOOPS }, () => {
    const e = createEngine(backend, {
      batchMax: 20,
      leaseMs: 30_000,
      newId: randomUUID,
      observe: sink ? { sink, level: LEVEL } : undefined,
    });
    e.register('bench', 1, async (c, input) => {
      for (let i = 0; i < STEPS; i++) await c.step(`s${i}`, () => ({ i, input }));
      return input;
    });
    return e;
  });
  for (let i = 0; i < RUNS; i++) await engines[0].submit('bench', 1, { i });
  const t0 = performance.now();
  await Promise.all(
    engines.map(async (e) => {
      for (;;) {
        const r = await e.tickOnce();
        if (r.claimed === 0) return;
      }
    }),
  );
  const drained = performance.now() - t0;
  await sink?.flush();
  const flushed = performance.now() - t0;
  const [{ n }] = await sql.query("SELECT COUNT(*) AS n FROM `run` WHERE status = 'done'");
  if (Number(n) !== RUNS) throw new Error(`expected ${RUNS} done runs, found ${n}`);
  if (sink) {
    const st = sink.stats();
    const [{ e }] = await sql.query('SELECT COUNT(*) AS e FROM `event`');
    if (st.failed || Number(e) !== RUNS * ROWS_PER_RUN) throw new Error(`events: ${JSON.stringify(st)}, rows ${e}`);
    return { drain: (RUNS * 1000) / drained, flush: (RUNS * 1000) / flushed, rowsPerInsert: st.written / st.batches };
  }
  return { drain: (RUNS * 1000) / drained, flush: (RUNS * 1000) / flushed };
}

try {
  await m.applySchema(sql, '', { events: true });
  await once(false); // warm-up (pool, prepared statements, buffer pool)
  await once(true);
  const off = [];
  const on = [];
  for (let r = 0; r < REPS; r++) {
    // interleaved, the order alternating, so drift of a shared machine lands on both
    const pair = r % 2 ? [true, false] : [false, true];
    for (const withSink of pair) (withSink ? on : off).push(await once(withSink));
  }
  const fmt = (xs, k) => median(xs.map((x) => x[k])).toFixed(0);
  console.log(
    `timeline bench: ${RUNS} runs of ${STEPS} steps, ${LOOPS} loop(s), sink lingerMs ${LINGER_MS ?? 'default'}, ${REPS} interleaved reps, medians`,
  );
  console.log(`  no sink                  ${fmt(off, 'drain')} runs/s`);
  console.log(
    `  sink, level '${LEVEL}'${' '.repeat(Math.max(1, 15 - LEVEL.length))}${fmt(on, 'drain')} runs/s drained, ${fmt(on, 'flush')} runs/s with every event written` +
      ` (${fmt(on, 'rowsPerInsert')} rows per INSERT)`,
  );
  // Each pair ran back to back: its ratio is less exposed to the load of a shared machine than
  // the two medians are.
  const ratio = median(on.map((x, i) => x.drain / off[i].drain));
  console.log(`  median of the per-rep ratios (sink / no sink): ${ratio.toFixed(2)}`);
  console.log(
    `  per rep (off / on): ${off.map((x, i) => `${x.drain.toFixed(0)}/${on[i].drain.toFixed(0)}`).join(' ')}`,
  );
} finally {
  await sql.close();
  await scratch.close();
}
