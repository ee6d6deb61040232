'use strict';
// The options the verbs share — the URL (an argument or $MYSQL_URL), --prefix, --contract,
// --timeout, --color — parsed and checked once, with the message a usage error prints.
const { parseArgs } = require('node:util');

const CONTRACTS = ['2.0.0-alpha.2', '3.0.0'];

/** The shared option specs, merged into a verb's own. */
const COMMON = {
  prefix: { type: 'string' },
  contract: { type: 'string' },
  timeout: { type: 'string' },
  color: { type: 'boolean' },
  'no-color': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

class UsageError extends Error {}

/**
 * `args` parsed with `options` (and COMMON): `{ values, positionals, url, urlFromEnv, prefix,
 * contract, timeoutMs, color }`; throws UsageError. `urlCount`: how many positionals may be a URL.
 */
function parse(args, options, env, { positionals: allowed = 1 } = {}) {
  let parsed;
  try {
    parsed = parseArgs({ args, allowPositionals: true, options: { ...COMMON, ...options } });
  } catch (e) {
    throw new UsageError(e.message);
  }
  const { values, positionals } = parsed;
  if (positionals.length > allowed) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[allowed])}`);
  const contract = values.contract ?? '2.0.0-alpha.2';
  if (!CONTRACTS.includes(contract))
    throw new UsageError(`--contract must be ${CONTRACTS.join(' or ')}, got ${JSON.stringify(contract)}`);
  let timeoutMs;
  if (values.timeout !== undefined) {
    timeoutMs = Number(values.timeout);
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1)
      throw new UsageError('--timeout must be a positive integer (ms)');
  }
  const urlArg = allowed > 0 ? positionals[0] : undefined;
  return {
    values,
    positionals,
    url: urlArg || env.MYSQL_URL || undefined,
    urlFromEnv: !urlArg && Boolean(env.MYSQL_URL),
    prefix: values.prefix ?? '',
    contract,
    timeoutMs,
    color: values['no-color'] ? false : values.color ? true : undefined,
  };
}

module.exports = { parse, UsageError, CONTRACTS };
