'use strict';
// Encoding of the structured arguments several port methods share (run specs, enqueue options,
// outboxes): checked field by field, JSON values serialised once, in the flat shapes Rust takes
// (src/ports/args.rs).
const c = require('./check');

const RUN_STATUSES = [
  'pending',
  'running',
  'sleeping',
  'awaiting_signal',
  'awaiting_child',
  'retrying',
  'done',
  'failed',
  'canceled',
];

const { absent } = c;

/**
 * A run spec. `v3`: the 3.0 contract, which also stores `priority`; 2.0.0-alpha.2 ignores it,
 * as the JavaScript package does.
 */
function specOf(spec, name, { emptyKeyIsAbsent = true, v3 = false } = {}) {
  c.obj(spec, name);
  // `tags: null` is stored as JSON null and read back as null, as the JavaScript package does.
  const tags = spec.tags === undefined || spec.tags === null ? spec.tags : c.arr(spec.tags, `${name}.tags`);
  if (tags) tags.forEach((t, i) => c.longStr(t, `${name}.tags[${i}]`));
  const key = spec.idempotencyKey;
  return {
    name: c.str(spec.name, `${name}.name`),
    version: c.int(spec.version, `${name}.version`),
    input: c.json(spec.input, `${name}.input`),
    // startRun treats "" as no key; a spawn stores "" as a key (both as the JavaScript package).
    idempotencyKey: absent(key) || (key === '' && emptyKeyIsAbsent) ? undefined : c.str(key, `${name}.idempotencyKey`),
    tags: c.json(tags, `${name}.tags`),
    parentRunId: absent(spec.parentRunId) ? undefined : c.str(spec.parentRunId, `${name}.parentRunId`),
    parentCursorKey: absent(spec.parentCursorKey) ? undefined : c.str(spec.parentCursorKey, `${name}.parentCursorKey`),
    depth: absent(spec.depth) ? 0 : c.int(spec.depth, `${name}.depth`),
    priority: v3 && !absent(spec.priority) ? c.int(spec.priority, `${name}.priority`) : 0,
    createdAt: absent(spec.createdAt) ? Date.now() : c.ms(spec.createdAt, `${name}.createdAt`),
  };
}

/** A string as it crosses to Rust: a lone UTF-16 surrogate becomes U+FFFD, as napi converts it. */
const wellFormed = (v) => (v === undefined ? null : v.toWellFormed());

/**
 * `startManyRuns`' specs (encoded by `specOf`) with their run ids, as the one JSON text Rust
 * parses (src/ports/args.rs, `spec_rows`): a row per spec, in that order. The strings are made
 * well-formed first: JSON would carry a lone surrogate as an escape Rust's parser refuses.
 */
function specRows(ids, encoded) {
  return JSON.stringify(
    encoded.map((s, i) => [
      wellFormed(ids[i]),
      wellFormed(s.name),
      s.version,
      s.input ?? null,
      wellFormed(s.idempotencyKey),
      s.tags ?? null,
      wellFormed(s.parentRunId),
      wellFormed(s.parentCursorKey),
      s.depth,
      s.priority,
      s.createdAt,
    ]),
  );
}

/** Enqueue options; an absent priority stays undefined (0 under 2.0.0-alpha.2, the run's own
 * priority under 3.0 — Rust decides). */
function enqueueOpts(opts, name) {
  if (absent(opts)) return { runAt: 0, priority: undefined };
  c.obj(opts, name);
  return {
    runAt: opts.runAt ? c.ms(opts.runAt, `${name}.runAt`) : 0,
    priority: absent(opts.priority) ? undefined : c.int(opts.priority, `${name}.priority`),
  };
}

function idList(v, name) {
  return c.arr(v, name).map((x, i) => c.str(x, `${name}[${i}]`));
}

function outboxOf(fx, name, { v3 = false } = {}) {
  if (absent(fx)) return undefined;
  c.obj(fx, name);
  const out = {};
  // 3.0 fencing: write only while the run's job still has this version. A comparison, not a
  // range: any safe integer is taken, one no job has (-1, beyond every version) just never holds.
  if (v3 && !absent(fx.requireVersion))
    out.requireVersion = c.int(
      fx.requireVersion,
      `${name}.requireVersion`,
      -Number.MAX_SAFE_INTEGER,
      Number.MAX_SAFE_INTEGER,
    );
  if (!absent(fx.spawn)) {
    out.spawn = c.arr(fx.spawn, `${name}.spawn`).map((s, i) => {
      const n = `${name}.spawn[${i}]`;
      c.obj(s, n);
      const e = enqueueOpts(s.enqueue, `${n}.enqueue`);
      const spec = specOf(s.spec, `${n}.spec`, { emptyKeyIsAbsent: false, v3 });
      return { runId: c.str(s.runId, `${n}.runId`), spec, runAt: e.runAt, priority: e.priority };
    });
  }
  if (!absent(fx.enqueue)) {
    out.enqueue = c.arr(fx.enqueue, `${name}.enqueue`).map((e, i) => {
      const n = `${name}.enqueue[${i}]`;
      c.obj(e, n);
      return { runId: c.str(e.runId, `${n}.runId`), ...enqueueOpts(e.opts, `${n}.opts`) };
    });
  }
  if (!absent(fx.timers)) {
    out.timers = c.arr(fx.timers, `${name}.timers`).map((t, i) => {
      const n = `${name}.timers[${i}]`;
      c.obj(t, n);
      return { runId: c.str(t.runId, `${n}.runId`), fireAt: c.ms(t.fireAt, `${n}.fireAt`) };
    });
  }
  if (!absent(fx.cancelTimers)) out.cancelTimers = idList(fx.cancelTimers, `${name}.cancelTimers`);
  if (!absent(fx.consumeSignals)) out.consumeSignals = idList(fx.consumeSignals, `${name}.consumeSignals`);
  if (!absent(fx.joinTarget)) {
    c.obj(fx.joinTarget, `${name}.joinTarget`);
    out.joinTarget = {
      runId: c.str(fx.joinTarget.runId, `${name}.joinTarget.runId`),
      count: c.int(fx.joinTarget.count, `${name}.joinTarget.count`),
    };
  }
  return out;
}

/** A status filter: one status or a non-empty list of them. */
function statusList(s, name) {
  if (s === undefined) return undefined;
  const list = Array.isArray(s) ? [...c.arr(s, name)] : [s];
  if (list.length === 0) throw c.typeError(`listRuns: ${name} is an empty list`);
  list.forEach((x, i) => c.oneOf(x, RUN_STATUSES, `${name}[${i}]`));
  return list;
}

const TERMINAL_STATUSES = ['done', 'failed', 'canceled'];
const ACTIVE_STATUSES = RUN_STATUSES.filter((s) => !TERMINAL_STATUSES.includes(s));

/**
 * The filter of a 3.0 bulk operation (`deleteRuns`, `cancelRuns`, `retryRuns`) with the statuses
 * it may touch: the requested ones among `eligible` (all of `eligible` when none are requested).
 * A filter without any predicate is refused (it would touch every run); `undefined` when the
 * statuses leave nothing to do.
 */
function runSetOf(filter, name, method, eligible) {
  c.obj(filter, name);
  const keys = ['before', 'name', 'version', 'status', 'tag'];
  if (!keys.some((k) => !absent(filter[k]))) {
    throw c.typeError(`${method}: ${name} needs at least one of ${keys.join(', ')}`);
  }
  const empty = Array.isArray(filter.status) && filter.status.length === 0;
  const requested = absent(filter.status) || empty ? undefined : statusList(filter.status, `${name}.status`);
  if (empty) return undefined;
  const statuses = requested === undefined ? [...eligible] : eligible.filter((s) => requested.includes(s));
  if (statuses.length === 0) return undefined;
  return {
    before: absent(filter.before) ? undefined : c.ms(filter.before, `${name}.before`),
    name: absent(filter.name) ? undefined : c.str(filter.name, `${name}.name`),
    version: absent(filter.version) ? undefined : c.int(filter.version, `${name}.version`),
    tag: absent(filter.tag) ? undefined : c.longStr(filter.tag, `${name}.tag`),
    statuses,
  };
}

/** A flow-name filter (3.0): undefined ⇒ every flow; a list (possibly empty) of names. */
function namesOf(names, name) {
  return absent(names) ? undefined : idList(names, name);
}

module.exports = {
  RUN_STATUSES,
  TERMINAL_STATUSES,
  ACTIVE_STATUSES,
  absent,
  specOf,
  specRows,
  enqueueOpts,
  idList,
  outboxOf,
  statusList,
  runSetOf,
  namesOf,
};
