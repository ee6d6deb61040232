// The statements a backend call sends and the server's plan for each, for the plan tests
// (__test__/sql/history-plans.test.mjs) and the scale benchmark (bench/scenarios/scale.mjs).
//
//   const log = [];
//   const backend = createMysqlBackend(recording(sql, log), opts);   // any Sql: ours or the JS package's
//   await backend.store.orphanedRuns(100);
//   for (const s of log) console.log(s.text, await explain(sql, s.text, s.params));
//
// `explain` answers the traditional tabular EXPLAIN on both servers (MySQL 9 defaults to its
// tree format), one row per table access: { table, type, key, rows, Extra }.

/** A `Sql` over `sql` that records every statement sent through it (transactions too) in `log`. */
export function recording(sql, log) {
  const make = (target) => ({
    query(text, params) {
      log.push({ text, params });
      return target.query(text, params);
    },
    exec(text, params) {
      log.push({ text, params });
      return target.exec(text, params);
    },
    tx(fn) {
      return target.tx((handle) => fn(make(handle)));
    },
  });
  return make(sql);
}

const kinds = new WeakMap();

/** The rows of a query's answer: the native pool's array, or mysql2's `[rows, fields]`. */
const rowsOf = (answer) => (Array.isArray(answer[0]) ? answer[0] : answer);

/** 'mariadb' or 'mysql', asked of the server once per `sql`. */
export async function serverKindOf(sql) {
  if (!kinds.has(sql)) {
    const [row] = rowsOf(await sql.query('SELECT VERSION() AS v'));
    kinds.set(sql, /mariadb/i.test(String(row.v)) ? 'mariadb' : 'mysql');
  }
  return kinds.get(sql);
}

/** Whether `text` is a statement EXPLAIN describes (a SELECT, UPDATE or DELETE). */
export const explainable = (text) => /^\s*(\(?\s*SELECT|UPDATE|DELETE)\b/i.test(text);

/** The traditional EXPLAIN rows of `text` with `params`, through `sql` (the native pool or a mysql2 pool). */
export async function explain(sql, text, params = []) {
  const format = (await serverKindOf(sql)) === 'mysql' ? 'EXPLAIN FORMAT=TRADITIONAL ' : 'EXPLAIN ';
  return rowsOf(await sql.query(format + text, params)).map((r) => ({
    id: r.id ?? null,
    table: r.table ?? null,
    type: r.type ?? null,
    key: r.key ?? null,
    rows: r.rows === null || r.rows === undefined ? null : Number(r.rows),
    Extra: r.Extra ?? '',
  }));
}

/** One line per access: `table type key rows Extra`. */
export const planText = (plan) =>
  plan.map((p) => [p.table ?? '-', p.type ?? '-', p.key ?? '-', p.rows ?? '-', p.Extra].join(' ').trim()).join('; ');

/**
 * Access types that read a bounded part of a table through an index: a key look-up or a range.
 * Not `ALL` (the whole table) nor `index` (the whole of one index, e.g. a walk of `seq`).
 */
export const BOUNDED = new Set([
  'system',
  'const',
  'eq_ref',
  'ref',
  'ref_or_null',
  'range',
  'unique_subquery',
  'index_subquery',
  'index_merge',
]);

/**
 * Whether an EXPLAIN row reads a bounded part of its table: a `BOUNDED` access, or a walk of the
 * `seq` index from one end with nothing to test on the way (index only, no `Using where`): such
 * a walk stops at its LIMIT — the window of newest runs `listRuns` looks at first.
 */
export const boundedAccess = (row) =>
  BOUNDED.has(row.type) ||
  (row.type === 'index' && row.key === 'seq' && /Using index/.test(row.Extra) && !/Using where/.test(row.Extra));
