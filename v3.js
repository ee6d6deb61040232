'use strict';
// iterativeflow-mysql-native/v3 — the same package with the 3.0.0 contract as the default:
// a drop-in for @iterativeflow/mysql 3.0.0 (see README, "Choosing the contract").
const { mysqlPool } = require('./lib/sql');
const { CHANNELS, MYSQL2_CHANNELS } = require('./lib/observe/tracing');
const { traceOpenTelemetry } = require('./lib/observe/otel');
const { backendOf } = require('./lib/backend');
const { ddlOf, applySchemaOf, tables } = require('./lib/schema');
const { inTxOf } = require('./lib/intx');
const { checkDatabaseOf } = require('./lib/doctor');
const { mysqlClassify } = require('./lib/classify');
const { createMysqlListener } = require('./lib/push/listener');
const { createMysqlEventSink } = require('./lib/timeline/sink');
const { listEvents } = require('./lib/timeline/list');

const V3 = '3.0.0';

module.exports.mysqlPool = mysqlPool;
module.exports.createMysqlBackend = (sql, opts = {}) => backendOf(sql, opts, V3);
module.exports.applySchema = (sql, prefix, opts) => applySchemaOf(sql, prefix, opts, V3);
module.exports.ddl = (prefix, opts) => ddlOf(prefix, opts, V3);
module.exports.inTx = (poolOrSql, fn, opts) => inTxOf(poolOrSql, fn, opts, V3);
module.exports.tables = tables;
module.exports.checkDatabase = (sql, prefix, opts) => checkDatabaseOf(sql, prefix, opts, V3);
module.exports.mysqlClassify = mysqlClassify;
module.exports.createMysqlListener = createMysqlListener;
module.exports.createMysqlEventSink = createMysqlEventSink;
module.exports.listEvents = listEvents;
module.exports.channels = CHANNELS;
module.exports.mysql2Channels = MYSQL2_CHANNELS;
module.exports.traceOpenTelemetry = traceOpenTelemetry;
