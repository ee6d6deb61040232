// Runs the conformance suite against the published JS baseline ("the seed", loaded by
// __test__/helpers/seed.mjs) instead of this package, to check the suite itself:
//
//   CONFORMANCE_IMPL=__test__/conformance/seed-adapter.mjs node __test__/run.mjs __test__/conformance
//
// It gives the seed the surface the suite expects: mysqlPool(url) over a mysql2 pool with close(),
// and a tables(prefix) helper (names per docs/contract.md §1.5).
import mysql from 'mysql2/promise';
import { loadSeed } from '../helpers/seed.mjs';

const seed = await loadSeed();

export const { applySchema, ddl, createMysqlBackend } = seed;

export function mysqlPool(urlOrPool) {
  const pool = typeof urlOrPool === 'string' ? mysql.createPool(urlOrPool) : urlOrPool;
  const sql = seed.mysqlPool(pool);
  return { ...sql, close: () => pool.end() };
}

export function tables(prefix = '') {
  if (!/^[A-Za-z0-9_]*$/.test(prefix)) throw new Error('invalid SQL schema/prefix');
  const q = (n) => `\`${prefix}${n}\``;
  return { run: q('run'), step: q('step'), job: q('job'), timer: q('timer'), signal: q('signal'), cron: q('cron') };
}
