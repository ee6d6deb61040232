'use strict';
// The doorbell between database sessions (docs/push.md, "The doorbell"). A listener with someone
// waiting parks ONE statement on a connection of its pool: the probe's questions, then SLEEP —
// both in the same statement, so a ring can never fall between "nothing yet" and the sleep. A
// process that made work or finished a run rings: it finds the parked statements of the same
// table prefix on its server (information_schema.PROCESSLIST, matched on the park's tag; a user
// sees its own sessions there without any privilege) and interrupts each with `KILL QUERY ID`,
// which names one statement, so a ring that arrives after the park ended hits nothing — never a
// later statement of someone else's on the pooled connection. MariaDB only (MySQL has no query
// ids to kill by); on MySQL, or where the server refuses a step, the bell goes off and says why
// once, and the listener polls as before.

const crypto = require('node:crypto');

/** The mark every park statement carries; the lookup searches for it, never contains it. */
const MARK = 'ifw-bell';
/** Shortest pause between two lookups of one ringer while rings find somebody parked. */
const MIN_GAP_MS = 2;
/** Longest pause between two lookups while they keep finding nobody (a busy fleet parks nobody). */
const MAX_GAP_MS = 100;

/** "Unknown column": information_schema.PROCESSLIST has no QUERY_ID (MySQL). */
const ER_BAD_FIELD = 1054;
/** `KILL QUERY ID` does not parse (MySQL). */
const ER_PARSE = 1064;
/** "You are not owner of thread": the parked session belongs to another user. */
const ER_KILL_DENIED = 1095;
/** Statements the ringer's user may not run. */
const ER_DENIED = new Set([1142, 1227, 1044, 1045]);

/** A new listener's token: what tells its own park from the others of the same prefix. */
const newToken = () => crypto.randomBytes(6).toString('hex');

// What a park waits for, and what a ring announces, are kinds: 'w' work (a job claimable, a
// timer to re-read), 'd' a run's new status. A ring of one kind interrupts only the parks that
// wait for it, so runs finishing in a busy drain do not wake idle workers, nor enqueues a
// result() waiter; and a 'd' ring only the parks waiting for the runs it names.

/**
 * Most run ids a park names in its 'd' comment; a park watching more runs says `all` (any run's
 * ring reaches it), so a comment stays short whatever a process waits for.
 */
const MAX_TAGGED_RUNS = 16;
/** A ring that ended more runs than this at once reaches every 'd' park (one short lookup). */
const MAX_RUNG_RUNS = 64;

const hexOf = (text) => Buffer.from(String(text)).toString('hex');

/**
 * The comments a park by the listener `token` carries: one per kind it waits for (the prefix and
 * run ids as hex: any text is safe). A 'd' comment names the runs waited for — `.<hex>.<hex>.` —
 * or `all`, so that a run's end rings only the parks waiting for that run: in a busy drain the
 * completions of other runs do not wake a `result()` waiter over and over.
 */
function parkTag(prefix, token, kinds, runIds = []) {
  const runs = runIds.length > 0 && runIds.length <= MAX_TAGGED_RUNS ? `.${runIds.map(hexOf).join('.')}.` : 'all';
  return kinds.map((k) => `/*${MARK}-${k}:${hexOf(prefix)}:${token}:${k === 'd' ? runs : ''}*/`).join(' ');
}

/**
 * The lookup: the query ids of the statements parked under `prefix` for what `ask` announces
 * (`{ w, d, all, runs }`: work; runs ended — those of `runs`, or any when `all`) — those of
 * `token` when `own`, otherwise everybody else's. The marks are built by CONCAT so that this
 * statement's own text never matches itself (nor another ringer's lookup).
 */
function lookupStatement(prefix, token, own, ask = ANY) {
  const hex = hexOf(prefix);
  const clauses = [];
  const params = [];
  if (ask.w) {
    clauses.push(`INSTR(INFO, CONCAT('/', '*${MARK}-w:', ?, ':')) > 0`);
    params.push(hex);
  }
  if (ask.d) {
    const runs = [...ask.runs];
    if (ask.all || runs.length === 0 || runs.length > MAX_RUNG_RUNS) {
      clauses.push(`INSTR(INFO, CONCAT('/', '*${MARK}-d:', ?, ':')) > 0`);
      params.push(hex);
    } else {
      const named = runs.map(() => "INSTR(INFO, CONCAT('.', ?, '.')) > 0").join(' OR ');
      clauses.push(`(INSTR(INFO, CONCAT('/', '*${MARK}-d:', ?, ':')) > 0 AND (INSTR(INFO, ':all*/') > 0 OR ${named}))`);
      params.push(hex, ...runs.map(hexOf));
    }
  }
  const mine = own ? '> 0' : '= 0';
  return {
    text:
      "SELECT QUERY_ID AS q FROM information_schema.PROCESSLIST WHERE COMMAND = 'Query'" +
      ` AND (${clauses.join(' OR ')}) AND INSTR(INFO, CONCAT(':', ?, ':')) ${mine}`,
    params: [...params, token],
  };
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

/** Why the server will not let this process ring (a reason to turn the bell off), or undefined. */
function refusal(e) {
  const errno = e?.errno;
  if (errno === ER_BAD_FIELD || errno === ER_PARSE)
    return 'the server cannot kill a statement by its query id (not MariaDB)';
  if (ER_DENIED.has(errno)) return `the server refused the doorbell's statements (${e.message})`;
  return undefined;
}

/**
 * The ringing side of one listener. `ring()` asks for a ring: the first is sent at once; rings
 * asked for while one is in flight, or sooner than the gap after the last, are merged into one
 * after it — so a busy process pays at most one lookup per gap, and the gap widens while lookups
 * find nobody parked (busy workers do not park). `interrupt()` ends this listener's own park
 * (a new kind of waiter, close()). `off(reason)` and `reason()` tell whether it still rings.
 */
function createBell(sql, prefix, report) {
  const token = newToken();
  const stats = { rings: 0, lookups: 0, kills: 0 };
  let offReason; // set once: the bell no longer rings, and the listener polls
  let inFlight = false;
  let again = newAsk(); // asked for while a ring was in flight
  let due = newAsk(); // the merged ring the timer will send
  let lastAt = 0;
  let gapMs = MIN_GAP_MS;
  let timer = null;

  /** Stops ringing for good; `loud`: an unexpected refusal, told once to the listener's onError. */
  const turnOff = (reason, loud = true) => {
    if (offReason) return;
    offReason = reason;
    if (timer) clearTimeout(timer);
    timer = null;
    if (loud) report(new Error(`iterativeflow listener: doorbell off, polling instead: ${reason}`));
  };

  /** Interrupts every statement `lookup` names; answers how many there were. */
  async function killAll(own, ask) {
    const { text, params } = lookupStatement(prefix, token, own, ask);
    stats.lookups++;
    const rows = await sql.query(text, params);
    const ids = rows.map((r) => String(r.q)).filter((q) => /^\d+$/.test(q));
    // One at a time, never two in flight: MariaDB's KILL takes the parked session's sleep mutex
    // with trylock, and SLEEP() shares one mutex across the server. A KILL that lands while
    // another KILL's victim leaves its sleep finds it taken, wakes its own victim anyway, and
    // then holds that victim (and every SLEEP() on the server starting or ending) for its 2 s of
    // retries (measured: parallel KILLs stalled 39 of 93 rings by 2 s; sequential ones, 0 of
    // 1,708 with three ringers). See docs/push.md, "The doorbell".
    for (const q of ids) {
      try {
        await sql.exec(`KILL QUERY ID ${q}`);
        stats.kills++;
      } catch (e) {
        // Gone already (the park ended): nothing to interrupt. Another user's: say so once.
        if (e?.errno === ER_KILL_DENIED) report(e);
        else if (refusal(e)) throw e;
      }
    }
    return ids.length;
  }

  async function send(ask) {
    inFlight = true;
    lastAt = Date.now();
    try {
      const found = await killAll(false, ask);
      gapMs = found > 0 ? MIN_GAP_MS : Math.min(MAX_GAP_MS, gapMs * 2);
    } catch (e) {
      const why = refusal(e);
      if (why) turnOff(why);
      // Otherwise the server is away or the pool closed: the parked listeners time out and look.
    } finally {
      inFlight = false;
    }
    if ((again.w || again.d) && !offReason) {
      const next = again;
      again = newAsk();
      if (next.w) ring('w');
      if (next.d) ring('d', next.all ? undefined : [...next.runs]);
    }
  }

  /**
   * Asks for a ring of `kind` ('w' or 'd', the kinds above); for 'd', `runIds` names the runs that
   * ended (undefined: any, e.g. a cancel by filter).
   */
  function ring(kind, runIds) {
    if (offReason) return;
    stats.rings++;
    if (inFlight) {
      addTo(again, kind, runIds);
      return;
    }
    addTo(due, kind, runIds);
    if (timer) return; // a merged ring is already due
    const fire = () => {
      timer = null;
      const ask = due;
      due = newAsk();
      void send(ask);
    };
    const wait = lastAt + gapMs - Date.now();
    if (wait <= 0) {
      fire();
      return;
    }
    timer = setTimeout(fire, wait);
    timer.unref?.();
  }

  return {
    token,
    /** The tag of a park of this listener that waits for `kinds` (and, for 'd', `runIds`). */
    tagFor: (kinds, runIds) => parkTag(prefix, token, kinds, runIds),
    ring,
    /** Ends this listener's own park, if one is parked; never rejects. */
    async interrupt() {
      if (offReason) return;
      try {
        await killAll(true, ANY);
      } catch (e) {
        const why = refusal(e);
        if (why) turnOff(why);
      }
    },
    off: turnOff,
    /** Why the bell is off, or undefined while it rings. */
    reason: () => offReason,
    stats: () => ({ ...stats }),
  };
}

module.exports = { createBell, parkTag, lookupStatement, MARK };
