// The health check: checkDatabase(sql, prefix?, opts?) (lib/doctor/) and the CLI
// `iterativeflow-mysql-native doctor <url>` (bin/) against the private server — healthy databases
// (alpha.2 and 3.0), missing tables, drifted columns and keys, missing privileges, the isolation
// with setIsolation: false, an unreachable or silent server, exit codes and output, and that the
// password never shows. Verdict rules for what this server cannot be (Galera settings, read-only,
// old versions, binlog STATEMENT, small limits) are checked on the collected facts, altered; a
// one-node Galera cluster is checked for real where Galera can run.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

import { adminQuery, closeAdmin, freshDatabase, serverUrl, uniqueName, urlWithDatabase } from '../helpers/db.mjs';
import { galeraSkip, startGaleraCluster } from '../helpers/galera.mjs';
import { PASSWORD_USER } from '../helpers/server.mjs';

const require = createRequire(import.meta.url);
const m = require('../../index.js');
const v3 = require('../../v3.js');
const doctor = require('../../lib/doctor/index.js');
const { checkDatabase, _internal } = doctor;

const here = path.dirname(fileURLToPath(import.meta.url));
const BIN = path.join(here, '..', '..', 'bin', 'iterativeflow-mysql-native.js');
const BASES = ['run', 'step', 'job', 'timer', 'signal', 'cron'];
const V3 = { contract: '3.0.0' };
const TO = { timeout: 20_000 };

after(() => closeAdmin());

/** A fresh database; `sql` a native pool on it. */
async function database(label) {
  const db = await freshDatabase(`doctor_${label}`);
  const sql = m.mysqlPool(db.url);
  return {
    db,
    sql,
    async done() {
      try {
        await sql.close();
      } finally {
        await db.drop();
      }
    },
  };
}

/** `url` with this user and password instead of the one MYSQL_URL names. */
function withUser(url, user, password) {
  const u = new URL(url);
  u.username = encodeURIComponent(user);
  u.password = encodeURIComponent(password);
  return u.toString();
}

const byName = (result) => Object.fromEntries(result.checks.map((c) => [c.name, c]));

/** The server's default isolation (what `isolation.default` must say). */
async function serverDefaultIsolation() {
  const [rows] = await adminQuery(
    "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('transaction_isolation', 'tx_isolation')",
  );
  return String(rows[0].Value).toUpperCase();
}

/** Every check ok, except isolation.default, which warns when the server default is not READ COMMITTED. */
async function assertHealthy(result) {
  const rc = (await serverDefaultIsolation()) === 'READ-COMMITTED';
  const bad = result.checks.filter((c) => c.verdict !== 'ok' && !(c.name === 'isolation.default' && !rc));
  assert.deepEqual(bad, [], 'only isolation.default may warn');
  assert.equal(result.verdict, rc ? 'ok' : 'warn');
  for (const c of result.checks) {
    assert.equal(typeof c.name, 'string');
    assert.ok(['ok', 'warn', 'fail'].includes(c.verdict));
    assert.equal(typeof c.detail, 'string');
    assert.ok(c.detail.length > 0, c.name);
  }
}

/** Runs the CLI; resolves to { code, stdout, stderr, ms }. */
function cli(args, { env = {} } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, MYSQL_URL: '', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr, ms: Date.now() - t0 }));
  });
}

/** A loopback port nothing listens on. */
function closedPort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** A loopback server that accepts connections and never says a word. */
function silentServer() {
  const sockets = new Set();
  const srv = net.createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  return new Promise((resolve) => {
    srv.listen(0, '127.0.0.1', () =>
      resolve({
        port: srv.address().port,
        close: () => {
          for (const s of sockets) s.destroy();
          return new Promise((r) => srv.close(r));
        },
      }),
    );
  });
}

/** A user on the server with exactly `grants` on `database`; `drop()` removes it. */
async function user(database, grants) {
  const name = uniqueName('dru').slice(0, 32);
  const password = `pw-${uniqueName('x')}`;
  await adminQuery("CREATE USER ?@'%' IDENTIFIED BY ?", [name, password]);
  await adminQuery(`GRANT ${grants} ON \`${database}\`.* TO ?@'%'`, [name]);
  return { name, password, drop: () => adminQuery("DROP USER IF EXISTS ?@'%'", [name]) };
}

test('healthy 2.0.0-alpha.2 database: every check ok (an Sql, a URL, and options give the same)', TO, async () => {
  const d = await database('alpha2');
  try {
    await m.applySchema(d.sql, '');
    const viaSql = await checkDatabase(d.sql);
    await assertHealthy(viaSql);
    const c = byName(viaSql);
    assert.deepEqual(
      viaSql.checks.map((x) => x.name),
      [
        'connection',
        'server',
        'database',
        'skip-locked',
        'isolation',
        'isolation.default',
        'privileges.data',
        'privileges.schema',
        'privileges.routine',
        ...BASES.map((b) => `table.${b}`),
        'layout',
        'pending_work',
        'max_allowed_packet',
        'time_zone',
        'binlog',
        'galera',
        'replication',
        'pool.connections',
        'pool.timeouts',
        'pool.prepared',
      ],
    );
    assert.equal(c.layout.value.layout, '2.0.0-alpha.2');
    assert.match(c.server.detail, /^MariaDB 10\.\d+/);
    assert.equal(c.server.value.kind, 'mariadb');
    assert.deepEqual(c['skip-locked'].value, { supported: true });
    assert.match(c['skip-locked'].detail, /job table/);
    assert.equal(c.isolation.value.session, 'READ-COMMITTED');
    for (const b of BASES) assert.ok(c[`table.${b}`].value.layouts.includes('2.0.0-alpha.2'), b);
    assert.deepEqual(c['table.run'].value.layouts, ['2.0.0-alpha.2'], 'run without priority is alpha.2 only');
    assert.equal(typeof c.max_allowed_packet.value.bytes, 'number');
    assert.match(
      c['pool.connections'].detail,
      /connectionLimit 10 \(package defaults; pass opts\.pool to check your own\) of max_connections \d+/,
    );
    assert.match(c['pool.timeouts'].detail, /queryTimeoutMs 60000/);
    assert.match(
      c['pool.prepared'].detail,
      /statementCacheSize 16 × connectionLimit 10 = up to 160 prepared statements/,
    );

    const viaUrl = await checkDatabase(`${d.db.url}?connectionLimit=7&queryTimeoutMs=90000`);
    await assertHealthy(viaUrl);
    assert.match(byName(viaUrl)['pool.connections'].detail, /connectionLimit 7 \(as configured\)/);
    assert.match(byName(viaUrl)['pool.timeouts'].detail, /queryTimeoutMs 90000/);
    const textOnly = byName(await checkDatabase(`${d.db.url}?statementCacheSize=0`))['pool.prepared'];
    assert.equal(textOnly.verdict, 'ok');
    assert.match(textOnly.detail, /every statement as text \(as configured\)/);
    const u = new URL(d.db.url);
    const viaOptions = await checkDatabase({
      host: u.hostname,
      port: Number(u.port),
      user: 'root',
      database: d.db.database,
    });
    await assertHealthy(viaOptions);
    // opts.pool describes a pool handed in.
    const described = await checkDatabase(d.sql, '', { pool: { connectionLimit: 100000 } });
    assert.equal(byName(described)['pool.connections'].verdict, 'fail');
    assert.match(byName(described)['pool.connections'].detail, /exceeds max_connections/);
  } finally {
    await d.done();
  }
});

test(
  'healthy 3.0.0 database (fresh, and upgraded from alpha.2): every check ok, pending_work present',
  TO,
  async () => {
    const d = await database('v3');
    try {
      await v3.applySchema(d.sql, 'p_');
      const r = await checkDatabase(d.sql, 'p_', V3);
      await assertHealthy(r);
      const c = byName(r);
      assert.equal(c.layout.value.layout, '3.0.0');
      assert.deepEqual(c.pending_work.value, { exists: true, sameBody: true });
      assert.match(c['privileges.routine'].detail, /CREATE ROUTINE, ALTER ROUTINE/);
      // The /v3 helper's default: checkDatabaseOf with the 3.0.0 fallback.
      const viaV3 = await doctor.checkDatabaseOf(d.sql, 'p_', undefined, '3.0.0');
      assert.equal(byName(viaV3).layout.value.contract, '3.0.0');

      // Upgraded in place from alpha.2: the same verdicts.
      await m.applySchema(d.sql, 'u_');
      await v3.applySchema(d.sql, 'u_');
      await assertHealthy(await checkDatabase(d.sql, 'u_', V3));
    } finally {
      await d.done();
    }
  },
);

test(
  'layout against the other contract: alpha.2 tables under 3.0 fail; 3.0 tables under alpha.2 warn, and fail once signals were consumed',
  TO,
  async () => {
    const d = await database('cross');
    try {
      await m.applySchema(d.sql, 'a_');
      const r = byName(await checkDatabase(d.sql, 'a_', V3));
      assert.equal(r.layout.verdict, 'fail');
      assert.equal(r.layout.value.layout, '2.0.0-alpha.2');
      assert.match(r.layout.detail, /applySchema\(sql, "a_", \{ contract: '3\.0\.0' \}\)/);
      assert.equal(r['table.run'].verdict, 'fail');
      assert.match(r['table.run'].detail, /missing column priority int NOT NULL DEFAULT 0/);
      assert.match(r['table.run'].detail, /2\.0\.0-alpha\.2 layout of the table/);
      assert.match(r['table.signal'].detail, /missing column consumed tinyint NOT NULL DEFAULT 0/);
      assert.equal(r['table.step'].verdict, 'ok');
      assert.equal(r['privileges.schema'].verdict, 'ok');

      await v3.applySchema(d.sql, 'b_');
      let b = await checkDatabase(d.sql, 'b_');
      assert.equal(b.verdict, 'warn');
      let c = byName(b);
      assert.equal(c.layout.verdict, 'warn');
      assert.match(c.layout.detail, /downgrade hazard/);
      assert.equal(c['table.run'].verdict, 'warn');
      assert.match(c['table.run'].detail, /extra column priority/);
      assert.match(c.pending_work.detail, /not part of 2\.0\.0-alpha\.2 \(present/);
      await d.sql.exec("INSERT INTO b_signal (id, run_id, name, consumed) VALUES ('s1', 'r1', 'go', 1)");
      b = await checkDatabase(d.sql, 'b_');
      c = byName(b);
      assert.equal(b.verdict, 'fail');
      assert.equal(c.layout.verdict, 'fail');
      assert.equal(c.layout.value.consumedSignals, 1);
      assert.match(c.layout.detail, /would deliver them again/);

      // Half an upgrade (run has priority, signal lacks consumed): mixed.
      await m.applySchema(d.sql, 'h_');
      await d.sql.query('ALTER TABLE h_run ADD COLUMN priority INT NOT NULL DEFAULT 0 AFTER join_remaining');
      const h = byName(await checkDatabase(d.sql, 'h_', V3));
      assert.equal(h.layout.value.layout, 'mixed');
      assert.equal(h.layout.verdict, 'fail');
      assert.equal(h['table.run'].verdict, 'ok');
      assert.equal(h['table.signal'].verdict, 'fail');
    } finally {
      await d.done();
    }
  },
);

test(
  'missing tables: each fails, the layout names applySchema, and a prefix that has them is suggested',
  TO,
  async () => {
    const d = await database('missing');
    try {
      let r = await checkDatabase(d.sql, '', V3);
      let c = byName(r);
      assert.equal(r.verdict, 'fail');
      for (const b of BASES) {
        assert.equal(c[`table.${b}`].verdict, 'fail');
        assert.match(c[`table.${b}`].detail, new RegExp(`\`${b}\` does not exist in \`${d.db.database}\``));
      }
      assert.equal(c.layout.value.layout, 'missing');
      assert.match(c.layout.detail, /run applySchema\(sql, "", \{ contract: '3\.0\.0' \}\)/);
      assert.match(c.pending_work.detail, /is missing/);
      assert.equal(c['skip-locked'].verdict, 'ok', 'probed on DUAL without a job table');

      await v3.applySchema(d.sql, 'app_');
      r = await checkDatabase(d.sql, '', V3);
      assert.match(byName(r).layout.detail, /found the tables with prefix "app_"/);

      await d.sql.query('DROP TABLE app_timer, app_cron');
      r = await checkDatabase(d.sql, 'app_', V3);
      c = byName(r);
      assert.equal(c.layout.value.layout, 'incomplete');
      assert.match(c.layout.detail, /tables missing: app_timer, app_cron/);
      assert.equal(c['table.run'].verdict, 'ok');
      assert.equal(c['table.timer'].verdict, 'fail');
    } finally {
      await d.done();
    }
  },
);

test(
  'drift: a changed column fails, with the column, what it is and what is expected; keys and extras too',
  TO,
  async () => {
    const d = await database('drift');
    try {
      await v3.applySchema(d.sql, '');
      await d.sql.query('ALTER TABLE run MODIFY name VARCHAR(100) NOT NULL');
      let r = await checkDatabase(d.sql, '', V3);
      let c = byName(r);
      assert.equal(r.verdict, 'fail');
      assert.equal(c['table.run'].verdict, 'fail');
      assert.equal(c['table.run'].detail, 'column name is varchar(100) NOT NULL, expected varchar(191) NOT NULL');
      assert.deepEqual(c['table.run'].value.layouts, []);
      assert.equal(c.layout.value.layout, 'drifted');
      assert.equal(c.layout.verdict, 'fail');
      for (const b of BASES.filter((x) => x !== 'run')) assert.equal(c[`table.${b}`].verdict, 'ok', b);

      await d.sql.query('ALTER TABLE run MODIFY name VARCHAR(191) NOT NULL'); // back to the layout
      await d.sql.query(
        "ALTER TABLE cron MODIFY overlap VARCHAR(16) NOT NULL DEFAULT 'skip'; ALTER TABLE step MODIFY shape VARCHAR(191) NOT NULL DEFAULT ''; " +
          'ALTER TABLE timer DROP INDEX timer_due, ADD COLUMN note TEXT; ALTER TABLE job DROP INDEX job_claimable, ADD KEY claim2 (priority, run_at); ' +
          'ALTER TABLE `signal` DROP INDEX signal_idem; ALTER TABLE run ADD COLUMN must INT NOT NULL',
      );
      r = await checkDatabase(d.sql, '', V3);
      c = byName(r);
      assert.equal(c['table.cron'].verdict, 'fail');
      assert.match(
        c['table.cron'].detail,
        /column overlap is varchar\(16\) NOT NULL DEFAULT 'skip', expected varchar\(16\) NOT NULL DEFAULT 'allow'/,
      );
      assert.equal(c['table.step'].verdict, 'fail');
      assert.match(
        c['table.step'].detail,
        /column shape is varchar\(191\) NOT NULL DEFAULT '', expected varchar\(191\)$/,
      );
      assert.equal(c['table.timer'].verdict, 'warn', 'a missing ordinary key and an extra nullable column warn');
      assert.match(c['table.timer'].detail, /missing key timer_due KEY \(fire_at\)/);
      assert.match(c['table.timer'].detail, /extra column note text \(not used by the package\)/);
      assert.equal(c['table.job'].verdict, 'ok', 'a key under another name is the same key');
      assert.match(c['table.job'].detail, /key job_claimable present as claim2/);
      assert.equal(c['table.signal'].verdict, 'fail', 'a missing unique key fails');
      assert.match(c['table.signal'].detail, /missing key signal_idem UNIQUE \(run_id, idem_key\)/);
      assert.equal(c['table.run'].verdict, 'fail');
      assert.match(c['table.run'].detail, /extra column must int NOT NULL \(NOT NULL without a default/);
      assert.ok(c['table.run'].value.differences.length === 1);
    } finally {
      await d.done();
    }
  },
);

test(
  'missing privileges: without DELETE the data check fails; without CREATE ROUTINE (3.0) the routine check warns',
  TO,
  async () => {
    const d = await database('privs');
    const noDelete = await user(d.db.database, 'SELECT, INSERT, UPDATE, CREATE, ALTER');
    const noRoutine = await user(d.db.database, 'SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER');
    try {
      await m.applySchema(d.sql, '', { contract: '3.0.0', pendingWork: false });
      const a = await checkDatabase(withUser(d.db.url, noDelete.name, noDelete.password), '', V3);
      let c = byName(a);
      assert.equal(a.verdict, 'fail');
      assert.equal(c['privileges.data'].verdict, 'fail');
      assert.match(
        c['privileges.data'].detail,
        new RegExp(`${noDelete.name}@% lacks DELETE on the six tables in \`${d.db.database}\``),
      );
      assert.deepEqual(c['privileges.data'].value.missing, ['DELETE on the six tables']);
      assert.equal(c['privileges.routine'].verdict, 'warn');
      assert.doesNotMatch(JSON.stringify(a), new RegExp(noDelete.password));

      const b = await checkDatabase(withUser(d.db.url, noRoutine.name, noRoutine.password), '', V3);
      c = byName(b);
      assert.equal(b.verdict, 'warn', 'the backend runs without the function: a warning, not a blocker');
      assert.equal(c['privileges.data'].verdict, 'ok');
      assert.equal(c['privileges.schema'].verdict, 'ok');
      assert.equal(c['privileges.routine'].verdict, 'warn');
      assert.match(c['privileges.routine'].detail, /lacks CREATE ROUTINE, so it rejects with ER_NO_CREATE_ROUTINE/);
      assert.match(c['privileges.routine'].detail, /pendingWork: false/);
      assert.equal(c.pending_work.verdict, 'warn');
      // With pendingWork: false nothing about the function is wanted.
      const skip = byName(
        await checkDatabase(withUser(d.db.url, noRoutine.name, noRoutine.password), '', { ...V3, pendingWork: false }),
      );
      assert.equal(skip['privileges.routine'].verdict, 'ok');
      assert.equal(skip.pending_work.verdict, 'ok');
      // Under alpha.2 the routine privilege is not needed at all.
      assert.equal(
        byName(await checkDatabase(withUser(d.db.url, noRoutine.name, noRoutine.password)))['privileges.routine']
          .verdict,
        'ok',
      );
    } finally {
      await noDelete.drop();
      await noRoutine.drop();
      await d.done();
    }
  },
);

test(
  'isolation: with setIsolation: false the session gets the server default (a blocker unless it is READ COMMITTED)',
  TO,
  async () => {
    const d = await database('iso');
    try {
      await m.applySchema(d.sql);
      const rc = (await serverDefaultIsolation()) === 'READ-COMMITTED';
      const c = byName(await checkDatabase(d.db.url, '', { setIsolation: false }));
      assert.equal(c.isolation.verdict, rc ? 'ok' : 'fail');
      if (!rc) assert.match(c.isolation.detail, /with setIsolation: false the server default must be READ COMMITTED/);
      const pinned = m.mysqlPool(d.db.url, { setIsolation: false });
      try {
        const p = byName(await checkDatabase(pinned, '', { pool: { setIsolation: false } }));
        assert.equal(p.isolation.verdict, rc ? 'ok' : 'fail');
      } finally {
        await pinned.close();
      }
      if (!rc) assert.match(c['isolation.default'].detail, /with mysqlPool\(x, \{ setIsolation: false \}\)/);
    } finally {
      await d.done();
    }
  },
);

test(
  'read-only: through a wrapped Sql every statement is a SELECT or SHOW, and the locking read is rolled back',
  TO,
  async () => {
    const d = await database('readonly');
    try {
      await v3.applySchema(d.sql);
      const seen = [];
      const outcomes = [];
      const wrap = (s, inTx) => ({
        query: (text, params) => {
          seen.push({ text, inTx });
          return s.query(text, params);
        },
        exec: (text, params) => {
          seen.push({ text, inTx, exec: true });
          return s.exec(text, params);
        },
        tx: (fn) =>
          s
            .tx((t) => fn(wrap(t, true)))
            .then(
              (v) => {
                outcomes.push('committed');
                return v;
              },
              (e) => {
                outcomes.push('rolled back');
                throw e;
              },
            ),
      });
      const r = await checkDatabase(wrap(d.sql, false), '', V3);
      assert.notEqual(r.verdict, 'fail');
      assert.ok(seen.length > 5);
      for (const s of seen) {
        assert.ok(!s.exec, `no exec: ${s.text}`);
        assert.match(s.text, /^(SELECT|SHOW) /, s.text);
        if (/FOR UPDATE/.test(s.text)) assert.ok(s.inTx, 'locking reads only inside the transaction');
      }
      assert.ok(seen.some((s) => /FOR UPDATE SKIP LOCKED/.test(s.text)));
      assert.deepEqual(outcomes, ['rolled back'], 'one transaction, rolled back');
      // A wrapped Sql's pool settings are not known: reported as the package defaults.
      assert.match(byName(r)['pool.connections'].detail, /package defaults; pass opts\.pool/);
    } finally {
      await d.done();
    }
  },
);

test(
  'unreachable: a closed port and a silent server give one failing connection check, quickly, without the password',
  TO,
  async () => {
    const port = await closedPort();
    const secret = 'Very-Secret-Pw-1';
    let t0 = Date.now();
    const r = await checkDatabase(`mysql://someone:${secret}@127.0.0.1:${port}/app`);
    assert.ok(Date.now() - t0 < 3000, `${Date.now() - t0} ms`);
    assert.equal(r.verdict, 'fail');
    assert.equal(r.checks.length, 1);
    assert.equal(r.checks[0].name, 'connection');
    assert.equal(r.checks[0].verdict, 'fail');
    assert.match(r.checks[0].detail, new RegExp(`someone@127\\.0\\.0\\.1:${port}/app: .*ECONNREFUSED`));
    assert.doesNotMatch(JSON.stringify(r), /Very-Secret/);

    const silent = await silentServer();
    try {
      t0 = Date.now();
      const s = await checkDatabase(`mysql://someone:${secret}@127.0.0.1:${silent.port}/app`, '', { timeoutMs: 400 });
      const ms = Date.now() - t0;
      assert.ok(ms < 3000, `bounded by timeoutMs: ${ms} ms`);
      assert.equal(s.checks.length, 1);
      assert.match(s.checks[0].detail, /timed out|ETIMEDOUT/);
      assert.doesNotMatch(JSON.stringify(s), /Very-Secret/);
    } finally {
      await silent.close();
    }

    // Wrong password: refused by the server, reported as such, never echoed.
    const wrong = await checkDatabase(
      withUser(urlWithDatabase(serverUrl(), 'mysql'), PASSWORD_USER.user, 'Wrong-Pass-42'),
    );
    assert.equal(wrong.checks.length, 1);
    assert.match(wrong.checks[0].detail, /Access denied/);
    assert.doesNotMatch(JSON.stringify(wrong), /Wrong-Pass-42/);
  },
);

test('arguments: a bad prefix, contract or URL rejects with a TypeError before connecting', async () => {
  await assert.rejects(checkDatabase('mysql://root@127.0.0.1:1/x', 'a-b'), TypeError);
  await assert.rejects(checkDatabase('mysql://root@127.0.0.1:1/x', '', { contract: '9' }), TypeError);
  await assert.rejects(checkDatabase('http://x/'), TypeError);
  await assert.rejects(checkDatabase(42), TypeError);
});

test(
  'CLI: healthy 3.0 exits 0 with one line per check and a summary; --json prints the object; the password never shows',
  TO,
  async () => {
    const d = await database('cli');
    try {
      await v3.applySchema(d.sql, 'p_');
      const url = withUser(d.db.url, PASSWORD_USER.user, PASSWORD_USER.password);
      const r = await cli(['doctor', url, '--prefix', 'p_', '--contract', '3.0.0']);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      const lines = r.stdout.trim().split('\n');
      assert.equal(
        lines[0],
        `iterativeflow-mysql-native doctor: ${PASSWORD_USER.user}@${new URL(url).host}/${d.db.database} (prefix "p_", contract 3.0.0)`,
      );
      assert.match(lines.at(-1), /^verdict: (OK|WARN) \(\d+ ok, [01] warn, 0 fail\)$/);
      assert.equal(lines.length, 2 + 25);
      for (const l of lines.slice(1, -1)) assert.match(l, /^ {2}(ok {2}|WARN|FAIL) {2}[a-z_.-]+ +\S/, l);
      assert.ok(lines.some((l) => /^ {2}ok {4}layout +the 3\.0\.0 layout$/.test(l)));

      const j = await cli(['doctor', '--json', '--prefix=p_', '--contract=3.0.0'], { env: { MYSQL_URL: url } });
      assert.equal(j.code, 0);
      const obj = JSON.parse(j.stdout);
      assert.ok(['ok', 'warn'].includes(obj.verdict));
      assert.equal(obj.checks.length, 25);
      assert.deepEqual(Object.keys(obj.checks[0]).sort(), ['detail', 'name', 'value', 'verdict']);

      for (const out of [r, j]) {
        assert.ok(
          !out.stdout.includes(PASSWORD_USER.password) && !out.stderr.includes(PASSWORD_USER.password),
          'no password',
        );
      }
    } finally {
      await d.done();
    }
  },
);

test('CLI: drift, missing tables and an unreachable server exit 1; usage errors exit 2', TO, async () => {
  const d = await database('cli_fail');
  try {
    await v3.applySchema(d.sql);
    await d.sql.query('ALTER TABLE job MODIFY lease_token VARCHAR(64)');
    const url = withUser(d.db.url, PASSWORD_USER.user, PASSWORD_USER.password);
    const drift = await cli(['doctor', url, '--contract', '3.0.0']);
    assert.equal(drift.code, 1, drift.stdout + drift.stderr);
    assert.match(
      drift.stdout,
      /\n {2}FAIL {2}table\.job +column lease_token is varchar\(64\), expected varchar\(191\)\n/,
    );
    assert.match(drift.stdout, /\n {2}FAIL {2}layout +the tables match neither/);
    assert.match(drift.stdout, /\nverdict: FAIL \(\d+ ok, \d+ warn, 2 fail\)\n$/);

    const missing = await cli(['doctor', url, '--prefix', 'nothing_']);
    assert.equal(missing.code, 1);
    assert.match(missing.stdout, /FAIL {2}table\.run +`nothing_run` does not exist/);

    const port = await closedPort();
    const down = await cli([
      'doctor',
      `mysql://${PASSWORD_USER.user}:${PASSWORD_USER.password}@127.0.0.1:${port}/x`,
      '--timeout',
      '1000',
    ]);
    assert.equal(down.code, 1);
    assert.ok(down.ms < 5000, `${down.ms} ms`);
    assert.match(
      down.stdout,
      /FAIL {2}connection +cannot connect to or query iterflow@127\.0\.0\.1:\d+\/x: .*refused/i,
    );
    assert.match(down.stdout, /verdict: FAIL \(0 ok, 0 warn, 1 fail\)/);
    const downJson = await cli([
      'doctor',
      `mysql://${PASSWORD_USER.user}:${PASSWORD_USER.password}@127.0.0.1:${port}/x`,
      '--json',
    ]);
    assert.equal(downJson.code, 1);
    assert.equal(JSON.parse(downJson.stdout).checks.length, 1);

    for (const out of [drift, missing, down, downJson]) {
      assert.ok(
        !out.stdout.includes(PASSWORD_USER.password) && !out.stderr.includes(PASSWORD_USER.password),
        'no password',
      );
    }

    assert.equal((await cli(['doctor', url, '--contract', '4'])).code, 2);
    assert.equal((await cli(['doctor'])).code, 2, 'no URL and no MYSQL_URL');
    assert.equal((await cli(['doctor', url, '--bogus'])).code, 2);
    assert.equal((await cli(['frobnicate'])).code, 2);
    const help = await cli(['doctor', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /usage: iterativeflow-mysql-native doctor/);
  } finally {
    await d.done();
  }
});

test('verdict rules on altered facts: versions, binlog, Galera, read-only, replicas, limits', TO, async () => {
  const d = await database('rules');
  try {
    await v3.applySchema(d.sql);
    const facts = await _internal.collect(d.sql, '', '3.0.0');
    const target = {
      prefix: '',
      contract: '3.0.0',
      pendingWork: true,
      native: true,
      own: false,
      setIsolation: undefined,
      pool: { connectionLimit: 10, acquireTimeoutMs: 10000, queryTimeoutMs: 60000, source: 'test' },
    };
    const judge = (change = {}, t = {}) => {
      const f = structuredClone(facts);
      for (const [k, v] of Object.entries(change)) {
        if (v && typeof v === 'object' && !Array.isArray(v) && f[k] && typeof f[k] === 'object') Object.assign(f[k], v);
        else f[k] = v;
      }
      return byName({ checks: _internal.judge(f, { ...target, ...t }) });
    };
    const base = judge();
    assert.ok(Object.values(base).every((c) => c.verdict === 'ok' || c.name === 'isolation.default'));

    // Versions.
    const ver = (version, comment = '') => judge({ version, comment, maria: /mariadb/i.test(version) }).server;
    assert.equal(ver('10.5.22-MariaDB').verdict, 'fail');
    assert.match(ver('10.5.22-MariaDB').detail, /below 10\.6 has no SKIP LOCKED/);
    assert.equal(ver('10.6.0-MariaDB').verdict, 'ok');
    assert.match(ver('11.4.2-MariaDB').detail, /not tested here/);
    assert.equal(ver('5.7.44').verdict, 'fail');
    assert.equal(ver('8.0.0').verdict, 'fail');
    assert.equal(ver('8.0.1').verdict, 'ok');
    assert.match(ver('8.0.36-28', 'Percona Server (GPL)').detail, /^MySQL \(Percona Server\) 8\.0\.36/);
    assert.equal(ver('8.0.11-TiDB-v7.5.0').verdict, 'warn');
    assert.equal(judge({ skipLocked: { supported: false, error: 'syntax' } })['skip-locked'].verdict, 'fail');

    // Isolation.
    const iso = (txIsolation, setIsolation) => judge({ txIsolation }, { setIsolation }).isolation;
    assert.equal(iso('REPEATABLE-READ', false).verdict, 'fail');
    assert.match(
      iso('REPEATABLE-READ', false).detail,
      /with setIsolation: false the server default must be READ COMMITTED/,
    );
    assert.equal(iso('REPEATABLE-READ', undefined).verdict, 'fail');
    assert.equal(
      judge({ txIsolation: 'REPEATABLE-READ' }, { native: false }).isolation.verdict,
      'warn',
      'a wrapped Sql may set it per transaction',
    );
    assert.equal(
      judge({ global: { tx_isolation: 'READ-COMMITTED', transaction_isolation: 'READ-COMMITTED' } })[
        'isolation.default'
      ].verdict,
      'ok',
    );
    assert.equal(
      judge({ global: { tx_isolation: 'REPEATABLE-READ', transaction_isolation: undefined } })['isolation.default']
        .verdict,
      'warn',
    );

    // Binlog.
    assert.equal(judge({ session: { log_bin: 'ON', binlog_format: 'STATEMENT' } }).binlog.verdict, 'fail');
    assert.equal(judge({ session: { log_bin: 'ON', binlog_format: 'MIXED' } }).binlog.verdict, 'ok');
    assert.equal(judge({ session: { log_bin: 'OFF', binlog_format: 'STATEMENT' } }).binlog.verdict, 'ok');
    // Binary logging without log_bin_trust_function_creators: creating the function needs SUPER.
    assert.equal(
      judge({
        global: { log_bin: 'ON', log_bin_trust_function_creators: 'OFF' },
        grants: { source: 'SHOW GRANTS', list: [_internal.parseGrant('GRANT ALL PRIVILEGES ON `x`.* TO `u`@`%`')] },
        database: 'x',
      })['privileges.routine'].verdict,
      'warn',
    );

    // Galera.
    const galera = {
      session: { wsrep_on: 'ON', wsrep_sync_wait: '0' },
      global: { wsrep_on: 'ON', binlog_format: 'ROW', innodb_autoinc_lock_mode: '2' },
      status: {
        wsrep_cluster_size: '3',
        wsrep_local_state_comment: 'Synced',
        wsrep_cluster_status: 'Primary',
        wsrep_ready: 'ON',
      },
    };
    let g = judge(galera);
    assert.equal(g.galera.verdict, 'ok');
    assert.equal(g.galera.detail, 'Galera node Synced, cluster of 3, Primary');
    assert.equal(g['galera.settings'].verdict, 'ok');
    assert.match(g['galera.settings'].detail, /wsrep_sync_wait 0 \(a read on one node/);
    g = judge({ ...galera, global: { ...galera.global, binlog_format: 'MIXED', innodb_autoinc_lock_mode: '1' } });
    assert.equal(g['galera.settings'].verdict, 'fail');
    assert.match(
      g['galera.settings'].detail,
      /binlog_format MIXED \(Galera needs ROW\); innodb_autoinc_lock_mode 1 \(Galera needs 2\)/,
    );
    assert.equal(
      judge({ ...galera, status: { ...galera.status, wsrep_local_state_comment: 'Donor/Desynced' } }).galera.verdict,
      'warn',
    );
    assert.equal(
      judge({ ...galera, status: { ...galera.status, wsrep_cluster_status: 'non-Primary', wsrep_ready: 'OFF' } }).galera
        .verdict,
      'fail',
    );
    assert.equal(judge({ ...galera, status: { ...galera.status, wsrep_cluster_size: '2' } }).galera.verdict, 'warn');

    // Replication role.
    assert.equal(judge({ global: { read_only: 'ON' } }).replication.verdict, 'fail');
    assert.equal(judge({ global: { super_read_only: 'ON' } }).replication.verdict, 'fail');
    assert.match(
      judge({ global: { read_only: 'ON' }, replica: { source: 'db1:3306', io: 'Yes', sqlThread: 'Yes' } }).replication
        .detail,
      /a replica of db1:3306/,
    );
    assert.equal(judge({ replica: { source: 'db1:3306', io: 'Yes', sqlThread: 'Yes' } }).replication.verdict, 'warn');

    // Limits.
    assert.equal(judge({ global: { max_connections: '5' } })['pool.connections'].verdict, 'fail');
    assert.equal(judge({ session: { max_user_connections: '4' } })['pool.connections'].verdict, 'fail');
    assert.equal(
      judge({ global: { max_connections: '12' }, status: { threads_connected: '5' } })['pool.connections'].verdict,
      'warn',
    );
    assert.equal(judge({ session: { wait_timeout: '30' } })['pool.timeouts'].verdict, 'warn');
    assert.equal(judge({ global: { max_prepared_stmt_count: '100' } })['pool.prepared'].verdict, 'warn');
    assert.equal(
      judge({ global: { max_prepared_stmt_count: '1000' }, status: { prepared_stmt_count: '900' } })['pool.prepared']
        .verdict,
      'warn',
    );
    assert.equal(judge({ global: { max_prepared_stmt_count: '16382' } })['pool.prepared'].verdict, 'ok');
    assert.equal(
      judge({ global: { max_prepared_stmt_count: '100' } }, { pool: { ...target.pool, statementCacheSize: 0 } })[
        'pool.prepared'
      ].verdict,
      'ok',
    );
    assert.equal(judge({}, { pool: { ...target.pool, queryTimeoutMs: 20000 } })['pool.timeouts'].verdict, 'warn');
    assert.equal(judge({ session: { max_allowed_packet: String(1024 * 1024) } }).max_allowed_packet.verdict, 'warn');
  } finally {
    await d.done();
  }
});

test('SHOW GRANTS parsing: levels, quoting, wildcards, column grants, routines, partial revokes', () => {
  const { parseGrant, privilegeModel } = _internal;
  const grants = [
    "GRANT USAGE ON *.* TO `u`@`%` IDENTIFIED BY PASSWORD '*ABC'",
    'GRANT SELECT, INSERT ON `app\\_%`.* TO `u`@`%`',
    'GRANT UPDATE (`status`) ON `app_1`.`run` TO `u`@`%`',
    'GRANT DELETE ON `app_1`.`job` TO `u`@`%`',
    'GRANT EXECUTE, ALTER ROUTINE ON FUNCTION `app_1`.`pending_work` TO `u`@`%`',
    'GRANT `role1` TO `u`@`%`',
    'GRANT PROXY ON ``@`%` TO `u`@`%`',
  ].map(parseGrant);
  assert.equal(grants[5], null);
  assert.equal(grants[6], null);
  const has = privilegeModel(grants.filter(Boolean), 'app_1', false);
  assert.equal(has('SELECT', { table: 'run' }), 'database');
  assert.equal(has('UPDATE', { table: 'run' }), null, 'a column grant is not enough');
  assert.equal(has('DELETE', { table: 'job' }), 'table');
  assert.equal(has('DELETE', { table: 'run' }), null);
  assert.equal(has('ALTER ROUTINE', { routine: 'pending_work' }), 'routine');
  assert.equal(has('CREATE ROUTINE'), null);
  assert.equal(
    privilegeModel(grants.filter(Boolean), 'appX1', false)('SELECT', { table: 'run' }),
    null,
    '\\_ is a literal underscore',
  );
  const all = privilegeModel(
    [parseGrant('GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION')],
    'x',
    false,
  );
  assert.equal(all('CREATE ROUTINE'), 'global');
  const wild = privilegeModel([parseGrant('GRANT ALL ON `app_%`.* TO `u`@`%`')], 'appZ9', false);
  assert.equal(wild('DELETE', { table: 't' }), 'database', 'unescaped _ and % are wildcards');
  const revoked = privilegeModel(
    [parseGrant('GRANT SELECT, DELETE ON *.* TO `u`@`%`'), parseGrant('REVOKE DELETE ON `app`.* FROM `u`@`%`')],
    'app',
    false,
  );
  assert.equal(revoked('DELETE', { table: 't' }), null);
  assert.equal(revoked('SELECT', { table: 't' }), 'global');
  assert.equal(_internal.normType('bigint(20)'), 'bigint');
  assert.equal(_internal.normType('TINYINT(1)'), 'tinyint');
  assert.equal(_internal.normType('varchar(191)'), 'varchar(191)');
  // The expected layouts come from ddl(): 16 / 17 run columns, the same keys.
  const a = _internal.expectedLayout('', '2.0.0-alpha.2');
  const b = _internal.expectedLayout('', '3.0.0');
  assert.equal(a.run.columns.size, 16);
  assert.equal(b.run.columns.size, 17);
  assert.equal(b.signal.columns.get('consumed').default, '0');
  assert.equal(b.cron.columns.get('overlap').default, 'allow');
  assert.deepEqual(
    b.run.indexes.map((i) => i.name),
    ['PRIMARY', 'seq', 'run_idem', 'run_created', 'run_parent', 'run_status'],
  );
});

test(
  'Galera: a one-node cluster is recognised (Synced, ROW, autoinc 2) and warned about for its size',
  { timeout: 60_000, skip: galeraSkip() },
  async () => {
    const cluster = await startGaleraCluster({ nodes: 1 });
    try {
      const db = await cluster.createDatabase('doctor');
      const sql = v3.mysqlPool(db.urls[0]);
      try {
        await v3.applySchema(sql);
      } finally {
        await sql.close();
      }
      const r = await checkDatabase(db.urls[0], '', V3);
      const c = byName(r);
      assert.equal(c.galera.verdict, 'warn');
      assert.match(c.galera.detail, /Galera node Synced, cluster Primary, but a single-node cluster has no redundancy/);
      assert.equal(c.galera.value.clusterSize, 1);
      assert.equal(c['galera.settings'].verdict, 'ok');
      assert.equal(c['galera.settings'].value.binlogFormat, 'ROW');
      assert.equal(c['galera.settings'].value.innodbAutoincLockMode, '2');
      assert.equal(c.layout.verdict, 'ok');
      assert.notEqual(r.verdict, 'fail');
    } finally {
      await cluster.stop();
    }
  },
);

test('a host list: pool.hosts shows each host, the refused one set aside with its reason', TO, async () => {
  const d = await database('hosts');
  try {
    await m.applySchema(d.sql, '');
    const u = new URL(d.db.url);
    // Port 1 on loopback refuses at once; the doctor's calls go on to the real server.
    const listed = d.db.url.replace(`@${u.host}`, `@127.0.0.1:1,${u.host}`);
    const result = await checkDatabase(listed);
    const c = byName(result);
    assert.equal(c.connection.verdict, 'ok', c.connection.detail);
    assert.equal(c['pool.hosts'].verdict, 'warn', c['pool.hosts'].detail);
    assert.match(c['pool.hosts'].detail, /127\.0\.0\.1:1 set aside since .*refused/i);
    assert.deepEqual(
      c['pool.hosts'].value.map((h) => h.state),
      ['aside', 'healthy'],
    );
    // A single host gets no such line.
    assert.equal(byName(await checkDatabase(d.db.url))['pool.hosts'], undefined);
  } finally {
    await d.done();
  }
});
