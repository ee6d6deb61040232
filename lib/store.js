'use strict';
// Store port: runs, step memos, signals, crons (docs/contract.md, "Store").
const c = require('./check');
const { RUN_STATUSES, idList, outboxOf, specOf, statusList } = require('./encode');

const { absent } = c;
const { mapCron, mapRun, mapSignal, mapStep } = require('./shapes');

const SUSPEND_STATUSES = ['sleeping', 'awaiting_signal', 'awaiting_child', 'retrying'];
const TERMINAL_STATUSES = ['done', 'failed', 'canceled'];
const MAX_BATCH = 100000;
const INT64 = Number.MAX_SAFE_INTEGER;

const parse = (p) => p.then((s) => JSON.parse(s));
const none = (p) => p.then(() => undefined);
const optional = (p) => p.then((v) => (v === null ? undefined : v));

function zeroRunStats() {
  const out = {};
  for (const s of RUN_STATUSES) out[s] = 0;
  return out;
}

/** The store over `call` (lib/call.js); `newId()` makes run and signal ids. */
function createStore(call, newId) {
  return {
    startRun(spec) {
      return call('startRun', () => [newId(), specOf(spec, 'spec')]);
    },
    startManyRuns(specs) {
      return call('startManyRuns', () => {
        c.arr(specs, 'specs');
        if (specs.length > MAX_BATCH) throw c.rangeError(`specs: at most ${MAX_BATCH} specs per call`);
        const encoded = specs.map((s, i) => specOf(s, `specs[${i}]`));
        return [encoded.map(() => newId()), encoded];
      });
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
      const ids = idList(runIds, 'runIds');
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
            shape: c.optStr(cp.shape, 'checkpoint.shape'),
          },
          outboxOf(fx, 'outbox'),
        ];
      });
      return mapStep(JSON.parse(text));
    },
    suspendRun(runId, status, fx) {
      return none(
        call('suspendRun', () => [
          c.str(runId, 'runId'),
          c.oneOf(status, SUSPEND_STATUSES, 'status'),
          outboxOf(fx, 'outbox'),
        ]),
      );
    },
    markTerminal(runId, outcome, fx) {
      return none(
        call('markTerminal', () => {
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
            statuses: statusList(filter.status, 'filter.status'),
            name: filter.name ? c.str(filter.name, 'filter.name') : undefined,
            tag: filter.tag ? c.longStr(filter.tag, 'filter.tag') : undefined,
            cursor,
            limit: c.int(page.limit, 'page.limit', 0, INT64),
          },
        ];
      });
      const page_ = JSON.parse(text);
      return { runs: page_.runs.map(mapRun), cursor: page_.cursor };
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
    upsertCron(spec) {
      return none(
        call('upsertCron', () => {
          c.obj(spec, 'spec');
          return [
            {
              name: c.str(spec.name, 'spec.name'),
              schedule: c.str(spec.schedule, 'spec.schedule', 255),
              flowName: c.str(spec.flowName, 'spec.flowName'),
              flowVersion: c.int(spec.flowVersion, 'spec.flowVersion'),
              input: c.json(spec.input, 'spec.input'),
              overlap: absent(spec.overlap) ? 'allow' : c.oneOf(spec.overlap, ['allow', 'skip'], 'spec.overlap'),
              nextRunAt: c.ms(spec.nextRunAt, 'spec.nextRunAt'),
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
}

module.exports = { createStore, TERMINAL_STATUSES };
