// The reset after a session-changing call is bounded like any round trip: when the network
// swallows it, the connection is discarded within queryTimeoutMs and the pool goes on with a new
// one, where an unbounded reset held the pool's only connection for as long as the OS kept the
// socket (every call failing with ETIMEDOUT meanwhile).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import { closeAdmin, freshDatabase, serverUrl } from '../helpers/db.mjs';
import { startFaultProxy } from '../helpers/faultproxy.mjs';
import { mysqlPool, withParams, within } from './helpers.mjs';

const QUERY_MS = 1000;
const ACQUIRE_MS = 3000;

after(closeAdmin);

let proxy;
let db;
let sql;

before(async () => {
  const u = new URL(serverUrl());
  proxy = await startFaultProxy({
    host: u.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1',
    port: Number(u.port) || 3306,
  });
  db = await freshDatabase('reset_bound');
  const viaProxy = new URL(db.url);
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String(proxy.port);
  // One connection: the reset under test holds the only one there is.
  sql = mysqlPool(
    withParams(viaProxy.toString(), {
      connectionLimit: 1,
      acquireTimeoutMs: ACQUIRE_MS,
      queryTimeoutMs: QUERY_MS,
    }),
  );
});

after(async () => {
  await within(sql.close(), 10_000, 'sql.close()').catch(() => proxy.dropAll());
  await proxy.close();
  await db.drop();
});

test('a reset the network swallows costs one connection for one bound, not the pool', async () => {
  const [{ id: first }] = await sql.query('SELECT CONNECTION_ID() AS id');
  // The reset is COM_RESET_CONNECTION, then the setup text (which starts with SET NAMES): that
  // text and everything after it on that connection are swallowed.
  const hole = proxy.arm({ match: /^SET NAMES utf8mb4/, kind: 'blackhole' });
  await sql.query('SET @x = 1');
  const started = Date.now();
  const [row] = await sql.query('SELECT CONNECTION_ID() AS id, @x AS x');
  const took = Date.now() - started;
  assert.ok(hole.hit, 'the reset reached the proxy and was swallowed');
  hole.cancel();
  assert.notEqual(row.id, first, 'the connection whose reset went unanswered was not used again');
  assert.equal(row.x, null, 'the next call runs in a clean session');
  assert.ok(took < QUERY_MS + ACQUIRE_MS, `the next call answered in ${took} ms (reset bound ${QUERY_MS} ms)`);
});
