'use strict';
// The replication check: a read-only server or a replica, where writes fail or conflict.
const { isOn } = require('../facts');
const { check } = require('../verdict');

function replicationCheck(f) {
  const ro = isOn(f.global.read_only);
  const sro = isOn(f.global.super_read_only);
  const txro = isOn(f.session.transaction_read_only ?? f.session.tx_read_only);
  const value = {
    readOnly: ro,
    superReadOnly: sro,
    sessionReadOnly: txro,
    replicaOf: f.replica ? f.replica.source : null,
  };
  const of = f.replica ? ` (a replica of ${f.replica.source || 'another server'})` : '';
  if (ro || sro || txro) {
    const which = [ro && 'read_only', sro && 'super_read_only', txro && 'transaction_read_only (session)']
      .filter(Boolean)
      .join(', ');
    return check(
      'replication',
      'fail',
      `the server is read-only (${which} ON)${of}: every write fails — point the backend at the primary`,
      value,
    );
  }
  if (f.replica) {
    return check(
      'replication',
      'warn',
      `writable, but this server replicates${of.replace(' (', ' — ').replace(')', '')} (IO ${f.replica.io}, SQL ${f.replica.sqlThread}): writes here can conflict with the primary's`,
      value,
    );
  }
  return check('replication', 'ok', `writable (read_only OFF${f.errors.replica ? '' : ', not a replica'})`, value);
}

module.exports = { replicationCheck };
