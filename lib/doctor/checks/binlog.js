'use strict';
// The binlog check: STATEMENT format with READ COMMITTED makes InnoDB refuse every write.
const { isOn } = require('../facts');
const { check } = require('../verdict');

function binlogCheck(f) {
  const on = isOn(f.session.log_bin ?? f.global.log_bin);
  const format = (f.session.binlog_format || f.global.binlog_format || '').toUpperCase() || null;
  const value = { logBin: on, format };
  if (!on) return check('binlog', 'ok', `binary log off${format ? ` (binlog_format ${format})` : ''}`, value);
  if (format === 'STATEMENT' && isOn(f.session.sql_log_bin ?? 'ON')) {
    return check(
      'binlog',
      'fail',
      'binlog_format = STATEMENT with READ COMMITTED: InnoDB refuses every write (error 1665) — use ROW (or MIXED)',
      value,
    );
  }
  return check('binlog', 'ok', `binary log on, binlog_format ${format || '?'}`, value);
}

module.exports = { binlogCheck };
