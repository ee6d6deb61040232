'use strict';
// The cluster checks: which kind of cluster this server is a node of, and that kind's own checks.
// Each kind is `{ name, collect?(sql, f), applies(f), absent(f), checks(f) }`: `collect` reads the facts only
// that kind needs (read-only, errors recorded in `f.errors` by the caller), `applies` says from the
// facts whether this server is such a node (`absent` says why not), `checks(f, t)` judges it (`t`:
// the doctor's target, its pool's hosts among it). Galera (MariaDB) and Group Replication (MySQL).
const { galera } = require('./galera');
const { group } = require('./group');
const { check } = require('../verdict');

/** The cluster kinds, in the order they are asked. */
const KINDS = [galera, group];

/** Lets each kind read the facts it needs; `attempt(key, fn)` records a failure under `key`. */
async function collectCluster(sql, f, attempt) {
  for (const kind of KINDS) {
    if (kind.collect) await attempt(`cluster.${kind.name}`, () => kind.collect(sql, f));
  }
}

/** The lines of the kind this server belongs to, or one line saying it is no cluster node. */
function clusterChecks(f, t) {
  const kind = KINDS.find((k) => k.applies(f));
  if (kind) return kind.checks(f, t);
  const why = KINDS.map((k) => k.absent(f)).join('; ');
  return [check('cluster', 'ok', `not a cluster node (${why})`, { cluster: null })];
}

module.exports = { KINDS, clusterChecks, collectCluster };
