'use strict';
// mysqlPool's first argument — a mysql:// URL, an options object, a mysql2 Pool or PoolCluster —
// read into the normalised config (lib/options.js says what each name becomes).

const { readOptions, fail } = require('./options');
const { optionsOfUrl } = require('./url');

/**
 * What a mysql2 pool says about how to connect, under this package's names. A mysql2 pool fills
 * in every option with mysql2's defaults, so its result-shaping options (typeCast, dateStrings,
 * timezone, namedPlaceholders, multipleStatements, …) and its queueing (waitForConnections,
 * queueLimit) cannot be told from choices and are left to it: they shape the mysql2 pool's own
 * results, never this package's (docs/configuration.md). Options that change where or how a
 * connection is made, which this package cannot do, are refused.
 */
function fromMysql2Config(cfg, conn, label) {
  for (const [name, why] of [
    ['stream', 'connections go to host/port or socketPath only (point host/port at a tunnel instead)'],
    ['localAddress', 'the local address of connections cannot be chosen'],
    ['authPlugins', 'custom authentication plugins are not supported'],
    ['authSwitchHandler', 'custom authentication plugins are not supported'],
    ['password2', 'multi-factor authentication is not supported'],
    ['password3', 'multi-factor authentication is not supported'],
  ]) {
    if (conn[name] !== undefined && conn[name] !== null) throw fail(`${label}: its ${name} is not supported: ${why}`);
  }
  if (conn.passwordSha1 && !conn.password) throw fail(`${label}: its passwordSha1 is not supported: give password`);
  let ssl = conn.ssl || undefined;
  if (ssl !== undefined) {
    // mysql2 adds rejectUnauthorized itself; a profile it resolved arrives as an object.
    ssl = Object.fromEntries(Object.entries(ssl).filter(([, v]) => v !== undefined));
  }
  try {
    return readOptions({
      host: conn.host,
      port: conn.port,
      user: conn.user,
      password: conn.password,
      database: conn.database,
      socketPath: conn.socketPath,
      ssl,
      connectionLimit: cfg.connectionLimit,
      acquireTimeoutMs: conn.connectTimeout,
      idleTimeout: cfg.idleTimeout,
      maxIdle: cfg.maxIdle,
      enableKeepAlive: conn.enableKeepAlive,
      keepAliveInitialDelay: conn.keepAliveInitialDelay || undefined,
      compress: Boolean(conn.compress),
      enableCleartextPlugin: conn.enableCleartextPlugin === undefined ? undefined : Boolean(conn.enableCleartextPlugin),
      resetOnRelease: cfg.resetOnRelease === undefined ? undefined : Boolean(cfg.resetOnRelease),
    });
  } catch (e) {
    e.message = e.message.replace(/^mysqlPool: /, `mysqlPool: ${label}'s `);
    throw e;
  }
}

/** The config of a mysql2 pool (promise or callback API), if `x` is one. */
function mysql2PoolConfig(x) {
  const core = x && typeof x === 'object' && x.pool && x.pool.config ? x.pool : x;
  const cfg = core && core.config;
  if (!cfg || typeof cfg !== 'object' || !cfg.connectionConfig) return undefined;
  return fromMysql2Config(cfg, cfg.connectionConfig, 'the mysql2 pool');
}

/**
 * The config of a mysql2 `PoolCluster` (promise or callback), if `x` is one: its nodes become a
 * host list, its default selector the failover policy (`ORDER` is sequential, `RR` / `RANDOM`
 * spread connections). The nodes must share user, password, database and TLS settings.
 */
function mysql2ClusterConfig(x) {
  const core = x && typeof x === 'object' && x.poolCluster ? x.poolCluster : x;
  if (!core || typeof core !== 'object' || !core._nodes || typeof core._nodes !== 'object') return undefined;
  const nodes = Object.values(core._nodes).map((n) => n && n.pool && n.pool.config);
  if (nodes.length === 0 || nodes.some((n) => !n || !n.connectionConfig)) {
    throw fail('the mysql2 PoolCluster has no nodes (call cluster.add(config) first)');
  }
  const first = nodes[0].connectionConfig;
  for (const [i, n] of nodes.entries()) {
    const cc = n.connectionConfig;
    for (const key of ['user', 'password', 'database', 'socketPath']) {
      if (cc[key] !== first[key])
        throw fail(`the mysql2 PoolCluster's nodes differ in ${key} (node ${i}); one pool has one set`);
    }
    if (JSON.stringify(cc.ssl || null) !== JSON.stringify(first.ssl || null)) {
      throw fail(`the mysql2 PoolCluster's nodes differ in ssl (node ${i}); one pool has one set`);
    }
  }
  const one = fromMysql2Config(nodes[0], first, 'the mysql2 PoolCluster');
  const selector = String(core._defaultSelector || 'RR').toUpperCase();
  return {
    ...one,
    host: undefined,
    port: undefined,
    hosts: nodes.map((n) => ({ host: n.connectionConfig.host, port: n.connectionConfig.port })),
    failover: selector === 'ORDER' ? 'sequential' : 'loadbalance',
  };
}

/** An options object: `url` / `uri` read as a URL, the object's own names over the URL's. */
function fromObject(o) {
  const { url, uri } = o;
  if (url !== undefined && uri !== undefined) throw fail("give url or uri (mysql2's name for it), not both");
  const text = url ?? uri;
  if (text === undefined) return readOptions(o);
  if (typeof text !== 'string') throw fail(`${url !== undefined ? 'url' : 'uri'} must be a mysql:// URL string`);
  const fromUrl = readOptions(optionsOfUrl(text), 'URL parameter');
  const given = readOptions(o);
  // mysql2 keeps the URL's value where the object gives none; so do we, for every name.
  return { ...fromUrl, ...Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) };
}

/** The normalised config of mysqlPool's first argument (a TypeError for anything unusable). */
function configOf(x) {
  if (typeof x === 'string') return readOptions(optionsOfUrl(x), 'URL parameter');
  if (x === null || typeof x !== 'object' || Array.isArray(x)) {
    throw fail('expected a mysql2 Pool or PoolCluster, a mysql:// URL, or an options object');
  }
  return mysql2PoolConfig(x) || mysql2ClusterConfig(x) || fromObject(x);
}

/** The second argument's names: `{ setIsolation, tracing }`. */
function poolOpts(opts) {
  if (opts === undefined || opts === null) return {};
  if (typeof opts !== 'object') throw fail('opts must be an object');
  for (const key of Object.keys(opts)) {
    if (key !== 'setIsolation' && key !== 'tracing' && opts[key] !== undefined)
      throw fail(`unknown opts.${key} (the second argument takes setIsolation and tracing)`);
  }
  if (opts.setIsolation !== undefined && typeof opts.setIsolation !== 'boolean')
    throw fail('opts.setIsolation must be a boolean');
  const t = opts.tracing;
  if (t !== undefined && t !== null) {
    if (typeof t !== 'object') throw fail('opts.tracing must be an object');
    for (const key of Object.keys(t)) {
      if (key !== 'mysql2' && key !== 'values') throw fail(`unknown opts.tracing.${key} (mysql2, values)`);
      if (t[key] !== undefined && typeof t[key] !== 'boolean') throw fail(`opts.tracing.${key} must be a boolean`);
    }
  }
  return { setIsolation: opts.setIsolation, tracing: t ?? undefined };
}

module.exports = { configOf, poolOpts };
