'use strict';
// The metric exporters of a pool, as `Sql` methods call them: Prometheus text and prom-client
// collectors (prometheus.js, over the families of families.js) and OpenTelemetry instruments
// (meter.js). None of prom-client or OpenTelemetry is a dependency: the caller passes theirs.
const { prometheusOf, registerPromClient } = require('./prometheus');
const { observeOpenTelemetry } = require('./meter');

/** `sql.prometheus(opts)`: the text of one pool. */
const renderPrometheus = prometheusOf;

module.exports = { renderPrometheus, registerPromClient, observeOpenTelemetry };
