#!/usr/bin/env node
'use strict';
// iterativeflow-mysql-native doctor [url] [options] — a read-only health check of a database for
// this package (lib/doctor/). Exit status: 0 when nothing fails (warnings allowed), 1 when a
// check fails (a blocker), 2 on a usage error.
const { parseArgs } = require('node:util');

const USAGE = `usage: iterativeflow-mysql-native doctor [url] [options]

  url                      mysql://user:password@host:port/database (default: $MYSQL_URL;
                           the environment keeps the password out of the process list)
  --prefix <p>             table prefix (default "")
  --contract <c>           2.0.0-alpha.2 (default) or 3.0.0
  --json                   print the result object as JSON
  --no-set-isolation       check as mysqlPool(x, { setIsolation: false }) would run
  --no-pending-work        under 3.0.0: the pending_work function is not wanted
  --timeout <ms>           bound on connecting (default 5000)
  -h, --help               this text

Exit status: 0 ok or warnings only, 1 a check failed, 2 usage error.`;

function usage(message) {
  if (message) process.stderr.write(`iterativeflow-mysql-native: ${message}\n\n`);
  process.stderr.write(`${USAGE}\n`);
  return 2;
}

async function doctor(argv) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        prefix: { type: 'string' },
        contract: { type: 'string' },
        json: { type: 'boolean' },
        'no-set-isolation': { type: 'boolean' },
        'no-pending-work': { type: 'boolean' },
        timeout: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (e) {
    return usage(e.message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (positionals.length > 1) return usage('expected at most one URL');
  const url = positionals[0] || process.env.MYSQL_URL;
  if (!url) return usage('no URL given (and MYSQL_URL is not set)');
  const contract = values.contract || '2.0.0-alpha.2';
  if (contract !== '2.0.0-alpha.2' && contract !== '3.0.0')
    return usage(`--contract must be 2.0.0-alpha.2 or 3.0.0, got ${JSON.stringify(contract)}`);
  let timeoutMs;
  if (values.timeout !== undefined) {
    timeoutMs = Number(values.timeout);
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) return usage('--timeout must be a positive integer (ms)');
  }

  let lib;
  try {
    lib = require('../lib/doctor');
  } catch (e) {
    process.stderr.write(`iterativeflow-mysql-native: cannot load the package: ${e.message}\n`);
    return 1;
  }
  const prefix = values.prefix || '';
  let result;
  try {
    result = await lib.checkDatabase(url, prefix, {
      contract,
      setIsolation: values['no-set-isolation'] ? false : undefined,
      pendingWork: values['no-pending-work'] ? false : undefined,
      timeoutMs,
    });
  } catch (e) {
    // Only argument errors reach here (a bad URL or prefix); they never carry the password.
    return usage(e.message);
  }
  if (values.json) {
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } else {
    const header = `iterativeflow-mysql-native doctor: ${lib.describeTarget(url)} (prefix ${JSON.stringify(prefix)}, contract ${contract})`;
    process.stdout.write(`${lib.formatReport(result, { header })}\n`);
  }
  return result.verdict === 'fail' ? 1 : 0;
}

async function main(argv) {
  const [command, ...rest] = argv;
  if (command === undefined || command === '-h' || command === '--help' || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return command === undefined ? 2 : 0;
  }
  if (command !== 'doctor') return usage(`unknown command ${JSON.stringify(command)}`);
  return doctor(rest);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    process.stderr.write(`iterativeflow-mysql-native: ${e && e.message ? e.message : String(e)}\n`);
    process.exitCode = 1;
  },
);
