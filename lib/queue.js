'use strict';
// Queue port: leased jobs (docs/contract.md, "Queue"). Under the 3.0 contract also `enqueueMany`,
// and `claim` / `depth` restricted to a list of flow names.
const c = require('./check');
const enc = require('./encode');

const { absent } = c;
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

/** `token` with its first half as the user's id generator returned it (`id`, when given). */
function userToken(token, id) {
  if (id === undefined) return token;
  const sent = id.toWellFormed();
  return sent === id || !token.startsWith(sent) ? token : id + token.slice(sent.length);
}

/**
 * The queue over `call` (lib/call.js); `tokenIds(n)` (or undefined) makes `n` lease-token halves;
 * `contract` is '2.0.0-alpha.2' or '3.0.0'.
 */
function createQueue(call, tokenIds, contract) {
  const v3 = contract === '3.0.0';
  /** The 3.0 `names` option (undefined under 2.0.0-alpha.2, which ignores it). */
  const namesIn = (opts) => (v3 ? enc.namesOf(opts.names, 'opts.names') : undefined);
  const queue = {
    async enqueue(runId, opts) {
      await call('enqueue', () => {
        const e = enc.enqueueOpts(opts, 'opts');
        return [c.str(runId, 'runId'), e.runAt, e.priority];
      });
    },
    async claim(claimOpts) {
      c.obj(claimOpts, 'opts');
      const limit = c.int(claimOpts.limit, 'opts.limit', 0, MAX_CLAIM);
      const leaseMs = c.int(claimOpts.leaseMs, 'opts.leaseMs', 0, INT64);
      const at = c.optMs(claimOpts.now, 'opts.now', Date.now());
      c.expiry(at, leaseMs, 'opts.leaseMs');
      const names = namesIn(claimOpts);
      // No flow to claim for: nothing to ask the database.
      if (names?.length === 0) return [];
      // The user's ids cross to Rust well-formed (what the lease_token column stores anyway); the
      // answer's tokens start with the ids as the user made them, as the JavaScript package's do.
      let raw = [];
      const ids =
        tokenIds &&
        ((n) => {
          raw = tokenIds(n);
          return JSON.stringify(raw.map((id) => id.toWellFormed()));
        });
      const text = await call('claim', () => [at, leaseMs, limit, names, ids]);
      const expiresAt = at + leaseMs;
      return JSON.parse(text).map((l, i) => ({
        runId: l.runId,
        token: userToken(l.token, raw[i]),
        expiresAt: new Date(expiresAt),
        version: l.version,
      }));
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
    async depth(now, names) {
      const at = c.ms(now, 'now');
      const list = v3 ? enc.namesOf(names, 'names') : undefined;
      if (list?.length === 0) return { claimable: 0, leased: 0, oldestClaimableAgeMs: null };
      return JSON.parse(await call('depth', () => [at, list]));
    },
  };
  if (!v3) return queue;

  return Object.assign(queue, {
    async enqueueMany(requests) {
      await call('enqueueMany', () => [
        c.arr(requests, 'requests').map((r, i) => {
          const n = `requests[${i}]`;
          c.obj(r, n);
          return { runId: c.str(r.runId, `${n}.runId`), ...enc.enqueueOpts(r.opts, `${n}.opts`) };
        }),
      ]);
    },
  });
}

module.exports = { createQueue };
