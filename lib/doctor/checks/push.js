'use strict';
// The push checks (docs/push.md): how a listener on this pool hears of work — the doorbell in
// this server's form, the node-local doorbell of a cluster node, or polling — and whose parks a
// ring of this account reaches.
const { reachOf, reachPrivileges } = require('../../push/server');
const { account } = require('../fix');
const { isOn } = require('../facts');
const { check } = require('../verdict');

/** The listener's mode on this pool, and what it rests on. */
function modeCheck(f, t) {
  if (f.maria) {
    const size = Number(f.status.wsrep_cluster_size);
    if (isOn(f.session.wsrep_on ?? f.global.wsrep_on) && size > 1)
      return check(
        'push',
        'ok',
        `doorbell-node: a ring reaches the parks of its own node only, so parks on this Galera node last one probe (50 ms)`,
        { mode: 'doorbell-node' },
      );
    return check('push', 'ok', 'doorbell: a listener parks one statement; a ring ends it with KILL QUERY ID', {
      mode: 'doorbell',
    });
  }
  if (!t.native)
    return check(
      'push',
      'ok',
      "polling: MySQL's KILL ends a connection's statement, so parks need the park connection of mysqlPool(); a mysql2 pool's listener polls",
      { mode: 'polling' },
    );
  if (!isOn(f.global.performance_schema))
    return check(
      'push',
      'warn',
      'doorbell: with performance_schema off, rings read information_schema.PROCESSLIST, which MySQL fails while any ' +
        'statement holds a 4-byte character (those rings miss; parks end at intervalMs) — turn performance_schema on',
      { mode: 'doorbell', processlist: 'information_schema.PROCESSLIST' },
    );
  return check(
    'push',
    'ok',
    'doorbell: a listener parks on a connection of its own; a ring ends it with KILL QUERY (performance_schema.processlist)',
    { mode: 'doorbell', processlist: 'performance_schema.processlist' },
  );
}

/** Whose parks this account's rings end. */
function reachCheck(f) {
  if (!f.grants) return check('push.reach', 'warn', `could not read this account's grants: ${f.errors.grants || '?'}`);
  const reach = reachOf(f.grants.list);
  if (reach === 'server')
    return check(
      'push.reach',
      'ok',
      `rings of ${f.currentUser} end every account's parks (PROCESS and CONNECTION ADMIN)`,
      {
        account: f.currentUser,
        reach,
      },
    );
  const grant = `GRANT ${reachPrivileges(f.maria)} ON *.* TO ${account(f.currentUser)};`;
  return check(
    'push.reach',
    'ok',
    `rings of ${f.currentUser} end this account's parks only: listeners logged in as another account wake at their ` +
      `park's end (intervalMs); if workers use another account, run: ${grant}`,
    { account: f.currentUser, reach, grant },
  );
}

function pushChecks(f, t) {
  return [modeCheck(f, t), reachCheck(f)];
}

module.exports = { pushChecks };
