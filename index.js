'use strict';
// iterativeflow-mysql-native — drop-in for @iterativeflow/mysql, native core. The default
// contract is 2.0.0-alpha.2; `{ contract: '3.0.0' }` (or the `/v3` entry) selects 3.0.0.
const { mysqlPool } = require('./lib/sql');
const { CHANNELS, MYSQL2_CHANNELS } = require('./lib/observe/tracing');
const { traceOpenTelemetry } = require('./lib/observe/otel');
const { createMysqlBackend } = require('./lib/backend');
const { ddl, applySchema, tables } = require('./lib/schema');
const { inTx } = require('./lib/intx');
const { checkDatabase } = require('./lib/doctor');
const { mysqlClassify } = require('./lib/classify');
const { createMysqlListener } = require('./lib/push/listener');
const { createMysqlEventSink } = require('./lib/timeline/sink');
const { listEvents } = require('./lib/timeline/list');

module.exports.mysqlPool = mysqlPool;
module.exports.createMysqlBackend = createMysqlBackend;
module.exports.applySchema = applySchema;
module.exports.ddl = ddl;
module.exports.tables = tables;
module.exports.inTx = inTx;
module.exports.checkDatabase = checkDatabase;
module.exports.mysqlClassify = mysqlClassify;
module.exports.createMysqlListener = createMysqlListener;
module.exports.createMysqlEventSink = createMysqlEventSink;
module.exports.listEvents = listEvents;
module.exports.channels = CHANNELS;
module.exports.mysql2Channels = MYSQL2_CHANNELS;
module.exports.traceOpenTelemetry = traceOpenTelemetry;
