'use strict';
// The Galera cluster kind (MariaDB; checks/cluster.js): the node's state and cluster, and the
// settings Galera needs. Its facts (wsrep variables and status) are read with the others in facts.js.
const { isOn } = require('../facts');
const { check } = require('../verdict');

const applies = (f) => isOn(f.session.wsrep_on ?? f.global.wsrep_on);

/** Why this server is no Galera node, for the cluster line. */
function absent(f) {
  if (!f.maria) return 'Galera is a MariaDB cluster';
  return `Galera: wsrep_on ${f.global.wsrep_on || f.session.wsrep_on || 'absent'}`;
}

function galeraChecks(f) {
  const size = Number(f.status.wsrep_cluster_size);
  const state = f.status.wsrep_local_state_comment || 'unknown';
  const status = f.status.wsrep_cluster_status || 'unknown';
  const ready = isOn(f.status.wsrep_ready);
  const node = { galera: true, clusterSize: Number.isFinite(size) ? size : null, state, clusterStatus: status, ready };
  const out = [];
  if (!ready || !/^primary$/i.test(status)) {
    out.push(
      check(
        'galera',
        'fail',
        `Galera node not ready (wsrep_ready ${f.status.wsrep_ready || '?'}, cluster status ${status}, state ${state}): it refuses queries`,
        node,
      ),
    );
  } else if (!/^synced$/i.test(state)) {
    out.push(check('galera', 'warn', `Galera node in state ${state} (not Synced), cluster of ${size}`, node));
  } else if (!(size >= 3)) {
    const why =
      size === 1 ? 'a single-node cluster has no redundancy' : `with ${size} nodes, losing one leaves no quorum`;
    out.push(
      check('galera', 'warn', `Galera node Synced, cluster Primary, but ${why} (3 or more nodes recommended)`, node),
    );
  } else {
    out.push(check('galera', 'ok', `Galera node Synced, cluster of ${size}, Primary`, node));
  }
  const problems = [];
  const notes = [];
  const format = (f.global.binlog_format || '').toUpperCase();
  if (format !== 'ROW') problems.push(`binlog_format ${format || '?'} (Galera needs ROW)`);
  const autoinc = f.global.innodb_autoinc_lock_mode;
  if (autoinc !== '2') problems.push(`innodb_autoinc_lock_mode ${autoinc || '?'} (Galera needs 2)`);
  const syncWait = Number(f.session.wsrep_sync_wait ?? f.global.wsrep_sync_wait);
  notes.push(
    `wsrep_sync_wait ${Number.isFinite(syncWait) ? syncWait : '?'}${syncWait === 0 ? ' (a read on one node right after a write on another may miss it; the port methods do not rely on that, applications reading back across nodes should set 1)' : ''}`,
  );
  const settings = {
    binlogFormat: format || null,
    innodbAutoincLockMode: autoinc ?? null,
    wsrepSyncWait: Number.isFinite(syncWait) ? syncWait : null,
  };
  out.push(
    problems.length
      ? check('galera.settings', 'fail', `${problems.join('; ')}; ${notes.join('; ')}`, settings)
      : check('galera.settings', 'ok', `binlog_format ROW, innodb_autoinc_lock_mode 2, ${notes.join('; ')}`, settings),
  );
  return out;
}

const galera = { name: 'galera', applies, absent, checks: galeraChecks };

module.exports = { galera };
