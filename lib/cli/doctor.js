'use strict';
// `iterativeflow-mysql-native doctor [url]`: the read-only health check of lib/doctor/, printed
// one line per check (coloured on a terminal) or as JSON. Exit 0 when no check fails, 1 when one
// does, 2 on a usage error.
const { parse, UsageError } = require('./args');
const { wantsColor } = require('./terminal');
const { DOCTOR, usageError } = require('./usage');

/** How the report's commands name the server: as the user named it (never with its password). */
function commandTarget(a) {
  if (a.urlFromEnv) return ''; // the suggested command reads MYSQL_URL as doctor did
  try {
    const u = new URL(a.url);
    if (u.password) u.password = 'PASSWORD';
    const s = u.toString();
    return /^[\w@%+=:,./-]*$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`;
  } catch {
    return undefined; // a host list: the library's own wording
  }
}

async function doctor(argv, io) {
  let a;
  try {
    a = parse(
      argv,
      { json: { type: 'boolean' }, 'no-set-isolation': { type: 'boolean' }, 'no-pending-work': { type: 'boolean' } },
      io.env,
    );
  } catch (e) {
    if (e instanceof UsageError) return usageError(io, e.message, DOCTOR);
    throw e;
  }
  if (a.values.help) {
    io.out.write(`${DOCTOR}\n`);
    return 0;
  }
  if (!a.url) return usageError(io, 'no URL given (and MYSQL_URL is not set)', DOCTOR);
  const lib = require('../doctor');
  let result;
  try {
    result = await lib.checkDatabase(a.url, a.prefix, {
      contract: a.contract,
      setIsolation: a.values['no-set-isolation'] ? false : undefined,
      pendingWork: a.values['no-pending-work'] ? false : undefined,
      timeoutMs: a.timeoutMs,
      commandTarget: commandTarget(a),
    });
  } catch (e) {
    // Only argument errors reach here (a bad URL or prefix); they never carry the password.
    return usageError(io, e.message, DOCTOR);
  }
  if (a.values.json) {
    io.out.write(`${JSON.stringify(result, null, 2)}\n`);
  } else {
    const header = `iterativeflow-mysql-native doctor: ${lib.describeTarget(a.url)} (prefix ${JSON.stringify(a.prefix)}, contract ${a.contract})`;
    const color = wantsColor(io.out, io.env, a.color);
    io.out.write(`${lib.formatReport(result, { header, color })}\n`);
  }
  return result.verdict === 'fail' ? 1 : 0;
}

module.exports = { doctor };
