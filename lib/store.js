'use strict';
// Store port: runs, step memos, signals, crons (docs/contract.md, "Store"). Under the 3.0
// contract it also has the bulk operations and the cron listing of 2.5/3.0, checkpoints take and
// answer `call` instead of `shape`, and a fenced checkpoint answers `committed: false`.
const c = require('./check');
const enc = require('./encode');
const { mappers } = require('./shapes');

const { absent } = c;
const SUSPEND_STATUSES = ['sleeping', 'awaiting_signal', 'awaiting_child', 'retrying'];
const MAX_BATCH = 100000;
const INT64 = Number.MAX_SAFE_INTEGER;

const parse = (p) => p.then((s) => JSON.parse(s));
const none = (p) => p.then(() => undefined);
const optional = (p) => p.then((v) => (v === null ? undefined : v));

/**
 * A `StartResult`; a created run answers the id as `opts.id` made it (Rust holds it as UTF-8, with
 * any lone UTF-16 surrogate replaced, as the column stores it), as the JavaScript package answers.
 */
const created = (r, id) => (r.created && r.runId !== id ? { ...r, runId: id } : r);

function zeroRunStats() {
  const out = {};
  for (const s of enc.RUN_STATUSES) out[s] = 0;
  return out;
}

/**
 * The store over `call` (lib/call.js); `newId()` makes run and signal ids; `contract` is
 * '2.0.0-alpha.2' or '3.0.0'.
 */
function createStore(call, newId, contract) {
  const v3 = contract === '3.0.0';
  const { mapCron, mapRun, mapSignal, mapStep } = mappers(contract);
  const spec = (s, name, opts) => enc.specOf(s, name, { ...opts, v3 });
  const outbox = (fx) => enc.outboxOf(fx, 'outbox', { v3 });
  /** A run-set filter for a bulk operation, or undefined when nothing is eligible. */
  const runSet = (filter, method, eligible) => enc.runSetOf(filter, 'filter', method, eligible);
  const bulk = (method, filter, limit, eligible) => {
    let set;
    try {
      set = runSet(filter, method, eligible);
      c.int(limit, 'limit', 0, MAX_BATCH);
    } catch (e) {
      return Promise.reject(e);
    }
    return set === undefined ? Promise.resolve(0) : call(method, () => [set, limit]);
  };

  const store = {
    async startRun(s) {
      let id;
      const out = await call('startRun', () => [(id = newId()), spec(s, 'spec')]);
      return created(out, id);
    },
    async startManyRuns(specs) {
      let ids;
      const text = await call('startManyRuns', () => {
        c.arr(specs, 'specs');
        if (specs.length > MAX_BATCH) throw c.rangeError(`specs: at most ${MAX_BATCH} specs per call`);
        const encoded = specs.map((s, i) => spec(s, `specs[${i}]`));
        ids = encoded.map(() => newId());
        return [enc.specRows(ids, encoded)];
      });
      return JSON.parse(text).map(([runId, isNew, status], i) => created({ runId, created: isNew, status }, ids[i]));
    },
    async loadRun(runId) {
      const text = await call('loadRun', () => [c.str(runId, 'runId')]);
      if (text === null) return undefined;
      const snap = JSON.parse(text);
      return {
        run: mapRun(snap.run),
        steps: new Map(snap.steps.map(([key, s]) => [key, mapStep(s)])),
        signals: snap.signals.map(mapSignal),
      };
    },
    async loadRunRow(runId) {
      const text = await call('loadRunRow', () => [c.str(runId, 'runId')]);
      return text === null ? undefined : mapRun(JSON.parse(text));
    },
    async loadRunRows(runIds) {
      const ids = enc.idList(runIds, 'runIds');
      if (ids.length === 0) return [];
      const rows = await parse(call('loadRunRows', () => [ids]));
      const byId = new Map(rows.map((r) => [r.id, r]));
      return ids.map((id) => {
        const r = byId.get(id);
        return r === undefined ? undefined : mapRun(r);
      });
    },
    arriveAtJoin(parentRunId) {
      return optional(call('arriveAtJoin', () => [c.str(parentRunId, 'parentRunId')]));
    },
    async postSignal(runId, name, payload, opts) {
      const delivered = await call('postSignal', () => {
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
      return { delivered };
    },
    markRunning(runId) {
      return call('markRunning', () => [c.str(runId, 'runId')]);
    },
    async checkpointStep(cp, fx) {
      const text = await call('checkpointStep', () => {
        c.obj(cp, 'checkpoint');
        return [
          {
            runId: c.str(cp.runId, 'checkpoint.runId'),
            cursorKey: c.str(cp.cursorKey, 'checkpoint.cursorKey'),
            status: c.oneOf(cp.status, ['ok'], 'checkpoint.status'),
            result: c.json(cp.result, 'checkpoint.result'),
            error: c.json(cp.error, 'checkpoint.error'),
            attempts: c.int(cp.attempts, 'checkpoint.attempts'),
            // The column `shape`; the 3.0 contract calls it `call`.
            shape: v3 ? c.optStr(cp.call, 'checkpoint.call') : c.optStr(cp.shape, 'checkpoint.shape'),
          },
          outbox(fx),
        ];
      });
      const memo = JSON.parse(text);
      // A fenced 3.0 checkpoint answers `{ status, attempts, committed: false }` as it is.
      return memo.committed === false ? memo : mapStep(memo);
    },
    suspendRun(runId, status, fx) {
      return none(
        call('suspendRun', () => [c.str(runId, 'runId'), c.oneOf(status, SUSPEND_STATUSES, 'status'), outbox(fx)]),
      );
    },
    markTerminal(runId, outcome, fx) {
      return none(
        call('markTerminal', () => {
          c.obj(outcome, 'outcome');
          const status = c.oneOf(outcome.status, enc.TERMINAL_STATUSES, 'outcome.status');
          const done = status === 'done';
          return [
            c.str(runId, 'runId'),
            status,
            done ? c.json(outcome.output, 'outcome.output') : undefined,
            done ? undefined : c.json(outcome.error, 'outcome.error'),
            outbox(fx),
          ];
        }),
      );
    },
    async listRuns(filter, page) {
      // The JavaScript packages turn `status: null` (and 3.0 `version: null`) into a comparison
      // with NULL: a page that matches nothing.
      const nulled =
        filter !== null && typeof filter === 'object' && (filter.status === null || (v3 && filter.version === null));
      if (nulled) return { runs: [], cursor: undefined };
      const text = await call('listRuns', () => {
        c.obj(filter, 'filter');
        c.obj(page, 'page');
        let cursor;
        if (!absent(page.cursor) && page.cursor !== '') {
          cursor = Number(page.cursor);
          if (typeof page.cursor !== 'string' || !Number.isSafeInteger(cursor)) {
            throw c.typeError('page.cursor must be a cursor string returned by listRuns');
          }
        }
        return [
          {
            statuses: enc.statusList(filter.status, 'filter.status'),
            name: filter.name ? c.str(filter.name, 'filter.name') : undefined,
            version: v3 && !absent(filter.version) ? c.int(filter.version, 'filter.version') : undefined,
            tag: filter.tag ? c.longStr(filter.tag, 'filter.tag') : undefined,
            cursor,
            limit: c.int(page.limit, 'page.limit', 0, INT64),
          },
        ];
      });
      const found = JSON.parse(text);
      return { runs: found.runs.map(mapRun), cursor: found.cursor };
    },
    async childrenOf(runId) {
      return (await parse(call('childrenOf', () => [c.str(runId, 'runId')]))).map(mapRun);
    },
    async runStats() {
      return Object.assign(zeroRunStats(), await parse(call('runStats', () => [])));
    },
    orphanedRuns(limit) {
      return call('orphanedRuns', () => [c.int(limit, 'limit', 0, INT64)]);
    },
    deleteRunsOlderThan(before, limit) {
      return call('deleteRunsOlderThan', () => [c.ms(before, 'before'), c.int(limit, 'limit', 0, MAX_BATCH)]);
    },
    async retryRun(runId) {
      return { retried: await call('retryRun', () => [c.str(runId, 'runId')]) };
    },
    upsertCron(s) {
      return none(
        call('upsertCron', () => {
          c.obj(s, 'spec');
          return [
            {
              name: c.str(s.name, 'spec.name'),
              schedule: c.str(s.schedule, 'spec.schedule', 255),
              flowName: c.str(s.flowName, 'spec.flowName'),
              flowVersion: c.int(s.flowVersion, 'spec.flowVersion'),
              input: c.json(s.input, 'spec.input'),
              overlap: absent(s.overlap) ? 'allow' : c.oneOf(s.overlap, ['allow', 'skip'], 'spec.overlap'),
              nextRunAt: c.ms(s.nextRunAt, 'spec.nextRunAt'),
            },
          ];
        }),
      );
    },
    async dueCrons(now, limit) {
      return (await parse(call('dueCrons', () => [c.ms(now, 'now'), c.int(limit, 'limit', 0, INT64)]))).map(mapCron);
    },
    advanceCron(name, expectedNextRunAt, nextRunAt, lastRunAt) {
      return call('advanceCron', () => [
        c.str(name, 'name'),
        c.ms(expectedNextRunAt, 'expectedNextRunAt'),
        c.ms(nextRunAt, 'nextRunAt'),
        c.ms(lastRunAt, 'lastRunAt'),
      ]);
    },
  };
  if (!v3) return store;

  return Object.assign(store, {
    deleteRuns(filter, limit) {
      return bulk('deleteRuns', filter, limit, enc.TERMINAL_STATUSES);
    },
    cancelRuns(filter, limit) {
      return bulk('cancelRuns', filter, limit, enc.ACTIVE_STATUSES);
    },
    retryRuns(filter, limit) {
      return bulk('retryRuns', filter, limit, ['failed']);
    },
    async listCrons() {
      return (await parse(call('listCrons', () => []))).map(mapCron);
    },
    removeCron(name) {
      return call('removeCron', () => [c.str(name, 'name')]);
    },
    async dueCronCount(now, names) {
      const args = [c.ms(now, 'now'), enc.namesOf(names, 'names')];
      // An empty list of flows counts nothing, without asking the database.
      return args[1]?.length === 0 ? 0 : call('dueCronCount', () => args);
    },
  });
}

module.exports = { createStore };
