// docs/contract.md §1.1/§1.3: `mysqlPool(pool)` takes a mysql2/promise Pool — the way every
// existing user of @iterativeflow/mysql calls it. Type-checked by __test__/package/types.test.mjs
// (separately from engine-usage.mts, so that a failure here names this one problem). Never
// executed.
import mysql from 'mysql2/promise';
import { createMysqlBackend, mysqlPool, type NativeSql } from 'iterativeflow-mysql-native';

const pool = mysql.createPool({ uri: 'mysql://app:secret@127.0.0.1:3306/app', connectionLimit: 4 });
const sql: NativeSql = mysqlPool(pool);
const fromUrlPool: NativeSql = mysqlPool(mysql.createPool('mysql://127.0.0.1/app'));
// The callback-style pool underneath a promise pool works at run time too.
const fromCorePool: NativeSql = mysqlPool(pool.pool);
const backend = createMysqlBackend(mysqlPool(pool));

export { backend, fromCorePool, fromUrlPool, sql };
