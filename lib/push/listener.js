'use strict';
// createMysqlListener(): dispatch and completion push without LISTEN/NOTIFY (docs/push.md). One
// watcher per listener runs ONE probe statement per interval (lib/push/probe.js) for every waiter of
// the process together and fans its answer out: claimable work or a due timer releases
// `waitForWork`, a watched run's new status feeds `wakeup` and `watch`. In-process enqueues and
// completions need no probe: the backend nudges the listener directly (NUDGE), and the core's
// own `wakeup.signal` after a terminal write reaches local waiters at once.
const c = require('../check');
const enc = require('../encode');
const { tables } = require('../schema');
const { createWakeup } = require('../wakeup');
const { createLatch } = require('./latch');
const { probeStatement, probeResult, isTerminal } = require('./probe');

/** The backend's private way to say "I just enqueued" (not part of the listener's surface). */
const NUDGE = Symbol('iterativeflow.listener.nudge');

/** Default probe interval: see docs/push.md for the sweep behind it. */
const DEFAULT_INTERVAL_MS = 50;
/** Longest pause between probes while the server is away. */
const MAX_BACKOFF_MS = 5000;
/** Longest close() waits for a probe in flight (then gives up on it: the answer is ignored). */
const CLOSE_WAIT_MS = 1000;

function optionsOf(opts) {
  if (opts === null || typeof opts !== 'object') throw c.typeError('createMysqlListener: opts must be an object');
  const prefix = c.absent(opts.prefix) ? '' : opts.prefix;
  if (typeof prefix !== 'string') throw c.typeError('createMysqlListener: opts.prefix must be a string');
  const intervalMs = c.absent(opts.intervalMs)
    ? DEFAULT_INTERVAL_MS
    : c.int(opts.intervalMs, 'createMysqlListener: opts.intervalMs', 1, 60_000);
  const names = enc.namesOf(opts.names, 'createMysqlListener: opts.names');
  if (!c.absent(opts.onError) && typeof opts.onError !== 'function') {
    throw c.typeError('createMysqlListener: opts.onError must be a function');
  }
  return { t: tables(prefix), intervalMs, names, onError: opts.onError };
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
  const { t, intervalMs, names, onError } = optionsOf(opts);

  const work = createLatch();
  const completion = createWakeup();
  const watched = new Map(); // runId -> number of waiters and watch streams
  const lastStatus = new Map(); // runId -> status last seen by a probe
  const progressByRun = new Map(); // runId -> Set<(ev) => void>
  const progressAll = new Set();
  const streams = new Set(); // open watch() streams: close() ends them, and they keep the process up

  let state = 'idle';
  let loop = null;
  let current = null; // the running loop's token { stopped }: a loop close() gave up on stays stopped
  let closed = false; // close() was called (and no start() since): watch() returns an ended stream
  let wakeSleep = null; // resolves the loop's pause early (close)
  let pauseTimer = null; // the pause's timer: ref'd while a watch() stream is open

  const hold = (runId) => watched.set(runId, (watched.get(runId) || 0) + 1);
  const unhold = (runId) => {
    const n = (watched.get(runId) || 0) - 1;
    if (n > 0) watched.set(runId, n);
    else {
      watched.delete(runId);
      lastStatus.delete(runId);
    }
  };

  /** The user's `onError`, if any; a throwing one must not stop the watcher. */
  const report = (e) => {
    if (!onError) return;
    try {
      onError(e);
    } catch {
      // ignored: see above
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

  /** One probe: fan its answer out to every waiter, unless `token`'s loop was stopped meanwhile. */
  async function probe(token) {
    const { text, params } = probeStatement(t, Date.now(), names, [...watched.keys()]);
    const { work: found, runs } = probeResult(await sql.query(text, params));
    if (token.stopped) return;
    if (found) work.fire();
    for (const [runId, status] of runs) {
      if (!watched.has(runId) || lastStatus.get(runId) === status) continue;
      lastStatus.set(runId, status);
      // Waiters first: a subscriber's callback cannot delay or lose a completion wake.
      if (isTerminal(status)) void completion.signal(runId);
      emit({ runId, type: 'status', status });
    }
  }

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

  async function run(token) {
    let failures = 0;
    while (!token.stopped) {
      try {
        await probe(token);
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
  };
  const closeStream = (stream) => {
    streams.delete(stream);
    if (streams.size === 0) pauseTimer?.unref?.();
  };

  const wakeup = {
    wait(runId, timeoutMs) {
      c.str(runId, 'runId');
      hold(runId); // before ensure(): the first probe, built at once, includes this run
      ensure();
      return completion.wait(runId, timeoutMs).finally(() => unhold(runId));
    },
    signal(runId) {
      return completion.signal(runId);
    },
  };

  return {
    wakeup,
    waitForWork(timeoutMs, signal) {
      const p = work.wait(timeoutMs, signal);
      ensure();
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
      const push = (ev) => {
        stream.push(ev);
        if (isTerminal(ev.status)) stream.end();
      };
      const stream = createStream(() => {
        closeStream(stream);
        subs.delete(push);
        if (subs.size === 0 && progressByRun.get(runId) === subs) progressByRun.delete(runId);
        unhold(runId);
      });
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
      for (const s of [...streams]) s.end();
      progressAll.clear();
      // A probe in flight is waited for at most CLOSE_WAIT_MS (a silent server with no query
      // bound would hang close()); its answer is ignored either way.
      if (loop) await bounded(loop, CLOSE_WAIT_MS);
      loop = null;
      current = null;
      state = 'stopped';
      work.fire(); // release the worker loop's waiter; result() waiters time out, then re-read
      work.clear();
    },
    state: () => state,
    [NUDGE]() {
      work.fire();
    },
  };
}

/** Resolves when `p` settles or after `ms`, whichever comes first; never rejects. */
function bounded(p, ms) {
  let timer;
  const limit = new Promise((resolve) => (timer = setTimeout(resolve, ms)));
  return Promise.race([p.catch(() => {}), limit]).finally(() => clearTimeout(timer));
}

module.exports = { createMysqlListener, NUDGE, DEFAULT_INTERVAL_MS };
