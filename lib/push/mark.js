'use strict';
// The park's mark and the ring's lookup (docs/push.md, "What a ring can touch"). A park statement
// STARTS with its mark — `SELECT /*ifw-bell:<database>:<prefix>:<token>:<kinds>:<runs>*/ …` — and
// the lookup matches only statements whose text begins that way (after the pool's own
// `/*ifw:…*/` round-trip tag, when there is one), field by field, with nothing but hex digits in
// between. A bound value is rendered inside the statement, never at its start, so no value a user
// controls can make a statement look like a park; and the database and table prefix in the mark
// keep a ring to the parks of its own tables.
//
//   <database>  the park's DATABASE(), as the server's LOWER(HEX(…)) spells it
//   <prefix>    the table prefix, as hex
//   <token>     the listener's token (a ring never ends its own listener's park, but close())
//   <kinds>     what the park waits for: w (work: a claimable job, a timer), d (runs' ends), wd
//   <runs>      for d: the runs waited for (.<hex>.<hex>.) or all; '-' without d

const MARK = 'ifw-bell';
/** Where the mark's fields begin, as the lookup finds them. */
const OPENING = `SELECT /*${MARK}:`;

/**
 * Most run ids a park names; a park watching more runs (or runs whose ids spell longer than
 * MAX_RUNS_HEX) says `all`, so that a mark stays short whatever a process waits for.
 */
const MAX_TAGGED_RUNS = 16;
const MAX_RUNS_HEX = 600;
/** A ring that ended more runs than this at once reaches every 'd' park (one short lookup). */
const MAX_RUNG_RUNS = 64;

const hexOf = (text) => Buffer.from(String(text)).toString('hex');
const HEX = /^[0-9a-f]*$/;

/** `value` if it is lowercase hex (the only thing ever interpolated into the lookup), else throws. */
function hex(value, what) {
  if (typeof value !== 'string' || !HEX.test(value)) throw new Error(`internal: ${what} is not hex`);
  return value;
}

/**
 * The mark of a park of the listener `token` on database `db` (hex, from the server) for tables
 * of `prefix`, waiting for `kinds` ('w', 'd') and, for 'd', `runIds`.
 */
function parkMark(db, prefix, token, kinds, runIds = []) {
  const d = kinds.includes('d');
  const named = runIds.map(hexOf);
  const runs = !d
    ? '-'
    : named.length > 0 && named.length <= MAX_TAGGED_RUNS && named.join('.').length <= MAX_RUNS_HEX
      ? `.${named.join('.')}.`
      : 'all';
  const k = `${kinds.includes('w') ? 'w' : ''}${d ? 'd' : ''}`;
  return `/*${MARK}:${hex(db, 'database')}:${hexOf(prefix)}:${hex(token, 'token')}:${k}:${runs}*/`;
}

/**
 * How the server lists running statements and how a KILL names one (lib/push/server.js):
 * `{ processlist: <table>, id: <column the KILL takes> }`.
 *
 * The lookup: the ids of the parks of `prefix` on the lookup's own DATABASE() that `ask`
 * (`{ w, d, all, runs }`) reaches — those of `token` when `own` (a listener ending its own park),
 * everybody else's otherwise. Everything interpolated is hex or a constant, so it needs no
 * parameters (and no session state can change how it reads).
 */
function lookupStatement(server, prefix, token, own, ask) {
  // The pool's round-trip tag, then the mark's opening, the database, and the rest of the mark.
  const head = `^(/[*]ifw:[0-9a-f]+:[0-9]+(:[0-9]+)?[*]/ )?SELECT /[*]${MARK}:`;
  const tail = `:${hexOf(prefix)}:[0-9a-f]+:(w|d|wd):(-|all|([.][0-9a-f]+)+[.])[*]/`;
  const reaches = [];
  if (ask.w) reaches.push("INSTR(kinds, 'w') > 0");
  if (ask.d) {
    const runs = [...ask.runs];
    if (ask.all || runs.length === 0 || runs.length > MAX_RUNG_RUNS) reaches.push("INSTR(kinds, 'd') > 0");
    else {
      const named = runs.map((r) => `INSTR(runs, '.${hex(hexOf(r), 'run id')}.') > 0`).join(' OR ');
      reaches.push(`(INSTR(kinds, 'd') > 0 AND (runs = 'all' OR ${named}))`);
    }
  }
  return (
    `SELECT q FROM (SELECT q, SUBSTRING_INDEX(SUBSTRING_INDEX(m, ':', 3), ':', -1) AS token,` +
    ` SUBSTRING_INDEX(SUBSTRING_INDEX(m, ':', 4), ':', -1) AS kinds, SUBSTRING_INDEX(m, ':', -1) AS runs` +
    ` FROM (SELECT ${server.id} AS q, SUBSTRING_INDEX(SUBSTRING(INFO, LOCATE('${OPENING}', INFO) + ${OPENING.length}), '*/', 1) AS m` +
    ` FROM ${server.processlist} WHERE COMMAND = 'Query'` +
    ` AND INFO REGEXP CONCAT('${head}', LOWER(HEX(DATABASE())), '${tail}')) AS marked) AS parks` +
    ` WHERE token ${own ? '=' : '<>'} '${hex(token, 'token')}' AND (${reaches.join(' OR ')})`
  );
}

/** What one ring asks for: work made (`w`), runs ended (`d`: those in `runs`, or any when `all`). */
const newAsk = () => ({ w: false, d: false, all: false, runs: new Set() });
/** Every park of the prefix: a listener ending its own park, whatever it waits for. */
const ANY = Object.freeze({ w: true, d: true, all: true, runs: new Set() });

/** Adds a ring of `kind` (for `runIds`, undefined: any run) to `ask`. */
function addTo(ask, kind, runIds) {
  if (kind === 'w') ask.w = true;
  else {
    ask.d = true;
    if (runIds === undefined) ask.all = true;
    else for (const r of runIds) ask.runs.add(r);
  }
}

module.exports = { MARK, parkMark, lookupStatement, newAsk, addTo, ANY, hexOf };
