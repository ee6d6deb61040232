'use strict';
// A backend handed a listener (createMysqlBackend(sql, { listener })) takes its `waitForWork`
// and `wakeup` from it, and tells it at once when one of its own calls made work claimable, so a
// worker loop of the same process does not wait for the next probe. Without a listener nothing
// here runs: the ports and their statements are exactly those of a backend without push.
const c = require('../check');
const { NUDGE, RING } = require('./listener');

/** The `opts.listener` of createMysqlBackend, checked; undefined when absent. */
function listenerOf(listener) {
  if (c.absent(listener)) return undefined;
  if (
    typeof listener !== 'object' ||
    typeof listener.waitForWork !== 'function' ||
    listener.wakeup === null ||
    typeof listener.wakeup !== 'object' ||
    typeof listener.wakeup.wait !== 'function' ||
    typeof listener.wakeup.signal !== 'function'
  ) {
    throw c.typeError(
      'createMysqlBackend: opts.listener must be a listener (createMysqlListener) with waitForWork and wakeup',
    );
  }
  return listener;
}

/** True when an outbox enqueues something (a spawn is enqueued too). */
const enqueues = (fx) => fx !== null && typeof fx === 'object' && (fx.enqueue?.length > 0 || fx.spawn?.length > 0);
/** True when an outbox schedules a timer: a park sleeps until the soonest one it saw, so it must look again. */
const schedules = (fx) => fx !== null && typeof fx === 'object' && fx.timers?.length > 0;

/** `port[name]` calling `nudge(args)` after it resolves, when `made(result, args)` says it made work. */
function after(port, name, made, nudge) {
  const inner = port[name];
  if (typeof inner !== 'function') return;
  port[name] = async (...args) => {
    const out = await inner.apply(port, args);
    if (made(out, args)) nudge(args);
    return out;
  };
}

/**
 * Wires `listener` into the ports: dispatch push, completion push, the local nudges (work made
 * here: local waiters at once, other processes by the listener's doorbell) and the rings after a
 * run reached a terminal status (other processes' result() and watch()).
 */
function withListener(ports, listener) {
  const nudge = typeof listener[NUDGE] === 'function' ? () => listener[NUDGE]() : () => {};
  const ringer = typeof listener[RING] === 'function' ? (kind, runIds) => listener[RING](kind, runIds) : () => {};
  const ended = ([runId]) => ringer('d', [runId]); // a run's new status: result() and watch() elsewhere
  const cancelled = () => ringer('d'); // by filter: any run
  const scheduled = () => ringer('w'); // a timer: parked workers re-read the soonest one
  const { queue, store, timer } = ports;
  const always = () => true;
  // Before the nudges: a markTerminal whose outbox enqueues also nudges (both ring; rings merge).
  after(store, 'markTerminal', always, ended);
  after(store, 'cancelRuns', (n) => n > 0, cancelled);
  if (timer) after(timer, 'schedule', always, scheduled);
  for (const name of ['checkpointStep', 'suspendRun']) {
    after(store, name, (_, args) => schedules(args[name === 'checkpointStep' ? 1 : 2]), scheduled);
  }
  after(queue, 'enqueue', always, nudge);
  after(queue, 'enqueueMany', (_, [requests]) => requests.length > 0, nudge);
  after(store, 'postSignal', (r) => r.delivered === true, nudge);
  after(store, 'retryRun', (r) => r.retried === true, nudge);
  after(store, 'retryRuns', (n) => n > 0, nudge);
  for (const name of ['checkpointStep', 'suspendRun', 'markTerminal']) {
    after(store, name, (_, args) => enqueues(args[name === 'checkpointStep' ? 1 : 2]), nudge);
  }
  queue.waitForWork = (timeoutMs, signal) => listener.waitForWork(timeoutMs, signal);
  return { ...ports, wakeup: listener.wakeup };
}

module.exports = { listenerOf, withListener };
