// What both push examples share: their settings from the environment, a time-stamped log, and
// a backend with push on (or off with PUSH=0) over MYSQL_URL.
import { applySchema, createMysqlBackend, createMysqlListener, mysqlPool } from '../index.js';

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

/** The pool, the tables, the listener (when PUSH) and a backend handed it; exits without MYSQL_URL. */
export async function openBackend() {
  const url = process.env.MYSQL_URL;
  if (!url) {
    console.error('set MYSQL_URL=mysql://user:password@host:port/database');
    process.exit(2);
  }
  const sql = mysqlPool(url);
  await applySchema(sql);
  const listener = PUSH ? createMysqlListener(sql) : undefined;
  const backend = createMysqlBackend(sql, listener ? { listener } : {});
  listener?.start();
  return { sql, listener, backend };
}
