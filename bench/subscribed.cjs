'use strict';
// The package with a no-op subscriber on each of its tracing channels, for
// `BENCH_NATIVE_MODULE=bench/subscribed.cjs`: what tracing costs once someone listens
// (docs/observability.md compares it with the same run unsubscribed).
const dc = require('node:diagnostics_channel');
const m = require('../index.js');

const noop = () => {};
for (const name of Object.values(m.channels)) {
  dc.tracingChannel(name).subscribe({ start: noop, end: noop, asyncStart: noop, asyncEnd: noop, error: noop });
}

module.exports = m;
