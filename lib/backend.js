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
const { listenerOf, withListener } = require('./push/nudges');
const { CONTRACTS } = require('./shapes');

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
    tokenIds: (n) => Array.from({ length: n }, generated),
  };
}

/** The contract named by `opts.contract` (default `fallback`). */
function contractOf(opts, fallback) {
  const contract = c.absent(opts.contract) ? fallback : opts.contract;
  if (!CONTRACTS.includes(contract)) {
    throw c.typeError(
      `createMysqlBackend: opts.contract must be one of ${CONTRACTS.join(', ')}, got ${JSON.stringify(contract)}`,
    );
  }
  return contract;
}

/**
 * The backend over `sql`; `defaultContract` is what an absent `opts.contract` means (the main
 * entry: 2.0.0-alpha.2; the `/v3` entry: 3.0.0). `joined`: `sql` is a handle of the caller's
 * transaction (inTx), so every unit runs behind a savepoint inside it; `turn(send)`, given with
 * it over a wrapped `Sql`, keeps each call in its place among the caller's statements.
 */
function backendOf(sql, opts, defaultContract, joined = false, turn = undefined) {
  if (opts === null || typeof opts !== 'object') throw c.typeError('createMysqlBackend: opts must be an object');
  const prefix = opts.prefix === undefined ? '' : opts.prefix;
  if (typeof prefix !== 'string') throw c.typeError('createMysqlBackend: opts.prefix must be a string');
  binding.tableNames(prefix); // throws a TypeError naming a bad prefix
  const contract = contractOf(opts, defaultContract);
  const { newId, tokenIds } = idSources(opts.id);
  const listener = listenerOf(opts.listener);
  const call = createCaller(sql, prefix, contract, joined, turn);
  const ports = {
    store: createStore(call, newId, contract),
    queue: createQueue(call, tokenIds, contract),
    timer: createTimer(call, contract),
    wakeup: createWakeup(),
  };
  return listener ? withListener(ports, listener) : ports;
}

function createMysqlBackend(sql, opts = {}) {
  return backendOf(sql, opts, '2.0.0-alpha.2');
}

module.exports = { createMysqlBackend, backendOf, contractOf };
