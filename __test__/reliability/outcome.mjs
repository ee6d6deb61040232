// How the fault tests judge a unit after a fault (faults.mjs, the killed-worker tests): each
// effect of the unit is true (applied), false (not applied) or anything else (odd). Kept apart
// from faults.mjs so that a child process (fixtures/kill-mid-unit.mjs) loads only what it needs.

/** The process-list tag (a comment) the native pool starts every statement with. */
const TAG = String.raw`(?:\/\*[^*]*\*\/\s*)?`;

/** The start of a statement's packet: the native pool's tag first. */
export const LEAD = String.raw`^\s*${TAG}`;

/**
 * A packet holding exactly these statements at its start, in order, each behind the tag: e.g.
 * `packet('SAVEPOINT ifw_unit', 'INSERT INTO \`job\`')`; `end` requires nothing after the last.
 */
export function packet(...statements) {
  const end = statements.at(-1) === packet.END;
  const parts = (end ? statements.slice(0, -1) : statements).map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`${LEAD}${parts.join(`;${TAG}`)}${end ? '$' : ''}`);
}
packet.END = Symbol('end of packet');

/** A `COMMIT` statement's packet. */
export const COMMIT = new RegExp(`${LEAD}COMMIT\\b`, 'i');

/** `parts` maps each effect of the unit to true (applied) / false (not applied) / anything else (odd). */
export function classify(parts) {
  const v = Object.values(parts);
  if (v.every((x) => x === true)) return 'committed';
  if (v.every((x) => x === false)) return 'rolledBack';
  return 'partial';
}

/** 0 of n rows left ⇒ applied (deleted/consumed); all n ⇒ not; anything between is odd. */
export const gone = (left, n) => (left === 0 ? true : left === n ? false : `${left} of ${n} left`);

/** What `parts` applied, and its odd entries, for a report line. */
export function describeParts(parts) {
  const applied = Object.entries(parts)
    .filter(([, v]) => v === true)
    .map(([n]) => n);
  const odd = Object.entries(parts)
    .filter(([, v]) => v !== true && v !== false)
    .map(([n, v]) => `${n}: ${v}`);
  return `applied only [${applied.join(', ')}]${odd.length ? `, odd [${odd.join('; ')}]` : ''}`;
}
