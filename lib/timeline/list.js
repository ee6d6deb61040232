'use strict';
// listEvents(sql, runId, prefix?): a run's timeline, oldest first (the dashboard's detail view).
const c = require('../check');
const { COLUMNS, eventTable, eventOf } = require('./rows');

async function listEvents(sql, runId, prefix) {
  if (!sql || typeof sql.query !== 'function') throw c.typeError('listEvents: sql must be an Sql (with query)');
  c.str(runId, 'runId');
  const table = eventTable(prefix);
  const rows = await sql.query(`SELECT ${COLUMNS} FROM ${table} WHERE run_id = ? ORDER BY seq`, [runId]);
  return rows.map(eventOf);
}

module.exports = { listEvents };
