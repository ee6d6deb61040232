'use strict';
// Row objects from the JSON Rust sends. Which keys a row has, and which of them are Dates, is
// declared once, in Rust (src/model/codec.rs); here every key is filled in (absent ⇒ undefined, as
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

const CONTRACTS = ['2.0.0-alpha.2', '3.0.0'];

/** `{ mapRun, mapStep, mapSignal, mapCron }` for each contract (3.0 calls `shape` `call`). */
const byContract = new Map(
  CONTRACTS.map((contract) => {
    const shapes = binding.rowShapes(contract);
    return [
      contract,
      {
        mapRun: mapperOf(shapes.run),
        mapStep: mapperOf(shapes.step),
        mapSignal: mapperOf(shapes.signal),
        mapCron: mapperOf(shapes.cron),
      },
    ];
  }),
);

/** The row mappers of `contract`. */
const mappers = (contract) => byContract.get(contract);

module.exports = { CONTRACTS, mappers };
