// An instrumentation that already subscribes to mysql2's tracing channels keeps working after the
// swap: the real @sentry/node mysql2 integration (which binds spans to `mysql2:query`,
// `mysql2:execute` and `mysql2:pool:connect`) records our statements, with a pool made with
// `tracing: { mysql2: true }`. Offline: events go to an in-memory transport, never a network.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';

import * as Sentry from '@sentry/node';

import { applySchema, createMysqlBackend, mysqlPool, server, useDatabase } from '../sql/helpers.mjs';

const ctx = useDatabase('obs_sentry', { init: ({ sql }) => applySchema(sql) });

const sent = [];
Sentry.init({
  dsn: 'https://public@127.0.0.1/1',
  tracesSampleRate: 1,
  defaultIntegrations: false,
  integrations: [Sentry.mysql2Integration()],
  transport: () => ({
    send: async (envelope) => {
      sent.push(envelope);
      return {};
    },
    flush: async () => true,
  }),
});
after(() => Sentry.close());

/** The spans sent so far as `{ op, data }`: span items (v2) or a transaction's spans. */
function sentSpans() {
  const items = sent.flatMap((env) => env[1]);
  const streamed = items
    .filter(([header]) => header.type === 'span')
    .flatMap(([, body]) => body.items ?? [])
    .map((span) => {
      const data = Object.fromEntries(Object.entries(span.attributes ?? {}).map(([k, v]) => [k, v.value]));
      return { op: data['sentry.op'], data };
    });
  const inTransactions = items
    .filter(([header]) => header.type === 'transaction')
    .flatMap(([, tx]) => tx.spans ?? [])
    .map((span) => ({ op: span.op, data: span.data ?? {} }));
  return [...streamed, ...inTransactions];
}

test('@sentry/node records our statements through the mysql2 channel names, when asked', async () => {
  await Sentry.startSpan({ name: 'request' }, () => ctx.sql.query('SELECT 1'));
  await Sentry.flush(2000);
  assert.equal(sentSpans().filter((s) => s.op === 'db').length, 0, 'nothing without tracing.mysql2');
  const sql = mysqlPool(ctx.db.url, { tracing: { mysql2: true } });
  try {
    const b = createMysqlBackend(sql);
    await Sentry.startSpan({ name: 'request' }, async () => {
      await sql.query('SELECT ? AS v', ['not-in-the-span']);
      await b.store.startRun({ name: 'sentry-flow', version: 1 });
    });
    await Sentry.flush(2000);
    const spans = sentSpans();
    const db = spans.filter((s) => s.op === 'db');
    assert.ok(db.length >= 2, JSON.stringify(spans.map((s) => s.description)));
    const select = db.find((s) => s.data?.['db.query.text']?.startsWith('SELECT ?'));
    assert.ok(select, JSON.stringify(db.map((s) => s.data)));
    assert.equal(select.data['db.system.name'], 'mysql');
    assert.equal(select.data['db.namespace'], ctx.db.database);
    assert.equal(select.data['server.address'], server().host);
    assert.equal(select.data['server.port'], server().port);
    assert.ok(!JSON.stringify(db).includes('not-in-the-span'), 'no bound value reaches Sentry');
    assert.ok(
      db.some((s) => /INSERT/i.test(s.data?.['db.query.text'] ?? '')),
      'the port call statements too',
    );
  } finally {
    await sql.close();
  }
});
