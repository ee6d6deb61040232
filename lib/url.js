'use strict';
// A mysql:// URL read into the same options object an object source gives (lib/options.js): the
// authority and path name where to connect and as whom; each query parameter is one of this
// package's URL parameters or an option name, its value read as mysql2 reads it (JSON when it
// parses, text otherwise: `?ssl={"rejectUnauthorized":false}`, `?connectTimeout=5000`).

const { fail, hostPort } = require('./options');

/**
 * URL parameters that are not option names, or spell one differently: parameter → option.
 * `sslmode` / `ssl-ca` are read by `sslOf`.
 */
const ALIASES = {
  socket: 'socketPath',
  connection_limit: 'connectionLimit',
  acquire_timeout_ms: 'acquireTimeoutMs',
  query_timeout_ms: 'queryTimeoutMs',
  statement_cache_size: 'statementCacheSize',
};
const SSL_PARAMS = new Set(['sslmode', 'ssl-mode', 'ssl-ca', 'sslca']);
/** What the URL itself says; as a parameter it would contradict it. */
const IN_THE_URL = new Set(['host', 'port', 'user', 'password', 'database', 'hosts', 'url', 'uri']);

/** Said, without quoting the URL, when its user or password cannot be told from its hosts. */
const UNENCODED =
  "the URL's host part cannot be read: percent-encode the characters / ? # @ , and : in its user name and password (encodeURIComponent)";

/**
 * A URL whose authority lists several hosts (`db1:3306,db2:3306`, which `URL` cannot parse):
 * the text with a placeholder host for `URL`, and the hosts; `hosts` is undefined for one host.
 */
function splitHosts(text) {
  const m = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)(.*)$/is.exec(text);
  if (!m) return { text, hosts: undefined };
  const at = m[2].lastIndexOf('@');
  // An authority with no `@` whose path holds one was cut short by a `/` in an unencoded
  // password: what looks like a host (list) is the user and part of the password.
  if (at < 0 && /^[^?#]*@/.test(m[3])) throw fail(UNENCODED);
  const list = m[2].slice(at + 1);
  if (!list.includes(',')) return { text, hosts: undefined };
  const hosts = list.split(',').map((h, i) => {
    try {
      return hostPort(h, `URL host ${i + 1}`, false);
    } catch (e) {
      // Likewise with a `?` or `#` in it (the rest then holds the `@`).
      throw at < 0 && m[3].includes('@') ? fail(UNENCODED) : e;
    }
  });
  return { text: `${m[1]}${m[2].slice(0, at + 1)}hosts.invalid${m[3]}`, hosts };
}

/** A parameter's value as mysql2 reads it: JSON where it parses, else the text. */
function valueOf(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The TLS setting of `sslmode` / `ssl-ca` (MySQL's client names), if given. */
function sslOf(p) {
  const mode = (p.get('sslmode') || p.get('ssl-mode') || '').toUpperCase();
  const ca = p.get('ssl-ca') || p.get('sslca') || undefined;
  if (!mode && !ca) return undefined;
  if (mode === 'DISABLED') return false;
  if (mode === 'VERIFY_IDENTITY') return { caPath: ca, rejectUnauthorized: true, verifyIdentity: true };
  if (mode === 'VERIFY_CA') return { caPath: ca, rejectUnauthorized: true, verifyIdentity: false };
  if (mode === 'REQUIRED' || mode === 'PREFERRED' || (!mode && ca)) {
    return { caPath: ca, rejectUnauthorized: Boolean(ca), verifyIdentity: false };
  }
  throw fail(`unknown sslmode ${JSON.stringify(mode)}`);
}

/** The options object `text` (a mysql:// URL) stands for. */
function optionsOfUrl(whole) {
  const { text, hosts } = splitHosts(whole);
  let url;
  try {
    url = new URL(text);
  } catch {
    throw fail('the connection string is not a valid URL (expected mysql://user:password@host:port/database)');
  }
  if (url.protocol !== 'mysql:' && url.protocol !== 'mariadb:') {
    throw fail(`unsupported URL scheme ${JSON.stringify(url.protocol)} (use mysql://)`);
  }
  const dec = (s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      throw fail('the URL contains a malformed percent-escape');
    }
  };
  const out = {
    host: hosts ? undefined : url.hostname ? url.hostname.replace(/^\[|\]$/g, '') : undefined,
    port: hosts ? undefined : url.port || undefined,
    hosts,
    user: url.username ? dec(url.username) : undefined,
    password: url.password ? dec(url.password) : undefined,
    database: url.pathname && url.pathname.length > 1 ? dec(url.pathname.slice(1)) : undefined,
  };
  const p = url.searchParams;
  for (const key of new Set(p.keys())) {
    if (p.getAll(key).length > 1) throw fail(`URL parameter ${key} is given twice`);
    if (SSL_PARAMS.has(key)) continue;
    if (IN_THE_URL.has(key)) {
      throw fail(`URL parameter ${key}: give it in the URL itself (mysql://user:password@host:port/database)`);
    }
    const name = ALIASES[key] || key;
    if (out[name] !== undefined) throw fail(`URL parameters ${key} and ${name} say the same; give one`);
    // Integers and paths stay text: Rust checks the ranges, and a socket path is no JSON.
    out[name] = name === 'socketPath' || name === 'failover' ? p.get(key) : valueOf(p.get(key));
  }
  const ssl = sslOf(p);
  if (ssl !== undefined) {
    if (out.ssl !== undefined) throw fail('give sslmode / ssl-ca or ssl in the URL, not both');
    out.ssl = ssl;
  }
  return out;
}

module.exports = { optionsOfUrl };
