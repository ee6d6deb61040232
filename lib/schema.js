'use strict';
// ddl / applySchema / tables: the alpha.2 on-disk format, with the prefix rule enforced natively.
const c = require('./check');
const binding = require('./binding');

function prefixOf(prefix) {
  if (prefix === undefined) return '';
  if (typeof prefix !== 'string') throw c.typeError('prefix must be a string');
  return prefix;
}

/** The six CREATE TABLE IF NOT EXISTS statements (run, step, job, timer, signal, cron). */
function ddl(prefix) {
  return binding.ddl(prefixOf(prefix));
}

/** Back-quoted table names for a prefix (same helper the upstream tests use). */
function tables(prefix) {
  return binding.tableNames(prefixOf(prefix));
}

/** Applies the DDL statement by statement (idempotent; never alters an existing table). */
async function applySchema(sql, prefix) {
  if (!sql || typeof sql.query !== 'function') throw c.typeError('applySchema: sql must be an Sql (with query)');
  for (const stmt of ddl(prefix)) await sql.query(stmt);
}

module.exports = { ddl, tables, applySchema };
