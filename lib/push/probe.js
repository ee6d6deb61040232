'use strict';
// The listener's one statement per interval (docs/push.md): "is there work a claim would take
// now, or a timer due" plus "the status of every watched run", for all of a process's waiters
// together, in one round trip of plain reads on the backend's own tables — no privilege beyond
// theirs, the same answer on every Galera node. With the opt-in event table it also reads the
// new timeline rows of the runs a `watch()` stream is open for (docs/timeline.md).

const { TERMINAL_STATUSES } = require('../encode');

/**
 * The probe's text and parameters. `t`: back-quoted table names (lib/schema.js `tables`);
 * `names`: flow names the work must belong to (undefined: any); `runIds`: the watched runs;
 * `events`: `{ table, cursors: [[runId, seq], …] }` to read timeline rows after each `seq`.
 * The work predicate is the claim's (src/ports/queue.rs `claim` and `of_flows`): due, unleased, and —
 * with `names` — of those flows or without a run row. With `names: []` a claim takes nothing, so
 * the job branch is left out (`NOT IN ()` would not even parse, and would sink the whole probe).
 */
function probeStatement(t, at, names, runIds, events) {
  const parts = [];
  const params = [];
  // With timeline cursors every branch carries the event columns too (a UNION needs one shape);
  // without them the probe is the same statement as before the event table existed.
  const none = events ? ', NULL AS seq, NULL AS type, NULL AS at, NULL AS data' : '';
  if (names === undefined || names.length > 0) {
    let flows = '';
    if (names !== undefined) {
      flows = ` AND NOT EXISTS (SELECT 1 FROM ${t.run} r WHERE r.id = j.run_id AND r.name NOT IN (${names.map(() => '?').join(', ')}))`;
    }
    parts.push(
      `(SELECT 'work' AS k, '' AS id, '' AS status${none} FROM ${t.job} j WHERE j.run_at <= ? AND (j.lease_expires IS NULL OR j.lease_expires <= ?)${flows} LIMIT 1)`,
    );
    params.push(at, at, ...(names ?? []));
  }
  parts.push(`(SELECT 'work' AS k, '' AS id, '' AS status${none} FROM ${t.timer} WHERE fire_at <= ? LIMIT 1)`);
  params.push(at);
  if (runIds.length > 0) {
    parts.push(`(SELECT 'run', id, status${none} FROM ${t.run} WHERE id IN (${runIds.map(() => '?').join(', ')}))`);
    params.push(...runIds);
  }
  if (events && events.cursors.length > 0) {
    // Each watched run's rows after its cursor, by the (run_id, seq) index; the rest next time.
    const after = events.cursors.map(() => '(run_id = ? AND seq > ?)').join(' OR ');
    parts.push(
      `(SELECT 'event', run_id, '', seq, type, at, data FROM ${events.table} WHERE ${after} ORDER BY seq LIMIT ${EVENTS_PER_PROBE})`,
    );
    for (const [runId, seq] of events.cursors) params.push(runId, seq);
  }
  return { text: parts.join(' UNION ALL '), params };
}

/** Most event rows one probe reads (a backlog is read over the next probes). */
const EVENTS_PER_PROBE = 1000;

/**
 * `{ work, runs: Map<runId, status>, events }` of the probe's rows; `events` are event-table rows
 * (lib/timeline/rows.js shape: the UNION names the run id column `id`) in seq order.
 */
function probeResult(rows) {
  let work = false;
  const runs = new Map();
  const events = [];
  for (const r of rows) {
    if (r.k === 'work') work = true;
    else if (r.k === 'run') runs.set(r.id, r.status);
    else if (r.k === 'event') events.push({ seq: r.seq, run_id: r.id, type: r.type, at: r.at, data: r.data });
  }
  events.sort((a, b) => Number(a.seq) - Number(b.seq));
  return { work, runs, events };
}

const isTerminal = (status) => TERMINAL_STATUSES.includes(status);

module.exports = { probeStatement, probeResult, isTerminal };
