'use strict';
// The wrapped-Sql bridge: how Rust's wrapped executor (src/exec/wrapped.rs) reaches a user's `Sql`.
// Each request is JSON: a statement (`{ q, t, p }` → `sql.query` / `sql.exec` on the current
// target) or `{ op: 'begin' | 'commit' | 'rollback' }`, which Rust sends when the unit is a
// transaction: `begin` opens the user's `sql.tx(fn)` and makes its handle the target until
// `commit` lets `fn` resolve (the user's tx commits) or `rollback` makes it throw.
//
// One unit, one call of `fn`: a `tx` that calls `fn` again (a retry after its COMMIT failed, as
// Galera advice goes) gets that call refused at once, so that its transaction ends and gives its
// connection back; `commit` then answers RERUN, and Rust rejects the backend call as a unit that
// was not committed (src/exec/wrapped.rs).

const ROLLBACK = Symbol('rollback requested by the backend');
/** The answer to `commit` when the wrapped tx called `fn` again (src/exec/wrapped.rs reads it). */
const RERUN = '{"rerun":true}';

/** What a second call of `fn` rejects with. */
function refusal() {
  return new Error(
    'iterativeflow: this tx callback was called again (a retry?); a backend unit runs once per Sql.tx call, ' +
      'so this call is refused and the backend call rejects as not committed (retry the backend call instead)',
  );
}

/** JSON replacer for driver rows: BigInt as digits, Buffer (binary-collated text) as UTF-8. */
function jsonSafe(key, value) {
  const raw = this[key]; // before Buffer#toJSON turned it into { type, data }
  if (Buffer.isBuffer(raw)) return raw.toString('utf8');
  if (typeof value === 'bigint') return value.toString();
  return value;
}

/**
 * `(request JSON) => Promise<answer JSON>` over `sql`. The first rejection of the user's object
 * is kept in `seen.error`, so that the caller gets its own error object back. `tap(text, run)`,
 * when given, runs each statement (lib/observe/tracing.js publishes it).
 */
function bridge(sql, seen, tap) {
  const statement = tap === undefined ? (text, run) => run() : tap;
  let target = sql;
  let tx = null; // { done: Promise of sql.tx(...), settle: { resolve, reject } }

  async function begin() {
    let entered;
    const inside = new Promise((resolve) => (entered = resolve));
    const state = { done: null, settle: null, rerun: false };
    state.done = Promise.resolve().then(() =>
      sql.tx((t) => {
        if (state.settle !== null) {
          state.rerun = true;
          return Promise.reject(refusal());
        }
        return new Promise((resolve, reject) => {
          target = t;
          state.settle = { resolve, reject };
          entered();
        });
      }),
    );
    // Nobody may be waiting for it at the moment it settles; end() awaits it.
    state.done.catch(() => undefined);
    // sql.tx may fail before it calls fn (no connection): that failure is the answer.
    await Promise.race([inside, state.done]);
    if (state.settle === null) throw new Error('the wrapped Sql.tx finished without calling its function');
    tx = state;
  }

  async function end(commit) {
    const state = tx;
    tx = null;
    target = sql;
    if (commit) {
      state.settle.resolve();
      // Its first run failed (else it would not have run fn again) and the second was refused,
      // whether or not the wrapper then swallowed that refusal: Rust reports the unit as such.
      const done = await state.done.then(
        () => null,
        (e) => e,
      );
      if (state.rerun) return RERUN;
      if (done !== null) throw done;
    } else {
      state.settle.reject(ROLLBACK);
      await state.done.catch(() => undefined);
    }
  }

  return async (request) => {
    try {
      const { op, q, t, p } = JSON.parse(request);
      if (op === 'begin') await begin();
      else if (op === 'commit' || op === 'rollback') return (await end(op === 'commit')) ?? 'null';
      else if (q) return JSON.stringify((await statement(t, () => target.query(t, p))) ?? [], jsonSafe);
      else {
        const r = await statement(t, () => target.exec(t, p));
        return JSON.stringify({ affectedRows: Number(r?.affectedRows ?? 0), insertId: Number(r?.insertId ?? 0) });
      }
      return 'null';
    } catch (e) {
      if (seen.error === undefined && e !== ROLLBACK) seen.error = e;
      throw e;
    }
  };
}

module.exports = { bridge };
