#!/usr/bin/env node
// What push costs a busy drain (issue #22: "drain throughput with push on is within noise of push
// off"): runs/s of a mini-engine drain (3-step runs, batches of 20, LOOPS loops) on a backend
// without a listener, with one (its markTerminal calls ring), and with one while another pool of
// the same process keeps a result() waiter parked on a run that never ends (the worst case before
// rings named their runs: every completion's ring interrupted it). 'push off, again' measures the
// host's noise. Interleaved, the order rotating, medians and the median (and quartiles) of
// per-round ratios.
//
//   node bench/push-drain.mjs [--runs 400] [--reps 7] [--loops 4]
//
// MYSQL_URL names a server to use (a database is created and dropped); without it a private
// MariaDB is started (the test harness's).
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { createEngine } from '../__test__/engine/mini-engine.mjs';
import { m, median, scratchDatabase } from './standalone.mjs';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '400' },
    reps: { type: 'string', default: '7' },
    loops: { type: 'string', default: '4' },
  },
});
const RUNS = Number(args.runs);
const REPS = Number(args.reps);
const LOOPS = Number(args.loops);
const STEPS = 3;

const scratch = await scratchDatabase('push_drain');
const sql = scratch.pool();
const other = scratch.pool(); // the parked waiter's own pool

// 'push off, again' is push off once more: its ratio to push off is the noise of this host.
const VARIANTS = ['push off', 'push off, again', 'push on', 'push on, a result() parked elsewhere'];

async function once(variant) {
  for (const t of Object.values(m.tables(''))) await sql.query(`TRUNCATE TABLE ${t}`);
  const listener = variant.startsWith('push off') ? undefined : m.createMysqlListener(sql);
  const backend = m.createMysqlBackend(sql, listener ? { listener } : {});
  let watcher;
  let watching;
  let watchedRun;
  if (variant.includes('parked')) {
    watcher = m.createMysqlListener(other);
    const b = m.createMysqlBackend(other, { listener: watcher });
    const { runId } = await b.store.startRun({ name: 'never', version: 1, input: 0 });
    watchedRun = runId;
    watching = watcher.wakeup.wait(runId, 600_000);
    for (const end = Date.now() + 5000; watcher.stats().parks === 0 && Date.now() < end; ) {
      await new Promise((r) => setTimeout(r, 5));
    }
  }
  const engines = Array.from({ length: LOOPS }, () => {
    const e = createEngine(backend, { batchMax: 20, leaseMs: 30_000, newId: randomUUID });
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
  const rate = (RUNS * 1000) / (performance.now() - t0);
  const [{ n }] = await sql.query("SELECT COUNT(*) AS n FROM `run` WHERE status = 'done'");
  if (Number(n) !== RUNS) throw new Error(`expected ${RUNS} done runs, found ${n}`);
  const rang = listener?.stats();
  const woke = watcher?.stats();
  await listener?.close();
  await watcher?.close();
  watcher?.wakeup.signal(watchedRun); // close() leaves result() waiters to their own timeout
  await watching;
  return { rate, lookups: rang?.lookups ?? 0, kills: rang?.kills ?? 0, parks: woke?.parks ?? 0 };
}

try {
  await m.applySchema(sql);
  for (const v of VARIANTS) await once(v); // warm-up
  const out = Object.fromEntries(VARIANTS.map((v) => [v, []]));
  for (let r = 0; r < REPS; r++) {
    const order = VARIANTS.map((_, i) => VARIANTS[(i + r) % VARIANTS.length]);
    for (const v of order) out[v].push(await once(v));
  }
  console.log(`push drain bench: ${RUNS} runs of ${STEPS} steps, ${LOOPS} loop(s), ${REPS} interleaved reps, medians`);
  for (const v of VARIANTS) {
    const xs = out[v];
    const ratios = xs.map((x, i) => x.rate / out['push off'][i].rate).sort((a, b) => a - b);
    const quartile = (q) => ratios[Math.round(q * (ratios.length - 1))].toFixed(2);
    console.log(
      `  ${v.padEnd(38)} ${median(xs.map((x) => x.rate)).toFixed(0)} runs/s, ÷ push off ${median(ratios).toFixed(2)}` +
        ` (quartiles ${quartile(0.25)}–${quartile(0.75)})` +
        `; lookups ${median(xs.map((x) => x.lookups))}, parks interrupted ${median(xs.map((x) => x.kills))}` +
        `, the waiter's parks ${median(xs.map((x) => x.parks))} per drain`,
    );
  }
} finally {
  await sql.close();
  await other.close();
  await scratch.close();
}
