'use strict';
// Timer port: one durable deadline per run (docs/contract.md, "Timer"). Under the 3.0 contract
// also `dueCount` and `nextDueAt`.
const c = require('./check');
const enc = require('./encode');

const MAX_CLAIM = 10000;

/** The timer over `call` (lib/call.js); `contract` is '2.0.0-alpha.2' or '3.0.0'. */
function createTimer(call, contract) {
  const timer = {
    async schedule(runId, fireAt) {
      await call('schedule', () => [c.str(runId, 'runId'), c.ms(fireAt, 'fireAt')]);
    },
    dueBatch(dueOpts) {
      return call('dueBatch', () => {
        c.obj(dueOpts, 'opts');
        return [c.optMs(dueOpts.now, 'opts.now', Date.now()), c.int(dueOpts.limit, 'opts.limit', 0, MAX_CLAIM)];
      });
    },
    async cancel(runId) {
      await call('cancelTimer', () => [c.str(runId, 'runId')]);
    },
  };
  if (contract !== '3.0.0') return timer;

  return Object.assign(timer, {
    async dueCount(now, names) {
      const args = [c.ms(now, 'now'), enc.namesOf(names, 'names')];
      // An empty list of flows counts nothing, without asking the database.
      return args[1]?.length === 0 ? 0 : call('dueCount', () => args);
    },
    async nextDueAt(now) {
      const at = await call('nextDueAt', () => [c.ms(now, 'now')]);
      return at === null ? null : new Date(at);
    },
  });
}

module.exports = { createTimer };
