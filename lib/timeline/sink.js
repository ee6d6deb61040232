'use strict';
// createMysqlEventSink(sql, prefix?, opts?): the core's `observe.sink`, writing `FlowEvent`s to the
// opt-in event table. Core awaits `record()` on the run's path (after markTerminal, after each
// step), so `record` only queues the event and returns: the rows are written behind the run, all
// events queued within `lingerMs` (default 50) in multi-row INSERTs, one INSERT in flight
// at a time (so `seq` follows the order of `record` calls). An INSERT holds at most MAX_BATCH
// rows and stays under the server's `max_allowed_packet`; one the server refuses, whatever it
// answers (but an error that any rows would meet: a missing table, a privilege), is split and
// written again in halves, so one event — too large, or refused — costs only itself, never its
// batch-mates (other runs' events), also after `max_allowed_packet` went down. A failed write is counted and handed to `onError`;
// it never reaches the run. `flush()` resolves once everything queued is written (or has failed)
// — call it before closing the pool.
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

/** Room kept below `max_allowed_packet` for the statement's own text and the packet's framing. */
const PACKET_MARGIN = 16 * 1024;
/** What the packet limit is taken to be while the server cannot say (a small, safe guess). */
const ASSUMED_PACKET = 1024 * 1024;

/**
 * The most bytes one row's values can take in the statement as sent: a string rendered as a hex
 * literal is twice its UTF-8 bytes (a quoted one is at most that), plus the row's punctuation.
 */
const rowBytes = (row) => row.reduce((n, v) => n + (typeof v === 'string' ? 2 * Buffer.byteLength(v) + 3 : 24), 8);

/**
 * Server errors that fail an INSERT the same for any of its rows (a missing table or column, a
 * privilege, a read-only server): splitting the batch would only repeat them.
 */
const STATEMENT_ERRORS = new Set([1146, 1054, 1142, 1143, 1044, 1045, 1227, 1290, 1792, 1836, 1149, 1064]);

/**
 * Whether a failed INSERT of several rows may succeed as two halves: any failure but one that
 * fails the same for any rows. A server whose `max_allowed_packet` went down since the limit was
 * read refuses an over-sized batch as it likes (1153, 1301, or by closing the connection: a lost
 * connection), so a lost connection is split too — once the server answers again (`limit`).
 */
const mayFitSmaller = (e) => !STATEMENT_ERRORS.has(e?.errno);

/** Whether `e` says the connection was lost (the server may have closed it on a big packet). */
const lostConnection = (e) => e?.kind === 'connection' || /CONNECTION_LOST|ECONNRESET|EPIPE/.test(e?.code ?? '');

function createMysqlEventSink(sql, prefix, opts) {
  if (!sql || typeof sql.query !== 'function') {
    throw c.typeError('createMysqlEventSink: sql must be an Sql (with query)');
  }
  const table = eventTable(prefix);
  const { onError, lingerMs } = optionsOf(opts);
  // 0: write at the end of this turn of the event loop; more: wait that long for more rows first
  const later = lingerMs > 0 ? (fn) => setTimeout(fn, lingerMs) : setImmediate;
  let pending = []; // queued rows, 4 bound values each
  let scheduled = false;
  let writing = null; // the drain in flight
  let packetLimit; // bytes an INSERT's values may take: max_allowed_packet less a margin, once read
  const counts = { recorded: 0, written: 0, failed: 0, dropped: 0, batches: 0 };

  const report = (e) => {
    if (!onError) return;
    try {
      onError(e);
    } catch {
      // a throwing onError must not stop the sink
    }
  };

  /** The packet limit as the server states it now; undefined when it does not answer. */
  async function limitNow() {
    try {
      const [{ m }] = await sql.query('SELECT @@max_allowed_packet AS m');
      packetLimit = Math.max(4096, Number(m) - PACKET_MARGIN);
      return packetLimit;
    } catch {
      return undefined;
    }
  }

  async function limit() {
    if (packetLimit === undefined) {
      try {
        const [{ m }] = await sql.query('SELECT @@max_allowed_packet AS m');
        packetLimit = Math.max(4096, Number(m) - PACKET_MARGIN);
      } catch {
        return ASSUMED_PACKET - PACKET_MARGIN; // asked again next time
      }
    }
    return packetLimit;
  }

  /** The rows at the head of `rows` that go in one INSERT: at most MAX_BATCH, within `bytes`. */
  function headOf(rows, bytes) {
    let n = 0;
    let size = 0;
    while (n < rows.length && n < MAX_BATCH) {
      size += rowBytes(rows[n]);
      if (n > 0 && size > bytes) break;
      n++;
    }
    return n;
  }

  /** Writes `rows` as one INSERT; refused for its rows, as two halves, down to single rows. */
  async function write(rows) {
    try {
      await sql.query(insertText(table, rows.length), rows.flat());
      counts.written += rows.length;
      counts.batches++;
    } catch (e) {
      // A lost connection is split only while the server answers (else every half fails alike),
      // and the limit it states now bounds the batches after this one.
      const split = rows.length > 1 && mayFitSmaller(e) && (!lostConnection(e) || (await limitNow()) !== undefined);
      if (split) {
        const half = Math.ceil(rows.length / 2);
        await write(rows.slice(0, half));
        await write(rows.slice(half));
        return;
      }
      counts.failed += rows.length;
      report(e);
    }
  }

  async function drain() {
    while (pending.length > 0) {
      const bytes = await limit();
      const n = headOf(pending, bytes);
      const batch = pending.splice(0, n);
      await write(batch);
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
      if (pending.length >= MAX_PENDING) {
        counts.dropped++;
        return;
      }
      counts.recorded++;
      pending.push(row);
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
    stats: () => ({ ...counts, pending: pending.length }),
  };
}

module.exports = { createMysqlEventSink, MAX_BATCH };
