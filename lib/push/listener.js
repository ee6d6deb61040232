'use strict';
// createMysqlListener(): dispatch and completion push without LISTEN/NOTIFY (docs/push.md). One
// watcher per listener runs ONE probe statement per interval (lib/push/probe.js) for every waiter of
// the process together and fans its answer out: claimable work or a due timer releases
// `waitForWork`, a watched run's new status feeds `wakeup` and `watch`. In-process enqueues and
// completions need no probe: the backend nudges the listener directly (NUDGE), and the core's
// own `wakeup.signal` after a terminal write reaches local waiters at once. Where the opt-in
// event table exists, the same probe also reads the new timeline rows of the runs a `watch()`
// stream is open for, and `watch` yields them (docs/timeline.md).
const c = require('../check');
const enc = require('../encode');
const { tables } = require('../schema');
const { createWakeup } = require('../wakeup');
const { createLatch } = require('./latch');
const { probeStatement, parkStatement, probeResult, isTerminal } = require('./probe');
const { createBell } = require('./bell');
const { nativeOf, onClose, PARK } = require('../sql');
const { eventTable, eventOf, TERMINAL_EVENTS } = require('../timeline/rows');

/** The backend's private way to say "I just enqueued" (not part of the listener's surface). */
const NUDGE = Symbol('iterativeflow.listener.nudge');
/** The backend's private way to ring the other processes: (kind) 'w' work made, 'd' a run's new status. */
const RING = Symbol('iterativeflow.listener.ring');
/** A test's way to hold the watcher between two parks (the doorbell's weakest instant). */
const BETWEEN_PARKS = Symbol.for('iterativeflow.listener.betweenParks');

/** Default probe interval without the doorbell (or on Galera): see docs/push.md for the sweep. */
const DEFAULT_INTERVAL_MS = 50;
/**
 * Default longest park with the doorbell on one server: rings end a park at once, so this bounds
 * only what no ring announces (work made by a process without a listener, a lease running out).
 * Each park costs the server about 0.9 ms of CPU (two thread wake-ups), so it is longer than an
 * idle engine loop's 1.6 s wait: one park per wait (docs/push.md, "Measured").
 */
const BELL_INTERVAL_MS = 2000;
/** Fewest ms between two parks that found something at once (a waiter that does not take the work). */
const GO_PACE_MS = 10;
/** How long before the first waiter's own timeout a park ends (see parkMs()). */
const PARK_MARGIN_MS = 5;
/** Shortest park worth a statement. */
const MIN_PARK_MS = 5;
/** The statement was interrupted: a ring (KILL QUERY ID, or on MySQL during its checks) ended the park. */
const ER_QUERY_INTERRUPTED = 1317;
/** Longest pause between probes while the server is away. */
const MAX_BACKOFF_MS = 5000;
/** Longest close() waits for a probe in flight (then gives up on it: the answer is ignored). */
const CLOSE_WAIT_MS = 1000;
/** How often a listener that found no event table looks again (while a watch() is open). */
const EVENTS_RECHECK_MS = 10_000;
/**
 * How long a watch() stream stays open after its run's terminal status without the run's
 * terminal event (the sink writes it just after the terminal write; a canceled run has none).
 */
const TIMELINE_GRACE_MS = 2000;
/** "Table doesn't exist": the event table was dropped under a listener reading it. */
const ER_NO_SUCH_TABLE = 1146;

function optionsOf(opts) {
  if (opts === null || typeof opts !== 'object') throw c.typeError('createMysqlListener: opts must be an object');
  const prefix = c.absent(opts.prefix) ? '' : opts.prefix;
  if (typeof prefix !== 'string') throw c.typeError('createMysqlListener: opts.prefix must be a string');
  const intervalMs = c.absent(opts.intervalMs)
    ? undefined
    : c.int(opts.intervalMs, 'createMysqlListener: opts.intervalMs', 1, 60_000);
  if (!c.absent(opts.doorbell) && typeof opts.doorbell !== 'boolean') {
    throw c.typeError('createMysqlListener: opts.doorbell must be a boolean');
  }
  const names = enc.namesOf(opts.names, 'createMysqlListener: opts.names');
  if (!c.absent(opts.onError) && typeof opts.onError !== 'function') {
    throw c.typeError('createMysqlListener: opts.onError must be a function');
  }
  if (!c.absent(opts.events) && typeof opts.events !== 'boolean') {
    throw c.typeError('createMysqlListener: opts.events must be a boolean');
  }
  const event = eventTable(prefix);
  return {
    t: tables(prefix),
    prefix,
    intervalMs,
    doorbell: opts.doorbell !== false,
    betweenParks: typeof opts[BETWEEN_PARKS] === 'function' ? opts[BETWEEN_PARKS] : undefined,
    names,
    onError: opts.onError,
    // undefined: read the timeline where the table exists (looked up while a watch() is open)
    events: c.absent(opts.events) ? undefined : opts.events,
    event: { table: event, name: event.slice(1, -1) },
  };
}

/** An async iterator over pushed values, ended by `end()` or the consumer's `return()`. */
function createStream(onStop) {
  const buffer = [];
  let waiting = null;
  let ended = false;
  const finish = () => {
    if (ended) return;
    ended = true;
    onStop();
    if (waiting) {
      const w = waiting;
      waiting = null;
      w({ value: undefined, done: true });
    }
  };
  return {
    push(value) {
      if (ended) return;
      if (waiting) {
        const w = waiting;
        waiting = null;
        w({ value, done: false });
      } else buffer.push(value);
    },
    /** Ends after what is buffered has been read. */
    end: finish,
    iterator: {
      [Symbol.asyncIterator]() {
        return this;
      },
      next() {
        if (buffer.length > 0) return Promise.resolve({ value: buffer.shift(), done: false });
        if (ended) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => (waiting = resolve));
      },
      return() {
        buffer.length = 0;
        finish();
        return Promise.resolve({ value: undefined, done: true });
      },
    },
  };
}

function createMysqlListener(sql, opts = {}) {
  if (!sql || typeof sql.query !== 'function')
    throw c.typeError('createMysqlListener: sql must be an Sql (with query)');
  const { t, prefix, names, onError, events, event, betweenParks, ...o } = optionsOf(opts);

  const work = createLatch();
  const completion = createWakeup();
  const watched = new Map(); // runId -> number of waiters and watch streams
  const lastStatus = new Map(); // runId -> status last seen by a probe
  const progressByRun = new Map(); // runId -> Set<(ev) => void>
  const progressAll = new Set();
  const streams = new Set(); // open watch() streams: close() ends them, and they keep the process up
  const lingering = new Set(); // () => void of streams past their run's terminal status, after each probe
  const eventsHeard = new Map(); // runId -> highest event seq onProgress subscribers have heard
  let eventsOn = events === true ? true : events === false ? false : null; // null: not looked up yet
  let eventsCheckedAt = 0;

  let state = 'idle';
  let loop = null;
  let current = null; // the running loop's token { stopped }: a loop close() gave up on stays stopped
  let closed = false; // close() was called (and no start() since): watch() returns an ended stream
  let wakeSleep = null; // resolves the loop's pause early (close)
  let pauseTimer = null; // the pause's timer: ref'd while a watch() stream is open
  let keepAlive = null; // while a watch() stream is open and the watcher is parked in the database

  // The doorbell (lib/push/bell.js): without it, or until it is known to work here, the watcher polls.
  const report = (e) => {
    if (!onError) return;
    try {
      onError(e);
    } catch {
      // a throwing onError must not stop the watcher
    }
  };
  const bell = o.doorbell ? createBell(sql, prefix, report) : undefined;
  let mode; // undefined until the first look at the server: 'doorbell' | 'doorbell-node' | 'polling'
  let intervalMs = o.intervalMs ?? DEFAULT_INTERVAL_MS;
  let parkShape = null; // { work, runs: Set } of the park in flight
  let lastPark = null; // how the last park ended: 'go' | 'rung' | 'slept'
  let onConnection = false; // parks run on the pool's park connection (MySQL: a KILL names a connection)
  let idleWake = null; // resolves the watcher's wait for a first waiter (doorbell mode)
  let lastGoAt = 0;
  let probing = Promise.resolve(); // probes run one at a time (statuses must not go backwards)
  // unannounced: parks that found work at once after the park before slept out — work that no
  // ring announced (made by a process without a listener, or one whose rings cannot reach here)
  const counts = { probes: 0, parks: 0, go: 0, rung: 0, slept: 0, unannounced: 0 };
  const deadlines = new Set(); // { at } of the wakeup.wait calls in progress (epoch ms)

  const hold = (runId) => {
    const n = watched.get(runId) || 0;
    watched.set(runId, n + 1);
    if (n === 0) kick('run', runId);
  };
  const unhold = (runId) => {
    const n = (watched.get(runId) || 0) - 1;
    if (n > 0) watched.set(runId, n);
    else {
      watched.delete(runId);
      lastStatus.delete(runId);
    }
  };

  /** Calls `s(ev)`; a subscriber that throws is reported, never the watcher's failure. */
  const deliver = (s, ev) => {
    try {
      s(ev);
    } catch (e) {
      report(e);
    }
  };
  const emit = (ev) => {
    const subs = progressByRun.get(ev.runId);
    if (subs) for (const s of [...subs]) deliver(s, ev);
    for (const s of [...progressAll]) deliver(s, ev);
  };

  /** Whether this probe reads the timeline: only while a watch() is open, and the table is there. */
  async function readsEvents() {
    if (events === false || progressByRun.size === 0) return false;
    if (eventsOn === true) return true;
    if (eventsOn === null || Date.now() - eventsCheckedAt >= EVENTS_RECHECK_MS) {
      eventsCheckedAt = Date.now();
      const [{ n }] = await sql.query(
        'SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?',
        [event.name],
      );
      eventsOn = Number(n) > 0;
    }
    return eventsOn;
  }

  /** Each watched run's event cursor: the lowest `seq` any of its streams has seen. */
  const cursors = () => [...progressByRun].map(([runId, subs]) => [runId, Math.min(...[...subs].map((s) => s.seen))]);

  /**
   * Whether `e` says the event table a statement read was dropped; if so the timeline is turned
   * off (rechecked after EVENTS_RECHECK_MS) so that the next statement runs without it.
   */
  function timelineDropped(e, timeline) {
    if (!timeline || e?.errno !== ER_NO_SUCH_TABLE || !String(e.message).includes(event.name)) return false;
    eventsOn = false;
    eventsCheckedAt = Date.now();
    return true;
  }

  /** The probe's rows; a dropped event table turns the timeline off and the probe runs without it. */
  async function probeRows() {
    const timeline = (await readsEvents()) ? { table: event.table, cursors: cursors() } : undefined;
    const { text, params } = probeStatement(t, Date.now(), names, [...watched.keys()], timeline);
    try {
      return await sql.query(text, params);
    } catch (e) {
      if (!timelineDropped(e, timeline)) throw e;
      const plain = probeStatement(t, Date.now(), names, [...watched.keys()]);
      return sql.query(plain.text, plain.params);
    }
  }

  /** One timeline row to the run's streams that have not seen it, and once to onProgress. */
  function deliverEvent(row) {
    const seq = Number(row.seq);
    let ev;
    try {
      ev = eventOf(row);
    } catch (e) {
      report(e); // a row someone else wrote with data that is not JSON: skipped, cursor moves on
      ev = undefined;
    }
    const subs = progressByRun.get(row.run_id);
    if (subs) {
      for (const s of [...subs]) {
        if (seq <= s.seen) continue;
        s.seen = seq;
        if (ev) deliver(s, ev);
      }
    }
    if (ev && subs && seq > (eventsHeard.get(row.run_id) ?? 0)) {
      eventsHeard.set(row.run_id, seq);
      for (const s of [...progressAll]) deliver(s, ev);
    }
  }

  /** One probe: fan its answer out to every waiter, unless `token`'s loop was stopped meanwhile. */
  async function probeNow(token) {
    counts.probes++;
    const { work: found, runs, events: timeline } = probeResult(await probeRows());
    if (token.stopped) return;
    if (found) work.fire();
    // The timeline first: a run's terminal status is the last thing its stream shows.
    for (const row of timeline) deliverEvent(row);
    for (const [runId, status] of runs) {
      if (!watched.has(runId) || lastStatus.get(runId) === status) continue;
      lastStatus.set(runId, status);
      // Waiters first: a subscriber's callback cannot delay or lose a completion wake.
      if (isTerminal(status)) void completion.signal(runId);
      emit({ runId, type: 'status', status });
    }
    for (const settle of [...lingering]) settle();
  }
  /** Probes one at a time: two answers read at different instants must not land out of order. */
  const probe = (token) => {
    const p = probing.then(() => probeNow(token));
    probing = p.catch(() => {});
    return p;
  };

  const pause = (ms) =>
    new Promise((resolve) => {
      const timer = setTimeout(() => {
        pauseTimer = null;
        resolve();
      }, ms);
      // An idle listener alone does not keep the process alive (a waiter's own timer does),
      // unless someone reads a watch() stream, which has no timer of its own (see openStream).
      if (streams.size === 0) timer.unref?.();
      pauseTimer = timer;
      wakeSleep = () => {
        clearTimeout(timer);
        pauseTimer = null;
        resolve();
      };
    });

  /** Somebody waits for work, or for a run's status, while the watcher parks: see `waiting`. */
  const wanted = () => work.size > 0 || watched.size > 0;

  /**
   * A new waiter (`kind` 'work', or 'run' with its id). An idle watcher parks for it now; a park
   * already in flight that does not ask for it is left alone, and one probe answers for the time
   * before it (anything later rings the park, which asks for it the next time).
   */
  function kick(kind, runId) {
    if (idleWake) {
      const w = idleWake;
      idleWake = null;
      w();
      return;
    }
    if (!parkShape || !current) return;
    if (kind === 'work' ? parkShape.work : parkShape.runs.has(runId)) return;
    probe(current).catch(() => {}); // a failing probe: the park's own failure reports it
  }

  /**
   * How long the next park may last: `intervalMs`, but ending PARK_MARGIN_MS before the first
   * waiter's own timeout, so that the connection it holds is back in the pool when that waiter's
   * owner reads again or claims (one connection per idle process, not two).
   */
  function parkMs() {
    let soonest = work.soonest();
    for (const d of deadlines) soonest = Math.min(soonest, d.at);
    // A watch() also shows progress that no ring announces (running, the timeline's rows): as often as polling would.
    const longest = streams.size > 0 ? Math.min(intervalMs, DEFAULT_INTERVAL_MS) : intervalMs;
    return Math.min(longest, soonest - Date.now() - PARK_MARGIN_MS);
  }

  /** The park (lib/push/probe.js parkStatement): 'go' (something is there), 'rung' or 'slept'. */
  async function park(maxMs) {
    const timeline = (await readsEvents()) ? { table: event.table, cursors: cursors() } : undefined;
    const runs = [...watched.keys()].map((runId) => [runId, lastStatus.get(runId)]);
    const shape = { work: work.size > 0, runs: new Set(runs.map(([runId]) => runId)) };
    const kinds = [...(shape.work ? ['w'] : []), ...(shape.runs.size > 0 ? ['d'] : [])];
    const { text, params } = parkStatement(t, bell.markFor(kinds, [...shape.runs]), Date.now(), {
      work: shape.work,
      names,
      runs,
      events: timeline,
      maxMs,
    });
    counts.parks++;
    parkShape = shape;
    try {
      const rows = await (onConnection ? sql[PARK](text, params) : sql.query(text, params));
      const r = rows[0]?.r;
      // MySQL ends an interrupted SLEEP with 1 instead of an error (an uninterrupted one is 0).
      return r === 'go' ? 'go' : String(r) === '1' ? 'rung' : 'slept';
    } catch (e) {
      if (e?.errno === ER_QUERY_INTERRUPTED) return 'rung';
      if (!timelineDropped(e, timeline)) throw e;
      return 'go'; // the probe that follows runs without the timeline
    } finally {
      parkShape = null;
    }
  }

  /** How this listener learns of work: the first statements of its watcher, once (lib/push/server.js). */
  async function detect() {
    let cluster = 0;
    if (bell && !bell.reason()) {
      const f = await bell.facts();
      cluster = f.cluster;
      if (f.kill === 'connection') {
        // A KILL names a connection: parks must run on one that runs nothing else.
        if (nativeOf(sql) && typeof sql[PARK] === 'function') onConnection = true;
        else
          bell.off("MySQL's KILL ends a connection's statement: parks need the park connection of mysqlPool()", false);
      }
    }
    const on = bell && !bell.reason();
    mode = !on ? 'polling' : cluster ? 'doorbell-node' : 'doorbell';
    // A ring reaches only the ringer's own node: on a cluster the parks stay as short as the probes.
    if (o.intervalMs === undefined) intervalMs = mode === 'doorbell' ? BELL_INTERVAL_MS : DEFAULT_INTERVAL_MS;
  }

  const bellOn = () => mode !== 'polling' && bell && !bell.reason();

  /** One turn of the doorbell watcher: wait for a waiter, park, and probe when the park says so. */
  async function parkTurn(token) {
    if (!wanted()) {
      state = 'listening';
      await new Promise((resolve) => (idleWake = resolve));
      idleWake = null;
      return;
    }
    const since = Date.now() - lastGoAt;
    if (since < GO_PACE_MS) await pause(GO_PACE_MS - since);
    if (token.stopped) return;
    const maxMs = parkMs();
    if (maxMs < MIN_PARK_MS) {
      // The first waiter times out about now: let it (a park this short would only cost a statement).
      await pause(Math.max(1, maxMs + PARK_MARGIN_MS + 1));
      return;
    }
    const woke = await park(maxMs);
    counts[woke]++;
    if (woke === 'go' && lastPark === 'slept') counts.unannounced++;
    lastPark = woke;
    if (token.stopped) return;
    if (woke !== 'slept') {
      if (woke === 'go') lastGoAt = Date.now();
      await probe(token);
    }
    if (betweenParks) await betweenParks();
  }

  async function run(token) {
    let failures = 0;
    while (!token.stopped) {
      try {
        if (mode === undefined) await detect();
        if (token.stopped) break;
        if (bellOn()) await parkTurn(token);
        else await probe(token);
        if (token.stopped) break;
        if (failures > 0) work.fire(); // work may have come while the server was away: look once
        failures = 0;
        state = 'listening';
      } catch (e) {
        if (token.stopped) break;
        // Waiters keep timing out normally meanwhile: push degrades to the caller's polling.
        if (failures === 0) report(e);
        failures++;
        state = 'reconnecting';
      }
      if (token.stopped) break;
      if (failures === 0 && bellOn()) continue; // the park was the wait
      await pause(failures === 0 ? intervalMs : Math.min(MAX_BACKOFF_MS, intervalMs * 2 ** Math.min(failures, 16)));
    }
  }

  const start = () => {
    if (loop) return;
    closed = false;
    current = { stopped: false };
    loop = run(current);
  };
  /** The first waiter of a listener nobody started starts it; a closed one stays closed. */
  const ensure = () => {
    if (state === 'idle' && !loop) start();
  };

  /** A watch() stream counts as a reason to stay alive: the pause timer is ref'd while any is open. */
  const openStream = (stream) => {
    streams.add(stream);
    pauseTimer?.ref?.();
    // Parked in the database there is no pause timer: a timer of its own keeps the reader's process up.
    keepAlive ??= setInterval(() => {}, 2 ** 30);
  };
  const closeStream = (stream) => {
    streams.delete(stream);
    if (streams.size > 0) return;
    pauseTimer?.unref?.();
    clearInterval(keepAlive);
    keepAlive = null;
  };

  /**
   * Tells parked listeners of other processes to look now: 'w' work made, 'd' runs finished
   * (`runIds`; undefined: any).
   */
  const ring = (kind, runIds) => {
    if (mode !== 'polling') bell?.ring(kind, runIds);
  };

  const wakeup = {
    wait(runId, timeoutMs) {
      c.str(runId, 'runId');
      // When this wait ends by itself (Node's coercion, as the timer below gets it: not a
      // number ≥ 1 → 1 ms): a park ends before it, so its connection is free for the re-read.
      const ms = Number(timeoutMs);
      const until = { at: Date.now() + (ms >= 1 ? Math.min(ms, 2 ** 31 - 1) : 1) };
      deadlines.add(until);
      hold(runId); // before ensure(): the first probe, built at once, includes this run
      ensure();
      return completion.wait(runId, timeoutMs).finally(() => {
        deadlines.delete(until);
        unhold(runId);
      });
    },
    /** A run of this process reached a terminal status: local waiters now, other processes by the bell. */
    signal(runId) {
      ring('d', [runId]);
      return completion.signal(runId);
    },
  };

  const listener = {
    wakeup,
    waitForWork(timeoutMs, signal) {
      const p = work.wait(timeoutMs, signal);
      ensure();
      if (work.size > 0) kick('work');
      return p;
    },
    watch(runId) {
      c.str(runId, 'runId');
      if (closed) {
        const ended = createStream(() => {});
        ended.end();
        return ended.iterator;
      }
      let subs = progressByRun.get(runId);
      if (!subs) progressByRun.set(runId, (subs = new Set()));
      // A terminal status ends the stream — with the timeline on, once the run's terminal event
      // has been yielded too (it lands just after), or TIMELINE_GRACE_MS later without it.
      let terminalAt = 0;
      let terminalEvent = false;
      const settle = () => {
        if (!terminalAt) return;
        if (eventsOn === false || terminalEvent || Date.now() - terminalAt >= TIMELINE_GRACE_MS) stream.end();
      };
      const push = (ev) => {
        stream.push(ev);
        if (ev.type === 'status' && isTerminal(ev.status)) terminalAt ||= Date.now();
        else if (TERMINAL_EVENTS.has(ev.type)) terminalEvent = true;
        settle();
      };
      push.seen = 0; // the highest event seq this stream has yielded: a new stream reads from the start
      const stream = createStream(() => {
        closeStream(stream);
        lingering.delete(settle);
        subs.delete(push);
        if (subs.size === 0 && progressByRun.get(runId) === subs) {
          progressByRun.delete(runId);
          eventsHeard.delete(runId);
        }
        unhold(runId);
      });
      lingering.add(settle);
      subs.add(push);
      hold(runId);
      openStream(stream);
      // The first event is the run's status when watched: another waiter may already hold the
      // run, and the probe only reports changes.
      if (lastStatus.has(runId)) push({ runId, type: 'status', status: lastStatus.get(runId) });
      ensure();
      return stream.iterator;
    },
    onProgress(cb) {
      if (typeof cb !== 'function') throw c.typeError('onProgress: cb must be a function');
      progressAll.add(cb);
      return () => progressAll.delete(cb);
    },
    start,
    async close() {
      closed = true;
      if (current) current.stopped = true;
      wakeSleep?.();
      idleWake?.();
      for (const s of [...streams]) s.end();
      progressAll.clear();
      // A probe in flight is waited for at most CLOSE_WAIT_MS (a silent server with no query
      // bound would hang close()); its answer is ignored either way.
      // A park in flight is ended by a ring of this listener's own (a bounded wait either way).
      if (loop && bellOn()) await bounded(bell.interrupt(), CLOSE_WAIT_MS);
      if (loop) await bounded(loop, CLOSE_WAIT_MS);
      if (onConnection) await bounded(nativeOf(sql).endParks(), CLOSE_WAIT_MS);
      loop = null;
      current = null;
      state = 'stopped';
      work.fire(); // release the worker loop's waiter; result() waiters time out, then re-read
      work.clear();
    },
    state: () => state,
    /**
     * How this listener hears of work: `mode` ('doorbell', 'doorbell-node' on a Galera cluster —
     * rings reach one node —, 'polling', or undefined before its first statement), why the
     * doorbell is off, the longest wait between two looks, and counters.
     */
    stats() {
      const f = bell?.known();
      return {
        mode,
        doorbellOff: bell ? bell.reason() : 'turned off (opts.doorbell: false)',
        intervalMs,
        // The account this process parks and rings as, and whose parks its rings reach:
        // 'server' (every account's: PROCESS and CONNECTION ADMIN) or 'account' (its own only).
        account: f?.account,
        reach: f?.reach,
        // 'galera', 'group-replication single-primary' / '… multi-primary', or null (one server)
        cluster: f?.clusterKind,
        ...counts,
        ...(bell ? bell.stats() : { rings: 0, lookups: 0, kills: 0, denied: 0, failed: 0 }),
      };
    },
    [NUDGE]() {
      work.fire();
      ring('w');
    },
    [RING]: ring,
  };
  // Closing the pool ends this listener first: a park is not work in flight, so close() must
  // not wait it out.
  onClose(sql, () => listener.close());
  return listener;
}

/** Resolves when `p` settles or after `ms`, whichever comes first; never rejects. */
function bounded(p, ms) {
  let timer;
  const limit = new Promise((resolve) => (timer = setTimeout(resolve, ms)));
  return Promise.race([p.catch(() => {}), limit]).finally(() => clearTimeout(timer));
}

module.exports = { createMysqlListener, NUDGE, RING, DEFAULT_INTERVAL_MS, BELL_INTERVAL_MS };
