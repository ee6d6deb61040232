'use strict';
// Prometheus: `sql.prometheus()` renders one pool's families (families.js) in the text exposition
// format 0.0.4, with no dependency; `sql.registerPromClient(registry)` registers them in the
// caller's prom-client `Registry` (prom-client ≥ 13, never required here). Pools registered in one
// registry under one prefix share its collectors — one metric per family, a `pool` label per pool —
// so a second pool is one more label value, never a "metric already registered" error.
const c = require('../check');
const { defaultPoolName, families } = require('./families');

const PREFIX = 'iterativeflow_mysql';
const NAME_RE = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

/** A label value as the text format writes it (backslash, quote and newline escaped). */
const escape = (v) => String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

function checkOpts(fn, opts) {
  if (opts === undefined || opts === null) opts = {};
  if (typeof opts !== 'object') throw c.typeError(`${fn}: opts must be an object`);
  const prefix = opts.prefix ?? PREFIX;
  if (typeof prefix !== 'string' || !NAME_RE.test(prefix)) {
    throw c.typeError(`${fn}: opts.prefix must be a metric name prefix ([a-zA-Z_:][a-zA-Z0-9_:]*)`);
  }
  if (opts.pool !== undefined && (typeof opts.pool !== 'string' || opts.pool === '')) {
    throw c.typeError(`${fn}: opts.pool must be a non-empty string (the pool label)`);
  }
  return { prefix, pool: opts.pool };
}

/** The text of one pool's `stats` (what `sql.stats()` returns); names start with `prefix`. */
function renderPrometheus(stats, pool, prefix) {
  const lines = [];
  const label = (pairs) => {
    const keys = Object.keys(pairs);
    return keys.length === 0 ? '' : `{${keys.map((k) => `${k}="${escape(pairs[k])}"`).join(',')}}`;
  };
  for (const f of families(stats, pool)) {
    const name = `${prefix}_${f.name}`;
    lines.push(`# HELP ${name} ${f.help}`, `# TYPE ${name} ${f.type}`);
    for (const [labels, value, suffix = ''] of f.samples) lines.push(`${name}${suffix}${label(labels)} ${value}`);
  }
  return `${lines.join('\n')}\n`;
}

/** `sql.prometheus(opts)`: `{ prefix = 'iterativeflow_mysql', pool = host:port/database }`. */
function prometheusOf(sql, opts) {
  const { prefix, pool } = checkOpts('prometheus', opts);
  return renderPrometheus(sql.stats(), pool ?? defaultPoolName(sql), prefix);
}

/** The collectors of one registry: prefix → { pools: Map<name, sql>, names }. */
const groups = new WeakMap();

/** Registers the families under `prefix` once per registry; each reads every pool of the group at a scrape. */
function registerGroup(registry, prefix, pools) {
  const template = families({ methods: {}, coalesced: {}, pool: {}, hosts: [] }, '');
  const names = [];
  try {
    for (const f of template) {
      const name = `${prefix}_${f.name}`;
      registry.registerMetric({
        name,
        help: f.help,
        type: f.type,
        aggregator: 'sum',
        get() {
          const values = [];
          for (const [pool, sql] of pools) {
            const fam = families(sql.stats(), pool).find((x) => x.name === f.name);
            for (const [labels, value, suffix] of fam.samples) {
              values.push({ labels, value, ...(suffix ? { metricName: `${name}${suffix}` } : {}) });
            }
          }
          return { name, help: f.help, type: f.type, aggregator: 'sum', values };
        },
      });
      names.push(name);
    }
  } catch (e) {
    for (const n of names) registry.removeSingleMetric(n);
    throw e;
  }
  return names;
}

/**
 * Registers `sql`'s families in a prom-client `Registry`: `{ prefix, pool }` as for prometheus().
 * Answers a function that unregisters this pool (and the collectors with the last pool).
 */
function registerPromClient(sql, registry, opts) {
  if (!registry || typeof registry.registerMetric !== 'function' || typeof registry.removeSingleMetric !== 'function') {
    throw c.typeError('registerPromClient: registry must be a prom-client Registry (e.g. client.register)');
  }
  const { prefix, pool: given } = checkOpts('registerPromClient', opts);
  const pool = given ?? defaultPoolName(sql);
  if (!groups.has(registry)) groups.set(registry, new Map());
  const byPrefix = groups.get(registry);
  let group = byPrefix.get(prefix);
  // A registry cleared behind our back (registry.clear()) no longer has the collectors.
  if (group && !registry.getSingleMetric?.(group.names[0])) {
    byPrefix.delete(prefix);
    group = undefined;
  }
  if (group?.pools.has(pool)) {
    throw c.typeError(
      `registerPromClient: a pool named ${JSON.stringify(pool)} is already registered here under the prefix ${prefix} — pass { pool: '<name>' } to tell the pools apart`,
    );
  }
  if (!group) {
    const pools = new Map();
    group = { pools, names: registerGroup(registry, prefix, pools) };
    byPrefix.set(prefix, group);
  }
  group.pools.set(pool, sql);
  let registered = true;
  return () => {
    if (!registered) return;
    registered = false;
    group.pools.delete(pool);
    if (group.pools.size === 0 && byPrefix.get(prefix) === group) {
      for (const n of group.names) registry.removeSingleMetric(n);
      byPrefix.delete(prefix);
    }
  };
}

module.exports = { prometheusOf, registerPromClient, renderPrometheus };
