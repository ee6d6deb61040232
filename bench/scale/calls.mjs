// The calls the scale benchmark times: what the engine, its reconciler, its cron loop and a
// dashboard ask of a database with a long finished history (docs/benchmarks.md, "Cost with
// history"). Each is `{ name, v3?, live?, run(b, f), restore?(f, answer) }`: `run` makes the
// call on backend `b` over the fixture `f`, `restore` (untimed) puts back what it changed so every
// repetition meets the same data; `v3` calls exist under the 3.0 contract only; `live` marks
// the calls about live work (the ones the 100 ms target is for).
const ACTIVE = ['pending', 'running', 'sleeping', 'awaiting_signal', 'awaiting_child', 'retrying'];

/** Puts back the timers `dueBatch` fired. */
async function refire(f, ids) {
  if (ids.length === 0) return;
  await f.admin.query(
    `INSERT IGNORE INTO ${f.t.timer} (run_id, fire_at) VALUES ${ids.map(() => '(?, ?)').join(',')}`,
    ids.flatMap((id) => [id, f.now - 500]),
  );
}

/** The ids a bulk operation's pick reads (its statement without the lock), to put them back after. */
async function pick(f, status, limit) {
  const [rows] = await f.admin.query(`SELECT id FROM ${f.t.run} WHERE status IN (?) LIMIT ${limit}`, [status]);
  return rows.map((r) => r.id);
}

export const CALLS = [
  { name: 'store.orphanedRuns(100)', live: true, run: (b) => b.store.orphanedRuns(100) },
  {
    name: 'cron overlap: listRuns({ status: live, tag }, { limit: 1 }), no live run has the tag',
    live: true,
    run: (b) => b.store.listRuns({ status: ACTIVE, tag: 'cron:hourly' }, { limit: 1 }),
  },
  {
    name: 'cron overlap, a live run has the tag',
    live: true,
    run: (b) => b.store.listRuns({ status: ACTIVE, tag: 'cron:nightly' }, { limit: 1 }),
  },
  { name: 'store.runStats()', run: (b) => b.store.runStats() },
  { name: 'queue.depth(now)', live: true, run: (b, f) => b.queue.depth(new Date(f.now)) },
  {
    name: "queue.depth(now, ['flow-1'])",
    v3: true,
    live: true,
    run: (b, f) => b.queue.depth(new Date(f.now), ['flow-1']),
  },
  {
    name: 'queue.claim (20)',
    live: true,
    run: (b, f) => b.queue.claim({ limit: 20, leaseMs: 0, now: new Date(f.now) }),
  },
  {
    name: "queue.claim (20, names ['flow-1'])",
    v3: true,
    live: true,
    run: (b, f) => b.queue.claim({ limit: 20, leaseMs: 0, now: new Date(f.now), names: ['flow-1'] }),
  },
  {
    name: "queue.claim (20, names of no job's flow)",
    v3: true,
    live: true,
    run: (b, f) => b.queue.claim({ limit: 20, leaseMs: 0, now: new Date(f.now), names: ['none'] }),
  },
  {
    name: 'timer.dueBatch (20)',
    live: true,
    run: (b, f) => b.timer.dueBatch({ now: new Date(f.now), limit: 20 }),
    restore: refire,
  },
  { name: 'timer.dueCount(now)', v3: true, live: true, run: (b, f) => b.timer.dueCount(new Date(f.now)) },
  {
    name: "timer.dueCount(now, ['flow-2'])",
    v3: true,
    live: true,
    run: (b, f) => b.timer.dueCount(new Date(f.now), ['flow-2']),
  },
  { name: 'timer.nextDueAt(now)', v3: true, live: true, run: (b, f) => b.timer.nextDueAt(new Date(f.now)) },
  { name: 'store.childrenOf(run)', live: true, run: (b, f) => b.store.childrenOf(f.someRun) },
  {
    name: "store.cancelRuns({ status: 'awaiting_signal' }, 100)",
    v3: true,
    live: true,
    before: (f) => pick(f, 'awaiting_signal', 100),
    run: (b) => b.store.cancelRuns({ status: 'awaiting_signal' }, 100),
    restore: async (f, answer, ids) => {
      if (ids.length) await f.admin.query(`UPDATE ${f.t.run} SET status = 'awaiting_signal' WHERE id IN (?)`, [ids]);
    },
  },
  {
    name: "store.retryRuns({ status: 'failed' }, 100)",
    v3: true,
    live: true,
    before: (f) => pick(f, 'failed', 100),
    run: (b) => b.store.retryRuns({ status: 'failed' }, 100),
    restore: async (f, answer, ids) => {
      if (ids.length === 0) return;
      await f.admin.query(`UPDATE ${f.t.run} SET status = 'failed', attempts = 1 WHERE id IN (?)`, [ids]);
      await f.admin.query(`DELETE FROM ${f.t.job} WHERE run_id IN (?)`, [ids]);
    },
  },
  {
    name: "store.deleteRuns({ status: 'done' }, 100)",
    v3: true,
    live: true,
    run: (b) => b.store.deleteRuns({ status: 'done' }, 100),
  },
  {
    name: 'store.deleteRunsOlderThan(an hour ago, 100)',
    run: (b, f) => b.store.deleteRunsOlderThan(new Date(f.now - 3_600_000), 100),
  },
  {
    name: "listRuns({ status: 'running' }, { limit: 50 })",
    run: (b) => b.store.listRuns({ status: 'running' }, { limit: 50 }),
  },
  { name: 'listRuns({}, { limit: 50 }) (first page)', run: (b) => b.store.listRuns({}, { limit: 50 }) },
  { name: 'store.loadRun(run)', run: (b, f) => b.store.loadRun(f.someRun) },
  { name: 'store.startRun', run: (b) => b.store.startRun({ name: 'flow-0', version: 1, input: null }) },
];
