'use strict';
// Timer port: one durable deadline per run (docs/contract.md, "Timer").
const c = require('./check');

const MAX_CLAIM = 10000;

/** The timer over `call` (lib/call.js). */
function createTimer(call) {
  return {
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
}

module.exports = { createTimer };
