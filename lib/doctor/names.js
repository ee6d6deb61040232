'use strict';
// The names every part of the doctor shares: the two contracts it checks against and the six
// tables of a prefix, by base name (the order of ddl()'s CREATE TABLE statements).
const ALPHA2 = '2.0.0-alpha.2';
const V3 = '3.0.0';
const BASES = ['run', 'step', 'job', 'timer', 'signal', 'cron'];

module.exports = { ALPHA2, V3, BASES };
