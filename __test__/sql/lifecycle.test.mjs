// Pool lifecycle and failure modes: process exit with and without close(), closed-pool errors,
// connection errors that never leak the password, acquireTimeoutMs against a local blackhole,
// synchronous option validation and TLS against a server without TLS (on MySQL, which offers
// TLS, a private one started with TLS off) and one with it.
//
// Nothing here leaves the machine: the "unreachable" and "blackhole" servers are local sockets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import util from 'node:util';
import { fileURLToPath } from 'node:url';

import mysql from 'mysql2/promise';

import { adminQuery } from '../helpers/db.mjs';
import { onMysql, serverWithoutTls } from '../helpers/server.mjs';
import { PASSWORD_USER, mysqlPool, server, useDatabase, within } from './helpers.mjs';
import { processList } from '../helpers/server.mjs';
import { blackhole, closedPort } from '../helpers/sockets.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const FIXTURE = path.join(here, 'fixtures', 'pool-exit.mjs');
const EXIT_WITHIN_MS = 5000;

const ctx = useDatabase('sql_life');

// ---------------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------------

/** Runs the fixture; resolves `{ code, signal, stdout, stderr, ms, timedOut }`; kills it after `limit`. */
function runFixture(mode, url, limit = EXIT_WITHIN_MS) {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const child = spawn(process.execPath, [FIXTURE, mode, url], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, limit);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - t0, timedOut });
    });
  });
}

function assertExitedCleanly(r, label) {
  assert.equal(r.timedOut, false, `${label}: still running after ${EXIT_WITHIN_MS} ms (stderr: ${r.stderr})`);
  assert.equal(r.code, 0, `${label}: exit code (stderr: ${r.stderr})`);
  const lines = r.stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]);
}

function userUrl(user, password, query = '') {
  const { host, port } = server();
  const u = new URL(`mysql://${host}:${port}/`);
  u.username = user;
  u.password = password;
  u.pathname = `/${ctx.db.database}`;
  return u.toString() + query;
}

const WRONG = 'Wr0ng-Secret-Pw-42';

function assertNoSecret(text, secret, label) {
  assert.ok(!String(text).includes(secret), `${label} leaks the password: ${text}`);
}

function assertErrorHasNoSecret(e, secret) {
  assert.ok(e instanceof Error, 'an Error');
  assertNoSecret(e.message, secret, 'message');
  assertNoSecret(e.stack, secret, 'stack');
  assertNoSecret(util.inspect(e, { depth: 5, showHidden: true }), secret, 'inspect(error)');
  assertNoSecret(JSON.stringify(e), secret, 'JSON.stringify(error)');
}

// ---------------------------------------------------------------------------------------------
// process exit
// ---------------------------------------------------------------------------------------------

test('node exits on its own when the program never calls close()', { timeout: 30_000 }, async () => {
  const out = assertExitedCleanly(await runFixture('query', ctx.db.url), 'query without close');
  assert.deepEqual(out.rows, [{ one: 1 }], 'the query really ran');
});

test('node exits after close()', { timeout: 30_000 }, async () => {
  const out = assertExitedCleanly(await runFixture('close', ctx.db.url), 'query + close');
  assert.deepEqual(out, { mode: 'close', rows: [{ one: 1 }], closed: true });
});

test(
  'node exits without close() with several idle pooled connections and after a tx',
  { timeout: 30_000 },
  async () => {
    const busy = assertExitedCleanly(await runFixture('busy', ctx.db.url), 'busy');
    assert.ok(busy.connections >= 2, `several connections were open: ${busy.connections}`);
    assert.equal(busy.tx, 2);
    const tx = assertExitedCleanly(await runFixture('tx-open', ctx.db.url), 'tx');
    assert.equal(tx.tx, 'done');
  },
);

test('node exits with a pool that was never used, and after a failed connection', { timeout: 30_000 }, async () => {
  assertExitedCleanly(await runFixture('idle', ctx.db.url), 'idle');
  const failed = assertExitedCleanly(await runFixture('failed', userUrl(PASSWORD_USER.user, WRONG)), 'failed');
  assert.match(failed.error, /Access denied/i);
  assertNoSecret(failed.error, WRONG, 'child error');
  const hole = await blackhole();
  try {
    const r = await runFixture('failed', `mysql://x@127.0.0.1:${hole.port}/db?acquireTimeoutMs=300`);
    const timedOut = assertExitedCleanly(r, 'blackhole');
    assert.match(timedOut.error, /time(d)? ?out/i);
  } finally {
    await hole.close();
  }
});

// ---------------------------------------------------------------------------------------------
// close()
// ---------------------------------------------------------------------------------------------

test('after close(), query / exec / tx reject with a clear "closed" error; close() twice is fine', async () => {
  const sql = mysqlPool(ctx.db.url);
  assert.equal(sql.closed, false);
  assert.deepEqual(await sql.query('SELECT 1 AS one'), [{ one: 1 }]);
  await sql.close();
  assert.equal(sql.closed, true);
  await assert.rejects(sql.query('SELECT 1'), /closed/i);
  await assert.rejects(sql.exec('DO 1'), /closed/i);
  let ran = false;
  await assert.rejects(
    sql.tx(async () => {
      ran = true;
    }),
    /closed/i,
  );
  assert.equal(ran, false);
  // Rejections, not synchronous throws.
  assert.doesNotThrow(() => sql.query('SELECT 1').catch(() => undefined));
  await sql.close();
  await sql.close();
  assert.equal(sql.closed, true);
  // Closing a pool that never connected is fine too.
  const unused = mysqlPool(ctx.db.url);
  await unused.close();
  await unused.close();
  await assert.rejects(unused.query('SELECT 1'), /closed/i);
});

test('close() lets in-flight queries finish, then later calls reject', async () => {
  const sql = mysqlPool(ctx.db.url);
  const running = sql.query('SELECT SLEEP(0.3) AS z, 5 AS five');
  // Let the query reach the server before closing.
  await new Promise((r) => setTimeout(r, 50));
  const closing = sql.close();
  assert.deepEqual(await running, [{ z: 0, five: 5 }]);
  await within(closing, 5000, 'close()');
  await assert.rejects(sql.query('SELECT 1'), /closed/i);
});

test('close() closes the server connections', async () => {
  const sql = mysqlPool(ctx.db.url);
  const ids = await Promise.all([1, 2, 3].map(() => sql.query('SELECT CONNECTION_ID() AS id, SLEEP(0.05) AS s')));
  const open = [...new Set(ids.map((r) => r[0].id))];
  await sql.close();
  const gone = async () => {
    const rows = await ctx.sql.query(`SELECT ID FROM ${processList()} WHERE ID IN (?)`, [open]);
    return rows.length === 0;
  };
  const deadline = Date.now() + 5000;
  while (!(await gone())) {
    assert.ok(Date.now() < deadline, `connections ${open} still open 5 s after close()`);
    await new Promise((r) => setTimeout(r, 50));
  }
});

// ---------------------------------------------------------------------------------------------
// connection errors and secrets
// ---------------------------------------------------------------------------------------------

test('a wrong password rejects clearly, without the password anywhere', async () => {
  const { host, port } = server();
  const variants = [
    mysqlPool(userUrl(PASSWORD_USER.user, WRONG)),
    mysqlPool({ host, port, user: PASSWORD_USER.user, password: WRONG, database: ctx.db.database }),
  ];
  for (const sql of variants) {
    try {
      for (const call of [() => sql.query('SELECT 1'), () => sql.exec('DO 1'), () => sql.tx(async () => 1)]) {
        await assert.rejects(call(), (e) => {
          assert.match(e.message, /Access denied for user 'iterflow'/);
          assertErrorHasNoSecret(e, WRONG);
          return true;
        });
      }
    } finally {
      await sql.close();
    }
  }
});

test('a password with URL-special characters is percent-decoded from the URL', async () => {
  const { host, port } = server();
  const user = `odd_${process.pid}_${Date.now() % 100000}`;
  const password = "p@ss:w/rd%?#&= 'é\\";
  await adminQuery(`CREATE USER ?@'%' IDENTIFIED BY ?`, [user, password]);
  await adminQuery(`GRANT ALL PRIVILEGES ON \`${ctx.db.database}\`.* TO ?@'%'`, [user]);
  // (The WHATWG URL password setter leaves '%' alone, so encode explicitly.)
  const url = `mysql://${user}:${encodeURIComponent(password)}@${host}:${port}/${ctx.db.database}`;
  const pools = [mysqlPool(url), mysqlPool({ host, port, user, password, database: ctx.db.database })];
  try {
    for (const sql of pools) {
      const [{ me }] = await sql.query('SELECT CURRENT_USER() AS me');
      assert.equal(me, `${user}@%`);
      assertNoSecret(util.inspect(sql), password, 'inspect');
    }
  } finally {
    for (const sql of pools) await sql.close();
    await adminQuery(`DROP USER IF EXISTS ?@'%'`, [user]);
  }
});

test('an unreachable port rejects clearly, without the password', async () => {
  const port = await closedPort();
  const sql = mysqlPool({ host: '127.0.0.1', port, user: PASSWORD_USER.user, password: PASSWORD_USER.password });
  try {
    const t0 = Date.now();
    await assert.rejects(within(sql.query('SELECT 1'), 5000, 'query to a closed port'), (e) => {
      assert.match(e.message, /refused|connect/i);
      assertErrorHasNoSecret(e, PASSWORD_USER.password);
      return true;
    });
    assert.ok(Date.now() - t0 < 5000);
  } finally {
    await sql.close();
  }
});

test('util.inspect and JSON.stringify of a pool never show the password', async () => {
  const { host, port } = server();
  const { user, password } = PASSWORD_USER;
  const m2 = mysql.createPool({ host, port, user, password, database: ctx.db.database, connectionLimit: 1 });
  const pools = [
    mysqlPool(userUrl(user, password)),
    mysqlPool({ host, port, user, password, database: ctx.db.database }),
    mysqlPool(m2),
  ];
  try {
    for (const sql of pools) {
      // It is a working pool with that password...
      assert.match((await sql.query('SELECT CURRENT_USER() AS me'))[0].me, /^iterflow@/);
      // ...whose descriptions do not contain it.
      for (const [label, text] of [
        ['util.inspect', util.inspect(sql)],
        ['util.inspect (deep, hidden)', util.inspect(sql, { depth: 10, showHidden: true })],
        ['util.inspect (no custom)', util.inspect(sql, { depth: 10, showHidden: true, customInspect: false })],
        ['String', String(sql)],
        ['JSON.stringify', JSON.stringify(sql)],
        ['JSON.stringify in an object', JSON.stringify({ sql })],
        ['Object.keys', JSON.stringify(Object.keys(sql))],
      ]) {
        assertNoSecret(text, password, label);
      }
      assert.match(util.inspect(sql), /iterflow/, 'the description is still useful (names the user)');
    }
  } finally {
    for (const sql of pools) await sql.close();
    await m2.end();
  }
});

// ---------------------------------------------------------------------------------------------
// acquireTimeoutMs
// ---------------------------------------------------------------------------------------------

test('acquireTimeoutMs bounds the wait against a server that accepts but never answers', async () => {
  const hole = await blackhole();
  const pools = [
    mysqlPool({ host: '127.0.0.1', port: hole.port, user: 'x', password: WRONG, acquireTimeoutMs: 400 }),
    mysqlPool(`mysql://x:${WRONG}@127.0.0.1:${hole.port}/db?acquireTimeoutMs=400`),
  ];
  try {
    for (const sql of pools) {
      for (const call of [() => sql.query('SELECT 1'), () => sql.exec('DO 1'), () => sql.tx(async () => 1)]) {
        const t0 = Date.now();
        await assert.rejects(within(call(), 5000, 'call against the blackhole'), (e) => {
          assert.match(e.message, /time(d)? ?out/i);
          assertErrorHasNoSecret(e, WRONG);
          return true;
        });
        const ms = Date.now() - t0;
        assert.ok(ms >= 350, `waited ${ms} ms, at least about acquireTimeoutMs`);
        assert.ok(ms < 3000, `waited ${ms} ms, bounded by acquireTimeoutMs`);
      }
      assert.ok(hole.accepted() >= 1, 'the pool really connected to the blackhole');
      await within(sql.close(), 5000, 'close() after blackhole timeouts');
    }
  } finally {
    for (const sql of pools) await sql.close();
    await hole.close();
  }
});

test('acquireTimeoutMs bounds the wait for a checkout from an exhausted pool', async () => {
  const sql = mysqlPool(`${ctx.db.url}?connectionLimit=1&acquireTimeoutMs=300`);
  try {
    const holding = sql.tx(async () => {
      const t0 = Date.now();
      await assert.rejects(sql.query('SELECT 1'), /time(d)? ?out/i);
      const ms = Date.now() - t0;
      assert.ok(ms >= 250 && ms < 3000, `waited ${ms} ms`);
      return 'held';
    });
    assert.equal(await within(holding, 10_000, 'the holding tx'), 'held');
    // Once released, the connection is usable again.
    assert.deepEqual(await sql.query('SELECT 1 AS one'), [{ one: 1 }]);
  } finally {
    await sql.close();
  }
});

// ---------------------------------------------------------------------------------------------
// option validation
// ---------------------------------------------------------------------------------------------

test('invalid URLs and options throw a TypeError synchronously, before any connection', async () => {
  const hole = await blackhole();
  try {
    const cases = [
      'not a url',
      'postgres://x',
      'http://localhost/db',
      'mysql://u:p@h:notaport/db',
      `mysql://127.0.0.1:${hole.port}/db?sslmode=BOGUS`,
      `mysql://127.0.0.1:${hole.port}/db?connectionLimit=0`,
      `mysql://127.0.0.1:${hole.port}/db?acquireTimeoutMs=-5`,
      { host: '127.0.0.1', port: 'abc' },
      { host: '127.0.0.1', port: 70000 },
      { host: '127.0.0.1', port: hole.port, connectionLimit: 0 },
      { host: '127.0.0.1', port: hole.port, connectionLimit: 1.5 },
      { host: '127.0.0.1', port: hole.port, acquireTimeoutMs: 0 },
      { host: '127.0.0.1', port: hole.port, user: 5 },
      { host: '127.0.0.1', port: hole.port, ssl: 'bogus' },
      42,
      null,
      undefined,
      true,
    ];
    for (const x of cases) {
      assert.throws(
        () => mysqlPool(x),
        (e) => {
          assert.ok(
            e instanceof TypeError,
            `${util.inspect(x)}: a TypeError, got ${e && e.constructor.name}: ${e && e.message}`,
          );
          assert.match(e.message, /mysqlPool/);
          return true;
        },
        `mysqlPool(${util.inspect(x)})`,
      );
    }
    // The exact cases named in the issue, with their messages.
    assert.throws(() => mysqlPool('not a url'), /not a valid URL/);
    assert.throws(() => mysqlPool('postgres://x'), /scheme/);
    assert.throws(() => mysqlPool({ port: 'abc' }), /port/);
    assert.throws(() => mysqlPool({ connectionLimit: 0 }), /connectionLimit/);
    assert.throws(() => mysqlPool(42), TypeError);
    assert.throws(() => mysqlPool(null), TypeError);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(hole.accepted(), 0, 'no connection was attempted');
  } finally {
    await hole.close();
  }
});

test('invalid host or a missing CA file are refused synchronously too', () => {
  for (const x of [
    { host: '' },
    { host: 'a b' },
    { ssl: { caPath: '/nonexistent/ca.pem' } },
    'mysql://127.0.0.1/db?sslmode=VERIFY_CA&ssl-ca=/nonexistent/ca.pem',
  ]) {
    assert.throws(
      () => mysqlPool(x),
      (e) => e instanceof Error && /mysqlPool/.test(e.message),
      util.inspect(x),
    );
  }
});

// ---------------------------------------------------------------------------------------------
// TLS
// ---------------------------------------------------------------------------------------------

test('sslmode=REQUIRED against a server without TLS rejects clearly on the first query', async (t) => {
  const bare = await serverWithoutTls();
  t.diagnostic(bare.why);
  const { host, port } = bare;
  const pools = [
    mysqlPool(`${bare.url}?sslmode=REQUIRED`),
    mysqlPool({ host, port, user: 'root', ssl: true }),
    mysqlPool({ host, port, user: 'root', ssl: { rejectUnauthorized: false } }),
  ];
  try {
    for (const sql of pools) {
      await assert.rejects(within(sql.query('SELECT 1'), 10_000, 'TLS query'), (e) => {
        assert.match(e.message, /TLS/);
        assert.equal(e.code, 'HANDSHAKE_NO_SSL_SUPPORT');
        return true;
      });
    }
    // Plain connections to the same server work, so it was TLS that failed; sslmode=DISABLED
    // is a plain connection.
    for (const url of [bare.url, `${bare.url}?sslmode=DISABLED`]) {
      const plain = mysqlPool(url);
      try {
        assert.deepEqual(await plain.query('SELECT 1 AS one'), [{ one: 1 }]);
      } finally {
        await plain.close();
      }
    }
  } finally {
    for (const sql of pools) await sql.close();
    await bare.stop();
  }
});
