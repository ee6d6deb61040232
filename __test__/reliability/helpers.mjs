// Shared helpers for the reliability tests (__test__/reliability/*.test.mjs).
//
// Everything goes through the package root (index.js), as a user would use it.
import m from '../../index.js';
import { freshDatabase } from '../helpers/db.mjs';

export const { mysqlPool, applySchema, createMysqlBackend, tables } = m;
export default m;

/** The six tables of the on-disk format, by base name. */
export const TABLES = ['run', 'step', 'job', 'timer', 'signal', 'cron'];

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** `url` with extra query parameters (connectionLimit, acquireTimeoutMs, …). */
export function withParams(url, params = {}) {
  const u = new URL(url);
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, String(v));
  return u.toString();
}

/**
 * A fresh database with the schema applied and a native pool on it.
 * `params` are URL parameters for the pool (e.g. `{ connectionLimit: 4 }`).
 */
export async function freshPool(label, params = {}, prefix = '') {
  const db = await freshDatabase(label);
  const sql = mysqlPool(withParams(db.url, params));
  await applySchema(sql, prefix);
  return {
    db,
    sql,
    url: withParams(db.url, params),
    async close() {
      try {
        if (!sql.closed) await sql.close();
      } finally {
        await db.drop();
      }
    },
  };
}

/** Row counts of the six tables: `{ run, step, job, timer, signal, cron }`. */
export async function countAll(sql, prefix = '') {
  const t = tables(prefix);
  const parts = TABLES.map((n) => `(SELECT COUNT(*) FROM ${t[n]}) AS \`${n}\``);
  const [row] = await sql.query(`SELECT ${parts.join(', ')}`);
  return Object.fromEntries(TABLES.map((n) => [n, Number(row[n])]));
}

/** Names of the base tables present in the pool's current database. */
export async function tableNames(sql) {
  const rows = await sql.query('SELECT TABLE_NAME AS t FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()');
  return rows.map((r) => r.t).sort();
}

/** Settles `p`, returning `{ ok, value, error, ms }` (never throws). */
export async function settle(p) {
  const t0 = performance.now();
  try {
    const value = await p;
    return { ok: true, value, ms: performance.now() - t0 };
  } catch (error) {
    return { ok: false, error, ms: performance.now() - t0 };
  }
}

/** Resolves to the promise's value, or rejects with a timeout error after `ms`. */
export function within(p, ms, what = 'operation') {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Creates `database` and a user with every privilege on it and none global (no SUPER / READ
 * ONLY ADMIN, so `read_only` applies to it), through `root` (a mysql2 connection as root).
 * Returns the user's `user:password` for a URL.
 */
export async function createAppUser(root, database, user = 'app', password = `${user}-pw`) {
  await root.query(`CREATE DATABASE IF NOT EXISTS \`${database}\``);
  await root.query(`CREATE USER IF NOT EXISTS ?@'%' IDENTIFIED BY ?`, [user, password]);
  await root.query(`GRANT ALL PRIVILEGES ON \`${database}\`.* TO ?@'%'`, [user]);
  return `${user}:${password}`;
}
