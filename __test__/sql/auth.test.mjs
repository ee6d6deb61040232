// Logging in, on each server: a password account over TCP without TLS, over TLS and over the
// socket; and a login as an account that does not exist answers access denied (errno 1045, a
// permanent error). On MySQL 9.7 accounts use caching_sha2_password, whose first login after
// its cache is emptied is the full exchange — over TCP without TLS the password goes
// RSA-encrypted with the server's public key — and MySQL answers an unknown account with a
// decoy plugin that is sometimes sha256_password (docs/configuration.md, "Errors"). Also TLS with
// a client certificate, and certificates that do not verify (a permanent error).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { adminQuery } from '../helpers/db.mjs';
import { onMysql } from '../helpers/server.mjs';
import { m, mysqlPool, server, useDatabase } from './helpers.mjs';

const { mysqlClassify } = m;
const ctx = useDatabase('sql_auth');

/** A fresh account with a password (the server's default plugin), allowed on this database. */
async function freshAccount() {
  const user = `auth_${process.pid}_${Math.floor(Math.random() * 1e6)}`;
  const password = 'Auth-pw-1!';
  await adminQuery(`CREATE USER ?@'%' IDENTIFIED BY ?`, [user, password]);
  await adminQuery(`GRANT SELECT ON \`${ctx.db.database}\`.* TO ?@'%'`, [user]);
  await adminQuery(`CREATE USER ?@'localhost' IDENTIFIED BY ?`, [user, password]);
  await adminQuery(`GRANT SELECT ON \`${ctx.db.database}\`.* TO ?@'localhost'`, [user]);
  return { user, password, drop: () => adminQuery(`DROP USER ?@'%', ?@'localhost'`, [user, user]) };
}

/** The socket of the run's private server (SHOW VARIABLES names it). */
async function socketPath() {
  const [{ Value }] = await ctx.sql.query("SHOW VARIABLES LIKE 'socket'");
  return Value;
}

/** Logs in with `opts` and answers who the server says we are and whether TLS is on. */
async function whoami(opts) {
  const sql = mysqlPool(opts);
  try {
    const [{ me }] = await sql.query('SELECT CURRENT_USER() AS me');
    const [{ Value: cipher }] = await sql.query("SHOW SESSION STATUS LIKE 'Ssl_cipher'");
    return { me, tls: Boolean(cipher) };
  } finally {
    await sql.close();
  }
}

test('a password account logs in over TCP without TLS, over TLS and over the socket', async (t) => {
  const account = await freshAccount();
  const { host, port } = server();
  const { user, password } = account;
  try {
    const [{ plugin }] = await ctx.sql.query("SELECT plugin FROM mysql.user WHERE user = ? AND host = '%'", [user]);
    if (onMysql()) {
      assert.equal(plugin, 'caching_sha2_password', 'MySQL 9.7 accounts use caching_sha2_password');
    } else {
      assert.equal(plugin, 'mysql_native_password', "MariaDB's default plugin");
    }
    t.diagnostic(`the account's plugin: ${plugin}`);

    // Emptied cache: the next login is caching_sha2_password's full exchange (RSA without TLS).
    await adminQuery('FLUSH PRIVILEGES');
    const plain = await whoami({ host, port, user, password, database: ctx.db.database });
    assert.deepEqual(plain, { me: `${user}@%`, tls: false }, 'TCP without TLS');
    // Again: from the server's cache now (the fast exchange).
    assert.deepEqual(await whoami({ host, port, user, password, database: ctx.db.database }), plain);

    const socket = await socketPath();
    await adminQuery('FLUSH PRIVILEGES');
    assert.deepEqual(
      await whoami({ socketPath: socket, user, password }),
      { me: `${user}@localhost`, tls: false },
      'the socket',
    );

    if (onMysql()) {
      await adminQuery('FLUSH PRIVILEGES');
      assert.deepEqual(
        await whoami({ host, port, user, password, ssl: { rejectUnauthorized: false } }),
        { me: `${user}@%`, tls: true },
        'TLS (the private MySQL offers it)',
      );
    } else {
      t.diagnostic('the private MariaDB offers no TLS (connect-errors.test.mjs shows what requiring it does)');
    }
  } finally {
    await account.drop();
  }
});

/** Names no account has: enough of them that MySQL's decoy asks for sha256_password for some. */
const UNKNOWN = Array.from({ length: 16 }, (_, i) => `ghost_${i}_${process.pid}`);

/** Asserts that `e` is the server's access denied for `user`: errno 1045, permanent. */
function assertDenied(e, user, label) {
  assert.ok(e instanceof Error, `${label}: rejects`);
  assert.equal(e.code, 'ER_ACCESS_DENIED_ERROR', `${label}: ${e.code} ${e.message}`);
  assert.equal(e.errno, 1045);
  assert.equal(e.kind, 'server');
  assert.match(e.message, new RegExp(`Access denied for user '${user}'`));
  assert.equal(mysqlClassify(e), 'permanent');
}

test('a login as an account that does not exist answers access denied (1045), over TCP and the socket', async () => {
  const { host, port } = server();
  const socket = await socketPath();
  for (const user of UNKNOWN) {
    for (const [label, opts] of [
      ['TCP', { host, port, user, password: 'whatever-1' }],
      ['TCP, no password', { host, port, user }],
      ['socket', { socketPath: socket, user, password: 'whatever-1' }],
    ]) {
      const sql = mysqlPool(opts);
      try {
        const e = await sql.query('SELECT 1').catch((x) => x);
        assertDenied(e, user, `${user} over ${label}`);
      } finally {
        await sql.close();
      }
    }
  }
});

test('with TLS required, an unknown account is still a permanent error, never a lost connection', async (t) => {
  const { host, port } = server();
  const codes = new Set();
  for (const user of UNKNOWN) {
    const sql = mysqlPool({ host, port, user, password: 'whatever-1', ssl: { rejectUnauthorized: false } });
    try {
      const e = await sql.query('SELECT 1').catch((x) => x);
      codes.add(e.code);
      assert.equal(mysqlClassify(e), 'permanent', `${user}: ${e.code} ${e.message}`);
      if (onMysql()) {
        // Where the decoy asks for sha256_password the exchange cannot be done under TLS here:
        // the error says so, naming the possibility of a missing account.
        if (e.code !== 'ER_ACCESS_DENIED_ERROR') {
          assert.equal(e.code, 'ER_NOT_SUPPORTED_AUTH_MODE');
          assert.match(e.message, /sha256_password.*does not exist/);
        }
      } else {
        assert.equal(e.code, 'HANDSHAKE_NO_SSL_SUPPORT', 'the private MariaDB offers no TLS');
      }
    } finally {
      await sql.close();
    }
  }
  t.diagnostic(`codes: ${[...codes].join(', ')}`);
});

test('TLS with a client certificate (ssl.cert / key) and a CA; a certificate that does not verify is permanent', async (t) => {
  const { host, port } = server();
  if (!onMysql()) {
    t.diagnostic('the private MariaDB has no certificates: it offers no TLS');
    const sql = mysqlPool({ host, port, user: 'root', ssl: { ca: 'x', cert: 'x', key: 'x' } });
    try {
      await assert.rejects(sql.query('SELECT 1'), (e) => e.code === 'HANDSHAKE_NO_SSL_SUPPORT');
    } finally {
      await sql.close();
    }
    return;
  }
  // The private MySQL made its own CA, server and client certificates in its data directory.
  const [{ dir }] = await ctx.sql.query('SELECT @@datadir AS dir');
  const pem = (name) => fs.readFileSync(path.join(dir, name), 'utf8');
  if (!fs.existsSync(path.join(dir, 'client-cert.pem'))) {
    t.skip(`the server's certificates are not readable here (${dir}: MYSQL_URL is not the private server)`);
    return;
  }
  const user = `x509_${process.pid}`;
  await adminQuery(`CREATE USER ?@'%' IDENTIFIED BY 'X509-pw-1' REQUIRE X509`, [user]);
  try {
    const base = { host, port, user, password: 'X509-pw-1' };
    const ca = pem('ca.pem');
    const identity = { cert: pem('client-cert.pem'), key: pem('client-key.pem') };
    // The auto-generated server certificate names no host, so this login verifies nothing of it.
    assert.deepEqual(await whoami({ ...base, ssl: { rejectUnauthorized: false, ...identity } }), {
      me: `${user}@%`,
      tls: true,
    });
    const denied = await whoami({ ...base, ssl: { rejectUnauthorized: false } }).catch((e) => e);
    assert.equal(denied.code, 'ER_ACCESS_DENIED_ERROR', 'no client certificate: denied');
    for (const [label, ssl] of [
      ['no CA for a self-made certificate', { rejectUnauthorized: true }],
      ['a certificate that does not name the host', { ca, verifyIdentity: true }],
      // The driver checks the name even when asked not to (verifyIdentity: false, sslmode=VERIFY_CA):
      // a certificate that names no host fails, as docs/configuration.md says.
      ['the CA without the name check', { ca, verifyIdentity: false }],
    ]) {
      const e = await whoami({ host, port, user: 'root', ssl }).catch((x) => x);
      assert.equal(e.code, 'HANDSHAKE_SSL_ERROR', `${label}: ${e.code} ${e.message}`);
      assert.equal(e.kind, 'argument', label);
      assert.match(e.message, /certificate/i);
      assert.match(e.message, new RegExp(`${host}:${port}`));
      assert.equal(mysqlClassify(e), 'permanent', label);
    }
  } finally {
    await adminQuery(`DROP USER ?@'%'`, [user]);
  }
});
