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
  const job = claimable(t, at, names);
  if (job) {
    parts.push(`(SELECT 'work' AS k, '' AS id, '' AS status${none} FROM ${job.text} LIMIT 1)`);
    params.push(...job.params);
  }
  parts.push(`(SELECT 'work' AS k, '' AS id, '' AS status${none} FROM ${t.timer} WHERE fire_at <= ? LIMIT 1)`);
  params.push(at);
  if (runIds.length > 0) {
    parts.push(`(SELECT 'run', id, status${none} FROM ${t.run} WHERE id IN (${runIds.map(() => '?').join(', ')}))`);
    params.push(...runIds);
  }
  if (events && events.cursors.length > 0) {
    // Each watched run's rows after its cursor, by the (run_id, seq) index; the rest next time.
    const after = newEvents(events.cursors);
    parts.push(
      `(SELECT 'event', run_id, '', seq, type, at, data FROM ${events.table} WHERE ${after.text} ORDER BY seq LIMIT ${EVENTS_PER_PROBE})`,
    );
    params.push(...after.params);
  }
  return { text: parts.join(' UNION ALL '), params };
}

/**
 * `<job table> j WHERE <a claim would take it at \`at\`>`: the claim's predicate (src/ports/queue.rs
 * `claim` and `of_flows`): due, unleased, and — with `names` — of those flows or without a run row.
 * Undefined for `names: []`: a claim takes nothing (`NOT IN ()` would not even parse).
 */
function claimable(t, at, names) {
  if (names !== undefined && names.length === 0) return undefined;
  let flows = '';
  if (names !== undefined) {
    flows = ` AND NOT EXISTS (SELECT 1 FROM ${t.run} r WHERE r.id = j.run_id AND r.name NOT IN (${names.map(() => '?').join(', ')}))`;
  }
  return {
    text: `${t.job} j WHERE j.run_at <= ? AND (j.lease_expires IS NULL OR j.lease_expires <= ?)${flows}`,
    params: [at, at, ...(names ?? [])],
  };
}

/** The event rows after each `[runId, seq]` cursor (by the (run_id, seq) index). */
function newEvents(cursors) {
  return {
    text: cursors.map(() => '(run_id = ? AND seq > ?)').join(' OR '),
    params: cursors.flat(),
  };
}

/**
 * The doorbell's park (lib/push/bell.js): one statement that answers 'go' at once when the probe
 * would find something — claimable work or a due timer (only with `work`: somebody waits for
 * work), a watched run whose status is not the one last seen (`runs`: [[runId, status?], …]), a
 * new timeline row (`events` as for the probe) — and otherwise sleeps until `maxMs` has passed or
 * the next job or timer falls due, whichever is first, unless a ring interrupts it. IF evaluates
 * only the branch it takes: the sleep's bound is computed only when there is nothing yet.
 */
function parkStatement(t, tag, at, { work, names, runs, events, maxMs }) {
  const checks = [];
  const params = [];
  const until = []; // { text, params } of the times the next job or timer falls due
  if (work) {
    const job = claimable(t, at, names);
    if (job) {
      checks.push(`EXISTS (SELECT 1 FROM ${job.text})`);
      params.push(...job.params);
      until.push({ text: `(SELECT MIN(run_at) FROM ${t.job} WHERE run_at > ?)`, params: [at] });
    }
    checks.push(`EXISTS (SELECT 1 FROM ${t.timer} WHERE fire_at <= ?)`);
    params.push(at);
    until.push({ text: `(SELECT MIN(fire_at) FROM ${t.timer})`, params: [] });
  }
  if (runs.length > 0) {
    const changed = runs.map(([, status]) => (status === undefined ? 'id = ?' : '(id = ? AND status <> ?)'));
    checks.push(`EXISTS (SELECT 1 FROM ${t.run} WHERE ${changed.join(' OR ')})`);
    for (const [runId, status] of runs) params.push(...(status === undefined ? [runId] : [runId, status]));
  }
  if (events && events.cursors.length > 0) {
    const after = newEvents(events.cursors);
    checks.push(`EXISTS (SELECT 1 FROM ${events.table} WHERE ${after.text})`);
    params.push(...after.params);
  }
  // Seconds to sleep: maxMs, or less when a job or timer falls due sooner (times are epoch ms).
  let seconds = '?';
  let secondsParams = [maxMs / 1000];
  if (until.length > 0) {
    const soonest = until.map((u) => `COALESCE(${u.text} - ?, ?)`);
    seconds = `GREATEST(0.001, LEAST(?, ${soonest.join(', ')}) / 1000)`;
    secondsParams = [maxMs, ...until.flatMap((u) => [...u.params, at, maxMs])];
  }
  const cond = checks.length > 0 ? checks.join(' OR ') : 'FALSE';
  return {
    text: `SELECT ${tag} IF(${cond}, 'go', SLEEP(${seconds})) AS r`,
    params: [...params, ...secondsParams],
  };
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

module.exports = { probeStatement, parkStatement, probeResult, isTerminal };
