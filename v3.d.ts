// Types of iterativeflow-mysql-native/v3: the package with the 3.0.0 contract as the default.
import type { MysqlBackend, NativeBackendOpts, MysqlBackendV3, SchemaOpts, Sql, TxSource } from './index';

export * from './index';

/** The four ports (3.0.0 unless `contract: '2.0.0-alpha.2'`). */
export declare function createMysqlBackend(
  sql: Sql,
  opts: NativeBackendOpts & { contract: '2.0.0-alpha.2' },
): MysqlBackend;
export declare function createMysqlBackend(sql: Sql, opts?: NativeBackendOpts): MysqlBackendV3;
/** The 3.0 layout by default. */
export declare function ddl(prefix?: string, opts?: SchemaOpts): string[];
/** The 3.0 layout by default (upgrading an older one in place). */
export declare function applySchema(sql: Sql, prefix?: string, opts?: SchemaOpts): Promise<void>;
/** `fn(backend, tx)` in one transaction, with a 3.0 backend by default. */
export declare function inTx<T>(
  source: TxSource,
  fn: (backend: MysqlBackend, tx: Sql) => Promise<T>,
  opts: NativeBackendOpts & { contract: '2.0.0-alpha.2' },
): Promise<T>;
export declare function inTx<T>(
  source: TxSource,
  fn: (backend: MysqlBackendV3, tx: Sql) => Promise<T>,
  opts?: NativeBackendOpts,
): Promise<T>;
