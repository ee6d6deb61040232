// The floor: the engine-shaped work written by hand over raw mysql2, the fewest statements per
// call - what a user could write instead of installing a backend package. The bench runs it beside
// the JavaScript package (seed) and this package (native) on tables `fl_`, created with the same
// DDL as theirs. No code of lib/ or src/ and none of the seed's: the SQL is written from
// docs/contract.md.
//
// It implements exactly what the bench drives: the engine-driver's drains, the mini engine's
// flows (3 steps, sleep, parent/child) and timer path, and a bulk submission (store.submitMany:
// one multi-row INSERT of the runs and one of their jobs per chunk). Absent: startRun,
// startManyRuns, loadRunRows, childrenOf, postSignal and the other store methods, heartbeat,
// depth, timer.schedule / cancel - nothing in those scenarios calls them.
//
// What it skips, and why it is still a fair floor:
// - No argument checks, no retries of its own (the bench retries deadlocks for every
//   implementation alike), no limits on sizes or packets: the JS package checks none of these
//   either.
// - dueBatch on MariaDB is one DELETE … RETURNING without SKIP LOCKED: concurrent callers queue on
//   each other's few row locks for a moment instead of skipping them. Every deadline still fires
//   exactly once, as the contract asks.
// - Everything the contract makes one transaction (claim, a checkpoint with its outbox, a suspend
//   with its timers) is still one transaction here; single-statement units run in autocommit,
//   which is as atomic. The guarantees the engine relies on (first writer wins, a cancel is
//   sticky, an ack releases a job enqueued mid-lease, claimers never share a run) all hold.
import { floorTables, openFloorPool } from './pool.mjs';
import { floorQueue, floorTimer } from './queue.mjs';
import { floorStore } from './store.mjs';
import { floorWakeup } from './wakeup.mjs';

/** A floor backend on its own pool at `url`: `{ store, queue, timer, wakeup, sql, close }`. */
export function createFloorBackend(url, { prefix = 'fl_' } = {}) {
  const pool = openFloorPool(url);
  const t = floorTables(prefix);
  return {
    store: floorStore(pool, t),
    queue: floorQueue(pool, t),
    timer: floorTimer(pool, t),
    wakeup: floorWakeup(),
    sql: pool,
    close: () => pool.end(),
  };
}

/** Creates the floor's tables with `ddl(prefix)` of one of the packages (the same DDL as theirs). */
export async function applyFloorSchema(backend, ddl, prefix = 'fl_') {
  for (const statement of ddl(prefix)) await backend.sql.query(statement);
}
