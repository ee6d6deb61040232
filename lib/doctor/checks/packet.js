'use strict';
// The max_allowed_packet check: the largest value, step result or outbox batch the server takes.
const { check } = require('../verdict');

/** Below this max_allowed_packet, ordinary payloads start to be refused. */
const SMALL_PACKET = 4 * 1024 * 1024;

const mib = (n) => `${(n / 1048576).toFixed(n % 1048576 === 0 ? 0 : 1)} MiB`;

function packetCheck(f) {
  const n = Number(f.session.max_allowed_packet);
  if (!Number.isFinite(n) || n <= 0) return check('max_allowed_packet', 'warn', 'could not read max_allowed_packet');
  if (n < SMALL_PACKET) {
    return check(
      'max_allowed_packet',
      'warn',
      `${mib(n)}: inputs, step results and outbox batches larger than this are refused — raise it (16 MiB or more)`,
      { bytes: n },
    );
  }
  return check('max_allowed_packet', 'ok', `${mib(n)}: no single value, step result or outbox batch may exceed it`, {
    bytes: n,
  });
}

module.exports = { packetCheck };
