// How the fault tests judge a unit after a fault (faults.mjs, the killed-worker tests): each
// effect of the unit is true (applied), false (not applied) or anything else (odd). Kept apart
// from faults.mjs so that a child process (fixtures/kill-mid-unit.mjs) loads only what it needs.

/** The start of a statement's packet: the native pool's process-list tag (a comment) first. */
export const LEAD = String.raw`^\s*(?:\/\*[^*]*\*\/\s*)?`;

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
