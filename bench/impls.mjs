// The implementations under test, side by side: the seed (the published JS package over a mysql2
// pool, tables js_), native (this package, tables rs_), native-b (another build of it, tables rb_,
// only when asked for: an A/B of two builds inside one process, interleaved like the rest, which
// a noisy host cannot give across processes) and the floor (the same work written by hand over raw
// mysql2, bench/floor/, tables fl_), each with a direct pool for the timed repetitions and, with
// the counting proxy, a second one through it for the counting pass.
import { readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve as resolvePath } from 'node:path';

import mysql from 'mysql2/promise';

import { loadSeed, seedAvailability } from '../__test__/helpers/seed.mjs';
import { bench, cleanups, withQuery } from './context.mjs';
import { applyFloorSchema, createFloorBackend } from './floor/index.mjs';
import { tableNames } from './fixtures.mjs';
import { argv } from './options.mjs';

const require = createRequire(import.meta.url);

export const IMPL_NAMES = ['seed', 'native', 'native-b', 'floor'];

/**
 * The implementations `--impl` names: `both` (the default: seed, native and floor, the seed only
 * when its text is there), or one name or a comma-separated list of `seed`, `native`,
 * `native-b` (needs `BENCH_NATIVE_B_MODULE`), `floor`.
 */
export function implsWanted(impl, seedPresent) {
  if (impl === 'both') return IMPL_NAMES.filter((n) => (n !== 'seed' || seedPresent) && n !== 'native-b');
  const names = String(impl)
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  if (names.length === 0 || names.some((n) => !IMPL_NAMES.includes(n))) {
    throw new Error(
      `--impl must be both, or seed, native, native-b, floor (one or a comma-separated list), got ${impl}`,
    );
  }
  if (names.includes('native-b') && !process.env.BENCH_NATIVE_B_MODULE) {
    throw new Error("--impl native-b needs BENCH_NATIVE_B_MODULE (the path of the other build's index.js)");
  }
  return IMPL_NAMES.filter((n) => names.includes(n));
}

/**
 * `BENCH_NATIVE_B_ENV` ("NAME=value,NAME=value"): environment native-b is loaded and warmed
 * under, then the previous values come back. It reaches only the settings the addon reads once,
 * at its first use (`IFW_EAGER_POLL`, `IFW_TOKIO_WORKERS`): each copy of the addon keeps its own.
 */
export function nativeBEnv(text = process.env.BENCH_NATIVE_B_ENV ?? '') {
  const env = {};
  for (const pair of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`BENCH_NATIVE_B_ENV: expected NAME=value pairs separated by commas, got ${pair}`);
    env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return env;
}

/** Runs `fn` with `env` set in process.env, then puts the previous values back. */
export async function withEnv(env, fn) {
  const before = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(before)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/**
 * The seed module, or null when it is not measured: `--impl` without `seed`, or `--impl both`
 * without the seed text (a clone without ../shared beside it), which then measures native and the
 * floor.
 */
export async function seedFor(impl) {
  if (impl === 'both') {
    const status = seedAvailability();
    if (!status.available) {
      console.error(`${status.reason}; benchmarking native and the floor`);
      return null;
    }
    return loadSeed();
  }
  return implsWanted(impl, true).includes('seed') ? loadSeed() : null;
}

function loadNative(variable = 'BENCH_NATIVE_MODULE') {
  const path = process.env[variable] ? resolvePath(process.env[variable]) : undefined;
  return { module: require(path ?? '../index.js'), entry: path ?? require.resolve('../index.js') };
}

/** A native side: `name` over tables `prefix`, from `module` (loaded from `entry`). */
function nativeImpl(name, prefix, module, entry, env = {}) {
  const suffix = process.env.BENCH_NATIVE_URL_SUFFIX ?? '';
  const make = (url) => {
    const sql = module.mysqlPool(withQuery(url, suffix));
    cleanups.push(async () => {
      for (const m of ['close', 'end', 'disconnect']) {
        if (typeof sql?.[m] === 'function') return sql[m]();
      }
    });
    return sql;
  };
  const sql = make(bench.timedUrl);
  const impl = {
    name,
    prefix,
    url: withQuery(bench.timedUrl, suffix),
    nativeModule: entry,
    env,
    module,
    sql,
    backend: module.createMysqlBackend(sql, { prefix }),
    t: tableNames(prefix),
  };
  if (bench.proxy) {
    impl.countedUrl = withQuery(bench.proxy.url(bench.dbUrl), suffix);
    impl.countedSql = make(bench.proxy.url(bench.dbUrl));
    impl.counted = module.createMysqlBackend(impl.countedSql, { prefix });
  }
  return impl;
}

export async function createImpls(seed) {
  const wanted = implsWanted(argv.impl, Boolean(seed));

  if (wanted.includes('seed')) {
    const make = (url) => {
      const pool = mysql.createPool({ uri: url, connectionLimit: 10 });
      cleanups.push(() => pool.end());
      return { sql: seed.mysqlPool(pool) };
    };
    const direct = make(bench.timedUrl);
    const impl = {
      name: 'seed',
      prefix: 'js_',
      url: bench.timedUrl,
      module: seed,
      sql: direct.sql,
      backend: seed.createMysqlBackend(direct.sql, { prefix: 'js_' }),
      t: tableNames('js_'),
    };
    if (bench.proxy) {
      const counted = make(bench.proxy.url(bench.dbUrl));
      impl.countedUrl = bench.proxy.url(bench.dbUrl);
      impl.countedSql = counted.sql;
      impl.counted = seed.createMysqlBackend(counted.sql, { prefix: 'js_' });
    }
    bench.impls.push(impl);
  }
  if (wanted.includes('native')) {
    let native;
    let entry;
    try {
      ({ module: native, entry } = loadNative());
    } catch (e) {
      if (argv.impl !== 'both' || !seed) throw e;
      console.error(`native: cannot load ../index.js (${e.message.split('\n')[0]}); benchmarking the others`);
    }
    if (native) {
      bench.nativeInfo = describeBinary(entry);
      bench.impls.push(nativeImpl('native', 'rs_', native, entry));
    }
  }
  if (wanted.includes('native-b')) {
    const env = nativeBEnv();
    const settings = Object.keys(env).length ? ` under ${process.env.BENCH_NATIVE_B_ENV}` : '';
    await withEnv(env, () => {
      const { module, entry } = loadNative('BENCH_NATIVE_B_MODULE');
      bench.nativeInfo = `${bench.nativeInfo ? `${bench.nativeInfo}; ` : ''}native-b: ${describeBinary(entry)}${settings}`;
      bench.impls.push(nativeImpl('native-b', 'rb_', module, entry, env));
    });
  }
  if (wanted.includes('floor')) {
    // The floor has no DDL of its own: the tables come from the same ddl() as the others'.
    let ddl = bench.impls.find((i) => i.module?.ddl)?.module.ddl ?? seed?.ddl;
    if (!ddl) ddl = loadNative().module.ddl;
    const make = (url) => {
      const backend = createFloorBackend(url, { prefix: 'fl_' });
      cleanups.push(() => backend.close());
      return backend;
    };
    const backend = make(bench.timedUrl);
    const impl = {
      name: 'floor',
      prefix: 'fl_',
      url: bench.timedUrl,
      module: { applySchema: (sql, prefix) => applyFloorSchema({ sql }, ddl, prefix) },
      sql: backend.sql,
      backend,
      t: tableNames('fl_'),
    };
    if (bench.proxy) {
      impl.countedUrl = bench.proxy.url(bench.dbUrl);
      impl.counted = make(impl.countedUrl);
      impl.countedSql = impl.counted.sql;
    }
    bench.impls.push(impl);
  }
}

/** Which addon binary sits beside the native entry point (a debug build is far slower). */
function describeBinary(entry) {
  try {
    let dir = statSync(entry).isDirectory() ? entry : dirname(entry);
    const nodes = readdirSync(dir).filter((f) => f.endsWith('.node'));
    if (nodes.length === 0) return `native entry ${entry}`;
    const f = join(dir, nodes[0]);
    const st = statSync(f);
    const mb = st.size / 2 ** 20;
    const debug = mb > 40 ? ' - LOOKS LIKE A DEBUG BUILD, numbers are not representative (npm run build)' : '';
    return `native binary ${f} (${mb.toFixed(1)} MB, built ${st.mtime.toISOString()})${debug}`;
  } catch {
    return `native entry ${entry}`;
  }
}

/** Opens the pools' connections before anything is measured. */
async function warm(backend) {
  await Promise.all(Array.from({ length: 32 }, () => backend.store.loadRunRow('warm-up')));
  await Promise.all(Array.from({ length: 16 }, () => backend.queue.claim({ limit: 1, leaseMs: 1, now: new Date(0) })));
}

/** The schema of each implementation, then its pools' connections opened (both pools). */
export async function prepareImpls() {
  for (const impl of bench.impls) {
    await withEnv(impl.env ?? {}, async () => {
      await impl.module.applySchema(impl.sql, impl.prefix);
      await warm(impl.backend);
      if (impl.counted) await warm(impl.counted);
    });
  }
}
