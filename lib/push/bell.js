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

/**
 * What a park waits for, and what a ring announces: 'w' work (a job claimable, a timer to
 * re-read), 'd' a run's new status. A ring of one kind interrupts only the parks that wait for it,
 * so runs finishing in a busy drain do not wake idle workers, nor enqueues a result() waiter.
 */
const KINDS = ['w', 'd'];

/** The comments a park by the listener `token` carries: one per kind it waits for (the prefix as hex: any text is safe). */
const parkTag = (prefix, token, kinds) =>
  kinds.map((k) => `/*${MARK}-${k}:${Buffer.from(prefix).toString('hex')}:${token}*/`).join(' ');

/**
 * The lookup: the query ids of the statements parked under `prefix` for any of `kinds` — those of
 * `token` when `own`, otherwise everybody else's. The mark is built by CONCAT so that this
 * statement's own text never matches itself (nor another ringer's lookup).
 */
function lookupStatement(prefix, token, own, kinds = KINDS) {
  const hex = Buffer.from(prefix).toString('hex');
  const mine = own ? '> 0' : '= 0';
  const marked = kinds.map((k) => `INSTR(INFO, CONCAT('/', '*${MARK}-${k}:', ?, ':')) > 0`).join(' OR ');
  return {
    text:
      "SELECT QUERY_ID AS q FROM information_schema.PROCESSLIST WHERE COMMAND = 'Query'" +
      ` AND (${marked}) AND INSTR(INFO, CONCAT(':', ?, '*', '/')) ${mine}`,
    params: [...kinds.map(() => hex), token],
  };
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
  const again = new Set(); // kinds asked for while a ring was in flight or due
  const due = new Set(); // kinds of the merged ring the timer will send
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
  async function killAll(own, kinds) {
    const { text, params } = lookupStatement(prefix, token, own, kinds);
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

  async function send(kinds) {
    inFlight = true;
    lastAt = Date.now();
    try {
      const found = await killAll(false, kinds);
      gapMs = found > 0 ? MIN_GAP_MS : Math.min(MAX_GAP_MS, gapMs * 2);
    } catch (e) {
      const why = refusal(e);
      if (why) turnOff(why);
      // Otherwise the server is away or the pool closed: the parked listeners time out and look.
    } finally {
      inFlight = false;
    }
    if (again.size > 0 && !offReason) {
      const kinds = [...again];
      again.clear();
      for (const k of kinds) ring(k);
    }
  }

  /** Asks for a ring of `kind` ('w' or 'd'; see KINDS). */
  function ring(kind) {
    if (offReason) return;
    stats.rings++;
    if (inFlight) {
      again.add(kind);
      return;
    }
    due.add(kind);
    if (timer) return; // a merged ring is already due
    const fire = () => {
      timer = null;
      const kinds = KINDS.filter((k) => due.has(k));
      due.clear();
      void send(kinds);
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
    /** The tag of a park of this listener that waits for `kinds`. */
    tagFor: (kinds) => parkTag(prefix, token, kinds),
    ring,
    /** Ends this listener's own park, if one is parked; never rejects. */
    async interrupt() {
      if (offReason) return;
      try {
        await killAll(true, KINDS);
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

module.exports = { createBell, parkTag, lookupStatement, MARK, KINDS };
