'use strict';
// The doorbell between database sessions (docs/push.md, "The doorbell"). A listener with someone
// waiting parks ONE statement: the probe's questions, then SLEEP — both in the same statement, so
// a ring can never fall between "nothing yet" and the sleep. A process that made work or finished
// a run rings: on each server of its pool it looks up the parks of the same database and table
// prefix (lib/push/mark.js: the mark a park starts with, which no bound value can forge) and ends
// each — the lookup and the KILLs on ONE connection, so both reach the same server (ids are
// per-server counters). MariaDB's `KILL QUERY ID` names one statement; on MySQL a KILL names a
// connection, so parks there run on a connection that runs nothing else (the native pool's park
// connection) and a late KILL can only end the next park early. Where the server refuses a step,
// the bell goes off and says why once, and the listener polls as before.

const crypto = require('node:crypto');
const { nativeOf } = require('../sql');
const { lookupStatement, parkMark, newAsk, addTo, ANY } = require('./mark');
const { serverFacts } = require('./server');

/** Shortest pause between two lookups of one ringer while rings find somebody parked. */
const MIN_GAP_MS = 2;
/** Longest pause between two lookups while they keep finding nobody (a busy fleet parks nobody). */
const MAX_GAP_MS = 100;

/** "Unknown column" / "unknown table": the server lists statements otherwise. */
const ER_NO_LIST = new Set([1054, 1109]);
/** The KILL form does not parse here. */
const ER_PARSE = 1064;
/** "Unknown thread id" (1094), "Unknown query id" (1957): the park ended meanwhile. */
const ER_GONE = new Set([1094, 1957]);
/** "You are not owner of thread": the parked session belongs to another account. */
const ER_KILL_DENIED = 1095;
/** Statements the ringer's account may not run. */
const ER_DENIED = new Set([1142, 1227, 1044, 1045]);

/** A new listener's token: what tells its own park from the others of the same prefix. */
const newToken = () => crypto.randomBytes(6).toString('hex');

/** Why the server will not let this process ring (a reason to turn the bell off), or undefined. */
function refusal(e) {
  const errno = e?.errno;
  if (ER_NO_LIST.has(errno) || errno === ER_PARSE)
    return `the server cannot list or end statements as the doorbell needs (${e.message})`;
  if (ER_DENIED.has(errno)) return `the server refused the doorbell's statements (${e.message})`;
  return undefined;
}

/**
 * One ring as one unit on one connection (per host): the native pool's `ring`, or a transaction
 * of a wrapped Sql (its one connection). Answers `{ found, killed, denied }`.
 */
async function ringOn(sql, lookup, kill) {
  const native = nativeOf(sql);
  if (native) return native.ring(lookup, kill);
  return sql.tx(async (t) => {
    const ids = (await t.query(lookup)).map((r) => String(r.q)).filter((q) => /^\d+$/.test(q));
    let killed = 0;
    let denied;
    for (const q of ids) {
      try {
        await t.exec(kill === 'query-id' ? `KILL QUERY ID ${q}` : `KILL QUERY ${q}`);
        killed++;
      } catch (e) {
        if (e?.errno === ER_KILL_DENIED) denied ??= e.message;
        else if (!ER_GONE.has(e?.errno)) throw e;
      }
    }
    return { found: ids.length, killed, denied };
  });
}

/**
 * The ringing side of one listener. `ring()` asks for a ring: the first is sent at once; rings
 * asked for while one is in flight, or sooner than the gap after the last, are merged into one
 * after it — so a busy process pays at most one lookup per gap, and the gap widens while lookups
 * find nobody parked (busy workers do not park). `interrupt()` ends this listener's own park
 * (a new kind of waiter, close()). `off(reason)` and `reason()` tell whether it still rings.
 * `facts()` reads the server's facts once (lib/push/server.js), for the ringer and the listener.
 */
function createBell(sql, prefix, report) {
  const token = newToken();
  // failed: rings whose unit failed (the server away, the pool closed): their parks wake at their end
  const stats = { rings: 0, lookups: 0, kills: 0, denied: 0, failed: 0 };
  let offReason; // set once: the bell no longer rings, and the listener polls
  let known; // the server's facts, once read
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

  let reading; // the read of the facts in flight or done
  /** The server's facts (one read, shared; a failed read is tried again next time). */
  const facts = () => {
    reading ??= serverFacts(sql).then(
      (f) => (known = f),
      (e) => {
        reading = undefined;
        throw e;
      },
    );
    return reading;
  };

  /** Ends every park `ask` reaches (this listener's own when `own`); answers how many it found. */
  async function killAll(own, ask) {
    const f = await facts();
    stats.lookups++;
    const outcome = await ringOn(sql, lookupStatement(f, prefix, token, own, ask), f.kill);
    stats.kills += Number(outcome.killed);
    if (outcome.denied) {
      stats.denied++;
      if (stats.denied === 1) report(new Error(`iterativeflow listener: a ring may not end a park: ${outcome.denied}`));
    }
    return Number(outcome.found);
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
      else stats.failed++;
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
   * Asks for a ring of `kind` ('w' work made, 'd' runs ended); for 'd', `runIds` names the runs
   * that ended (undefined: any, e.g. a cancel by filter).
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
    facts,
    /** The facts if they were read, else undefined. */
    known: () => known,
    /** The mark of a park of this listener that waits for `kinds` (and, for 'd', `runIds`). */
    markFor: (kinds, runIds) => parkMark(known.db, prefix, token, kinds, runIds),
    ring,
    /** Ends this listener's own park, if one is parked; never rejects. */
    async interrupt() {
      if (offReason || !known) return;
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

module.exports = { createBell, refusal };
