'use strict';
// Queue port: leased jobs (docs/contract.md, "Queue").
const c = require('./check');
const { absent, enqueueOpts } = require('./encode');

const MAX_CLAIM = 10000;
const INT64 = Number.MAX_SAFE_INTEGER;

/**
 * The version an ack compares with the job's. A number that no stored version can equal (beyond
 * 2^53, fractional, negative: a job written by someone else) becomes -1, so the ack releases
 * the job instead of deleting it — what the JavaScript package ends up doing — and never throws.
 */
function leaseVersion(v) {
  if (typeof v !== 'number') throw c.typeError(`lease.version must be a number, got ${typeof v}`);
  return Number.isSafeInteger(v) && v >= 0 ? v : -1;
}

/** The queue over `call` (lib/call.js); `tokenIds` (or undefined) makes lease-token halves. */
function createQueue(call, tokenIds) {
  return {
    async enqueue(runId, opts) {
      await call('enqueue', () => {
        const e = enqueueOpts(opts, 'opts');
        return [c.str(runId, 'runId'), e.runAt, e.priority];
      });
    },
    async claim(claimOpts) {
      let expires;
      const text = await call('claim', () => {
        c.obj(claimOpts, 'opts');
        const limit = c.int(claimOpts.limit, 'opts.limit', 0, MAX_CLAIM);
        const leaseMs = c.int(claimOpts.leaseMs, 'opts.leaseMs', 0, INT64);
        const at = c.optMs(claimOpts.now, 'opts.now', Date.now());
        c.expiry(at, leaseMs, 'opts.leaseMs');
        expires = at + leaseMs;
        return [at, leaseMs, limit, tokenIds];
      });
      return JSON.parse(text).map((l) => ({ runId: l.runId, token: l.token, expiresAt: new Date(expires), version: l.version }));
    },
    async heartbeat(lease, hbOpts) {
      let expires;
      await call('heartbeat', () => {
        c.obj(lease, 'lease');
        c.obj(hbOpts, 'opts');
        const leaseMs = c.int(hbOpts.leaseMs, 'opts.leaseMs', 0, INT64);
        const at = c.optMs(hbOpts.now, 'opts.now', Date.now());
        c.expiry(at, leaseMs, 'opts.leaseMs');
        expires = at + leaseMs;
        return [c.str(lease.runId, 'lease.runId'), c.longStr(lease.token, 'lease.token'), at, leaseMs];
      });
      return { ...lease, expiresAt: new Date(expires) };
    },
    async ack(lease, ackOpts) {
      await call('ack', () => {
        c.obj(lease, 'lease');
        const now = absent(ackOpts) ? undefined : c.obj(ackOpts, 'opts').now;
        return [
          c.str(lease.runId, 'lease.runId'),
          c.longStr(lease.token, 'lease.token'),
          leaseVersion(lease.version),
          c.optMs(now, 'opts.now', Date.now()),
        ];
      });
    },
    async depth(now) {
      return JSON.parse(await call('depth', () => [c.ms(now, 'now')]));
    },
  };
}

module.exports = { createQueue };
