'use strict';
// ddl / applySchema / tables. The statements come from Rust (src/model/schema.rs); this runs them.
// Under 2.0.0-alpha.2 applySchema sends the six CREATE TABLE IF NOT EXISTS statements one by one
// (never altering a table). Under 3.0 it also brings an older layout there in place — adding
// `signal.consumed` and `run.priority` where they are missing — and (re)creates the
// `pending_work` function, on one connection holding a named lock, so that several processes
// may run it at once.
const c = require('./check');
const binding = require('./binding');
const { CONTRACTS } = require('./shapes');

/** How long applySchema waits for another process's applySchema of the same tables, s. */
const LOCK_WAIT_S = 60;

/**
 * The named lock of one database's tables of one prefix (`?`: the prefix). Lock names are at most
 * 64 characters, so the database and prefix go in as a digest; SHA2, because MySQL 9.7 no longer
 * has MD5 or SHA1.
 */
const LOCK_NAME = "CONCAT('ifw_schema_', LEFT(SHA2(CONCAT(DATABASE(), '.', ?), 256), 40))";

/** Server errors that mean "you may not create or drop a stored function". */
const NO_ROUTINE_PRIVILEGE = new Set([1044, 1142, 1227, 1370, 1419]);

function prefixOf(prefix) {
  if (prefix === undefined) return '';
  if (typeof prefix !== 'string') throw c.typeError('prefix must be a string');
  return prefix;
}

function optionsOf(opts, fallback) {
  if (c.absent(opts)) return { contract: fallback, pendingWork: true, events: false };
  c.obj(opts, 'opts');
  const contract = c.absent(opts.contract) ? fallback : opts.contract;
  if (!CONTRACTS.includes(contract)) throw c.typeError(`opts.contract must be one of ${CONTRACTS.join(', ')}`);
  for (const key of ['pendingWork', 'events']) {
    if (!c.absent(opts[key]) && typeof opts[key] !== 'boolean') throw c.typeError(`opts.${key} must be a boolean`);
  }
  return { contract, pendingWork: opts.pendingWork !== false, events: opts.events === true };
}

/**
 * The DDL statements (six tables; under 3.0 also the function's drop and create; with
 * `events: true` the timeline table last).
 */
function ddlOf(prefix, opts, fallback) {
  const { contract, events } = optionsOf(opts, fallback);
  return binding.ddl(prefixOf(prefix), contract, events);
}

/** Back-quoted table names for a prefix (same helper the upstream tests use). */
function tables(prefix) {
  return binding.tableNames(prefixOf(prefix));
}

async function applySchemaOf(sql, prefix, opts, fallback) {
  if (!sql || typeof sql.query !== 'function') throw c.typeError('applySchema: sql must be an Sql (with query)');
  const { contract, pendingWork, events } = optionsOf(opts, fallback);
  const plan = binding.schemaPlan(prefixOf(prefix), contract);
  // The opt-in timeline table (docs/timeline.md) is one more CREATE TABLE IF NOT EXISTS; without
  // the option nothing about it is sent.
  const tablesOf = events ? [...plan.tables, plan.events] : plan.tables;
  if (contract !== '3.0.0') {
    for (const stmt of tablesOf) await sql.query(stmt);
    return;
  }
  if (typeof sql.tx !== 'function') throw c.typeError('applySchema: sql must be an Sql (with tx)');
  // One connection for the whole upgrade, so that the named lock and every step share it.
  await sql.tx(async (t) => {
    const [{ got }] = await t.query(`SELECT GET_LOCK(${LOCK_NAME}, ?) AS got`, [prefixOf(prefix), LOCK_WAIT_S]);
    if (Number(got) !== 1)
      throw new Error(`applySchema: another applySchema held the schema lock for ${LOCK_WAIT_S} s`);
    try {
      for (const stmt of tablesOf) await t.query(stmt);
      for (const m of plan.columns) await addColumn(t, m);
      if (pendingWork) await createFunction(t, plan);
    } finally {
      await t.query(`SELECT RELEASE_LOCK(${LOCK_NAME}) AS released`, [prefixOf(prefix)]);
    }
  });
}

/** Adds a column the 3.0 layout has, unless it is there (also when another node added it). */
async function addColumn(t, m) {
  const [{ n }] = await t.query(
    'SELECT COUNT(*) AS n FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?',
    [m.tableName, m.column],
  );
  if (Number(n) > 0) return;
  try {
    await t.query(m.add);
  } catch (e) {
    // A Galera peer's applySchema (the named lock is per node) may have added it meanwhile.
    if (e && e.errno === 1060) return;
    throw e;
  }
}

/** `text` with every run of white space as one space (how two spellings of a body compare). */
const squash = (text) => String(text).replace(/\s+/g, ' ').trim();

/** (Re)creates `pending_work`: one CREATE OR REPLACE on MariaDB, DROP + CREATE on MySQL. */
async function createFunction(t, plan) {
  const [{ v }] = await t.query('SELECT VERSION() AS v');
  try {
    if (/mariadb/i.test(String(v))) {
      await t.query(plan.replaceFunction);
      return;
    }
    // MySQL has no CREATE OR REPLACE FUNCTION: a DROP and a CREATE leave a moment without the
    // function, which a caller of pending_work would fail in. So a function already as this
    // version makes it stays as it is; only a different one (an upgrade) is dropped first.
    const [found] = await t.query(
      "SELECT ROUTINE_DEFINITION AS body FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_TYPE = 'FUNCTION' AND ROUTINE_NAME = ?",
      [plan.functionName],
    );
    if (found && squash(found.body) === squash(plan.functionBody)) return;
    if (found) await t.query(plan.dropFunction);
    try {
      await t.query(plan.createFunction);
    } catch (e) {
      // 1304: a concurrent applySchema created the same function between our look and create.
      if (!(e && e.errno === 1304)) throw e;
    }
  } catch (e) {
    if (e && NO_ROUTINE_PRIVILEGE.has(e.errno)) {
      // 1419: the privilege is there, but with binary logging on the server also wants SUPER.
      const need =
        e.errno === 1419
          ? 'which, with binary logging on, needs SUPER or the server setting log_bin_trust_function_creators = ON'
          : 'which needs the CREATE ROUTINE (and ALTER ROUTINE) privilege on this database — grant it';
      const err = new Error(
        `applySchema: the 3.0 schema creates the stored function pending_work, ${need}, or pass ` +
          `{ pendingWork: false } to applySchema to skip the function (server said: ${e.message})`,
      );
      err.kind = 'server';
      err.code = 'ER_NO_CREATE_ROUTINE';
      err.errno = e.errno;
      err.cause = e;
      throw err;
    }
    throw e;
  }
}

/** `ddl(prefix?, { contract?, events? })`: the statements of the layout (default 2.0.0-alpha.2). */
const ddl = (prefix, opts) => ddlOf(prefix, opts, '2.0.0-alpha.2');
/** `applySchema(sql, prefix?, { contract?, pendingWork?, events? })` (default 2.0.0-alpha.2). */
const applySchema = (sql, prefix, opts) => applySchemaOf(sql, prefix, opts, '2.0.0-alpha.2');

module.exports = { ddl, tables, applySchema, ddlOf, applySchemaOf };
