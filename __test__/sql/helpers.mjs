// Shared bits for the `Sql` / `mysqlPool` suite (__test__/sql). Not a test file itself.
//
//   const ctx = useDatabase('sql_params');   // before: fresh database + native pool; after: close + drop
//   ctx.sql, ctx.db.url, ctx.db.database
import { after, before } from 'node:test';

import m from '../../index.js';
import { freshDatabase, serverUrl } from '../helpers/db.mjs';

export { m };
export const { mysqlPool, ddl, applySchema, tables, createMysqlBackend } = m;

/** The private server's host and port (from MYSQL_URL). */
export function server() {
  const u = new URL(serverUrl());
  return {
    host: u.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1',
    port: u.port ? Number(u.port) : 3306,
    user: decodeURIComponent(u.username || 'root'),
    password: decodeURIComponent(u.password || ''),
  };
}

/** The user with a password that the private server has (see helpers/private-server.mjs). */
export const PASSWORD_USER = Object.freeze({ user: 'iterflow', password: 's3cret-pw' });

/**
 * One fresh database and one native pool for the whole test file; `init(ctx)` runs after both
 * exist (root-level `before` hooks are not ordered reliably in Node 20, so chain setup here).
 */
export function useDatabase(label, { query = '', init } = {}) {
  const ctx = { db: undefined, sql: undefined };
  before(async () => {
    ctx.db = await freshDatabase(label);
    ctx.sql = mysqlPool(ctx.db.url + query);
    if (init) await init(ctx);
  });
  after(async () => {
    try {
      if (ctx.sql) await ctx.sql.close();
    } finally {
      if (ctx.db) await ctx.db.drop();
    }
  });
  return ctx;
}

/** Rejects with `label timed out` unless `promise` settles within `ms`. */
export function within(promise, ms, label = 'operation') {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${label} did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A promise plus its resolve function. */
export function deferred() {
  let resolve;
  const promise = new Promise((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Settles to `{ ok, value | error }` without throwing; for inspecting how a call failed. */
export async function settle(fn) {
  try {
    return { ok: true, value: await fn() };
  } catch (error) {
    return { ok: false, error };
  }
}
