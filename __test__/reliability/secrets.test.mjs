// Reliability 7 — secrets and TLS.
//
// With the `iterflow` / `s3cret-pw` user of the private test server: nothing the package hands
// back (inspect / String / JSON of the pool and the backend, messages / stacks / inspections of
// errors from failed queries, wrong passwords, refused connections, bad options) contains the
// password. Requiring TLS against a server without TLS (the private MariaDB; on MySQL, which
// offers TLS, a private one started with TLS off) fails clearly and promptly.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import util from 'node:util';
import { closeAdmin, freshDatabase, serverUrl } from '../helpers/db.mjs';
import { PASSWORD_USER, serverWithoutTls } from '../helpers/server.mjs';
import { applySchema, createMysqlBackend, mysqlPool, settle } from './helpers.mjs';

const SECRET = PASSWORD_USER.password; // 's3cret-pw'
const WRONG = 'wrong-pw-Zq81';

after(closeAdmin);
let db;
let host;
let port;
before(async () => {
  db = await freshDatabase('rel_secrets');
  const u = new URL(serverUrl());
  host = u.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1';
  port = Number(u.port || 3306);
  const s = mysqlPool(db.url);
  await applySchema(s);
  await s.close();
});
after(async () => db && db.drop());

const userUrl = (password, extra = '') =>
  `mysql://${PASSWORD_USER.user}:${encodeURIComponent(password)}@${host}:${port}/${db.database}${extra}`;

/** Every textual view of `x` we can think of. */
function views(x) {
  const out = [];
  const push = (what, f) => {
    try {
      out.push([what, String(f())]);
    } catch (e) {
      out.push([`${what} (threw)`, String(e && e.message)]);
    }
  };
  push('util.inspect', () => util.inspect(x));
  push('util.inspect showHidden', () => util.inspect(x, { showHidden: true, depth: Infinity, getters: true }));
  push('String', () => String(x));
  push('template', () => `${x}`);
  push('JSON.stringify', () => JSON.stringify(x));
  push('util.format %o', () => util.format('%o', x));
  push('util.format %j', () => util.format('%j', x));
  if (x && typeof x === 'object') {
    push('own keys', () =>
      util.inspect(
        Reflect.ownKeys(x).map((k) => [String(k), x[k]]),
        { showHidden: true, depth: 4 },
      ),
    );
    if (x instanceof Error) {
      push('stack', () => x.stack);
      push('message', () => x.message);
      push('cause', () => util.inspect(x.cause, { depth: Infinity }));
      push('JSON own props', () => JSON.stringify(x, Object.getOwnPropertyNames(x)));
    }
  }
  return out;
}

function assertClean(label, x, secrets = [SECRET]) {
  let n = 0;
  for (const [what, text] of views(x)) {
    n++;
    for (const s of secrets)
      assert.ok(!text.includes(s), `${label} / ${what} leaks ${JSON.stringify(s)}: ${text.slice(0, 300)}`);
  }
  return n;
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port: p } = srv.address();
      srv.close(() => resolve(p));
    });
  });
}

test('the pool, the backend and errors never show the password', { timeout: 60_000 }, async (t) => {
  let checked = 0;
  // a working pool of the password user, from a URL and from options
  const fromUrl = mysqlPool(userUrl(SECRET));
  const fromOpts = mysqlPool({ host, port, user: PASSWORD_USER.user, password: SECRET, database: db.database });
  const ok = await settle(fromUrl.query('SELECT CURRENT_USER() AS u'));
  if (!ok.ok && /Access denied/.test(ok.error.message)) {
    t.skip(`the server has no ${PASSWORD_USER.user} user (MYSQL_URL is not the private test server)`);
    await Promise.all([fromUrl.close(), fromOpts.close()]);
    return;
  }
  assert.ok(ok.ok, ok.error && ok.error.message);
  assert.match(ok.value[0].u, new RegExp(`^${PASSWORD_USER.user}@`));
  assert.ok((await settle(fromOpts.query('SELECT 1'))).ok);
  for (const [label, sql] of [
    ['pool from URL', fromUrl],
    ['pool from options', fromOpts],
  ]) {
    checked += assertClean(label, sql);
    const b = createMysqlBackend(sql);
    checked += assertClean(`${label}: backend`, b);
    checked += assertClean(`${label}: store`, b.store);
    for (const sym of Object.getOwnPropertySymbols(sql)) checked += assertClean(`${label}: ${String(sym)}`, sql[sym]);
    // errors from failed statements and port calls
    const errors = [
      await sql.query('SELECT * FROM no_such_table').catch((e) => e),
      await sql.query('SELEC broken ?', [SECRET.toUpperCase()]).catch((e) => e),
      await sql.exec('INSERT INTO `cron` (name) VALUES (?)', ['x']).catch((e) => e),
      await sql.tx(async (h) => h.query('SELECT * FROM nope')).catch((e) => e),
      await b.store.markRunning('missing').catch((e) => e),
      await b.queue.heartbeat({ runId: 'x', token: 't', version: 1 }, { leaseMs: 1 }).catch((e) => e),
    ];
    for (const e of errors) {
      assert.ok(e instanceof Error, `${label}: expected an error, got ${util.inspect(e)}`);
      checked += assertClean(`${label}: error "${e.message.slice(0, 40)}"`, e);
    }
  }
  await fromUrl.close();
  await fromOpts.close();
  checked += assertClean('closed pool', fromUrl);
  checked += assertClean('closed-pool error', await fromUrl.query('SELECT 1').catch((e) => e));

  // wrong password: a clear "Access denied", and neither password in any view
  for (const [label, sql] of [
    ['wrong password (URL)', mysqlPool(userUrl(WRONG, '?acquireTimeoutMs=3000'))],
    [
      'wrong password (options)',
      mysqlPool({ host, port, user: PASSWORD_USER.user, password: WRONG, acquireTimeoutMs: 3000 }),
    ],
  ]) {
    const r = await settle(sql.query('SELECT 1'));
    assert.equal(r.ok, false, `${label}: must fail`);
    assert.match(r.error.message, /Access denied/i, `${label}: clear error: ${r.error.message}`);
    checked += assertClean(label, r.error, [SECRET, WRONG]);
    const rb = await settle(createMysqlBackend(sql).store.runStats());
    assert.equal(rb.ok, false);
    checked += assertClean(`${label}: backend`, rb.error, [SECRET, WRONG]);
    checked += assertClean(`${label}: pool`, sql, [SECRET, WRONG]);
    await sql.close();
  }

  // a refused connection (nothing listens) carrying the password
  const closedPort = await freePort();
  const refused = mysqlPool(`mysql://${PASSWORD_USER.user}:${SECRET}@127.0.0.1:${closedPort}/x?acquireTimeoutMs=3000`);
  const rr = await settle(refused.query('SELECT 1'));
  assert.equal(rr.ok, false);
  checked += assertClean('refused connection', rr.error);
  await refused.close();

  // bad options next to a password: the message names the option, never the password
  for (const [label, make] of [
    ['bad sslmode', () => mysqlPool(`mysql://u:${SECRET}@127.0.0.1:${port}/?sslmode=bogus`)],
    ['bad port', () => mysqlPool(`mysql://u:${SECRET}@127.0.0.1:99999/`)],
    ['bad scheme', () => mysqlPool(`postgres://u:${SECRET}@127.0.0.1/`)],
    ['bad connectionLimit', () => mysqlPool(`mysql://u:${SECRET}@127.0.0.1/?connectionLimit=0`)],
    ['bad host', () => mysqlPool({ host: 'a b', user: 'u', password: SECRET })],
    ['NUL in user', () => mysqlPool({ host: '127.0.0.1', user: 'u\0', password: SECRET })],
    ['bad percent escape', () => mysqlPool(`mysql://u:${SECRET}%ZZ@127.0.0.1/`)],
  ]) {
    let err;
    try {
      make();
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof Error, `${label}: mysqlPool throws`);
    checked += assertClean(label, err);
  }
  t.diagnostic(
    `secrets: ${checked} textual views (inspect/String/JSON/stack/…) of pools, backends and 20+ errors checked; "${SECRET}" found in 0`,
  );
});

test('requiring TLS against a server without TLS fails clearly and promptly', { timeout: 60_000 }, async (t) => {
  const bare = await serverWithoutTls();
  t.diagnostic(bare.why);
  const at = `${bare.host}:${bare.port}`;
  const userAt = (extra) => `mysql://${PASSWORD_USER.user}:${encodeURIComponent(SECRET)}@${at}/${extra}`;
  const cases = [
    ['sslmode=REQUIRED URL', mysqlPool(`${bare.url}?sslmode=REQUIRED&acquireTimeoutMs=5000`)],
    [
      '{ ssl: true } option',
      mysqlPool({ host: bare.host, port: bare.port, user: 'root', ssl: true, acquireTimeoutMs: 5000 }),
    ],
    ['password user + sslmode=REQUIRED', mysqlPool(userAt('?sslmode=REQUIRED&acquireTimeoutMs=5000'))],
  ];
  const lines = [];
  try {
    for (const [label, sql] of cases) {
      for (const [what, call] of [
        ['query', () => sql.query('SELECT 1')],
        ['tx', () => sql.tx(async (h) => h.query('SELECT 1'))],
        ['backend', () => createMysqlBackend(sql).store.runStats()],
      ]) {
        const r = await settle(call());
        assert.equal(r.ok, false, `${label} / ${what}: must not silently connect without TLS`);
        assert.match(
          r.error.message,
          /TLS/,
          `${label} / ${what}: the error says TLS is the problem: ${r.error.message}`,
        );
        assert.match(r.error.message, new RegExp(at.replace(/\./g, '\\.')), `${label} / ${what}: names the server`);
        assert.equal(r.error.code, 'HANDSHAKE_NO_SSL_SUPPORT');
        assert.equal(r.error.kind, 'argument', 'a configuration mistake, not a passing connection failure');
        assert.ok(r.ms < 4000, `${label} / ${what}: fails promptly (${r.ms.toFixed(0)} ms)`);
        assertClean(`${label} / ${what}`, r.error);
        if (what === 'query') lines.push(`${label}: ${r.error.message} (${r.ms.toFixed(0)} ms)`);
      }
      await sql.close();
    }
    // sslmode=DISABLED still connects, the password user too
    for (const url of [`${bare.url}?sslmode=DISABLED`, userAt('?sslmode=DISABLED')]) {
      const plain = mysqlPool(url);
      assert.deepEqual(await plain.query('SELECT 1 AS one'), [{ one: 1 }]);
      await plain.close();
    }
  } finally {
    await bare.stop();
  }
  // a CA file that does not exist is refused up front
  assert.throws(() => mysqlPool(`${db.url}?sslmode=VERIFY_CA&ssl-ca=/nonexistent/ca.pem`), /ca|CA/);
  for (const l of lines) t.diagnostic(`tls: ${l}`);
});
