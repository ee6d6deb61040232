// Shared bits for the observability suite (__test__/observability). Not a test file itself.
//
//   const rec = record(['iterativeflow-mysql-native:call', …]);  // subscribes every event kind
//   … rec.events: [{ channel, kind: 'start' | 'end' | 'asyncStart' | 'asyncEnd' | 'error', ctx, store }]
//   rec.stop();
import dc from 'node:diagnostics_channel';

export const CALL = 'iterativeflow-mysql-native:call';
export const QUERY = 'iterativeflow-mysql-native:query';
export const CONNECT = 'iterativeflow-mysql-native:connect';
export const ACQUIRE = 'iterativeflow-mysql-native:pool:acquire';

const KINDS = ['start', 'end', 'asyncStart', 'asyncEnd', 'error'];

/**
 * Records every event of the tracing channels `names`; `als` (an AsyncLocalStorage), when given,
 * is read at each event (the async context it was published in).
 */
export function record(names, als) {
  const events = [];
  const subs = names.map((name) => {
    const handlers = Object.fromEntries(
      KINDS.map((kind) => [kind, (ctx) => events.push({ channel: name, kind, ctx, store: als?.getStore() })]),
    );
    const ch = dc.tracingChannel(name);
    ch.subscribe(handlers);
    return () => ch.unsubscribe(handlers);
  });
  return {
    events,
    /** The contexts of `name`'s `kind` events. */
    of(name, kind = 'start') {
      return events.filter((e) => e.channel === name && e.kind === kind).map((e) => e.ctx);
    },
    clear() {
      events.length = 0;
    },
    stop() {
      for (const s of subs) s();
    },
  };
}

/** A JS `Sql` over `inner` (as a user's logging wrapper would be): every call goes through it. */
export function wrapSql(inner) {
  const over = (target) => ({
    query: (t, p) => target.query(t, p),
    exec: (t, p) => target.exec(t, p),
    tx: (fn) => target.tx((h) => fn(over(h))),
  });
  return over(inner);
}
