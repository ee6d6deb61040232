'use strict';
// The listener's one statement per interval (docs/push.md): "is there work a claim would take
// now, or a timer due" plus "the status of every watched run", for all of a process's waiters
// together, in one round trip of plain reads on the backend's own tables — no privilege beyond
// theirs, the same answer on every Galera node.

const { TERMINAL_STATUSES } = require('../encode');

/**
 * The probe's text and parameters. `t`: back-quoted table names (lib/schema.js `tables`);
 * `names`: flow names the work must belong to (undefined: any); `runIds`: the watched runs.
 * The work predicate is the claim's (src/ports/queue.rs `claim` and `of_flows`): due, unleased, and —
 * with `names` — of those flows or without a run row. With `names: []` a claim takes nothing, so
 * the job branch is left out (`NOT IN ()` would not even parse, and would sink the whole probe).
 */
function probeStatement(t, at, names, runIds) {
  const parts = [];
  const params = [];
  if (names === undefined || names.length > 0) {
    let flows = '';
    if (names !== undefined) {
      flows = ` AND NOT EXISTS (SELECT 1 FROM ${t.run} r WHERE r.id = j.run_id AND r.name NOT IN (${names.map(() => '?').join(', ')}))`;
    }
    parts.push(
      `(SELECT 'work' AS k, '' AS id, '' AS status FROM ${t.job} j WHERE j.run_at <= ? AND (j.lease_expires IS NULL OR j.lease_expires <= ?)${flows} LIMIT 1)`,
    );
    params.push(at, at, ...(names ?? []));
  }
  parts.push(`(SELECT 'work' AS k, '' AS id, '' AS status FROM ${t.timer} WHERE fire_at <= ? LIMIT 1)`);
  params.push(at);
  if (runIds.length > 0) {
    parts.push(`(SELECT 'run', id, status FROM ${t.run} WHERE id IN (${runIds.map(() => '?').join(', ')}))`);
    params.push(...runIds);
  }
  return { text: parts.join(' UNION ALL '), params };
}

/** `{ work, runs: Map<runId, status> }` of the probe's rows. */
function probeResult(rows) {
  let work = false;
  const runs = new Map();
  for (const r of rows) {
    if (r.k === 'work') work = true;
    else if (r.k === 'run') runs.set(r.id, r.status);
  }
  return { work, runs };
}

const isTerminal = (status) => TERMINAL_STATUSES.includes(status);

module.exports = { probeStatement, probeResult, isTerminal };
