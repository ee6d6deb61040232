// Loads the later published releases of the JS package `@iterativeflow/mysql` — 3.0.0 and 2.5.0,
// "the reference" — as runnable baselines for the 3.0 differential and interop tests.
//
// The reference is optional: it is not part of the repository but read from `../shared/reference/`
// beside it (CI has it there) or from `ITERATIVEFLOW_REFERENCE_DIR`, as the npm tarballs
// `iterativeflow-mysql-<version>.tgz`. Without them, the tests that compare with it skip with the
// reason given by `skipWithoutReference(version)` (not under CI=true, nor when
// ITERATIVEFLOW_REFERENCE_DIR is set: there they run and fail), and every other test runs as usual.
//
// At run time we cut `package/dist/index.mjs` out of the tarball (gunzip + a minimal tar reader, no
// external `tar`), write it into a cache directory under the OS temp dir keyed by a hash of the
// tarball and of this helper's location, point its one `@iterativeflow/core/backend` import at a
// generated shim module, and import it. The reference is upstream code that is RUN, never copied
// into the project: nothing here contains its text.
//
// `@iterativeflow/core` 2.5/3.0 is not published, so the helpers the reference imports are
// implemented below, by us, from /work/shared/CONTRACT-3.0.md and docs/contract.md (§2.1, §6, §8,
// §10); the ones unchanged since 2.0.0-alpha.2 are re-exported from ./seed.mjs. The generated shim
// file only re-exports them from this module. The rules of the new ones are the ones this
// package's 3.0 contract follows, so both sides agree:
//
//   statusList(s)          undefined ⇒ undefined; a string ⇒ [s]; an array ⇒ a copy.
//   decodeOneOf(a, v, w)   v when `a` includes it, else Error(`${w}: unexpected value ${JSON(v)}`).
//   decodeFlowError(v, w)  undefined ⇒ undefined; a plain object with string `code` and `message`
//                          ⇒ v; anything else throws an Error naming `w`.
//   decodeTags(v, w)       undefined / null ⇒ as is; an array of strings ⇒ v; else throws.
//   distinctEnqueues(rs)   `[runId, opts][]`: one entry per run id, in order of FIRST appearance,
//                          holding the LAST request's opts.
//   purgeWhereSql(f, d)    `{ where, params }` (AND of `created_at < ?` [d.time(before)],
//                          `name = ?`, `version = ?`, d.tag(?), `status IN d.statusTuple(…)`) with
//                          the statuses = requested ∩ (done, failed, canceled), all three when
//                          unset; no predicate at all ⇒ TypeError('deleteRuns: the filter needs at
//                          least one of before, name, version, status, tag'); an empty
//                          intersection ⇒ null (the caller deletes nothing). A predicate is "given"
//                          when its value is neither undefined nor null (docs/contract.md §9).
//   runSetWhereSql(f, eligible, method, d)   the same with `eligible` instead of the three
//                          terminal statuses and `method` in the TypeError.
//
// The reference's `claim`/`depth` use `FOR UPDATE OF j SKIP LOCKED` (MySQL 8 only; MariaDB rejects
// the `OF` clause). `mariadbCompatPool(pool)` is a TEST SHIM: a thin wrapper of a `mysql2/promise`
// pool that, on MariaDB, rewrites exactly that clause to `FOR UPDATE SKIP LOCKED` (which MariaDB
// ≥ 10.6 accepts; it also locks the joined run row, harmless in these tests) and passes everything
// else through. On MySQL, the reference's home, it rewrites nothing: the reference runs unpatched.
// `referenceSql(mod, pool)` hands it to the reference's own `mysqlPool`, so the reference runs
// unchanged otherwise.

import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gunzipSync } from 'node:zlib';

import {
  ACTIVE_STATUSES,
  NON_SUCCESS_TERMINAL_STATUSES,
  RECONCILABLE_STATUSES,
  RUN_STATUSES,
  TERMINAL_STATUSES,
  assertSqlIdentifier,
  createLocalWakeup,
  isTerminal,
  newId,
  orphanedRunsSql,
  queueDepthOf,
  statusList,
  zeroRunStats,
} from './seed.mjs';
import { onMysql } from './server.mjs';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '..', '..');
export const defaultReferenceDir = resolve(repoRoot, '..', 'shared', 'reference');
export const cacheRoot = resolve(tmpdir(), 'iterativeflow-reference-cache');

export const REFERENCE_VERSIONS = Object.freeze(['2.5.0', '3.0.0']);

const DIST_FILE = 'package/dist/index.mjs';
const CORE_SPECIFIER = '@iterativeflow/core/backend';
const SHIM_FILE = 'core-backend.mjs';

// ---------------------------------------------------------------------------------------------
// Core helper shim (CONTRACT-3.0.md, docs/contract.md §10). Our own implementation.
// ---------------------------------------------------------------------------------------------

export {
  ACTIVE_STATUSES,
  NON_SUCCESS_TERMINAL_STATUSES,
  RECONCILABLE_STATUSES,
  RUN_STATUSES,
  TERMINAL_STATUSES,
  assertSqlIdentifier,
  createLocalWakeup,
  isTerminal,
  newId,
  orphanedRunsSql,
  queueDepthOf,
  statusList,
  zeroRunStats,
};

/** A step's status (docs/contract.md §2.1: a step's status is `ok`). */
export const STEP_STATUSES = Object.freeze(['ok']);
/** A cron's overlap policy (docs/contract.md §2.2). */
export const CRON_OVERLAPS = Object.freeze(['allow', 'skip']);

/** `v` when `allowed` includes it; otherwise throws an Error naming `where`. */
export const decodeOneOf = (allowed, v, where) => {
  if (allowed.includes(v)) return v;
  throw new Error(`${where}: unexpected value ${JSON.stringify(v)}`);
};

/** `undefined` stays; a `{ code: string, message: string, … }` object passes; anything else throws. */
export const decodeFlowError = (v, where) => {
  if (v === undefined) return undefined;
  if (
    v !== null &&
    typeof v === 'object' &&
    !Array.isArray(v) &&
    typeof v.code === 'string' &&
    typeof v.message === 'string'
  ) {
    return v;
  }
  throw new Error(`${where}: not a flow error (an object with string code and message): ${JSON.stringify(v)}`);
};

/** `undefined` and `null` stay; an array of strings passes; anything else throws. */
export const decodeTags = (v, where) => {
  if (v === undefined || v === null) return v;
  if (Array.isArray(v) && v.every((t) => typeof t === 'string')) return v;
  throw new Error(`${where}: not a list of strings: ${JSON.stringify(v)}`);
};

/**
 * `[runId, opts][]`, one entry per run id: in the order of the id's FIRST appearance, holding the
 * LAST request's opts (a later request for the same run supersedes an earlier one).
 */
export const distinctEnqueues = (requests) => {
  const byRun = new Map(); // Map.set on an existing key keeps its position
  for (const r of requests) byRun.set(r.runId, r.opts);
  return [...byRun];
};

const FILTER_KEYS = ['before', 'name', 'version', 'status', 'tag'];
const given = (v) => v !== undefined && v !== null;

/** The shared renderer of purgeWhereSql / runSetWhereSql (see the header for the rules). */
const filterWhereSql = (filter, eligible, method, dialect) => {
  const f = filter ?? {};
  if (!FILTER_KEYS.some((k) => given(f[k]))) {
    throw new TypeError(`${method}: the filter needs at least one of ${FILTER_KEYS.join(', ')}`);
  }
  const requested = given(f.status) ? statusList(f.status) : undefined;
  const statuses = requested ? eligible.filter((s) => requested.includes(s)) : [...eligible];
  if (statuses.length === 0) return null;
  const where = [];
  const params = [];
  const hole = (value) => {
    params.push(value);
    return dialect.placeholder(params.length);
  };
  if (given(f.before)) where.push(`created_at < ${hole(dialect.time(f.before))}`);
  if (given(f.name)) where.push(`name = ${hole(f.name)}`);
  if (given(f.version)) where.push(`version = ${hole(f.version)}`);
  if (given(f.tag)) {
    if (typeof dialect.tag !== 'function') throw new TypeError(`${method}: this backend cannot filter by tag`);
    where.push(dialect.tag(hole(f.tag)));
  }
  where.push(`status IN ${dialect.statusTuple(statuses)}`);
  return { where: where.join(' AND '), params };
};

/** Retention filter: terminal runs only (CONTRACT-3.0.md §3 `deleteRuns`). */
export const purgeWhereSql = (filter, dialect) => filterWhereSql(filter, TERMINAL_STATUSES, 'deleteRuns', dialect);

/** A bulk operation's filter over the runs in `eligible` (CONTRACT-3.0.md §3 `cancelRuns`/`retryRuns`). */
export const runSetWhereSql = (filter, eligible, method, dialect) => filterWhereSql(filter, eligible, method, dialect);

const SHIM_EXPORTS = [
  'ACTIVE_STATUSES',
  'CRON_OVERLAPS',
  'NON_SUCCESS_TERMINAL_STATUSES',
  'RECONCILABLE_STATUSES',
  'RUN_STATUSES',
  'STEP_STATUSES',
  'TERMINAL_STATUSES',
  'assertSqlIdentifier',
  'createLocalWakeup',
  'decodeFlowError',
  'decodeOneOf',
  'decodeTags',
  'distinctEnqueues',
  'isTerminal',
  'newId',
  'orphanedRunsSql',
  'purgeWhereSql',
  'queueDepthOf',
  'runSetWhereSql',
  'statusList',
  'zeroRunStats',
];

// ---------------------------------------------------------------------------------------------
// MariaDB compatibility of the reference's SQL (test shim)
// ---------------------------------------------------------------------------------------------

const FOR_UPDATE_OF = /FOR UPDATE OF j SKIP LOCKED/g;

/** `text` with the MySQL-8-only `FOR UPDATE OF j SKIP LOCKED` turned into `FOR UPDATE SKIP LOCKED`. */
export const mariadbCompatText = (text) =>
  typeof text === 'string' ? text.replace(FOR_UPDATE_OF, 'FOR UPDATE SKIP LOCKED') : text;

/**
 * TEST SHIM. A `mysql2/promise` pool look-alike over `pool` whose `query` (on the pool and on the
 * connections it hands out) rewrites `FOR UPDATE OF j SKIP LOCKED` (see `mariadbCompatText`);
 * everything else is passed through. `stats.rewrites` counts the statements rewritten.
 */
export function mariadbCompatPool(pool) {
  // seen: statements with the clause; rewrites: those rewritten (MariaDB only).
  const stats = { seen: 0, rewrites: 0 };
  const rewrite = (text) => {
    const out = mariadbCompatText(text);
    if (out === text) return text;
    stats.seen += 1;
    if (onMysql()) return text;
    stats.rewrites += 1;
    return out;
  };
  const wrapConnection = (c) => ({
    query: (text, params) => c.query(rewrite(text), params),
    execute: (text, params) => c.execute(rewrite(text), params),
    beginTransaction: () => c.beginTransaction(),
    commit: () => c.commit(),
    rollback: () => c.rollback(),
    release: () => c.release(),
    get connection() {
      return c.connection;
    },
  });
  return {
    stats,
    pool,
    query: (text, params) => pool.query(rewrite(text), params),
    execute: (text, params) => pool.execute(rewrite(text), params),
    getConnection: async () => wrapConnection(await pool.getConnection()),
    end: () => pool.end(),
    get config() {
      return pool.config;
    },
  };
}

/** The reference's own `mysqlPool` over `mariadbCompatPool(pool)` (`mod` from `loadReference`). */
export function referenceSql(mod, mysql2Pool, opts) {
  return mod.mysqlPool(mariadbCompatPool(mysql2Pool), opts);
}

// ---------------------------------------------------------------------------------------------
// Location, availability
// ---------------------------------------------------------------------------------------------

/** The directory holding the tarballs: env `ITERATIVEFLOW_REFERENCE_DIR` or `../shared/reference`. */
export function referenceDir() {
  return process.env.ITERATIVEFLOW_REFERENCE_DIR
    ? resolve(process.env.ITERATIVEFLOW_REFERENCE_DIR)
    : defaultReferenceDir;
}

/** Path of the npm tarball of `version`. */
export function referencePath(version) {
  if (!REFERENCE_VERSIONS.includes(version)) {
    throw new Error(`reference: unknown version ${JSON.stringify(version)} (known: ${REFERENCE_VERSIONS.join(', ')})`);
  }
  return resolve(referenceDir(), `iterativeflow-mysql-${version}.tgz`);
}

/**
 * Whether the tarball of `version` can be loaded: `{ available: true, path }`, or
 * `{ available: false, path, reason }` with a one-line reason.
 */
export function referenceAvailability(version = '3.0.0') {
  const path = referencePath(version);
  let isFile = false;
  try {
    isFile = statSync(path).isFile();
  } catch {}
  if (isFile) return { available: true, path };
  return {
    available: false,
    path,
    reason:
      `reference not available: ${path} is missing (the published @iterativeflow/mysql ${version} ` +
      `npm tarball; ITERATIVEFLOW_REFERENCE_DIR may name another directory)`,
  };
}

/** A missing reference is an error under CI (`CI=true`) or when ITERATIVEFLOW_REFERENCE_DIR is set. */
const referenceRequired = () => {
  const ci = (process.env.CI ?? '').toLowerCase();
  return (ci !== '' && ci !== '0' && ci !== 'false') || Boolean(process.env.ITERATIVEFLOW_REFERENCE_DIR);
};

/**
 * For node:test's `skip` option: the one-line reason when the reference `version` is missing, else
 * `false`. Never skips when the reference is required (CI=true or ITERATIVEFLOW_REFERENCE_DIR set):
 * the test then runs and fails with the loader's own error.
 */
export function skipWithoutReference(version = '3.0.0') {
  if (referenceRequired()) return false;
  const status = referenceAvailability(version);
  return status.available ? false : status.reason;
}

// ---------------------------------------------------------------------------------------------
// Extraction
// ---------------------------------------------------------------------------------------------

const cString = (buf, start, len) => {
  const slice = buf.subarray(start, start + len);
  const nul = slice.indexOf(0);
  return slice.subarray(0, nul < 0 ? slice.length : nul).toString('utf8');
};

const octal = (buf, start, len) => {
  const s = cString(buf, start, len).trim();
  return s === '' ? 0 : parseInt(s, 8);
};

/** Parses a pax extended header body into `{ key: value }`. */
const paxRecords = (body) => {
  const out = {};
  let i = 0;
  while (i < body.length) {
    const sp = body.indexOf(0x20, i);
    if (sp < 0) break;
    const len = Number(body.subarray(i, sp).toString('utf8'));
    if (!Number.isInteger(len) || len <= 0) break;
    const rec = body.subarray(sp + 1, i + len - 1).toString('utf8'); // without the trailing \n
    const eq = rec.indexOf('=');
    if (eq > 0) out[rec.slice(0, eq)] = rec.slice(eq + 1);
    i += len;
  }
  return out;
};

/** The files of a (gunzipped) tar archive: `Map<path, Buffer>` (regular files only). */
export function untar(tar) {
  const files = new Map();
  let off = 0;
  let pax = {};
  let longName;
  while (off + 512 <= tar.length) {
    const header = tar.subarray(off, off + 512);
    if (header.every((b) => b === 0)) break;
    const size = octal(header, 124, 12);
    const type = String.fromCharCode(header[156] || 0x30);
    const body = tar.subarray(off + 512, off + 512 + size);
    off += 512 + Math.ceil(size / 512) * 512;
    if (type === 'x') {
      pax = paxRecords(body);
      continue;
    }
    if (type === 'g') continue;
    if (type === 'L') {
      longName = cString(body, 0, body.length);
      continue;
    }
    const prefix = cString(header, 345, 155);
    const name = pax.path ?? longName ?? (prefix ? `${prefix}/${cString(header, 0, 100)}` : cString(header, 0, 100));
    pax = {};
    longName = undefined;
    if (type === '0' || type === '\0' || type === '7') files.set(name, Buffer.from(body));
  }
  return files;
}

const writeAtomic = (path, text) => {
  if (existsSync(path) && readFileSync(path, 'utf8') === text) return;
  const tmp = `${path}.${process.pid}.${randomUUID()}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
};

/**
 * Materialises the reference `version` in the cache and returns the path of its entry module.
 * The directory is keyed by the version, a hash of the tarball and of this helper's location.
 */
export function prepareReference(version = '3.0.0') {
  const path = referencePath(version);
  if (!existsSync(path)) {
    throw new Error(
      `reference: the tarball ${path} is missing. It is the published @iterativeflow/mysql ${version} ` +
        `(npm pack output, expected in ../shared/reference/ beside the repository); set ` +
        `ITERATIVEFLOW_REFERENCE_DIR to the directory holding it.`,
    );
  }
  const tgz = readFileSync(path);
  const files = untar(gunzipSync(tgz));
  const dist = files.get(DIST_FILE);
  if (!dist) throw new Error(`reference: no ${DIST_FILE} in ${path}`);
  const pkg = files.get('package/package.json');
  const declared = pkg ? JSON.parse(pkg.toString('utf8')).version : undefined;
  if (declared !== version) throw new Error(`reference: ${path} holds version ${declared}, expected ${version}`);

  const source = dist.toString('utf8');
  const occurrences = source.split(`"${CORE_SPECIFIER}"`).length - 1;
  if (occurrences !== 1) {
    throw new Error(
      `reference: expected exactly one import of "${CORE_SPECIFIER}" in ${DIST_FILE}, found ${occurrences}`,
    );
  }
  const rewritten = source.replace(`"${CORE_SPECIFIER}"`, `"./${SHIM_FILE}"`);
  if (rewritten.includes('@iterativeflow/core')) throw new Error('reference: unexpected further core import');
  const imported = /^import\s*\{([^}]*)\}\s*from\s*"\.\/core-backend\.mjs"/m.exec(rewritten);
  const missing = (imported?.[1] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s && !SHIM_EXPORTS.includes(s));
  if (missing.length) throw new Error(`reference ${version}: the shim lacks ${missing.join(', ')}`);

  const key = createHash('sha256')
    .update(tgz)
    .update('\0')
    .update(import.meta.url)
    .digest('hex')
    .slice(0, 16);
  const dir = resolve(cacheRoot, `${version}-${key}`);
  mkdirSync(dir, { recursive: true });
  const shim =
    `// Generated by __test__/helpers/reference.mjs: the core helpers the reference imports (our implementation).\n` +
    `export { ${SHIM_EXPORTS.join(', ')} } from ${JSON.stringify(import.meta.url)};\n`;
  writeAtomic(resolve(dir, SHIM_FILE), shim);
  writeAtomic(resolve(dir, 'package.json'), '{ "type": "module" }\n');
  const entry = resolve(dir, 'index.mjs');
  writeAtomic(entry, rewritten);
  return entry;
}

const loading = new Map();

/**
 * Returns the reference module `{ createMysqlBackend, applySchema, ddl, inTx, mysqlPool }` of
 * `version` (its `mysqlPool` takes a `mysql2/promise` pool; on MariaDB pass it
 * `mariadbCompatPool(pool)`, or use `referenceSql`).
 */
export async function loadReference(version = '3.0.0') {
  let p = loading.get(version);
  if (!p) {
    p = (async () => {
      const entry = prepareReference(version);
      const mod = await import(pathToFileURL(entry).href);
      for (const name of ['createMysqlBackend', 'applySchema', 'ddl', 'inTx', 'mysqlPool']) {
        if (typeof mod[name] !== 'function')
          throw new Error(`reference ${version}: export ${name} missing from ${entry}`);
      }
      return mod;
    })();
    loading.set(version, p);
  }
  try {
    return await p;
  } catch (e) {
    loading.delete(version);
    throw e;
  }
}
