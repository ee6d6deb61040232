// Host lists in `mysqlPool` (issue #24): the URL form `host1:port1,host2:port2`, the `hosts`
// option, and a mysql2 `PoolCluster`; every bad value is a TypeError naming the option, thrown
// before anything connects. A pool connects on first use, so these need no server, except the
// last, which runs one call on a list whose first host refuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import mysql from 'mysql2';
import mysqlPromise from 'mysql2/promise';
import { mysqlPool, server } from './helpers.mjs';

function hostsOf(sql) {
  return sql.stats().hosts.map((h) => [h.host, h.port, h.state]);
}

async function withPool(source, fn) {
  const sql = mysqlPool(source);
  try {
    await fn(sql);
  } finally {
    await sql.close();
  }
}

test('a URL lists several hosts, each with or without a port', async () => {
  await withPool('mysql://app:pw@db1:3307,db2,[::1]:3309/app?failover=loadbalance', (sql) => {
    assert.deepEqual(hostsOf(sql), [
      ['db1', 3307, 'healthy'],
      ['db2', 3306, 'healthy'],
      ['::1', 3309, 'healthy'],
    ]);
  });
  await withPool('mysql://app@db1:3307/app', (sql) => assert.deepEqual(hostsOf(sql), [['db1', 3307, 'healthy']]));
});

test('the hosts option takes objects or host:port strings', async () => {
  await withPool({ hosts: [{ host: 'a', port: 1 }, 'b:2', { host: 'c' }], failover: 'sequential' }, (sql) => {
    assert.deepEqual(hostsOf(sql), [
      ['a', 1, 'healthy'],
      ['b', 2, 'healthy'],
      ['c', 3306, 'healthy'],
    ]);
  });
});

test('a mysql2 PoolCluster becomes a host list (callback and promise API)', async () => {
  for (const make of [mysql.createPoolCluster, mysqlPromise.createPoolCluster]) {
    const cluster = make({ defaultSelector: 'ORDER' });
    cluster.add('one', { host: 'n1', port: 4001, user: 'app', password: 'pw', database: 'app' });
    cluster.add('two', { host: 'n2', port: 4002, user: 'app', password: 'pw', database: 'app' });
    try {
      await withPool(cluster, (sql) => {
        assert.deepEqual(hostsOf(sql), [
          ['n1', 4001, 'healthy'],
          ['n2', 4002, 'healthy'],
        ]);
      });
    } finally {
      await cluster.end();
    }
  }
  const mixed = mysql.createPoolCluster();
  mixed.add({ host: 'n1', user: 'a' });
  mixed.add({ host: 'n2', user: 'b' });
  assert.throws(() => mysqlPool(mixed), { name: 'TypeError', message: /differ in user/ });
  mixed.end();
});

test('bad host lists are TypeErrors naming the option, without the password', () => {
  const cases = [
    ['mysql://app:hunter2@db1:3306,db2:3306/app?failover=random', /failover/],
    ['mysql://app:hunter2@db1:3306,:3306/app', /URL host 2/],
    ['mysql://app:hunter2@db1:3306,db2:/app', /URL host 2/],
    ['mysql://app:hunter2@db1:3306,db2:70000/app', /hosts\[1\]\.port/],
    ['mysql://app:hunter2@db1:3306,db1:3306/app', /listed twice/],
    [{ hosts: [], password: 'hunter2' }, /hosts must list/],
    [{ hosts: 'db1', password: 'hunter2' }, /hosts must be an array/],
    [{ hosts: [{ host: 'a' }, { port: 2 }], password: 'hunter2' }, /hosts\[1\]\.host/],
    [{ hosts: [{ host: 'a b' }], password: 'hunter2' }, /hosts\[0\]\.host/],
    [{ hosts: [{ host: 'a' }], host: 'b', password: 'hunter2' }, /either host\/port or hosts/],
    [{ hosts: [{ host: 'a' }], socketPath: '/tmp/s', password: 'hunter2' }, /socketPath/],
    [{ hosts: [{ host: 'a' }], failover: 'first', password: 'hunter2' }, /failover/],
    // A password pasted unencoded, holding a `,` and then a `/`, `?` or `#`: its text is no host.
    ['mysql://app:hunter2,/x@db1:3306/app', /percent-encode/],
    ['mysql://app:hunter2,?x@db1:3306/app', /percent-encode/],
    ['mysql://app:hunter2,#x@db1:3306/app', /percent-encode/],
    ['mysql://app:hunter2,x/y@db1:3306,db2/app', /percent-encode/],
    ['mysql://app:3306,/hunter2@db1/app', /percent-encode/],
  ];
  for (const [source, message] of cases) {
    assert.throws(
      () => mysqlPool(source),
      (e) => {
        assert.equal(e.name, 'TypeError', `${JSON.stringify(source)}: ${e.message}`);
        assert.match(e.message, message);
        assert.ok(!e.message.includes('hunter2'), e.message);
        assert.ok(!e.stack.includes('hunter2'), e.stack);
        return true;
      },
      JSON.stringify(source),
    );
  }
});

test('a call goes to the next host when the first refuses, which is then set aside', async () => {
  const s = server();
  const auth = `${encodeURIComponent(s.user)}:${encodeURIComponent(s.password)}`;
  // Port 1 on loopback: nothing listens there, the connection is refused at once.
  await withPool(`mysql://${auth}@127.0.0.1:1,${s.host}:${s.port}/`, async (sql) => {
    const [{ one }] = await sql.query('SELECT 1 AS one');
    assert.equal(Number(one), 1);
    const [first, second] = sql.stats().hosts;
    assert.equal(first.state, 'aside');
    assert.match(first.reason, /refused|ECONNREFUSED/i);
    assert.equal(second.state, 'healthy');
  });
});
