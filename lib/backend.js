'use strict';
// createMysqlBackend(): the four ports over one `Sql`, composed. Each port method is one call
// into Rust (lib/call.js), which runs the whole unit of work.
const { randomUUID } = require('node:crypto');
const binding = require('./binding');
const c = require('./check');
const { createCaller } = require('./call');
const { createQueue } = require('./queue');
const { createStore } = require('./store');
const { createTimer } = require('./timer');
const { createWakeup } = require('./wakeup');

/** Id sources from `opts.id`: run/signal ids (VARCHAR(191) keys) and lease-token halves. */
function idSources(customId) {
  if (customId === undefined) return { newId: randomUUID, tokenIds: undefined };
  if (typeof customId !== 'function') throw c.typeError('createMysqlBackend: opts.id must be a function');
  const generated = () => {
    const v = customId();
    if (typeof v !== 'string' || v.length === 0) throw c.typeError('opts.id() must return a non-empty string');
    return v;
  };
  return {
    newId: () => c.str(generated(), 'the id returned by opts.id()'),
    // For claim: asked for exactly as many ids as rows get leased, in one call from Rust.
    tokenIds: (n) => JSON.stringify(Array.from({ length: n }, generated)),
  };
}

function createMysqlBackend(sql, opts = {}) {
  if (opts === null || typeof opts !== 'object') throw c.typeError('createMysqlBackend: opts must be an object');
  const prefix = opts.prefix === undefined ? '' : opts.prefix;
  if (typeof prefix !== 'string') throw c.typeError('createMysqlBackend: opts.prefix must be a string');
  binding.tableNames(prefix); // throws a TypeError naming a bad prefix
  const { newId, tokenIds } = idSources(opts.id);
  const call = createCaller(sql, prefix);
  return {
    store: createStore(call, newId),
    queue: createQueue(call, tokenIds),
    timer: createTimer(call),
    wakeup: createWakeup(),
  };
}

module.exports = { createMysqlBackend };
