// Shared fixture for the conformance suite (docs/contract.md §12).
//
// Every group file runs its whole suite once per executor (`EXECUTORS`), as the upstream suites
// run once per backend factory: `native` hands the backend our pool, `wrapped` a plain JS object
// implementing `Sql` over it (`wrapSql`), so every statement goes through the wrapped executor.
// One fresh database per suite (before hook), one native pool + schema for it, and per TEST: the
// six tables truncated and a fresh backend built. The clock is fixed at 2030-01-01T00:00:00Z;
// `at(n)` is that instant + n ms.
//
// The module under test is the package root (`index.js`). CONFORMANCE_IMPL may name another module
// with the same surface (mysqlPool(url) / applySchema / ddl / tables / createMysqlBackend), which is
// how the suite itself can be checked against a baseline implementation.
import { before, after, beforeEach } from 'node:test';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { freshDatabase } from '../helpers/db.mjs';

const require = createRequire(import.meta.url);

async function loadImpl() {
  const target = process.env.CONFORMANCE_IMPL;
  if (!target) return require('../../index.js');
  const mod = await import(pathToFileURL(target).href);
  return mod.default && mod.default.createMysqlBackend ? mod.default : mod;
}

export const impl = await loadImpl();
export const { mysqlPool, applySchema, ddl, tables, createMysqlBackend } = impl;

/** The backend factories every group runs over. */
export const EXECUTORS = ['native', 'wrapped'];

export const T = Date.parse('2030-01-01T00:00:00Z');
export const at = (n = 0) => new Date(T + n);
export const LEASE = 1000;

export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export const RUN_ROW_KEYS = [
  'id',
  'name',
  'version',
  'status',
  'input',
  'attempts',
  'output',
  'error',
  'idempotencyKey',
  'tags',
  'parentRunId',
  'parentCursorKey',
  'depth',
  'createdAt',
];
export const STEP_KEYS = ['status', 'result', 'error', 'attempts', 'shape'];
export const CRON_KEYS = ['name', 'schedule', 'flowName', 'flowVersion', 'input', 'overlap', 'nextRunAt', 'lastRunAt'];
export { RUN_STATUSES } from '../helpers/seed.mjs';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * A plain JS object implementing `Sql` on top of another `Sql`. `tx` wraps the transaction handle
 * too, so every statement of a unit flows through `onStatement` (which may throw to inject a fault).
 * `log` records `{ text, params, inTx }` for every statement.
 */
export function wrapSql(inner, { onStatement, log } = {}) {
  const make = (target, inTx) => ({
    async query(text, params) {
      log?.push({ kind: 'query', text, params, inTx });
      if (onStatement) await onStatement(text, params, inTx);
      return target.query(text, params);
    },
    async exec(text, params) {
      log?.push({ kind: 'exec', text, params, inTx });
      if (onStatement) await onStatement(text, params, inTx);
      return target.exec(text, params);
    },
    tx(fn) {
      return target.tx((handle) => fn(make(handle, true)));
    },
  });
  return make(inner, false);
}

/**
 * Register the per-suite and per-test hooks. Returns a context whose fields are (re)filled by the
 * hooks: db, sql, t (table names), backend, store, queue, timer, wakeup; `executor` says which
 * factory the backends use.
 */
export function setup(label, { backendOpts, executor = 'native' } = {}) {
  const ctx = {
    executor,
    db: undefined,
    sql: undefined,
    t: tables(''),
    backend: undefined,
    store: undefined,
    queue: undefined,
    timer: undefined,
    wakeup: undefined,

    /** A further backend over the suite's pool through its executor (or over `sql` as given). */
    makeBackend(opts, sql = ctx.executor === 'wrapped' ? wrapSql(ctx.sql) : ctx.sql) {
      return createMysqlBackend(sql, opts);
    },
    /** Raw rows through the native pool. */
    rows(text, params) {
      return ctx.sql.query(text, params);
    },
    /** Row count of one of the six tables (by key: 'run', 'job', …) with an optional WHERE. */
    async count(table, where = '1=1', params = []) {
      const r = await ctx.sql.query(`SELECT COUNT(*) AS n FROM ${ctx.t[table]} WHERE ${where}`, params);
      return Number(r[0].n);
    },
    /** Start a plain pending run; returns its id. */
    async newRun(spec = {}) {
      const res = await ctx.store.startRun({ name: 'flow', version: 1, input: null, ...spec });
      return res.runId;
    },
    /** Claim everything claimable at `now`; returns run ids sorted. */
    async claimIds(now, limit = 100, leaseMs = LEASE) {
      const leases = await ctx.queue.claim({ limit, leaseMs, now });
      return leases.map((l) => l.runId).sort();
    },
  };

  before(async () => {
    ctx.db = await freshDatabase(label);
    ctx.sql = mysqlPool(ctx.db.url);
    await applySchema(ctx.sql);
  });

  beforeEach(async () => {
    for (const name of Object.values(ctx.t)) await ctx.sql.query(`TRUNCATE TABLE ${name}`);
    ctx.backend = ctx.makeBackend(backendOpts);
    ctx.store = ctx.backend.store;
    ctx.queue = ctx.backend.queue;
    ctx.timer = ctx.backend.timer;
    ctx.wakeup = ctx.backend.wakeup;
  });

  after(async () => {
    try {
      if (ctx.sql && typeof ctx.sql.close === 'function') await ctx.sql.close();
    } finally {
      if (ctx.db) await ctx.db.drop();
    }
  });

  return ctx;
}
