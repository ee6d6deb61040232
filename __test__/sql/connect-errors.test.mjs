// A connection that cannot be opened, as a mysql2 user expects to read it: the message names
// host:port (or the socket path), the code is Node's / mysql2's (ECONNREFUSED, ENOTFOUND,
// ETIMEDOUT, ENOENT) with errno, syscall, address and port; no driver wording; and the error's
// stack leads back to the caller — for sql.query, exec, tx and a backend call alike. TLS
// required but not offered is a permanent configuration error, on each server.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';

import mysql from 'mysql2/promise';

import { onMysql, startPrivateServer } from '../helpers/server.mjs';
import { m, mysqlPool, server, useDatabase, within } from './helpers.mjs';
import { blackhole, closedPort } from '../helpers/sockets.mjs';

const { createMysqlBackend, mysqlClassify } = m;
const ctx = useDatabase('sql_connect_errors');

/** No driver wording in a message. */
function assertNodeLike(e) {
  assert.doesNotMatch(e.message, /os error|Driver error|Input\/output error|`/, `plain words: ${e.message}`);
}

/** Each kind of call on `sql`, from a named async function of this file (the caller's frame). */
const CALLS = {
  query: async function callerOfQuery(sql) {
    return await sql.query('SELECT 1');
  },
  exec: async function callerOfExec(sql) {
    return await sql.exec('DO 1');
  },
  tx: async function callerOfTx(sql) {
    return await sql.tx((t) => t.query('SELECT 1'));
  },
  backend: async function callerOfBackend(sql) {
    return await createMysqlBackend(sql).store.loadRun('r1');
  },
};

/** Runs every call of CALLS on `sql`; `check(e, name)` judges each rejection. */
async function everyCall(sql, check) {
  for (const [name, call] of Object.entries(CALLS)) {
    let error;
    try {
      await within(call(sql), 10_000, name);
    } catch (e) {
      error = e;
    }
    assert.ok(error instanceof Error, `${name}: rejects`);
    assert.match(error.stack, new RegExp(`at async ${call.name} \\(`), `${name}: the caller's frame: ${error.stack}`);
    assert.match(error.stack, /connect-errors\.test\.mjs/, `${name}: the stack leads to this file`);
    check(error, name);
  }
}

test('a refused connection: connect ECONNREFUSED host:port, with the caller on the stack', async () => {
  const port = await closedPort();
  const sql = mysqlPool({ host: '127.0.0.1', port, user: 'u', password: 'pw-never-shown' });
  try {
    await everyCall(sql, (e, name) => {
      assert.equal(e.code, 'ECONNREFUSED', name);
      assert.equal(e.message, `connect ECONNREFUSED 127.0.0.1:${port}`);
      assert.deepEqual(
        [e.errno, e.syscall, e.address, e.port, e.fatal, e.kind],
        [-os.constants.errno.ECONNREFUSED, 'connect', '127.0.0.1', port, true, 'connection'],
      );
      assert.equal(mysqlClassify(e), 'transient');
      assertNodeLike(e);
    });
  } finally {
    await sql.close();
  }
});

test('a name that does not resolve: the code mysql2 gives (ENOTFOUND), naming the host', async () => {
  const host = 'no-such-host.invalid';
  // mysql2 on this machine, for the same name: what its users match on here.
  const theirs = await mysql.createConnection({ host, port: 3306, connectTimeout: 5000 }).catch((e) => e);
  assert.ok(theirs instanceof Error);
  const sql = mysqlPool({ host, user: 'u', acquireTimeoutMs: 5000 });
  try {
    await everyCall(sql, (e) => {
      assert.equal(e.code, theirs.code, `mysql2 says ${theirs.code}`);
      assert.equal(e.errno, theirs.errno);
      assert.equal(e.syscall, 'getaddrinfo');
      assert.equal(e.hostname, host);
      assert.ok(e.message.startsWith(`getaddrinfo ${theirs.code} ${host}`), e.message);
      assert.match(e.message, new RegExp(`${host}:3306`));
      assertNodeLike(e);
    });
    assert.ok(['ENOTFOUND', 'EAI_AGAIN'].includes(theirs.code), `a resolver error: ${theirs.code}`);
  } finally {
    await sql.close();
  }
});

test('no answer within acquireTimeoutMs: connect ETIMEDOUT host:port', async () => {
  const hole = await blackhole();
  const sql = mysqlPool({ host: '127.0.0.1', port: hole.port, user: 'u', acquireTimeoutMs: 300 });
  try {
    await everyCall(sql, (e) => {
      assert.equal(e.code, 'ETIMEDOUT');
      assert.match(e.message, new RegExp(`^connect ETIMEDOUT 127\\.0\\.0\\.1:${hole.port} `));
      assert.deepEqual([e.syscall, e.address, e.port, e.kind], ['connect', '127.0.0.1', hole.port, 'connection']);
      assertNodeLike(e);
    });
  } finally {
    await sql.close();
    await hole.close();
  }
});

test('a socket path with nothing there: connect ENOENT <path>', async () => {
  const socketPath = path.join(os.tmpdir(), `no-server-${process.pid}.sock`);
  const sql = mysqlPool({ socketPath, user: 'u' });
  try {
    await everyCall(sql, (e) => {
      assert.equal(e.code, 'ENOENT');
      assert.equal(e.message, `connect ENOENT ${socketPath}`);
      assert.deepEqual([e.syscall, e.address], ['connect', socketPath]);
      assertNodeLike(e);
    });
  } finally {
    await sql.close();
  }
});

test('a server error — of a query, a statement inside tx, a backend call — keeps the caller on the stack', async () => {
  const broken = {
    query: async function callerOfBrokenQuery() {
      return await ctx.sql.query('SELECT * FROM no_such_table');
    },
    tx: async function callerOfBrokenTx() {
      return await ctx.sql.tx(async (t) => {
        await t.exec('INSERT INTO no_such_table VALUES (1)');
      });
    },
    backend: async function callerOfBrokenBackend() {
      // A prefix with no tables: the server answers ER_NO_SUCH_TABLE.
      return await createMysqlBackend(ctx.sql, { prefix: 'nothing_here_' }).store.loadRun('r1');
    },
  };
  for (const [name, call] of Object.entries(broken)) {
    const e = await call().catch((x) => x);
    assert.equal(e.code, 'ER_NO_SUCH_TABLE', name);
    assert.match(e.stack, new RegExp(`at async ${call.name} \\(`), `${name}: ${e.stack}`);
  }
});

/** A private MySQL with TLS turned off (the run's MySQL offers TLS by default). */
let tlsLess;
after(async () => tlsLess && tlsLess.stop());

test('TLS required where the server offers none: HANDSHAKE_NO_SSL_SUPPORT, permanent, promptly', async (t) => {
  let where;
  if (onMysql()) {
    tlsLess = await startPrivateServer({ kind: 'mysql', extraArgs: ['--tls-version='] });
    where = { host: '127.0.0.1', port: tlsLess.port, url: tlsLess.url };
    t.diagnostic('MySQL offers TLS by default: this runs against a private MySQL started with --tls-version=');
  } else {
    const { host, port } = server();
    where = { host, port, url: ctx.db.url };
    t.diagnostic('the private MariaDB has no certificates: it offers no TLS');
  }
  const probe = mysqlPool(where.url);
  try {
    const [row] = await probe.query(
      onMysql()
        ? 'SELECT @@tls_version AS tls'
        : "SELECT VARIABLE_VALUE AS tls FROM information_schema.GLOBAL_VARIABLES WHERE VARIABLE_NAME = 'HAVE_SSL'",
    );
    assert.equal(row.tls, onMysql() ? '' : 'DISABLED', 'the server offers no TLS');
  } finally {
    await probe.close();
  }
  for (const sql of [
    mysqlPool(`${where.url}?sslmode=REQUIRED`),
    mysqlPool({ host: where.host, port: where.port, user: 'root', ssl: true }),
  ]) {
    try {
      const t0 = Date.now();
      await everyCall(sql, (e) => {
        assert.equal(e.code, 'HANDSHAKE_NO_SSL_SUPPORT');
        assert.equal(e.kind, 'argument');
        assert.match(e.message, new RegExp(`${where.host}:${where.port} does not offer TLS`));
        assert.equal(mysqlClassify(e), 'permanent');
        assert.equal(mysqlClassify(new Error('wrapped', { cause: e })), 'permanent');
        assertNodeLike(e);
      });
      assert.ok(Date.now() - t0 < 8000, 'promptly');
    } finally {
      await sql.close();
    }
  }
});

test('TLS required where the server offers it (MySQL): the session is encrypted', async (t) => {
  const sql = mysqlPool(`${ctx.db.url}?sslmode=REQUIRED`);
  try {
    if (onMysql()) {
      const [{ Value: cipher }] = await sql.query("SHOW SESSION STATUS LIKE 'Ssl_cipher'");
      assert.ok(cipher, 'a TLS cipher is in use');
    } else {
      t.diagnostic('the private MariaDB offers no TLS: requiring it fails, as the test above shows');
      await assert.rejects(sql.query('SELECT 1'), (e) => e.code === 'HANDSHAKE_NO_SSL_SUPPORT');
    }
  } finally {
    await sql.close();
  }
});
