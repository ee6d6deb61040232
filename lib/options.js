'use strict';
// What mysqlPool(x) reads from an options object — this package's names and mysql2's — into the
// one normalised config that Rust validates (src/pool/config.rs checks every range there).
//
// Every name is either honoured or refused by name: an option dropped without a word once sent
// a pool to localhost as root instead of where its `uri` pointed. The table of names and what
// becomes of each is docs/configuration.md (kept in step by __test__/sql/options.test.mjs).

const c = require('./check');

function fail(msg) {
  return c.typeError(`mysqlPool: ${msg}`);
}

/** An integer option (URL parameters arrive as digits); its range is checked in Rust. */
function int(v, name) {
  if (v === undefined || v === null || v === '') return undefined;
  const n = typeof v === 'string' && /^-?\d+$/.test(v.trim()) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isSafeInteger(n)) throw fail(`${name} must be an integer`);
  return n;
}

function str(v, name) {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw fail(`${name} must be a string`);
  return v;
}

/** A boolean option (URL parameters arrive as `true` / `false`). */
function bool(v, name) {
  if (v === undefined || v === null) return undefined;
  if (v === 'true' || v === 'false') return v === 'true';
  if (typeof v !== 'boolean') throw fail(`${name} must be a boolean`);
  return v;
}

/** PEM text from a string, a Buffer or a list of either (as Node's TLS options take them). */
function pem(v, name) {
  if (v === undefined || v === null) return undefined;
  const one = (x, n) => (Buffer.isBuffer(x) ? x.toString('utf8') : str(x, n));
  return Array.isArray(v)
    ? c
        .arr(v, name)
        .map((x, i) => one(x, `${name}[${i}]`))
        .join('\n')
    : one(v, name);
}

/** The keys of mysql2's `ssl` object (Node TLS options) this package honours. */
const SSL_KEYS = new Set(['ca', 'caPath', 'cert', 'key', 'rejectUnauthorized', 'verifyIdentity', 'servername']);

/** `ssl`: `true` / `'true'` (encrypt, verify nothing) or an object of `SSL_KEYS`; false / absent: plain. */
function sslFrom(v, name) {
  if (v === undefined || v === null || v === false || v === 'false' || v === 0 || v === '0') return undefined;
  if (v === true || v === 'true' || v === 'required' || v === 'REQUIRED' || v === '1' || v === 1) {
    return { rejectUnauthorized: false, verifyIdentity: false };
  }
  if (typeof v === 'string') {
    if (v === 'Amazon RDS') throw fail(`${name}: named SSL profiles are not supported; pass { ca }`);
    throw fail(`${name}: unknown TLS setting ${JSON.stringify(v)}`);
  }
  if (typeof v !== 'object' || Array.isArray(v)) throw fail(`${name} must be a boolean or an object`);
  for (const key of Object.keys(v)) {
    if (!SSL_KEYS.has(key) && v[key] !== undefined) {
      throw fail(`${name}.${key} is not supported (honoured: ${[...SSL_KEYS].join(', ')}; see docs/configuration.md)`);
    }
  }
  if ((v.cert === undefined) !== (v.key === undefined)) throw fail(`${name}: cert and key go together`);
  const reject = bool(v.rejectUnauthorized, `${name}.rejectUnauthorized`);
  return {
    ca: pem(v.ca, `${name}.ca`),
    caPath: str(v.caPath, `${name}.caPath`),
    cert: pem(v.cert, `${name}.cert`),
    key: pem(v.key, `${name}.key`),
    servername: str(v.servername, `${name}.servername`),
    rejectUnauthorized: reject === undefined ? true : reject,
    verifyIdentity: bool(v.verifyIdentity, `${name}.verifyIdentity`),
  };
}

/**
 * One `host[:port]` / `[v6]:port`, as `{ host, port }`. `quote: false` leaves the text out of the
 * error: a piece of a URL's authority may be a password pasted unencoded.
 */
function hostPort(text, name, quote = true) {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+))(?::(\d*))?$/.exec(text);
  if (!m || (m[3] !== undefined && m[3] === ''))
    throw fail(`${name}: expected host or host:port${quote ? `, got ${JSON.stringify(text)}` : ''}`);
  return { host: m[1] || m[2], port: m[3] === undefined ? undefined : int(m[3], `${name} port`) };
}

/** `hosts`: `[{ host, port }]` or `['host:port', …]`; ranges and duplicates are checked in Rust. */
function hostsOf(v) {
  if (v === undefined || v === null) return undefined;
  return c.arr(v, 'hosts').map((h, i) => {
    const name = `hosts[${i}]`;
    if (typeof h === 'string') return hostPort(h, name);
    if (h === null || typeof h !== 'object')
      throw fail(`${name} must be an object { host, port } or a 'host:port' string`);
    if (typeof h.host !== 'string') throw fail(`${name}.host must be a string`);
    return { host: h.host, port: int(h.port, `${name}.port`) };
  });
}

/** `connectAttributes`: string values sent with the handshake (MySQL shows them in performance_schema). */
function attrsOf(v, name) {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) throw fail(`${name} must be an object of strings`);
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, str(String(x), `${name}.${k}`)]));
}

/** This package's options: name → reader of its value. The normalised config has these keys only. */
const OWN = {
  host: str,
  port: int,
  hosts: hostsOf,
  failover: str,
  user: str,
  password: str,
  database: str,
  socketPath: str,
  connectionLimit: int,
  acquireTimeoutMs: int,
  queryTimeoutMs: int,
  statementCacheSize: int,
  idleTimeout: int,
  maxIdle: int,
  enableKeepAlive: bool,
  keepAliveInitialDelay: int,
  compress: bool,
  connectAttributes: attrsOf,
  enableCleartextPlugin: bool,
  resetOnRelease: bool,
  setIsolation: bool,
  ssl: sslFrom,
};

/** mysql2 names read as one of ours (a value given under both names must agree). */
const RENAMED = { connectTimeout: 'acquireTimeoutMs' };

/**
 * mysql2 options accepted only with the value that is what this package does anyway: `[allowed
 * values or a predicate, why another value cannot be honoured]`.
 */
const ONLY = {
  waitForConnections: [[true], 'calls always wait for a connection, up to acquireTimeoutMs (lower it to fail sooner)'],
  queueLimit: [[0], 'waiting calls are not counted; acquireTimeoutMs bounds how long each waits'],
  charset: [
    (v) => typeof v === 'string' && v.toLowerCase() === 'utf8mb4',
    "connections always speak utf8mb4 with the server's default collation (write COLLATE in SQL where a collation matters)",
  ],
  timezone: [['Z', '+00:00', '-00:00'], 'DATETIME and TIMESTAMP values are read, and Date parameters written, as UTC'],
  dateStrings: [
    [false],
    'DATE, DATETIME and TIMESTAMP columns are read as Date objects (UTC); use DATE_FORMAT() for text',
  ],
  supportBigNumbers: [
    [true],
    'BIGINT values beyond ±2^53 are always read as strings, as supportBigNumbers: true gives',
  ],
  bigNumberStrings: [[false], 'BIGINT values within ±2^53 are read as numbers; CAST(… AS CHAR) gives text'],
  decimalNumbers: [[false], 'DECIMAL values are read as strings'],
  jsonStrings: [[false], 'JSON columns are parsed where the server types them JSON (MySQL); MariaDB sends text'],
  multipleStatements: [
    [true],
    'multi-statement text is always accepted (the backend sends it); bind values with ? rather than building SQL text',
  ],
  namedPlaceholders: [[false], 'only ? placeholders are supported'],
  rowsAsArray: [[false], 'rows are plain objects'],
  nestTables: [[false], 'rows are plain objects keyed by column name (give clashing columns aliases)'],
  typeCast: [[true], 'values are converted as docs/configuration.md says; convert them in SQL or in your code'],
  stringifyObjects: [[false], 'an object parameter is refused; pass JSON.stringify(value)'],
  insecureAuth: [[false], 'the pre-4.1 password protocol is not supported'],
  gracefulEnd: [[true], 'close() always waits for the calls in flight'],
  disableEval: [[true, false], 'it is a boolean (this package never evaluates generated code)'],
  trace: [[true, false], "it is a boolean (a failed call always carries its caller's stack, taken only when it fails)"],
  debug: [[false], 'use the diagnostics channels instead (mysqlPool(x, { tracing }), docs/observability.md)'],
  flags: [[''], 'client capability flags cannot be set'],
};

/** mysql2 options refused whatever their value, with what to do instead. */
const REFUSED = {
  password1: 'multi-factor authentication is not supported; give password',
  password2: 'multi-factor authentication is not supported',
  password3: 'multi-factor authentication is not supported',
  passwordSha1: 'give password',
  charsetNumber: "connections always speak utf8mb4 with the server's default collation",
  maxPreparedStatements: "give statementCacheSize (this package's prepared statements per connection)",
  authPlugins:
    'custom authentication plugins are not supported (mysql_native_password and caching_sha2_password are built in; enableCleartextPlugin: true sends a token as mysql_clear_password)',
  authSwitchHandler: 'custom authentication plugins are not supported',
  stream: 'connections go to host/port or socketPath only (point host/port at a tunnel instead)',
  localAddress: 'the local address of connections cannot be chosen',
  infileStreamFactory: 'LOAD DATA LOCAL INFILE is not supported',
  queryFormat: 'only ? placeholders are supported',
  isServer: 'this package is a client only',
  pool: 'pass the mysql2 pool itself as mysqlPool(pool)',
  Promise: 'this package returns native promises',
};

/** Every name an options object may hold, for "did you mean". */
const KNOWN = [
  ...Object.keys(OWN),
  'url',
  'uri',
  ...Object.keys(RENAMED),
  ...Object.keys(ONLY),
  ...Object.keys(REFUSED),
];

/** The known name closest to `name` (one or two typos), if any. */
function closest(name) {
  const lower = name.toLowerCase();
  let best;
  let bestD = 3;
  for (const k of KNOWN) {
    const d = distance(lower, k.toLowerCase());
    if (d < bestD && d * 3 <= name.length) [best, bestD] = [k, d];
  }
  return best;
}

/** Levenshtein distance (short option names only). */
function distance(a, b) {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length];
}

/** Whether `v` is one of ONLY[name]'s accepted values. */
function accepted(allowed, v) {
  if (typeof allowed === 'function') return allowed(v);
  return allowed.some((a) => a === v || (typeof a !== 'string' && String(a) === v));
}

/** The message for an option given a value this package cannot honour. */
function refusal(name, v, why) {
  const shown = typeof v === 'function' ? 'a function' : JSON.stringify(v);
  return fail(`${name}: ${shown} cannot be honoured: ${why}`);
}

/**
 * Reads an options object (`url` / `uri` excepted: the caller has read it) into the normalised
 * config: our names as they are, mysql2's mapped or refused, unknown names refused.
 */
function readOptions(o, where = 'option') {
  const out = {};
  for (const name of Object.keys(o)) {
    const v = o[name];
    if (v === undefined || name === 'url' || name === 'uri') continue;
    if (Object.hasOwn(OWN, name)) {
      out[name] = OWN[name](v, name);
    } else if (Object.hasOwn(RENAMED, name)) {
      const ours = RENAMED[name];
      const n = OWN[ours](v, name);
      if (o[ours] !== undefined && OWN[ours](o[ours], ours) !== n)
        throw fail(`${name} (mysql2's name for ${ours}) and ${ours} differ; give one`);
      out[ours] = n;
    } else if (Object.hasOwn(ONLY, name)) {
      const [allowed, why] = ONLY[name];
      if (!accepted(allowed, v)) throw refusal(name, v, why);
    } else if (Object.hasOwn(REFUSED, name)) {
      throw fail(`${name} is not supported: ${REFUSED[name]}`);
    } else {
      const guess = closest(name);
      throw fail(
        `unknown ${where} ${JSON.stringify(name)}${guess ? ` (did you mean ${guess}?)` : ''}; docs/configuration.md lists every option`,
      );
    }
  }
  return out;
}

module.exports = { readOptions, sslFrom, hostPort, fail, int, str, OWN, RENAMED, ONLY, REFUSED };
