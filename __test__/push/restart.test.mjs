// The server restarted under an idle listener: while it is down, waiters time out normally
// (resolve, never reject, not early) and the listener says so once; once it is back, push
// resumes in the same process, with no new listener or pool.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import m from '../../index.js';
import { startPrivateServer } from '../helpers/server.mjs';
import { urlWithDatabase } from '../helpers/db.mjs';
import { pushDatabase, sleep } from './helpers.mjs';

let server;
before(async () => {
  server = await startPrivateServer();
});
after(async () => {
  await server?.stop();
});

test(
  'server restart under an idle listener: timeouts while down, push again after',
  { timeout: 120_000 },
  async (t) => {
    const root = m.mysqlPool(server.url);
    await root.query('CREATE DATABASE push_restart');
    await root.close();
    const env = await pushDatabase('push_restart', urlWithDatabase(server.url, 'push_restart'));
    const sql = m.mysqlPool(env.db.url);
    const errors = [];
    const listener = m.createMysqlListener(sql, { onError: (e) => errors.push(e) });
    try {
      listener.start();
      const waitState = async (s, ms) => {
        for (const end = Date.now() + ms; listener.state() !== s && Date.now() < end; ) await sleep(5);
        assert.equal(listener.state(), s);
      };
      await waitState('listening', 10_000);

      await server.halt();
      for (let i = 0; i < 3; i++) {
        const t0 = Date.now();
        await listener.waitForWork(500); // resolves: never rejects
        assert.ok(
          Date.now() - t0 >= 450,
          `a waiter while the server is down times out normally (${Date.now() - t0} ms)`,
        );
      }
      assert.equal(listener.state(), 'reconnecting');
      assert.equal(errors.length, 1, 'onError is called once for the outage');

      await server.resume();
      await waitState('listening', 20_000);
      await listener.waitForWork(100); // the wake given on reconnect ("look once"), if still latched

      const waiting = listener.waitForWork(10_000);
      const t0 = Date.now();
      await env.backend.queue.enqueue(await env.run());
      await waiting;
      t.diagnostic(`after the restart, woke ${Date.now() - t0} ms after the enqueue`);
      assert.ok(Date.now() - t0 < 3000, `push works again (${Date.now() - t0} ms)`);
    } finally {
      await listener.close();
      await sql.close();
      await env.close();
    }
  },
);
