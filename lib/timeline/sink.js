'use strict';
// createMysqlEventSink(sql, prefix?, opts?): the core's `observe.sink`, writing `FlowEvent`s to the
// opt-in event table. Core awaits `record()` on the run's path (after markTerminal, after each
// step), so `record` only queues the event and returns: the rows are written behind the run, all
// events queued within `lingerMs` (default 50) in one multi-row INSERT, one INSERT in flight
// at a time (so `seq` follows the order of `record` calls). A failed write is counted and handed to
// `onError`; it never reaches the run. `flush()` resolves once everything queued is written (or
// has failed) — call it before closing the pool.
const c = require('../check');
const { eventTable, eventParams } = require('./rows');

/** Most rows per INSERT (4 bound values each). */
const MAX_BATCH = 500;
/**
 * How long a first queued event waits for company before its INSERT, ms. Each INSERT is a commit
 * the server pays for beside the workers' statements; 50 ms gathers ~40–100 rows per INSERT in a
 * drain where 5 ms gathers ~12 (bench/timeline.mjs; the shared test machine could not tell the two
 * apart in throughput, docs/timeline.md). It equals a listener's default probe interval, so a
 * watcher sees an event at most one more interval later.
 */
const DEFAULT_LINGER_MS = 50;
/** Most events waiting; beyond it new ones are dropped (and counted), never the run slowed. */
const MAX_PENDING = 50_000;

function optionsOf(opts) {
  if (c.absent(opts)) return { lingerMs: DEFAULT_LINGER_MS };
  c.obj(opts, 'createMysqlEventSink: opts');
  if (!c.absent(opts.onError) && typeof opts.onError !== 'function') {
    throw c.typeError('createMysqlEventSink: opts.onError must be a function');
  }
  const lingerMs = c.absent(opts.lingerMs)
    ? DEFAULT_LINGER_MS
    : c.int(opts.lingerMs, 'createMysqlEventSink: opts.lingerMs', 0, 10_000);
  return { onError: opts.onError, lingerMs };
}

const insertText = (table, n) =>
  `INSERT INTO ${table} (run_id, type, at, data) VALUES ${new Array(n).fill('(?, ?, ?, ?)').join(', ')}`;

function createMysqlEventSink(sql, prefix, opts) {
  if (!sql || typeof sql.query !== 'function') {
    throw c.typeError('createMysqlEventSink: sql must be an Sql (with query)');
  }
  const table = eventTable(prefix);
  const { onError, lingerMs } = optionsOf(opts);
  // 0: write at the end of this turn of the event loop; more: wait that long for more rows first
  const later = lingerMs > 0 ? (fn) => setTimeout(fn, lingerMs) : setImmediate;
  let pending = []; // bound values of queued rows, 4 per event
  let scheduled = false;
  let writing = null; // the drain in flight
  const counts = { recorded: 0, written: 0, failed: 0, dropped: 0, batches: 0 };

  const report = (e) => {
    if (!onError) return;
    try {
      onError(e);
    } catch {
      // a throwing onError must not stop the sink
    }
  };

  async function drain() {
    while (pending.length > 0) {
      const batch = pending.length > MAX_BATCH * 4 ? pending.splice(0, MAX_BATCH * 4) : pending;
      if (batch === pending) pending = [];
      const n = batch.length / 4;
      try {
        await sql.query(insertText(table, n), batch);
        counts.written += n;
        counts.batches++;
      } catch (e) {
        counts.failed += n;
        report(e);
      }
    }
  }

  const start = () => {
    scheduled = false;
    if (writing) return; // the drain in flight takes what was queued meanwhile
    writing = drain().finally(() => {
      writing = null;
      // An event queued between the drain's last look and here would otherwise wait for the next.
      if (pending.length > 0 && !scheduled) {
        scheduled = true;
        later(start);
      }
    });
  };

  return {
    /** Queues `event` (a core `FlowEvent`); a malformed one throws a TypeError, nothing else does. */
    record(event) {
      const row = eventParams(event);
      if (pending.length >= MAX_PENDING * 4) {
        counts.dropped++;
        return;
      }
      counts.recorded++;
      pending.push(...row);
      if (!scheduled && !writing) {
        scheduled = true;
        later(start);
      }
    },
    /** Resolves when every event queued so far is written or has failed. */
    async flush() {
      while (scheduled || writing || pending.length > 0) {
        if (!writing) start();
        await writing;
      }
    },
    /** Counters: recorded, written, failed (rows of failed INSERTs), dropped (queue full), batches. */
    stats: () => ({ ...counts, pending: pending.length / 4 }),
  };
}

module.exports = { createMysqlEventSink, MAX_BATCH };
