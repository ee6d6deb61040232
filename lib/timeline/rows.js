'use strict';
// The event table's row shape, in one place: what a core `FlowEvent` becomes as a row (the
// sink), what a row becomes as a `FlowEvent` (listEvents, the listener's watch), and the table's
// name for a prefix. The DDL lives with the other tables (src/model/schema.rs `event_ddl`).
const c = require('../check');
const binding = require('../binding');

/** The columns a reader selects, in this order (`seq` orders; `at` is epoch ms). */
const COLUMNS = 'seq, run_id, type, at, data';

/** Longest `type` the column holds (VARCHAR(64)). */
const MAX_TYPE = 64;

/** Core's events that end a run's timeline (a canceled run has none). */
const TERMINAL_EVENTS = new Set(['run.completed', 'run.failed']);

/** The back-quoted event table of `prefix` (a bad prefix throws, as every table name does). */
function eventTable(prefix) {
  if (prefix === undefined) return binding.eventTableName('');
  if (typeof prefix !== 'string') throw c.typeError('prefix must be a string');
  return binding.eventTableName(prefix);
}

/** The four bound values of one event row, checked (a bad event throws a TypeError). */
function eventParams(event) {
  c.obj(event, 'event');
  return [
    c.str(event.runId, 'event.runId'),
    c.str(event.type, 'event.type', MAX_TYPE),
    c.ms(event.at, 'event.at'),
    c.json(event.data, 'event.data') ?? null,
  ];
}

/** `FlowEvent` of a row (`data` only when the row has some). */
function eventOf(row) {
  const ev = { runId: String(row.run_id), type: String(row.type), at: new Date(Number(row.at)) };
  if (row.data !== null && row.data !== undefined) ev.data = JSON.parse(row.data);
  return ev;
}

module.exports = { COLUMNS, TERMINAL_EVENTS, eventTable, eventParams, eventOf };
