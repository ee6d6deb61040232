'use strict';
// createMysqlBackend(): the four ports. Arguments are validated and snapshotted (JSON-encoded)
// synchronously here; every method is then ONE call into Rust, which runs the whole unit of
// work. Results come back as JSON text and are shaped into the contract's values (undefined for
// absent fields, real Dates, a fresh Map of steps).
const { randomUUID } = require('node:crypto');
const binding = require('./binding');
const { nativeOf } = require('./sql');
const { createWakeup } = require('./wakeup');
const c = require('./check');

const RUN_STATUSES = ['pending', 'running', 'sleeping', 'awaiting_signal', 'awaiting_child', 'retrying', 'done', 'failed', 'canceled'];
const SUSPEND_STATUSES = ['sleeping', 'awaiting_signal', 'awaiting_child', 'retrying'];
const TERMINAL_STATUSES = ['done', 'failed', 'canceled'];
const MAX_CLAIM = 10000;
const MAX_BATCH = 100000;
const INT64 = Number.MAX_SAFE_INTEGER;

// ---- shaping (JSON from Rust → contract values) --------------------------------------------

function mapRun(r) {
  return {
    id: r.id,
    name: r.name,
    version: r.version,
    status: r.status,
    input: r.input,
    attempts: r.attempts,
    output: r.output,
    error: r.error,
    idempotencyKey: r.idempotencyKey,
    tags: r.tags,
    parentRunId: r.parentRunId,
    parentCursorKey: r.parentCursorKey,
    depth: r.depth,
    createdAt: new Date(r.createdAt),
  };
}

function mapStep(s) {
  return { status: s.status, result: s.result, error: s.error, attempts: s.attempts, shape: s.shape };
}

function mapCron(r) {
  return {
    name: r.name,
    schedule: r.schedule,
    flowName: r.flowName,
    flowVersion: r.flowVersion,
    input: r.input,
    overlap: r.overlap,
    nextRunAt: new Date(r.nextRunAt),
    lastRunAt: r.lastRunAt === undefined ? undefined : new Date(r.lastRunAt),
  };
}

function zeroRunStats() {
  const out = {};
  for (const s of RUN_STATUSES) out[s] = 0;
  return out;
}

// ---- argument encoding --------------------------------------------------------------------

/** `null` counts as absent for optional fields, as in the JavaScript package (`?? default`). */
const absent = (v) => v === undefined || v === null;

function specOf(spec, name, { emptyKeyIsAbsent = true } = {}) {
  c.obj(spec, name);
  const tags = absent(spec.tags) ? undefined : c.arr(spec.tags, `${name}.tags`);
  if (tags) tags.forEach((t, i) => c.longStr(t, `${name}.tags[${i}]`));
  const key = spec.idempotencyKey;
  return {
    name: c.str(spec.name, `${name}.name`),
    version: c.int(spec.version, `${name}.version`),
    input: c.json(spec.input, `${name}.input`),
    // startRun treats "" as no key; a spawn stores "" as a key (both as the JavaScript package).
    idempotencyKey: absent(key) || (key === '' && emptyKeyIsAbsent) ? undefined : c.str(key, `${name}.idempotencyKey`),
    tags: c.json(tags, `${name}.tags`),
    parentRunId: absent(spec.parentRunId) ? undefined : c.str(spec.parentRunId, `${name}.parentRunId`),
    parentCursorKey: absent(spec.parentCursorKey) ? undefined : c.str(spec.parentCursorKey, `${name}.parentCursorKey`),
    depth: absent(spec.depth) ? 0 : c.int(spec.depth, `${name}.depth`),
    createdAt: absent(spec.createdAt) ? Date.now() : c.ms(spec.createdAt, `${name}.createdAt`),
  };
}

function enqueueOpts(opts, name) {
  if (opts === undefined || opts === null) return { runAt: 0, priority: 0 };
  c.obj(opts, name);
  return {
    runAt: opts.runAt ? c.ms(opts.runAt, `${name}.runAt`) : 0,
    priority: absent(opts.priority) ? 0 : c.int(opts.priority, `${name}.priority`),
  };
}

function idList(v, name) {
  return c.arr(v, name).map((x, i) => c.str(x, `${name}[${i}]`));
}

function outboxOf(fx, name) {
  if (fx === undefined || fx === null) return undefined;
  c.obj(fx, name);
  const out = {};
  if (fx.spawn !== undefined) {
    out.spawn = c.arr(fx.spawn, `${name}.spawn`).map((s, i) => {
      const n = `${name}.spawn[${i}]`;
      c.obj(s, n);
      const e = enqueueOpts(s.enqueue, `${n}.enqueue`);
      const spec = specOf(s.spec, `${n}.spec`, { emptyKeyIsAbsent: false });
      return { runId: c.str(s.runId, `${n}.runId`), spec, runAt: e.runAt, priority: e.priority };
    });
  }
  if (fx.enqueue !== undefined) {
    out.enqueue = c.arr(fx.enqueue, `${name}.enqueue`).map((e, i) => {
      const n = `${name}.enqueue[${i}]`;
      c.obj(e, n);
      return { runId: c.str(e.runId, `${n}.runId`), ...enqueueOpts(e.opts, `${n}.opts`) };
    });
  }
  if (fx.timers !== undefined) {
    out.timers = c.arr(fx.timers, `${name}.timers`).map((t, i) => {
      const n = `${name}.timers[${i}]`;
      c.obj(t, n);
      return { runId: c.str(t.runId, `${n}.runId`), fireAt: c.ms(t.fireAt, `${n}.fireAt`) };
    });
  }
  if (fx.cancelTimers !== undefined) out.cancelTimers = idList(fx.cancelTimers, `${name}.cancelTimers`);
  if (fx.consumeSignals !== undefined) out.consumeSignals = idList(fx.consumeSignals, `${name}.consumeSignals`);
  if (fx.joinTarget !== undefined && fx.joinTarget !== null) {
    c.obj(fx.joinTarget, `${name}.joinTarget`);
    out.joinTarget = {
      runId: c.str(fx.joinTarget.runId, `${name}.joinTarget.runId`),
      count: c.int(fx.joinTarget.count, `${name}.joinTarget.count`),
    };
  }
  return out;
}

function statusList(s, name) {
  if (s === undefined) return undefined;
  const list = Array.isArray(s) ? [...s] : [s];
  list.forEach((x, i) => c.oneOf(x, RUN_STATUSES, `${name}[${i}]`));
  return list;
}

// ---- the wrapped-Sql bridge ---------------------------------------------------------------

/** JSON replacer for driver rows: BigInt as digits, Buffer (binary-collated text) as UTF-8. */
function jsonSafe(key, value) {
  const raw = this[key]; // before Buffer#toJSON turned it into { type, data }
  if (Buffer.isBuffer(raw)) return raw.toString('utf8');
  if (typeof value === 'bigint') return value.toString();
  return value;
}

/**
 * `(request JSON) => Promise<answer JSON>` over any object with query/exec (see jsexec.rs).
 * The first rejection is kept in `seen.error` so the caller gets its own error object back.
 */
function bridge(sql, seen) {
  return async (request) => {
    try {
      const { q, t, p } = JSON.parse(request);
      if (q) return JSON.stringify((await sql.query(t, p)) ?? [], jsonSafe);
      const r = await sql.exec(t, p);
      return JSON.stringify({ affectedRows: Number(r?.affectedRows ?? 0), insertId: Number(r?.insertId ?? 0) });
    } catch (e) {
      if (seen.error === undefined) seen.error = e;
      throw e;
    }
  };
}

// ---- the backend --------------------------------------------------------------------------

function createMysqlBackend(sql, opts = {}) {
  if (opts === null || typeof opts !== 'object') throw new TypeError('createMysqlBackend: opts must be an object');
  const prefix = opts.prefix === undefined ? '' : opts.prefix;
  if (typeof prefix !== 'string') throw new TypeError('createMysqlBackend: opts.prefix must be a string');
  binding.checkPrefix(prefix);
  if (opts.id !== undefined && typeof opts.id !== 'function') throw new TypeError('createMysqlBackend: opts.id must be a function');
  const customId = opts.id;
  /** One id from the user's generator (a non-empty string); token halves may be any length. */
  const generated = () => {
    const v = customId();
    if (typeof v !== 'string' || v.length === 0) throw new TypeError('opts.id() must return a non-empty string');
    return v;
  };
  // Run and signal ids go into VARCHAR(191) keys: refused up front, like any other id.
  const newId = customId ? () => c.str(generated(), 'the id returned by opts.id()') : randomUUID;

  // For claim: the user's generator is asked for exactly as many ids as rows get leased.
  const idBatch = customId ? (n) => JSON.stringify(Array.from({ length: n }, generated)) : undefined;

  const native = nativeOf(sql);
  let nb;
  let run;
  if (native) {
    nb = binding.NativeBackend.native(native, prefix);
    run = (_tx, method, args) => sql.track(() => nb[method](...args));
  } else {
    if (!sql || typeof sql.query !== 'function' || typeof sql.exec !== 'function' || typeof sql.tx !== 'function') {
      throw new TypeError('createMysqlBackend: sql must be mysqlPool(...) or an object with query, exec and tx');
    }
    nb = binding.NativeBackend.wrapped(prefix);
    // The caller's own driver error (with its code/errno) is rethrown, not Rust's copy of it.
    run = (tx, method, args) => {
      const seen = { error: undefined };
      const unit = (target) => nb[method](...args, bridge(target, seen));
      const p = tx ? sql.tx(unit) : unit(sql);
      return p.catch((e) => {
        throw seen.error !== undefined ? seen.error : e;
      });
    };
  }
  // Validation errors reject (port methods always return promises).
  const call = (tx, method, build) => {
    let args;
    try {
      args = build();
    } catch (e) {
      return Promise.reject(e);
    }
    return run(tx, method, args);
  };
  const parse = (p) => p.then((s) => JSON.parse(s));
  const none = (p) => p.then(() => undefined);

  const store = {
    startRun(spec) {
      return parse(call(false, 'startRun', () => [newId(), specOf(spec, 'spec')]));
    },
    startManyRuns(specs) {
      return parse(
        call(true, 'startManyRuns', () => {
          c.arr(specs, 'specs');
          if (specs.length > MAX_BATCH) throw new RangeError(`specs: at most ${MAX_BATCH} specs per call`);
          const encoded = specs.map((s, i) => specOf(s, `specs[${i}]`));
          return [encoded.map(() => newId()), encoded];
        }),
      );
    },
    async loadRun(runId) {
      const text = await call(false, 'loadRun', () => [c.str(runId, 'runId')]);
      const snap = JSON.parse(text);
      if (snap === null) return undefined;
      return {
        run: mapRun(snap.run),
        steps: new Map(snap.steps.map(([key, s]) => [key, mapStep(s)])),
        signals: snap.signals.map((g) => ({ id: g.id, name: g.name, payload: g.payload })),
      };
    },
    async loadRunRow(runId) {
      const r = JSON.parse(await call(false, 'loadRunRow', () => [c.str(runId, 'runId')]));
      return r === null ? undefined : mapRun(r);
    },
    async loadRunRows(runIds) {
      let ids;
      try {
        ids = idList(runIds, 'runIds');
      } catch (e) {
        return Promise.reject(e);
      }
      if (ids.length === 0) return [];
      const rows = JSON.parse(await run(false, 'loadRunRows', [ids]));
      const byId = new Map(rows.map((r) => [r.id, r]));
      return ids.map((id) => {
        const r = byId.get(id);
        return r === undefined ? undefined : mapRun(r);
      });
    },
    async arriveAtJoin(parentRunId) {
      const v = JSON.parse(await call(true, 'arriveAtJoin', () => [c.str(parentRunId, 'parentRunId')]));
      return v === null ? undefined : v;
    },
    async postSignal(runId, name, payload, opts) {
      const text = await call(true, 'postSignal', () => {
        const raw = absent(opts) ? undefined : c.obj(opts, 'opts').idempotencyKey;
        const key = absent(raw) ? undefined : raw;
        return [
          newId(),
          c.str(runId, 'runId'),
          c.str(name, 'name'),
          c.json(payload, 'payload'),
          c.optStr(key, 'opts.idempotencyKey'),
        ];
      });
      return { delivered: text === 'true' };
    },
    async markRunning(runId) {
      return Number(await call(false, 'markRunning', () => [c.str(runId, 'runId')]));
    },
    async checkpointStep(cp, fx) {
      const text = await call(fx !== undefined && fx !== null, 'checkpointStep', () => {
        c.obj(cp, 'checkpoint');
        return [
          {
            runId: c.str(cp.runId, 'checkpoint.runId'),
            cursorKey: c.str(cp.cursorKey, 'checkpoint.cursorKey'),
            status: c.oneOf(cp.status, ['ok'], 'checkpoint.status'),
            result: c.json(cp.result, 'checkpoint.result'),
            error: c.json(cp.error, 'checkpoint.error'),
            attempts: c.int(cp.attempts, 'checkpoint.attempts'),
            shape: c.optStr(cp.shape, 'checkpoint.shape'),
          },
          outboxOf(fx, 'outbox'),
        ];
      });
      return mapStep(JSON.parse(text));
    },
    suspendRun(runId, status, fx) {
      return none(
        call(fx !== undefined && fx !== null, 'suspendRun', () => [
          c.str(runId, 'runId'),
          c.oneOf(status, SUSPEND_STATUSES, 'status'),
          outboxOf(fx, 'outbox'),
        ]),
      );
    },
    markTerminal(runId, outcome, fx) {
      return none(
        call(fx !== undefined && fx !== null, 'markTerminal', () => {
          c.obj(outcome, 'outcome');
          const status = c.oneOf(outcome.status, TERMINAL_STATUSES, 'outcome.status');
          const done = status === 'done';
          return [
            c.str(runId, 'runId'),
            status,
            done ? c.json(outcome.output, 'outcome.output') : undefined,
            done ? undefined : c.json(outcome.error, 'outcome.error'),
            outboxOf(fx, 'outbox'),
          ];
        }),
      );
    },
    async listRuns(filter, page) {
      // The JavaScript package turns `status: null` into `IN (NULL)`: a page that matches nothing.
      if (filter !== null && typeof filter === 'object' && filter.status === null) return { runs: [], cursor: undefined };
      let limit;
      const text = await call(false, 'listRuns', () => {
        c.obj(filter, 'filter');
        c.obj(page, 'page');
        limit = c.int(page.limit, 'page.limit', 0, INT64);
        let cursor;
        if (page.cursor !== undefined && page.cursor !== '') {
          cursor = Number(page.cursor);
          if (typeof page.cursor !== 'string' || !Number.isSafeInteger(cursor)) {
            throw new TypeError('page.cursor must be a cursor string returned by listRuns');
          }
        }
        return [
          {
            statuses: statusList(filter.status, 'filter.status'),
            name: filter.name ? c.str(filter.name, 'filter.name') : undefined,
            tag: filter.tag ? c.longStr(filter.tag, 'filter.tag') : undefined,
            cursor,
            limit,
          },
        ];
      });
      const rows = JSON.parse(text);
      const last = rows[rows.length - 1];
      return {
        runs: rows.map(mapRun),
        cursor: rows.length === limit && last ? String(last.seq) : undefined,
      };
    },
    async childrenOf(runId) {
      return JSON.parse(await call(false, 'childrenOf', () => [c.str(runId, 'runId')])).map(mapRun);
    },
    async runStats() {
      return Object.assign(zeroRunStats(), JSON.parse(await run(false, 'runStats', [])));
    },
    async orphanedRuns(limit) {
      return JSON.parse(await call(false, 'orphanedRuns', () => [c.int(limit, 'limit', 0, INT64)]));
    },
    async deleteRunsOlderThan(before, limit) {
      return Number(
        await call(true, 'deleteRunsOlderThan', () => [c.ms(before, 'before'), c.int(limit, 'limit', 0, MAX_BATCH)]),
      );
    },
    async retryRun(runId) {
      return { retried: (await call(true, 'retryRun', () => [c.str(runId, 'runId')])) === 'true' };
    },
    upsertCron(spec) {
      return none(
        call(false, 'upsertCron', () => {
          c.obj(spec, 'spec');
          if (typeof spec.schedule !== 'string' || spec.schedule.length > 255) {
            throw new TypeError('spec.schedule must be a string of at most 255 characters');
          }
          return [
            {
              name: c.str(spec.name, 'spec.name'),
              schedule: spec.schedule,
              flowName: c.str(spec.flowName, 'spec.flowName'),
              flowVersion: c.int(spec.flowVersion, 'spec.flowVersion'),
              input: c.json(spec.input, 'spec.input'),
              overlap: spec.overlap === undefined ? 'allow' : c.oneOf(spec.overlap, ['allow', 'skip'], 'spec.overlap'),
              nextRunAt: c.ms(spec.nextRunAt, 'spec.nextRunAt'),
            },
          ];
        }),
      );
    },
    async dueCrons(now, limit) {
      return JSON.parse(await call(false, 'dueCrons', () => [c.ms(now, 'now'), c.int(limit, 'limit', 0, INT64)])).map(mapCron);
    },
    async advanceCron(name, expectedNextRunAt, nextRunAt, lastRunAt) {
      const text = await call(false, 'advanceCron', () => [
        c.str(name, 'name'),
        c.ms(expectedNextRunAt, 'expectedNextRunAt'),
        c.ms(nextRunAt, 'nextRunAt'),
        c.ms(lastRunAt, 'lastRunAt'),
      ]);
      return text === 'true';
    },
  };

  const queue = {
    enqueue(runId, opts) {
      return none(
        call(false, 'enqueue', () => {
          const e = enqueueOpts(opts, 'opts');
          return [c.str(runId, 'runId'), e.runAt, e.priority];
        }),
      );
    },
    async claim(claimOpts) {
      let at;
      let leaseMs;
      const text = await call(true, 'claim', () => {
        c.obj(claimOpts, 'opts');
        const limit = c.int(claimOpts.limit, 'opts.limit', 0, MAX_CLAIM);
        leaseMs = c.int(claimOpts.leaseMs, 'opts.leaseMs', 0, INT64);
        at = c.optMs(claimOpts.now, 'opts.now', Date.now());
        c.expiry(at, leaseMs, 'opts.leaseMs');
        return [at, leaseMs, limit, idBatch];
      });
      const expires = at + leaseMs;
      return JSON.parse(text).map((l) => ({ runId: l.runId, token: l.token, expiresAt: new Date(expires), version: l.version }));
    },
    async heartbeat(lease, hbOpts) {
      let at;
      let leaseMs;
      await call(false, 'heartbeat', () => {
        c.obj(lease, 'lease');
        c.obj(hbOpts, 'opts');
        leaseMs = c.int(hbOpts.leaseMs, 'opts.leaseMs', 0, INT64);
        at = c.optMs(hbOpts.now, 'opts.now', Date.now());
        c.expiry(at, leaseMs, 'opts.leaseMs');
        return [c.str(lease.runId, 'lease.runId'), c.longStr(lease.token, 'lease.token'), at, leaseMs];
      });
      return { ...lease, expiresAt: new Date(at + leaseMs) };
    },
    ack(lease, ackOpts) {
      return none(
        call(false, 'ack', () => {
          c.obj(lease, 'lease');
          const now = ackOpts === undefined || ackOpts === null ? undefined : c.obj(ackOpts, 'opts').now;
          return [
            c.str(lease.runId, 'lease.runId'),
            c.longStr(lease.token, 'lease.token'),
            c.int(lease.version, 'lease.version', 0, INT64),
            c.optMs(now, 'opts.now', Date.now()),
          ];
        }),
      );
    },
    async depth(now) {
      return JSON.parse(await call(false, 'depth', () => [c.ms(now, 'now')]));
    },
  };

  const timer = {
    schedule(runId, fireAt) {
      return none(call(false, 'schedule', () => [c.str(runId, 'runId'), c.ms(fireAt, 'fireAt')]));
    },
    async dueBatch(dueOpts) {
      return JSON.parse(
        await call(true, 'dueBatch', () => {
          c.obj(dueOpts, 'opts');
          return [c.optMs(dueOpts.now, 'opts.now', Date.now()), c.int(dueOpts.limit, 'opts.limit', 0, MAX_CLAIM)];
        }),
      );
    },
    cancel(runId) {
      return none(call(false, 'cancelTimer', () => [c.str(runId, 'runId')]));
    },
  };

  return { store, queue, timer, wakeup: createWakeup() };
}

module.exports = { createMysqlBackend, RUN_STATUSES, TERMINAL_STATUSES };
