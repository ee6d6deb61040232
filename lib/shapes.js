'use strict';
// Row objects from the JSON Rust sends. Which keys a row has, and which of them are Dates, is
// declared once, in Rust (src/codec.rs); here every key is filled in (absent ⇒ undefined, as
// the JavaScript package's rows have them) and epoch numbers become Dates.
const binding = require('./binding');

function mapperOf(keys) {
  return (r) => {
    const out = {};
    for (const { key, date } of keys) {
      const v = r[key];
      out[key] = date && v !== undefined ? new Date(v) : v;
    }
    return out;
  };
}

const shapes = binding.rowShapes();

module.exports = {
  mapRun: mapperOf(shapes.run),
  mapStep: mapperOf(shapes.step),
  mapSignal: mapperOf(shapes.signal),
  mapCron: mapperOf(shapes.cron),
};
