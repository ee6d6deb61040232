'use strict';
// The time_zone check: informational only (the package stores epoch milliseconds).
const { check } = require('../verdict');

function timeZoneCheck(f) {
  const value = {
    system: f.session.system_time_zone || null,
    global: f.global.time_zone || null,
    session: f.session.time_zone || null,
  };
  return check(
    'time_zone',
    'ok',
    `system ${value.system || '?'}, global ${value.global || '?'}, session ${value.session || '?'} — informational: the package stores times as epoch milliseconds`,
    value,
  );
}

module.exports = { timeZoneCheck };
