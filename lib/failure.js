'use strict';
// What an error this package built gets before the caller sees it: the caller's stack, and
// Node's errno for a failed system call.
//
// Errors built in Rust (src/error/mod.rs) are created on no JavaScript stack: their `stack` is
// one line. `rejected(e)` is called in the `catch` of the async function that awaited the native
// call, where V8 lists the async functions awaiting it — the caller's — as `at async …` frames,
// and gives the error that stack. Nothing is captured while calls succeed (an Error per call
// costs microseconds of the JS thread; this costs nothing until a call fails).

const { getSystemErrorMap } = require('node:util');

/** Node's errno for a code (ENOTFOUND is the resolver's EAI_NONAME), built on first use. */
let errnos;
function errnoOf(code) {
  if (errnos === undefined) {
    errnos = new Map();
    for (const [n, [name]] of getSystemErrorMap()) errnos.set(name, n);
    errnos.set('ENOTFOUND', errnos.get('EAI_NONAME'));
  }
  return errnos.get(code);
}

/** Whether `stack` holds no frame (an error made outside any JavaScript call). */
const bare = (stack) => typeof stack !== 'string' || !stack.includes('\n    at ');

/**
 * `e` with the stack of the code awaiting the call it rejects (see the module comment), from
 * the caller of `from` on (the async function whose `catch` this is), and an `errno` where it is
 * a failed system call; an error that already has frames (an argument error thrown inside the
 * call, a wrapped Sql's own error) keeps them. Returns `e`.
 */
function rejected(e, from = rejected) {
  if (e === null || typeof e !== 'object') return e;
  try {
    if (e.syscall !== undefined && e.errno === undefined) {
      const n = errnoOf(e.code);
      if (n !== undefined) e.errno = n;
    }
    if (e instanceof Error && bare(e.stack)) Error.captureStackTrace(e, from);
  } catch {
    // A frozen or exotic error: the caller still gets it as it is.
  }
  return e;
}

module.exports = { rejected };
