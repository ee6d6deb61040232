'use strict';
// Argument checks: every bad input becomes a TypeError/RangeError naming the argument before
// anything reaches the database. They carry the same `kind: 'argument'` and `code` as the
// argument errors Rust builds (src/error/mod.rs), so a caller tells them apart the same way.

const MAX_KEY = 191; // VARCHAR(191) columns

function argument(Ctor, code, message) {
  const e = new Ctor(message);
  e.kind = 'argument';
  e.code = code;
  return e;
}
/** A TypeError for an argument of the wrong type or shape. */
const typeError = (message) => argument(TypeError, 'ERR_INVALID_ARG', message);
/** A RangeError for an argument outside what its column or the server can hold. */
const rangeError = (message) => argument(RangeError, 'ERR_OUT_OF_RANGE', message);

/**
 * `null` or `undefined`: what the JavaScript package's `?? default` treats as absent. The one
 * place that decides it for every optional field.
 */
const absent = (v) => v === undefined || v === null;

/**
 * The length of `v` as a utf8mb4 VARCHAR counts it: in code points (a UTF-16 length counts an
 * astral character twice; a lone surrogate is one code point, stored as U+FFFD).
 */
function chars(v) {
  let n = v.length;
  if (n === 0) return 0;
  for (let i = 0; i < v.length; i++) {
    const u = v.charCodeAt(i);
    if (u >= 0xd800 && u <= 0xdbff && i + 1 < v.length) {
      const next = v.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/**
 * A string for a VARCHAR(`max`) column (ids, names and keys are VARCHAR(191)). Lone UTF-16
 * surrogates are accepted, as the JavaScript package accepts them: text columns store them as
 * U+FFFD (the UTF-8 conversion replaces them), JSON values keep them exactly (JSON.stringify
 * escapes them).
 */
function str(v, name, max = MAX_KEY) {
  if (typeof v !== 'string') throw typeError(`${name} must be a string, got ${typeName(v)}`);
  if (v.length > max && chars(v) > max) throw rangeError(`${name} is longer than ${max} characters`);
  return v;
}

function optStr(v, name) {
  return absent(v) ? undefined : str(v, name);
}

/** A string of any length (LONGTEXT, or text only compared against stored values). */
function longStr(v, name) {
  if (typeof v !== 'string') throw typeError(`${name} must be a string, got ${typeName(v)}`);
  return v;
}

function int(v, name, min = -(2 ** 31), max = 2 ** 31 - 1) {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw typeError(`${name} must be an integer, got ${typeName(v)}`);
  if (v < min || v > max) throw rangeError(`${name} must be between ${min} and ${max}, got ${v}`);
  return v;
}

/** The largest distance from the epoch a Date can hold (ECMAScript's time value range), ms. */
const MAX_TIME = 8.64e15;

const isDate = (v) => v instanceof Date || Object.prototype.toString.call(v) === '[object Date]';

/** Epoch ms of a Date (from any realm); what its getTime() answers must be a valid time value. */
function ms(v, name) {
  if (!isDate(v)) throw typeError(`${name} must be a Date, got ${typeName(v)}`);
  const t = v.getTime();
  if (Number.isNaN(t)) throw rangeError(`${name} is an invalid Date`);
  if (!Number.isInteger(t) || Math.abs(t) > MAX_TIME) {
    throw rangeError(`${name} must be a Date within the valid range, its getTime() returned ${t}`);
  }
  return t;
}

/** Refuses a lease whose expiry (`at + leaseMs`) would not be a valid Date. */
function expiry(at, leaseMs, name) {
  if (at + leaseMs > MAX_TIME) throw rangeError(`${name}: the lease would expire after the last valid Date`);
}

function optMs(v, name, fallback) {
  return absent(v) ? fallback : ms(v, name);
}

/** JSON text of a value with JSON.stringify fidelity; `undefined` ⇒ SQL NULL. */
function json(v, name) {
  if (v === undefined) return undefined;
  if (typeof v === 'function' || typeof v === 'symbol') {
    throw typeError(`${name} cannot be stored: a ${typeof v} is not JSON`);
  }
  let text;
  try {
    text = JSON.stringify(v);
  } catch (e) {
    throw typeError(`${name} cannot be stored as JSON: ${e.message}`);
  }
  return text;
}

function obj(v, name) {
  if (v === null || typeof v !== 'object') throw typeError(`${name} must be an object, got ${typeName(v)}`);
  return v;
}

/**
 * The most items a list argument of a backend method may hold. Far above any real call (a unit
 * of work that large would fill a max_allowed_packet and take minutes), and checked before the
 * list is walked or handed to Rust, whose conversion allocates room for `length` items at once:
 * a sparse `new Array(2 ** 32 - 1)` would otherwise abort the process.
 */
const MAX_ITEMS = 1_000_000;

/** Refuses an array longer than `max` before anything walks or converts it. */
function bounded(v, name, max) {
  if (v.length > max) throw rangeError(`${name} has ${v.length} items, at most ${max} are accepted`);
  return v;
}

function arr(v, name, max = MAX_ITEMS) {
  if (!Array.isArray(v)) throw typeError(`${name} must be an array, got ${typeName(v)}`);
  return bounded(v, name, max);
}

function oneOf(v, allowed, name) {
  if (!allowed.includes(v)) throw typeError(`${name} must be one of ${allowed.join(', ')}, got ${JSON.stringify(v)}`);
  return v;
}

function typeName(v) {
  if (v === null) return 'null';
  if (isDate(v)) return 'Date';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

module.exports = {
  typeError,
  rangeError,
  absent,
  chars,
  str,
  optStr,
  longStr,
  int,
  ms,
  optMs,
  expiry,
  json,
  obj,
  arr,
  bounded,
  MAX_ITEMS,
  oneOf,
};
