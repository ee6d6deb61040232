// A CommonJS TypeScript consumer (`import … = require`), type-checked with engine-usage.mts.
import pkg = require('iterativeflow-mysql-native');

const sql: pkg.NativeSql = pkg.mysqlPool({ url: 'mysql://127.0.0.1/app' });
const backend: pkg.MysqlBackend = pkg.createMysqlBackend(sql, { prefix: 'app_' });
const statements: string[] = pkg.ddl('app_');
const run: string = pkg.tables('app_').run;

export async function start(): Promise<pkg.StartResult> {
  await pkg.applySchema(sql, 'app_');
  const r = await backend.store.startRun({ name: 'greet', version: 1, input: null });
  await sql.close();
  return r;
}
void [statements, run];
