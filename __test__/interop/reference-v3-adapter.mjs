// Runs the 3.0 differential and interop tests with the published @iterativeflow/mysql 3.0.0 ("the
// reference", loaded by __test__/helpers/reference.mjs) in the place of this package, to check the
// tests themselves (every comparison must then come out equal):
//
//   V3_IMPL=__test__/interop/reference-v3-adapter.mjs node __test__/run.mjs __test__/interop/v3-differential.test.mjs
//
// It gives the reference the surface the tests expect of this package: mysqlPool(url) over a mysql2
// pool (through the MariaDB test shim) with close(); applySchema / ddl / createMysqlBackend / inTx
// taking (and ignoring) the `contract` option.
import mysql from 'mysql2/promise';

import { loadReference, mariadbCompatPool } from '../helpers/reference.mjs';

const ref = await loadReference('3.0.0');

/** An `Sql` over a new mysql2 pool for `url` (or over the given mysql2 pool), with `close()`. */
export function mysqlPool(urlOrPool, opts) {
  const pool = typeof urlOrPool === 'string' ? mysql.createPool({ uri: urlOrPool, connectionLimit: 10 }) : urlOrPool;
  const sql = ref.mysqlPool(mariadbCompatPool(pool), opts);
  return { ...sql, close: () => pool.end() };
}

export const applySchema = (sql, prefix = '', _opts) => ref.applySchema(sql, prefix);
export const ddl = (prefix = '', _opts) => ref.ddl(prefix);
export const createMysqlBackend = (sql, opts = {}) => ref.createMysqlBackend(sql, { prefix: opts.prefix, id: opts.id });
/** Over a mysql2 pool as the reference's inTx; over an `Sql` (e.g. from `mysqlPool` above) in its `tx`. */
export const inTx = (poolOrSql, fn, opts = {}) => {
  const bopts = { prefix: opts.prefix, id: opts.id };
  if (typeof poolOrSql.getConnection === 'function') return ref.inTx(mariadbCompatPool(poolOrSql), fn, bopts);
  return poolOrSql.tx((tx) => fn(ref.createMysqlBackend(tx, bopts), tx));
};
