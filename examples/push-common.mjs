// What both push examples share: their settings from the environment, a time-stamped log, and
// a backend with push on (or off with PUSH=0) over MYSQL_URL.
import { applySchema, createMysqlBackend, createMysqlListener, mysqlPool } from '../index.js';
import { readUrl, reportFailure } from './failure.mjs';

export const TERMINAL = ['done', 'failed', 'canceled'];
export const PUSH = process.env.PUSH !== '0';

/** A positive integer from the environment, or `fallback` when unset. */
export function intFromEnv(name, fallback) {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer`);
  return n;
}

/** Wall-clock time of day, so the two processes' lines can be put side by side. */
export const logAs = (role) => (msg) => console.log(`[${new Date().toISOString().slice(11, 23)}] ${role}: ${msg}`);

/**
 * The pool, the tables, the listener (when PUSH) and a backend handed it. Exits (one line on
 * stderr) without a usable MYSQL_URL (2) or when the server cannot be reached (1).
 */
export async function openBackend(role) {
  const url = process.env.MYSQL_URL;
  if (!url) {
    console.error('set MYSQL_URL=mysql://user:password@host:port/database');
    process.exit(2);
  }
  const { where } = readUrl(role, url);
  const sql = mysqlPool(url);
  try {
    await applySchema(sql);
  } catch (e) {
    reportFailure(role, e, where);
    await sql.close();
    process.exit(1);
  }
  const listener = PUSH ? createMysqlListener(sql) : undefined;
  const backend = createMysqlBackend(sql, listener ? { listener } : {});
  listener?.start();
  return { sql, listener, backend };
}
