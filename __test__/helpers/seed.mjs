// Loads the published JS package `@iterativeflow/mysql` 2.0.0-alpha.2 ("the seed") as a runnable
// baseline for interop tests and benchmarks.
//
// The seed is optional: it is not part of the repository but read from `../shared/seeds/` beside
// it (CI has it there) or from `ITERATIVEFLOW_SEED`. Without it, the tests that compare with it
// skip with the reason given by `skipWithoutSeed()` (not under CI=true: there they run and fail),
// and every other test runs as usual.
//
// The seed is stored as a diff (one hunk per file, every line prefixed with `+`). At run time we cut
// `package/dist/index.mjs` out of it, write it into the git-ignored cache `.bench-seed/` at the repo
// root, point its `@iterativeflow/core/backend` import at a small shim, and import it. The seed is
// upstream code that is RUN, never copied into the project: nothing here contains its text.
//
// `@iterativeflow/core` is not published, so the helpers the seed imports are implemented below, by
// us, from docs/contract.md §10 (and §2.1 / §6 / §8 for their exact meaning). The generated shim
// file only re-exports them from this module.

import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '..', '..');
export const defaultSeedPath = resolve(repoRoot, '..', 'shared', 'seeds', '000_427a7cea8c28a0f2.txt');
export const cacheRoot = resolve(repoRoot, '.bench-seed');

const DIST_FILE = 'package/dist/index.mjs';
const CORE_SPECIFIER = '@iterativeflow/core/backend';
const SHIM_FILE = 'core-backend.mjs';

// ---------------------------------------------------------------------------------------------
// Core helper shim (docs/contract.md §10). Our own implementation.
// ---------------------------------------------------------------------------------------------

/** Canonical order of the nine run statuses (§2.1). */
export const RUN_STATUSES = Object.freeze([
  'pending',
  'running',
  'sleeping',
  'awaiting_signal',
  'awaiting_child',
  'retrying',
  'done',
  'failed',
  'canceled',
]);
export const TERMINAL_STATUSES = Object.freeze(['done', 'failed', 'canceled']);
export const NON_SUCCESS_TERMINAL_STATUSES = Object.freeze(['failed', 'canceled']);
export const ACTIVE_STATUSES = Object.freeze(RUN_STATUSES.filter((s) => !TERMINAL_STATUSES.includes(s)));
export const RECONCILABLE_STATUSES = Object.freeze(['pending', 'running', 'sleeping', 'retrying']);

export const isTerminal = (status) => TERMINAL_STATUSES.includes(status);

/** RFC-4122 v4 id, 36 lowercase characters. */
export const newId = () => randomUUID();

/** `undefined` ⇒ `undefined`; array ⇒ shallow copy; a single status ⇒ `[status]`. */
export const statusList = (s) => (s === undefined ? undefined : Array.isArray(s) ? [...s] : [s]);

/** A fresh object with every status (canonical order) counted 0. */
export const zeroRunStats = () => Object.fromEntries(RUN_STATUSES.map((s) => [s, 0]));

/**
 * Queue depth at `nowMs` from `{ runAt, leaseExpires? }` rows: claimable = due and not leased,
 * leased = lease still valid (whatever runAt), oldest age over the claimable ones or `null`.
 */
export const queueDepthOf = (jobs, nowMs) => {
  let claimable = 0;
  let leased = 0;
  let oldest;
  for (const job of jobs) {
    const held = job.leaseExpires != null && job.leaseExpires > nowMs;
    if (held) {
      leased += 1;
    } else if (job.runAt <= nowMs) {
      claimable += 1;
      if (oldest === undefined || job.runAt < oldest) oldest = job.runAt;
    }
  }
  return { claimable, leased, oldestClaimableAgeMs: oldest === undefined ? null : nowMs - oldest };
};

/** Throws unless `name` is made only of ASCII letters, digits and underscores (empty allowed). */
export const assertSqlIdentifier = (name) => {
  if (typeof name !== 'string' || !/^[A-Za-z0-9_]*$/.test(name)) {
    throw new Error(
      `invalid SQL schema/prefix ${JSON.stringify(name)}: only letters, digits and underscore are allowed`,
    );
  }
};

/**
 * The orphan query of docs/contract.md §8: the union of
 *  A. reconcilable runs with neither a job nor a timer row,
 *  B. awaiting_child runs without a job whose children are all terminal or include a failed/canceled one,
 *  C. non-terminal runs whose parent exists and is failed/canceled,
 * returning distinct `id`s ordered by `opts.order` (written against the alias `r`), at most `opts.limit`
 * (a literal or a placeholder such as `?`).
 */
export const orphanedRunsSql = (opts) => {
  const { run, job, timer, reconcilable, terminal, nonSuccessTerminal, order, limit } = opts;
  const stranded = `SELECT r.id, r.seq FROM ${run} r
      WHERE r.status IN ${reconcilable}
        AND NOT EXISTS (SELECT 1 FROM ${job} j WHERE j.run_id = r.id)
        AND NOT EXISTS (SELECT 1 FROM ${timer} tm WHERE tm.run_id = r.id)`;
  const lostWake = `SELECT r.id, r.seq FROM ${run} r
      WHERE r.status = 'awaiting_child'
        AND NOT EXISTS (SELECT 1 FROM ${job} j WHERE j.run_id = r.id)
        AND EXISTS (SELECT 1 FROM ${run} c WHERE c.parent_run_id = r.id)
        AND (EXISTS (SELECT 1 FROM ${run} c WHERE c.parent_run_id = r.id AND c.status IN ${nonSuccessTerminal})
             OR NOT EXISTS (SELECT 1 FROM ${run} c WHERE c.parent_run_id = r.id AND c.status NOT IN ${terminal}))`;
  const abandoned = `SELECT r.id, r.seq FROM ${run} r
      JOIN ${run} p ON p.id = r.parent_run_id
      WHERE r.status NOT IN ${terminal} AND p.status IN ${nonSuccessTerminal}`;
  return `SELECT r.id FROM (
    ${stranded}
    UNION
    ${lostWake}
    UNION
    ${abandoned}
  ) r ORDER BY ${order} LIMIT ${limit}`;
};

/**
 * In-process wakeup (docs/contract.md §6): edge-triggered, per instance. `wait` resolves on the
 * first of a `signal(runId)` while waiting or the timeout; `signal` resolves every waiter
 * registered right now.
 */
export const createLocalWakeup = () => {
  const waiters = new Map(); // runId -> Set<() => void>
  return {
    wait(runId, timeoutMs) {
      return new Promise((resolveWait) => {
        let set = waiters.get(runId);
        if (!set) {
          set = new Set();
          waiters.set(runId, set);
        }
        const done = () => {
          clearTimeout(timer);
          const current = waiters.get(runId);
          if (current) {
            current.delete(done);
            if (current.size === 0) waiters.delete(runId);
          }
          resolveWait(undefined);
        };
        const timer = setTimeout(done, Math.max(0, timeoutMs));
        set.add(done);
      });
    },
    async signal(runId) {
      const set = waiters.get(runId);
      if (!set) return undefined;
      for (const done of [...set]) done();
      return undefined;
    },
  };
};

const SHIM_EXPORTS = [
  'RUN_STATUSES',
  'TERMINAL_STATUSES',
  'NON_SUCCESS_TERMINAL_STATUSES',
  'ACTIVE_STATUSES',
  'RECONCILABLE_STATUSES',
  'isTerminal',
  'newId',
  'statusList',
  'zeroRunStats',
  'queueDepthOf',
  'assertSqlIdentifier',
  'orphanedRunsSql',
  'createLocalWakeup',
];

// ---------------------------------------------------------------------------------------------
// Extraction
// ---------------------------------------------------------------------------------------------

/** Path of the seed text: env `ITERATIVEFLOW_SEED` or `../shared/seeds/000_…txt` beside the repo. */
export function seedPath() {
  return process.env.ITERATIVEFLOW_SEED ? resolve(process.env.ITERATIVEFLOW_SEED) : defaultSeedPath;
}

/**
 * Whether the seed text can be loaded: `{ available: true, path }`, or `{ available: false, path,
 * reason }` with a one-line reason. The seed is an optional baseline: a bare clone has no
 * `../shared/` beside it, CI has.
 */
export function seedAvailability() {
  const path = seedPath();
  let isFile = false;
  try {
    isFile = statSync(path).isFile();
  } catch {}
  if (isFile) return { available: true, path };
  return {
    available: false,
    path,
    reason:
      `seed not available: ${path} is missing (the published @iterativeflow/mysql ` +
      `2.0.0-alpha.2; ITERATIVEFLOW_SEED may name another path)`,
  };
}

/**
 * Whether a missing seed is an error rather than a reason to skip: under CI (`CI=true`; CI has
 * `../shared` beside the clone), or when `ITERATIVEFLOW_SEED` names the seed explicitly.
 */
const seedRequired = () => {
  const ci = (process.env.CI ?? '').toLowerCase();
  return (ci !== '' && ci !== '0' && ci !== 'false') || Boolean(process.env.ITERATIVEFLOW_SEED);
};

/**
 * For node:test's `skip` option: the one-line reason when the seed is missing, else `false`.
 * Never skips when the seed is required (under `CI=true`, or with `ITERATIVEFLOW_SEED` set): the
 * test then runs and fails loudly with the seed's own error.
 */
export function skipWithoutSeed() {
  if (seedRequired()) return false;
  const status = seedAvailability();
  return status.available ? false : status.reason;
}

/** Cuts one file out of the seed diff text (the hunk after its `package/...` header line). */
export function extractSeedFile(text, file = DIST_FILE) {
  const lines = text.split(/\r?\n/);
  const at = lines.findIndex((l) => l.trim() === file);
  if (at < 0) throw new Error(`seed: no file ${file} in the seed text`);
  let i = at + 1;
  while (i < lines.length && lines[i].trim() === '') i += 1;
  const m = /^@@ -0,0 \+1(?:,(\d+))? @@/.exec(lines[i] ?? '');
  if (!m) throw new Error(`seed: expected a hunk header after ${file}, got ${JSON.stringify(lines[i])}`);
  const count = m[1] === undefined ? 1 : Number(m[1]);
  const body = lines.slice(i + 1, i + 1 + count);
  if (body.length !== count) throw new Error(`seed: hunk of ${file} is truncated (${body.length}/${count} lines)`);
  return (
    body
      .map((l, n) => {
        if (!l.startsWith('+')) throw new Error(`seed: line ${n + 1} of ${file} does not start with '+'`);
        return l.slice(1);
      })
      .join('\n') + '\n'
  );
}

const writeAtomic = (path, text) => {
  if (existsSync(path) && readFileSync(path, 'utf8') === text) return;
  const tmp = `${path}.${process.pid}.${randomUUID()}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
};

/**
 * Materialises the seed in the cache and returns the path of its entry module.
 * The directory is keyed by a hash of the seed text and of this helper's location.
 */
export function prepareSeed() {
  const path = seedPath();
  if (!existsSync(path)) {
    throw new Error(
      `seed: the seed file ${path} is missing. It is the published @iterativeflow/mysql 2.0.0-alpha.2 ` +
        `as a diff (expected at ../shared/seeds/000_427a7cea8c28a0f2.txt beside the repository); ` +
        `set ITERATIVEFLOW_SEED to its path.`,
    );
  }
  const text = readFileSync(path, 'utf8');
  const source = extractSeedFile(text);
  const occurrences = source.split(`"${CORE_SPECIFIER}"`).length - 1;
  if (occurrences !== 1) {
    throw new Error(`seed: expected exactly one import of "${CORE_SPECIFIER}" in ${DIST_FILE}, found ${occurrences}`);
  }
  const rewritten = source.replace(`"${CORE_SPECIFIER}"`, `"./${SHIM_FILE}"`);
  if (rewritten.includes('@iterativeflow/core')) throw new Error('seed: unexpected further core import');

  const key = createHash('sha256')
    .update(text)
    .update('\0')
    .update(import.meta.url)
    .digest('hex')
    .slice(0, 16);
  const dir = resolve(cacheRoot, key);
  mkdirSync(dir, { recursive: true });
  const shim =
    `// Generated by __test__/helpers/seed.mjs: the core helpers the seed imports (our implementation).\n` +
    `export { ${SHIM_EXPORTS.join(', ')} } from ${JSON.stringify(import.meta.url)};\n`;
  writeAtomic(resolve(dir, SHIM_FILE), shim);
  writeAtomic(resolve(dir, 'package.json'), '{ "type": "module" }\n');
  const entry = resolve(dir, 'index.mjs');
  writeAtomic(entry, rewritten);
  return entry;
}

let loading;

/**
 * Returns the seed module `{ createMysqlBackend, applySchema, ddl, mysqlPool }`
 * (`mysqlPool` takes a `mysql2/promise` pool).
 */
export async function loadSeed() {
  loading ??= (async () => {
    const entry = prepareSeed();
    const mod = await import(pathToFileURL(entry).href);
    for (const name of ['createMysqlBackend', 'applySchema', 'ddl', 'mysqlPool']) {
      if (typeof mod[name] !== 'function') throw new Error(`seed: export ${name} missing from ${entry}`);
    }
    return mod;
  })();
  try {
    return await loading;
  } catch (e) {
    loading = undefined;
    throw e;
  }
}
