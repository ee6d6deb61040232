'use strict';
// Encoding of the structured arguments several port methods share (run specs, enqueue options,
// outboxes): checked field by field, JSON values serialised once, in the flat shapes Rust takes
// (src/args.rs).
const c = require('./check');

const RUN_STATUSES = ['pending', 'running', 'sleeping', 'awaiting_signal', 'awaiting_child', 'retrying', 'done', 'failed', 'canceled'];

const { absent } = c;

function specOf(spec, name, { emptyKeyIsAbsent = true } = {}) {
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
    createdAt: absent(spec.createdAt) ? Date.now() : c.ms(spec.createdAt, `${name}.createdAt`),
  };
}

function enqueueOpts(opts, name) {
  if (absent(opts)) return { runAt: 0, priority: 0 };
  c.obj(opts, name);
  return {
    runAt: opts.runAt ? c.ms(opts.runAt, `${name}.runAt`) : 0,
    priority: absent(opts.priority) ? 0 : c.int(opts.priority, `${name}.priority`),
  };
}

function idList(v, name) {
  return c.arr(v, name).map((x, i) => c.str(x, `${name}[${i}]`));
}

function outboxOf(fx, name) {
  if (absent(fx)) return undefined;
  c.obj(fx, name);
  const out = {};
  if (!absent(fx.spawn)) {
    out.spawn = c.arr(fx.spawn, `${name}.spawn`).map((s, i) => {
      const n = `${name}.spawn[${i}]`;
      c.obj(s, n);
      const e = enqueueOpts(s.enqueue, `${n}.enqueue`);
      const spec = specOf(s.spec, `${n}.spec`, { emptyKeyIsAbsent: false });
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
  const list = Array.isArray(s) ? [...s] : [s];
  if (list.length === 0) throw c.typeError(`listRuns: ${name} is an empty list`);
  list.forEach((x, i) => c.oneOf(x, RUN_STATUSES, `${name}[${i}]`));
  return list;
}

module.exports = { RUN_STATUSES, absent, specOf, enqueueOpts, idList, outboxOf, statusList };
