'use strict';
// What the command line shows a person: colour only where it is wanted (a terminal, no NO_COLOR),
// and an error as one line — where it happened and why — instead of a stack.

/**
 * Whether to colour what goes to `stream`: `--color` / `--no-color` decide when given; else
 * NO_COLOR (any value) turns it off, FORCE_COLOR turns it on ('0' off), else a terminal that is
 * not TERM=dumb gets colour (https://no-color.org).
 */
function wantsColor(stream, env, flag) {
  if (flag === true || flag === false) return flag;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '') return env.FORCE_COLOR !== '0';
  return Boolean(stream && stream.isTTY) && env.TERM !== 'dumb';
}

/** Driver phrasing that tells a reader nothing (`MySQL connection error: `, `(os error 111)`). */
const NOISE = [/^MySQL connection error:\s*/i, /^Driver error:\s*/i, /\s*\(os error \d+\)/gi];

/** The reason of an error in one line, with its code when the text does not already say it. */
function reasonOf(e) {
  if (e === null || e === undefined) return 'unknown error';
  if (typeof e !== 'object') return String(e).split('\n')[0];
  let text = String(e.message || e.name || 'error').split('\n')[0];
  for (const re of NOISE) text = text.replace(re, '');
  const code = typeof e.code === 'string' && e.code && !text.includes(e.code) ? ` (${e.code})` : '';
  return `${text}${code}`;
}

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'PROTOCOL_CONNECTION_LOST',
]);

/** Whether `e` says the server could not be reached (rather than that it refused a statement). */
const isConnectionError = (e) =>
  Boolean(e && typeof e === 'object' && (e.kind === 'connection' || CONNECTION_CODES.has(e.code)));

/**
 * One line for a failure: `cannot connect to <where>: <reason>` when the server could not be
 * reached, else `<doing> failed on <where>: <reason>`.
 */
function describeFailure(e, where, doing) {
  if (isConnectionError(e)) return `cannot connect to ${where}: ${reasonOf(e)}`;
  return `${doing} failed on ${where}: ${reasonOf(e)}`;
}

/** `host:port` (or the socket path, or the host list) of connection settings. */
function whereOf(cfg) {
  if (!cfg) return 'the server';
  if (cfg.socketPath) return cfg.socketPath;
  const hp = (h, p) => `${h && h.includes(':') ? `[${h}]` : h || 'localhost'}:${p || 3306}`;
  if (cfg.hosts) return cfg.hosts.map((h) => hp(h.host, h.port)).join(',');
  return hp(cfg.host, cfg.port);
}

module.exports = { wantsColor, reasonOf, describeFailure, isConnectionError, whereOf };
