'use strict';
// The server check: kind and version against the supported ones (SKIP LOCKED needs MariaDB
// 10.6 / MySQL 8.0.1) and the ones this package is tested on.
const { check } = require('../verdict');

/** Release series the package's suite runs on: here (MariaDB 10.11, MySQL 9.7) and in CI (MySQL 8.0, 8.4). */
const TESTED = { mariadb: ['10.11'], mysql: ['8.0', '8.4', '9.7'] };
const tested = (kind, ver) => TESTED[kind].includes(`${ver[0]}.${ver[1]}`);

function parseVersion(v) {
  const m = /^(?:5\.5\.5-)?(\d+)\.(\d+)\.(\d+)/.exec(v);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

const below = (have, want) => {
  for (let i = 0; i < want.length; i++) {
    if (have[i] !== want[i]) return have[i] < want[i];
  }
  return false;
};

function serverCheck(f) {
  const ver = parseVersion(f.version);
  const plain = ver ? ver.join('.') : f.version;
  const tidb = /tidb/i.test(f.version);
  const flavour = f.maria
    ? 'MariaDB'
    : tidb
      ? 'TiDB'
      : f.global.aurora_version
        ? 'MySQL (Aurora)'
        : /percona/i.test(f.comment)
          ? 'MySQL (Percona Server)'
          : 'MySQL';
  const value = { kind: f.maria ? 'mariadb' : tidb ? 'tidb' : 'mysql', version: f.version };
  const label = `${flavour} ${plain}${f.comment ? ` (${f.comment})` : ''}`;
  if (tidb)
    return check(
      'server',
      'warn',
      `${label}: not a supported server (MariaDB ≥ 10.6 or MySQL ≥ 8.0.1); untested`,
      value,
    );
  if (!ver) return check('server', 'warn', `${label}: cannot read the version number`, value);
  if (f.maria) {
    if (below(ver, [10, 6, 0])) {
      return check(
        'server',
        'fail',
        `${label}: MariaDB below 10.6 has no SKIP LOCKED — upgrade to 10.6 or later`,
        value,
      );
    }
    return check(
      'server',
      'ok',
      `${label}${tested('mariadb', ver) ? ': tested with this package' : `: supported (≥ 10.6), not tested (${TESTED.mariadb.join(', ')} is)`}`,
      value,
    );
  }
  if (below(ver, [8, 0, 1])) {
    return check('server', 'fail', `${label}: MySQL below 8.0.1 has no SKIP LOCKED — upgrade to 8.0.1 or later`, value);
  }
  return check(
    'server',
    'ok',
    `${label}${tested('mysql', ver) ? ': tested with this package' : `: supported (≥ 8.0.1), not tested (${TESTED.mysql.join(', ')} are)`}`,
    value,
  );
}

module.exports = { serverCheck };
