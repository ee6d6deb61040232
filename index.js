'use strict';
// iterativeflow-mysql-native — drop-in for @iterativeflow/mysql 2.0.0-alpha.2, native core.
const { mysqlPool } = require('./lib/sql');
const { createMysqlBackend } = require('./lib/backend');
const { ddl, applySchema, tables } = require('./lib/schema');

module.exports.mysqlPool = mysqlPool;
module.exports.createMysqlBackend = createMysqlBackend;
module.exports.applySchema = applySchema;
module.exports.ddl = ddl;
module.exports.tables = tables;
