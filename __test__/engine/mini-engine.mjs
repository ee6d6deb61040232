// A small durable-workflow engine written from docs/contract.md §11 ("How core drives a backend").
//
// It is NOT @iterativeflow/core: it is our own minimal engine with the same call pattern against
// the Backend ports (store / queue / timer / wakeup), so the backend can be exercised end-to-end
// the way core would drive it. Everything time-related goes through an injectable clock
// (`now: () => Date`), so tests advance time instead of sleeping.
//
//   const engine = createEngine(backend, { now: clock.now, maxAttempts: 3 });
//   engine.register('greet', 1, async (ctx, input) => ctx.step('hello', () => `hi ${input}`));
//   const { runId } = await engine.submit('greet', 1, 'ann');
//   await engine.tickOnce();                       // steps 1–3, a–f of §11.1
//   await engine.submitMany([{ name: 'greet', version: 1, input: 'bo' }]);   // §11.2
//
// Flow context (one cursor key `s<n>` per call, replayed from `snap.steps`):
//   ctx.step(name, fn)            shape `step:<name>`
//   ctx.sleep(ms)                 shape `sleep`   (result: the wake instant as an ISO string)
//   ctx.waitForSignal(name)       shape `signal:<name>` (consumes the signal row in the same Tx)
//   ctx.invoke(flow, version, in) shape `invoke:<flow>@<version>` (result: the child run id)
//   ctx.all([{flow, version, input}, …])
//                                 one checkpoint per chunk of 40 (`all:<N>:<i>`, result: the
//                                 chunk's child ids; chunk 0 arms joinTarget N), then one
//                                 `all:<N>:join` checkpoint with the ordered outputs.
import { randomUUID } from 'node:crypto';

export { RUN_STATUSES } from '../helpers/seed.mjs';
export const TERMINAL = ['done', 'failed', 'canceled'];
export const NON_SUCCESS_TERMINAL = ['failed', 'canceled'];
export const ACTIVE = ['pending', 'running', 'sleeping', 'awaiting_signal', 'awaiting_child', 'retrying'];
export const isTerminal = (s) => TERMINAL.includes(s);

export const CHUNK = 40;
export const MAX_CHILDREN = 10_000;
export const MAX_DEPTH = 32;
export const MINUTE = 60_000;

/** Thrown by ctx calls to park the run; never seen by the backend. */
class Suspend {
  constructor(kind, wakeAt) {
    this.kind = kind; // 'sleep' | 'child' | 'signal'
    this.wakeAt = wakeAt;
  }
}

/** A memo's shape differs from the call now issued (replay drift). */
class Drift {
  constructor(key, stored, issued) {
    this.key = key;
    this.stored = stored;
    this.issued = issued;
  }
}

/** A non-retryable flow error (the run fails at once, whatever its attempt). */
export class PermanentError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
    this.retryable = false;
  }
}

const flowKey = (name, version) => `${name}@${version}`;

function flowError(e) {
  if (e && typeof e === 'object') {
    return { code: typeof e.code === 'string' ? e.code : 'FLOW_ERROR', message: String(e.message ?? e) };
  }
  return { code: 'FLOW_ERROR', message: String(e) };
}

/** Fixed cron rule for this engine: fires on every whole minute, strictly after `ms`. */
export function nextMinute(ms) {
  return Math.floor(ms / MINUTE) * MINUTE + MINUTE;
}

/**
 * A tiny flow builder: named steps and sleeps run in order; the output is an object holding each
 * named step's result. `fn(input, acc)` sees the results so far.
 */
export function builder() {
  const ops = [];
  const b = {
    step(name, fn) {
      ops.push({ kind: 'step', name, fn });
      return b;
    },
    sleep(ms) {
      ops.push({ kind: 'sleep', ms });
      return b;
    },
    build() {
      const plan = [...ops];
      return async (ctx, input) => {
        const acc = {};
        for (const op of plan) {
          if (op.kind === 'sleep') await ctx.sleep(op.ms);
          else acc[op.name] = await ctx.step(op.name, () => op.fn(input, { ...acc }));
        }
        return acc;
      };
    },
  };
  return b;
}

/**
 * @param {{store, queue, timer, wakeup}} backend
 * @param {object} [opts]
 * @param {() => Date} [opts.now]          injectable clock (default: wall clock)
 * @param {number} [opts.maxAttempts=10]
 * @param {number} [opts.baseDelayMs=1000] retry back-off base (and the unregistered-flow park)
 * @param {number} [opts.maxDelayMs=60000]
 * @param {'park'|'fail'} [opts.drift='park']
 * @param {number} [opts.batchMax=20]
 * @param {number} [opts.leaseMs=30000]
 * @param {() => string} [opts.newId]      child run ids
 * @param {string} [opts.name]             label used in events
 * @param {{sink?: {record(e): unknown}, level?: 'all'|'lifecycle'|'off'}} [opts.observe]
 *        core's durable event log: `run.started` (first attempt), `step.finished`
 *        (`{ cursorKey }`, a step that ran), `run.suspended` (`{ status }`), `run.completed`,
 *        `run.failed` (`{ error }`), each awaited after its write as core does; a sink that
 *        throws or rejects is swallowed (counted in `engine.sinkErrors`).
 */
export function createEngine(backend, opts = {}) {
  const { store, queue, timer, wakeup } = backend;
  const clock = opts.now ?? (() => new Date());
  const nowMs = () => clock().getTime();
  const cfg = {
    maxAttempts: opts.maxAttempts ?? 10,
    baseDelayMs: opts.baseDelayMs ?? 1000,
    maxDelayMs: opts.maxDelayMs ?? 60_000,
    drift: opts.drift ?? 'park',
    batchMax: opts.batchMax ?? 20,
    leaseMs: opts.leaseMs ?? 30_000,
  };
  const newId = opts.newId ?? randomUUID;
  const flows = new Map();

  // Observability for tests.
  const events = []; // { type, runId, ... }
  const errors = []; // { runId, error } — a tick that threw (lease left to expire)
  const terminalWrites = new Map(); // runId -> [status, …] as issued by this engine
  const stats = { ticks: 0, claimed: 0, due: 0 };
  const emit = (type, runId, extra) => events.push({ type, runId, engine: opts.name, ...extra });

  // core's observer (observe.ts): level 'lifecycle' records run events only; never load-bearing.
  const sink = opts.observe?.sink;
  const level = opts.observe?.level ?? 'off';
  const sinkErrors = [];
  const observe = async (type, runId, data) => {
    if (!sink || level === 'off' || (level === 'lifecycle' && !type.startsWith('run.'))) return;
    try {
      await sink.record(data === undefined ? { runId, type, at: clock() } : { runId, type, at: clock(), data });
    } catch (e) {
      sinkErrors.push(e);
    }
  };

  // ---------------------------------------------------------------------------------------
  // registration
  // ---------------------------------------------------------------------------------------

  function register(name, version, fn, flowOpts = {}) {
    if (typeof fn !== 'function') throw new TypeError('register: fn must be a function');
    flows.set(flowKey(name, version), { name, version, fn, maxAttempts: flowOpts.maxAttempts });
    return engine;
  }

  function unregister(name, version) {
    flows.delete(flowKey(name, version));
  }

  // ---------------------------------------------------------------------------------------
  // flow context
  // ---------------------------------------------------------------------------------------

  function makeCtx(snap, attempt) {
    const run = snap.run;
    const depth = run.depth ?? 0;
    let n = 0;
    const consumed = new Set();
    const nextKey = () => `s${n++}`;

    const memo = (key, shape) => {
      const m = snap.steps.get(key);
      if (!m) return undefined;
      if (m.shape !== shape) throw new Drift(key, m.shape, shape);
      return m;
    };
    const checkpoint = (key, result, shape, fx) =>
      store.checkpointStep({ runId: run.id, cursorKey: key, status: 'ok', result, attempts: attempt, shape }, fx);

    const childSpec = (c, cursorKey) => ({
      name: c.flow,
      version: c.version,
      input: c.input,
      parentRunId: run.id,
      parentCursorKey: cursorKey,
      depth: depth + 1,
      createdAt: clock(),
    });
    const checkDepth = () => {
      if (depth + 1 > MAX_DEPTH)
        throw new PermanentError('DEPTH_EXCEEDED', `child depth ${depth + 1} exceeds ${MAX_DEPTH}`);
    };
    const childFailed = (id, row) =>
      new PermanentError('CHILD_FAILED', `child ${id} ${row ? `ended ${row.status}` : 'is gone'}`);

    return {
      runId: run.id,
      attempt,
      get replaying() {
        return n < snap.steps.size;
      },

      async step(name, fn) {
        const key = nextKey();
        const shape = `step:${name}`;
        const m = memo(key, shape);
        if (m) return m.result;
        const result = await fn();
        const won = await checkpoint(key, result, shape);
        await observe('step.finished', run.id, { cursorKey: key });
        return won.result;
      },

      async sleep(ms) {
        const key = nextKey();
        const m = memo(key, 'sleep');
        let wakeAt;
        if (m) {
          wakeAt = Date.parse(m.result);
        } else {
          const won = await checkpoint(key, new Date(nowMs() + ms).toISOString(), 'sleep');
          wakeAt = Date.parse(won.result);
        }
        if (wakeAt > nowMs()) throw new Suspend('sleep', wakeAt);
      },

      async waitForSignal(name) {
        const key = nextKey();
        const shape = `signal:${name}`;
        const m = memo(key, shape);
        if (m) return m.result;
        const sig = snap.signals.find((s) => s.name === name && !consumed.has(s.id));
        if (!sig) throw new Suspend('signal');
        consumed.add(sig.id);
        const won = await checkpoint(key, sig.payload, shape, { consumeSignals: [sig.id] });
        return won.result;
      },

      async invoke(flow, version, input) {
        checkDepth();
        const key = nextKey();
        const shape = `invoke:${flow}@${version}`;
        const m = memo(key, shape);
        let childId;
        if (m) {
          childId = m.result;
        } else {
          const id = newId();
          const won = await checkpoint(key, id, shape, {
            spawn: [{ runId: id, spec: childSpec({ flow, version, input }, key) }],
            joinTarget: { runId: run.id, count: 1 },
          });
          childId = won.result;
        }
        const row = await store.loadRunRow(childId);
        if (!row || NON_SUCCESS_TERMINAL.includes(row.status)) throw childFailed(childId, row);
        if (row.status === 'done') return row.output;
        throw new Suspend('child');
      },

      async all(children) {
        const total = children.length;
        if (total > MAX_CHILDREN) {
          throw new PermanentError('FANOUT_TOO_LARGE', `fan-out of ${total} exceeds ${MAX_CHILDREN} children`);
        }
        if (total === 0) return [];
        checkDepth();
        const ids = [];
        for (let i = 0; i * CHUNK < total; i++) {
          const key = nextKey();
          const shape = `all:${total}:${i}`;
          const m = memo(key, shape);
          if (m) {
            ids.push(...m.result);
            continue;
          }
          const chunk = children.slice(i * CHUNK, (i + 1) * CHUNK);
          const chunkIds = chunk.map(() => newId());
          const fx = { spawn: chunk.map((c, j) => ({ runId: chunkIds[j], spec: childSpec(c, key) })) };
          if (i === 0) fx.joinTarget = { runId: run.id, count: total };
          const won = await checkpoint(key, chunkIds, shape, fx);
          ids.push(...won.result);
        }
        const key = nextKey();
        const shape = `all:${total}:join`;
        const m = memo(key, shape);
        if (m) return m.result;
        const rows = await store.loadRunRows(ids);
        rows.forEach((row, i) => {
          if (!row || NON_SUCCESS_TERMINAL.includes(row.status)) throw childFailed(ids[i], row);
        });
        if (!rows.every((r) => r.status === 'done')) throw new Suspend('child');
        const won = await checkpoint(
          key,
          rows.map((r) => r.output),
          shape,
        );
        return won.result;
      },
    };
  }

  // ---------------------------------------------------------------------------------------
  // one worker cycle (§11.1)
  // ---------------------------------------------------------------------------------------

  const ack = (lease) => queue.ack(lease, { now: clock() });

  async function parkRetrying(runId, delayMs, reason) {
    await store.suspendRun(runId, 'retrying', { timers: [{ runId, fireAt: new Date(nowMs() + delayMs) }] });
    await observe('run.suspended', runId, { status: 'retrying' });
    emit('park', runId, { status: 'retrying', reason });
  }

  /** Completion / permanent failure (§11.1 f, last bullet). */
  async function complete(run, outcome) {
    await store.markTerminal(run.id, outcome);
    const list = terminalWrites.get(run.id) ?? [];
    list.push(outcome.status);
    terminalWrites.set(run.id, list);
    emit('terminal', run.id, { status: outcome.status });
    if (outcome.status !== 'done') {
      for (const child of await store.childrenOf(run.id)) {
        if (!isTerminal(child.status)) await cancelRun(child.id);
      }
    }
    if (outcome.status === 'done') await observe('run.completed', run.id);
    else if (outcome.status === 'failed') await observe('run.failed', run.id, { error: outcome.error });
    if (run.parentRunId) {
      const left = await store.arriveAtJoin(run.parentRunId);
      if ((left !== undefined && left <= 0) || outcome.status !== 'done') await queue.enqueue(run.parentRunId);
    }
    await wakeup.signal(run.id);
  }

  async function runTick(lease) {
    // a. load
    const snap = await store.loadRun(lease.runId);
    if (!snap) {
      await ack(lease);
      emit('gone', lease.runId);
      return 'gone';
    }
    const run = snap.run;
    if (isTerminal(run.status)) {
      await ack(lease);
      emit('skip-terminal', run.id, { status: run.status });
      return 'terminal';
    }
    // b. registered?
    const def = flows.get(flowKey(run.name, run.version));
    if (!def) {
      await parkRetrying(run.id, cfg.baseDelayMs, 'unregistered');
      await ack(lease);
      return 'unregistered';
    }
    // c. parent gone bad?
    if (run.parentRunId) {
      const parent = await store.loadRunRow(run.parentRunId);
      if (parent && NON_SUCCESS_TERMINAL.includes(parent.status)) {
        await cancelRun(run.id);
        emit('parent-failed', run.id, { parent: parent.id });
        await ack(lease);
        return 'canceled';
      }
    }
    // d. attempt budget
    const maxAttempts = def.maxAttempts ?? cfg.maxAttempts;
    const attempt = await store.markRunning(run.id);
    emit('running', run.id, { attempt });
    if (attempt === 1) await observe('run.started', run.id);
    if (attempt > maxAttempts) {
      await complete(run, {
        status: 'failed',
        error: { code: 'RUN_ATTEMPTS_EXHAUSTED', message: `attempt ${attempt} exceeds maxAttempts ${maxAttempts}` },
      });
      await ack(lease);
      return 'failed';
    }
    // e. the body, against the snapshot loaded in a.
    let outcome;
    try {
      const output = await def.fn(makeCtx(snap, attempt), run.input);
      outcome = { status: 'done', output };
    } catch (e) {
      if (e instanceof Suspend) {
        // f. parks
        if (e.kind === 'sleep') {
          await store.suspendRun(run.id, 'sleeping', { timers: [{ runId: run.id, fireAt: new Date(e.wakeAt) }] });
          await observe('run.suspended', run.id, { status: 'sleeping' });
          emit('park', run.id, { status: 'sleeping', wakeAt: e.wakeAt });
        } else if (e.kind === 'child') {
          await store.suspendRun(run.id, 'awaiting_child');
          await observe('run.suspended', run.id, { status: 'awaiting_child' });
          emit('park', run.id, { status: 'awaiting_child' });
        } else {
          await store.suspendRun(run.id, 'awaiting_signal');
          await observe('run.suspended', run.id, { status: 'awaiting_signal' });
          emit('park', run.id, { status: 'awaiting_signal' });
        }
        await ack(lease);
        return e.kind;
      }
      if (e instanceof Drift) {
        emit('drift', run.id, { key: e.key, stored: e.stored, issued: e.issued });
        if (cfg.drift === 'park') {
          await parkRetrying(run.id, cfg.baseDelayMs, 'drift');
          await ack(lease);
          return 'drift';
        }
        outcome = {
          status: 'failed',
          error: { code: 'REPLAY_DRIFT', message: `${e.key}: memo ${e.stored} vs call ${e.issued}` },
        };
      } else {
        const retryable = !(e && e.retryable === false);
        if (retryable && attempt < maxAttempts) {
          const delay = Math.min(cfg.baseDelayMs * 2 ** (attempt - 1), cfg.maxDelayMs);
          await parkRetrying(run.id, delay, flowError(e).code);
          await ack(lease);
          return 'retrying';
        }
        outcome = { status: 'failed', error: flowError(e) };
      }
    }
    await complete(run, outcome);
    await ack(lease);
    return outcome.status;
  }

  /** §11.1 step 1: the due timers (at most `limit`) fired, each enqueued; returns their ids. */
  async function fireDueTimers(limit = cfg.batchMax) {
    const due = await timer.dueBatch({ now: clock(), limit });
    await Promise.all(due.map((id) => queue.enqueue(id)));
    return due;
  }

  /** §11.1: timers → enqueue, claim, then each lease sequentially. */
  async function tickOnce(tickOpts = {}) {
    const batchMax = tickOpts.batchMax ?? cfg.batchMax;
    const leaseMs = tickOpts.leaseMs ?? cfg.leaseMs;
    stats.ticks++;
    const due = await fireDueTimers(batchMax);
    const leases = await queue.claim({ limit: batchMax, leaseMs, now: clock() });
    stats.due += due.length;
    stats.claimed += leases.length;
    const results = [];
    for (const lease of leases) {
      try {
        results.push({ runId: lease.runId, result: await runTick(lease) });
      } catch (error) {
        // The lease is left to expire; another cycle re-drives the run.
        errors.push({ runId: lease.runId, error });
        results.push({ runId: lease.runId, result: 'error', error });
      }
    }
    return { due: due.length, claimed: leases.length, results };
  }

  // ---------------------------------------------------------------------------------------
  // other entry points (§11.2, §11.3)
  // ---------------------------------------------------------------------------------------

  async function submit(name, version, input, subOpts = {}) {
    const res = await store.startRun({
      name,
      version,
      input,
      idempotencyKey: subOpts.idempotencyKey,
      tags: subOpts.tags,
      depth: 0,
      createdAt: clock(),
    });
    if (res.created) await queue.enqueue(res.runId, { runAt: subOpts.runAt, priority: subOpts.priority });
    return res;
  }

  /**
   * §11.2 submitMany: `startManyRuns` over every spec (depth 0, now), then the created runs
   * enqueued in parallel. `specs`: `[{ name, version, input, idempotencyKey?, tags?, runAt?,
   * priority? }]`; returns startManyRuns' answers, aligned with `specs`.
   */
  async function submitMany(specs) {
    const createdAt = clock();
    const res = await store.startManyRuns(
      specs.map((s) => ({
        name: s.name,
        version: s.version,
        input: s.input,
        idempotencyKey: s.idempotencyKey,
        tags: s.tags,
        depth: 0,
        createdAt,
      })),
    );
    await Promise.all(
      res.map((r, i) =>
        r.created ? queue.enqueue(r.runId, { runAt: specs[i].runAt, priority: specs[i].priority }) : undefined,
      ),
    );
    return res;
  }

  async function signal(runId, name, payload, sigOpts) {
    const res = await store.postSignal(runId, name, payload, sigOpts);
    if (res.delivered) await wakeup.signal(runId);
    return res;
  }

  async function cancelRun(runId) {
    await store.markTerminal(runId, { status: 'canceled' }, { cancelTimers: [runId] });
    emit('cancel', runId);
    await wakeup.signal(runId);
    for (const child of await store.childrenOf(runId)) {
      if (!isTerminal(child.status)) await cancelRun(child.id);
    }
  }

  async function retry(runId) {
    const res = await store.retryRun(runId);
    if (res.retried) await wakeup.signal(runId);
    return res;
  }

  async function reconcile(recOpts = {}) {
    const ids = await store.orphanedRuns(recOpts.limit ?? cfg.batchMax);
    await Promise.all(ids.map((id) => queue.enqueue(id)));
    for (const id of ids) emit('reconciled', id);
    return ids;
  }

  async function registerCron(name, spec) {
    await store.upsertCron({
      name,
      schedule: '* * * * *',
      flowName: spec.flow,
      flowVersion: spec.version,
      input: spec.input,
      overlap: spec.overlap,
      nextRunAt: new Date(nextMinute(nowMs())),
    });
  }

  /** §11.2 runDueCrons; returns the run ids this call created. */
  async function runDueCrons() {
    const now = clock();
    const created = [];
    for (const row of await store.dueCrons(now, 100)) {
      const next = new Date(nextMinute(now.getTime()));
      const tag = `cron:${row.name}`;
      if (row.overlap === 'skip') {
        const live = await store.listRuns({ status: ACTIVE, tag }, { limit: 1 });
        if (live.runs.length > 0) {
          await store.advanceCron(row.name, row.nextRunAt, next, now);
          emit('cron-skip', live.runs[0].id, { cron: row.name });
          continue;
        }
      }
      const res = await store.startRun({
        name: row.flowName,
        version: row.flowVersion,
        input: row.input,
        idempotencyKey: `${tag}:${row.nextRunAt.getTime()}`,
        tags: [tag],
        createdAt: now,
      });
      if (res.created) {
        await queue.enqueue(res.runId);
        created.push(res.runId);
        emit('cron-fire', res.runId, { cron: row.name });
      }
      await store.advanceCron(row.name, row.nextRunAt, next, now);
    }
    return created;
  }

  function prune(olderThanMs, limit = 1000) {
    return store.deleteRunsOlderThan(new Date(nowMs() - olderThanMs), limit);
  }

  /**
   * §11.2 result: poll loadRunRow until terminal, waiting on the wakeup between reads (real time).
   * Resolves the output of a `done` run; rejects with an Error carrying `status` and `error` otherwise.
   */
  async function result(runId, { timeoutMs = 10_000, pollMs = 500 } = {}) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const row = await store.loadRunRow(runId);
      if (!row) throw new Error(`run ${runId} not found`);
      if (row.status === 'done') return row.output;
      if (isTerminal(row.status)) {
        const err = new Error(`run ${runId} ${row.status}${row.error ? `: ${row.error.message}` : ''}`);
        err.status = row.status;
        err.error = row.error;
        throw err;
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error(`run ${runId} still ${row.status} after ${timeoutMs} ms`);
      await wakeup.wait(runId, Math.min(pollMs, remaining));
    }
  }

  const engine = {
    backend,
    config: cfg,
    events,
    sinkErrors,
    errors,
    terminalWrites,
    stats,
    register,
    unregister,
    tickOnce,
    fireDueTimers,
    submit,
    submitMany,
    signal,
    cancelRun,
    retry,
    reconcile,
    registerCron,
    runDueCrons,
    prune,
    result,
    status: (runId) => store.loadRun(runId),
  };
  return engine;
}
