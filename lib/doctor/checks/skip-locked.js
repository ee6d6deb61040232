'use strict';
// The skip-locked check: what the rolled-back probe of facts.js found (claims need SKIP LOCKED).
const { check } = require('../verdict');

function skipLockedCheck(f) {
  const s = f.skipLocked;
  if (!s) return check('skip-locked', 'warn', `could not probe SKIP LOCKED${f.errors.tx ? `: ${f.errors.tx}` : ''}`);
  if (s.supported === false) {
    return check('skip-locked', 'fail', `SELECT … FOR UPDATE SKIP LOCKED is refused (${s.error}): claims cannot work`, {
      supported: false,
    });
  }
  if (s.supported === null)
    return check('skip-locked', 'warn', `could not probe SKIP LOCKED: ${s.error}`, { supported: null });
  const where =
    s.on === 'job'
      ? 'a locking read on the job table'
      : `a locking read on DUAL${s.firstError ? ` (the job-table probe failed: ${s.firstError})` : ''}`;
  return check('skip-locked', 'ok', `supported (probed with ${where}, rolled back)`, { supported: true });
}

module.exports = { skipLockedCheck };
