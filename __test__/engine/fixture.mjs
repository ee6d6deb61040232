// Fixture for the engine-level tests: one fresh database per test FILE, the six tables truncated
// before every test, a fake clock anchored at 2030-01-01T00:00:00Z, and engines (mini-engine.mjs)
// built over fresh backends. Tests drive the engine with tickOnce and advance the clock instead of
// sleeping.
import { before, after, beforeEach } from 'node:test';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { freshDatabase } from '../helpers/db.mjs';
import { createEngine, isTerminal } from './mini-engine.mjs';

const require = createRequire(import.meta.url);

// The module under test is the package root. ENGINE_IMPL (or CONFORMANCE_IMPL) may name another
// module with the same surface, e.g. the seed baseline, to check these tests themselves:
//   ENGINE_IMPL=__test__/conformance/seed-adapter.mjs node __test__/run.mjs __test__/engine
async function loadImpl() {
  const target = process.env.ENGINE_IMPL || process.env.CONFORMANCE_IMPL;
  if (!target) return require('../../index.js');
  const mod = await import(pathToFileURL(target).href);
  return mod.default && mod.default.createMysqlBackend ? mod.default : mod;
}

export const impl = await loadImpl();
export const { mysqlPool, applySchema, tables, createMysqlBackend } = impl;

export const T = Date.parse('2030-01-01T00:00:00Z');
export const ROUND_MS = 60_000;

/** A settable clock; `now()` returns a fresh Date. */
export function makeClock(start = T) {
  const c = {
    t: start,
    now: () => new Date(c.t),
    advance(ms) {
      c.t += ms;
      return c.t;
    },
    set(ms) {
      c.t = ms;
    },
  };
  return c;
}

export function setup(label) {
  const pools = [];
  const ctx = {
    db: undefined,
    sql: undefined,
    t: tables(''),
    clock: makeClock(),

    /** A new mysqlPool on the file's database (closed after the file). */
    pool() {
      const p = mysqlPool(ctx.db.url);
      pools.push(p);
      return p;
    },

    /** A fresh backend (over `sql`, default the shared pool) and an engine over it. */
    engine(opts = {}, sql = ctx.sql) {
      const backend = createMysqlBackend(sql);
      return createEngine(opts.wrap ? opts.wrap(backend) : backend, {
        now: ctx.clock.now,
        batchMax: 16,
        leaseMs: 600_000,
        ...opts,
      });
    },

    rows(text, params) {
      return ctx.sql.query(text, params);
    },
    async count(table, where = '1=1', params = []) {
      const r = await ctx.sql.query(`SELECT COUNT(*) AS n FROM ${ctx.t[table]} WHERE ${where}`, params);
      return Number(r[0].n);
    },
    /** The raw run row (column names as stored) or undefined. */
    async runRow(id) {
      const r = await ctx.sql.query(`SELECT * FROM ${ctx.t.run} WHERE id = ?`, [id]);
      return r[0];
    },
    async status(id) {
      return (await ctx.runRow(id))?.status;
    },
    /** Step rows of a run, ordered by cursor number: [{ cursor_key, shape, result (parsed), attempts }]. */
    async steps(id) {
      const r = await ctx.sql.query(
        `SELECT cursor_key, shape, result, attempts, status FROM ${ctx.t.step} WHERE run_id = ?`,
        [id],
      );
      return r
        .map((s) => ({
          ...s,
          result: s.result == null ? undefined : JSON.parse(s.result),
          attempts: Number(s.attempts),
        }))
        .sort((a, b) => Number(a.cursor_key.slice(1)) - Number(b.cursor_key.slice(1)));
    },
    async job(id) {
      return (await ctx.sql.query(`SELECT * FROM ${ctx.t.job} WHERE run_id = ?`, [id]))[0];
    },
    async timerOf(id) {
      const r = await ctx.sql.query(`SELECT fire_at FROM ${ctx.t.timer} WHERE run_id = ?`, [id]);
      return r[0] ? Number(r[0].fire_at) : undefined;
    },
    async childIds(id) {
      const r = await ctx.sql.query(`SELECT id FROM ${ctx.t.run} WHERE parent_run_id = ? ORDER BY seq`, [id]);
      return r.map((x) => x.id);
    },

    /** Tick every engine (concurrently) until none claims anything. Returns leases processed. */
    async quiesce(engines, tickOpts) {
      const list = Array.isArray(engines) ? engines : [engines];
      let total = 0;
      for (let guard = 0; guard < 10_000; guard++) {
        const res = await Promise.all(list.map((e) => e.tickOnce(tickOpts)));
        const claimed = res.reduce((n, r) => n + r.claimed + r.due, 0);
        total += claimed;
        if (claimed === 0) return total;
      }
      throw new Error('quiesce: no quiet point after 10000 cycles');
    },

    /**
     * §12.9-style drive: per round, tick every engine until quiet; stop once `until()` holds,
     * else advance the clock (60 s) and go again, at most `maxRounds` rounds. With several
     * engines, each runs its own tick loop concurrently within the round.
     */
    async drive(engines, until, { advanceMs = ROUND_MS, maxRounds = 200, tickOpts } = {}) {
      const list = Array.isArray(engines) ? engines : [engines];
      for (let round = 0; round < maxRounds; round++) {
        await Promise.all(
          list.map(async (e) => {
            for (;;) {
              const r = await e.tickOnce(tickOpts);
              if (r.claimed === 0 && r.due === 0) return;
            }
          }),
        );
        // A wake enqueued by one loop after the other went quiet: one more joint pass.
        await ctx.quiesce(list, tickOpts);
        if (await until()) return round;
        ctx.clock.advance(advanceMs);
      }
      throw new Error(`drive: condition not met after ${maxRounds} rounds`);
    },

    /** until() helper: every id has a terminal status. */
    allTerminal(ids) {
      return async () => {
        const r = await ctx.sql.query(
          `SELECT status FROM ${ctx.t.run} WHERE id IN (${ids.map(() => '?').join(',')})`,
          ids,
        );
        return r.length === ids.length && r.every((x) => isTerminal(x.status));
      };
    },
  };

  before(async () => {
    ctx.db = await freshDatabase(label);
    ctx.sql = mysqlPool(ctx.db.url);
    await applySchema(ctx.sql);
  });

  beforeEach(async () => {
    for (const name of Object.values(ctx.t)) await ctx.sql.query(`TRUNCATE TABLE ${name}`);
    ctx.clock.set(T);
  });

  after(async () => {
    try {
      for (const p of pools) await p.close().catch(() => {});
      if (ctx.sql) await ctx.sql.close();
    } finally {
      if (ctx.db) await ctx.db.drop();
    }
  });

  return ctx;
}

/** Wrap a backend so that `queue.enqueue(id)` is silently dropped while `drop(id)` is true. */
export function dropEnqueues(backend, drop) {
  return {
    ...backend,
    queue: {
      ...backend.queue,
      enqueue(runId, opts) {
        if (drop(runId)) return Promise.resolve();
        return backend.queue.enqueue(runId, opts);
      },
    },
  };
}

/**
 * A plain JS object implementing `Sql` over another `Sql` (query / exec / tx, tx handle wrapped
 * too). A backend built on it takes the bridged (non-native-pool) path of createMysqlBackend.
 * `counter.statements` counts every statement that went through it.
 */
export function plainSql(inner, counter = { statements: 0 }) {
  const make = (target) => ({
    query(text, params) {
      counter.statements++;
      return target.query(text, params);
    },
    exec(text, params) {
      counter.statements++;
      return target.exec(text, params);
    },
    tx(fn) {
      return target.tx((handle) => fn(make(handle)));
    },
  });
  return make(inner);
}
