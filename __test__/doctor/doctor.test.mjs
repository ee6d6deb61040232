// The health check from code: checkDatabase(sql, prefix?, opts?) (lib/doctor/) against the private
// server of this run (MariaDB or MySQL; helpers.mjs says what each stock server is) — healthy
// databases (alpha.2 and 3.0) say ok with no warning; an empty database fails once, for its one
// cause, with the command that fixes it; drift, missing privileges (with the GRANT to copy), the
// isolation with setIsolation: false, an unreachable or silent server, and that the password never
// shows. A one-node Galera cluster is checked for real in the MariaDB run. The CLI: cli.test.mjs;
// verdict rules on altered facts: rules.test.mjs.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';

import { closeAdmin, serverUrl, urlWithDatabase } from '../helpers/db.mjs';
import { galeraSkip, startGaleraCluster } from '../helpers/galera.mjs';
import { PASSWORD_USER, onMysql } from '../helpers/server.mjs';
import {
  BASES,
  STOCK,
  TO,
  V3,
  assertHealthy,
  byName,
  closedPort,
  database,
  doctor,
  failures,
  m,
  mariadbOnly,
  serverDefaultIsolation,
  silentServer,
  user,
  v3,
  withUser,
} from './helpers.mjs';

const { checkDatabase } = doctor;

after(() => closeAdmin());

test(
  'the stock server of this run: its default isolation is REPEATABLE READ, which the doctor reports without a warning',
  TO,
  async () => {
    assert.equal(await serverDefaultIsolation(), STOCK.defaultIsolation);
    const d = await database('stock');
    try {
      await m.applySchema(d.sql, '');
      const c = byName(await checkDatabase(d.sql));
      assert.equal(c['isolation.default'].verdict, 'ok');
      assert.equal(c['isolation.default'].value.server, STOCK.defaultIsolation);
      assert.match(
        c['isolation.default'].detail,
        /^server default REPEATABLE READ, not used: mysqlPool sets READ COMMITTED/,
      );
      assert.equal(c.isolation.value.session, 'READ-COMMITTED');
    } finally {
      await d.done();
    }
  },
);

test(
  'healthy 2.0.0-alpha.2 database: every check ok, no warning (an Sql, a URL, and options give the same)',
  TO,
  async () => {
    const d = await database('alpha2');
    try {
      await m.applySchema(d.sql, '');
      const viaSql = await checkDatabase(d.sql);
      assertHealthy(viaSql);
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
          'cluster',
          'replication',
          'pool.connections',
          'pool.timeouts',
          'pool.prepared',
          'push',
          'push.reach',
        ],
      );
      assert.match(c.push.detail, STOCK.push);
      assert.equal(c['push.reach'].value.reach, 'server', 'root reaches every account');
      assert.equal(c.layout.value.layout, '2.0.0-alpha.2');
      assert.match(c.server.detail, STOCK.server);
      assert.equal(c.server.value.kind, STOCK.kind);
      assert.match(c.binlog.detail, STOCK.binlog);
      assert.equal(c.binlog.value.logBin, STOCK.binlogOn);
      assert.match(c.cluster.detail, STOCK.cluster);
      assert.deepEqual(c['skip-locked'].value, { supported: true });
      assert.match(c['skip-locked'].detail, /job table/);
      for (const b of BASES) assert.ok(c[`table.${b}`].value.layouts.includes('2.0.0-alpha.2'), b);
      assert.deepEqual(c['table.run'].value.layouts, ['2.0.0-alpha.2'], 'run without priority is alpha.2 only');
      assert.equal(typeof c.max_allowed_packet.value.bytes, 'number');
      assert.match(
        c['pool.connections'].detail,
        /connectionLimit \d+ \(package defaults; pass opts\.pool to check your own\) of max_connections \d+/,
      );

      const viaUrl = await checkDatabase(`${d.db.url}?connectionLimit=7&queryTimeoutMs=90000`);
      assertHealthy(viaUrl);
      assert.match(byName(viaUrl)['pool.connections'].detail, /connectionLimit 7 \(as configured\)/);
      assert.match(byName(viaUrl)['pool.timeouts'].detail, /queryTimeoutMs 90000/);
      const textOnly = byName(await checkDatabase(`${d.db.url}?statementCacheSize=0`))['pool.prepared'];
      assert.equal(textOnly.verdict, 'ok');
      assert.match(textOnly.detail, /every statement as text \(as configured\)/);
      const u = new URL(d.db.url);
      assertHealthy(
        await checkDatabase({ host: u.hostname, port: Number(u.port), user: 'root', database: d.db.database }),
      );
      // opts.pool describes a pool handed in.
      const described = await checkDatabase(d.sql, '', { pool: { connectionLimit: 100000 } });
      assert.equal(byName(described)['pool.connections'].verdict, 'fail');
      assert.match(byName(described)['pool.connections'].detail, /exceeds max_connections/);
    } finally {
      await d.done();
    }
  },
);

test(
  'healthy 3.0.0 database (fresh, and upgraded from alpha.2): every check ok, no warning, pending_work present',
  TO,
  async () => {
    const d = await database('v3');
    try {
      await v3.applySchema(d.sql, 'p_');
      const r = await checkDatabase(d.sql, 'p_', V3);
      assertHealthy(r);
      const c = byName(r);
      assert.equal(c.layout.value.layout, '3.0.0');
      assert.deepEqual(c.pending_work.value, { exists: true, sameBody: true });
      assert.match(c['privileges.routine'].detail, /CREATE ROUTINE, ALTER ROUTINE/);
      // The /v3 helper's default: checkDatabaseOf with the 3.0.0 fallback.
      const viaV3 = await doctor.checkDatabaseOf(d.sql, 'p_', undefined, '3.0.0');
      assert.equal(byName(viaV3).layout.value.contract, '3.0.0');

      await m.applySchema(d.sql, 'u_');
      await v3.applySchema(d.sql, 'u_');
      assertHealthy(await checkDatabase(d.sql, 'u_', V3));
    } finally {
      await d.done();
    }
  },
);

test('an empty database: one failure, naming the command that creates the tables; after it, ok', TO, async () => {
  const d = await database('empty');
  try {
    for (const [opts, flags] of [
      [undefined, ''],
      [V3, ' --contract 3.0.0'],
    ]) {
      const r = await checkDatabase(d.db.url, '', opts);
      assert.equal(r.verdict, 'fail');
      const fails = failures(r);
      assert.deepEqual(
        fails.map((x) => x.name),
        ['layout'],
        'one cause, one failure',
      );
      assert.equal(r.checks.filter((x) => x.verdict === 'warn').length, 0, 'and no warning for the same cause');
      assert.equal(fails[0].value.layout, 'missing');
      const u = new URL(d.db.url);
      assert.ok(
        fails[0].detail.includes(
          `npx iterativeflow-mysql-native schema apply mysql://root@${u.host}/${d.db.database}${flags}`,
        ),
        fails[0].detail,
      );
      assert.ok(
        fails[0].detail.includes(`applySchema(sql, ""${flags ? ", { contract: '3.0.0' }" : ''})`),
        fails[0].detail,
      );
      for (const b of BASES) assert.equal(byName(r)[`table.${b}`], undefined, 'no line per missing table');
    }
    // From an Sql handed in the command names the URL by $MYSQL_URL.
    const viaSql = failures(await checkDatabase(d.sql, 'app_', V3));
    assert.match(viaSql[0].detail, /schema apply "\$MYSQL_URL" --prefix app_ --contract 3\.0\.0/);
    // What the command does (schema apply = applySchema) makes the database healthy.
    await v3.applySchema(d.sql, '');
    assertHealthy(await checkDatabase(d.db.url, '', V3));
  } finally {
    await d.done();
  }
});

test(
  'layout against the other contract: the one layout line says what to run; the tables of a known layout are not failures',
  TO,
  async () => {
    const d = await database('cross');
    try {
      await m.applySchema(d.sql, 'a_');
      let r = await checkDatabase(d.sql, 'a_', V3);
      let c = byName(r);
      assert.deepEqual(
        failures(r).map((x) => x.name),
        ['layout'],
      );
      assert.equal(c.layout.value.layout, '2.0.0-alpha.2');
      assert.match(
        c.layout.detail,
        /to upgrade in place \(every row kept\), run: npx iterativeflow-mysql-native schema apply "\$MYSQL_URL" --prefix a_ --contract 3\.0\.0/,
      );
      assert.equal(c['table.run'].verdict, 'ok');
      assert.match(
        c['table.run'].detail,
        /the 2\.0\.0-alpha\.2 layout of the table \(missing column priority int NOT NULL DEFAULT 0\)/,
      );
      assert.match(c['table.signal'].detail, /missing column consumed tinyint NOT NULL DEFAULT 0/);

      await v3.applySchema(d.sql, 'b_');
      r = await checkDatabase(d.sql, 'b_');
      c = byName(r);
      assert.equal(r.verdict, 'warn');
      assert.deepEqual(
        r.checks.filter((x) => x.verdict !== 'ok').map((x) => x.name),
        ['layout'],
      );
      assert.match(c.layout.detail, /downgrade hazard/);
      assert.match(c['table.run'].detail, /extra column priority/);
      assert.match(c.pending_work.detail, /not part of 2\.0\.0-alpha\.2 \(present/);
      await d.sql.exec("INSERT INTO b_signal (id, run_id, name, consumed) VALUES ('s1', 'r1', 'go', 1)");
      r = await checkDatabase(d.sql, 'b_');
      c = byName(r);
      assert.deepEqual(
        failures(r).map((x) => x.name),
        ['layout'],
      );
      assert.equal(c.layout.value.consumedSignals, 1);
      assert.match(c.layout.detail, /would deliver them again/);

      // Half an upgrade (run has priority, signal lacks consumed): mixed.
      await m.applySchema(d.sql, 'h_');
      await d.sql.query('ALTER TABLE h_run ADD COLUMN priority INT NOT NULL DEFAULT 0 AFTER join_remaining');
      r = await checkDatabase(d.sql, 'h_', V3);
      assert.equal(byName(r).layout.value.layout, 'mixed');
      assert.deepEqual(
        failures(r).map((x) => x.name),
        ['layout'],
      );
    } finally {
      await d.done();
    }
  },
);

test(
  'missing tables: the layout line lists them with the command; another prefix that has them is suggested',
  TO,
  async () => {
    const d = await database('missing');
    try {
      await v3.applySchema(d.sql, 'app_');
      let r = await checkDatabase(d.sql, '', V3);
      assert.match(byName(r).layout.detail, /found the tables with prefix "app_" — wrong --prefix\?/);
      await d.sql.query('DROP TABLE app_timer, app_cron');
      r = await checkDatabase(d.sql, 'app_', V3);
      const c = byName(r);
      assert.deepEqual(
        failures(r).map((x) => x.name),
        ['layout'],
      );
      assert.equal(c.layout.value.layout, 'incomplete');
      assert.match(
        c.layout.detail,
        /tables missing: app_timer, app_cron — to create them, run: npx iterativeflow-mysql-native schema apply/,
      );
      assert.equal(c['table.run'].verdict, 'ok');
      assert.equal(c['table.timer'], undefined);
    } finally {
      await d.done();
    }
  },
);

test('drift: each changed table fails with what it is, what is expected and that it is fixed by hand', TO, async () => {
  const d = await database('drift');
  try {
    await v3.applySchema(d.sql, '');
    await d.sql.query('ALTER TABLE run MODIFY name VARCHAR(100) NOT NULL');
    let r = await checkDatabase(d.sql, '', V3);
    let c = byName(r);
    assert.deepEqual(
      failures(r).map((x) => x.name),
      ['table.run'],
    );
    assert.equal(
      c['table.run'].detail,
      'column name is varchar(100) NOT NULL, expected varchar(191) NOT NULL — schema apply does not change existing tables: ALTER it by hand',
    );
    assert.deepEqual(c['table.run'].value.layouts, []);
    assert.equal(c.layout, undefined, 'drift is told by the table lines');

    await d.sql.query('ALTER TABLE run MODIFY name VARCHAR(191) NOT NULL');
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
      /column shape is varchar\(191\) NOT NULL DEFAULT '', expected varchar\(191\) — /,
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
    assert.equal(c['table.run'].value.differences.length, 1);
  } finally {
    await d.done();
  }
});

test(
  'missing privileges: each lacking one comes with the GRANT to copy; what only schema apply needs warns',
  TO,
  async () => {
    const d = await database('privs');
    const none = await user(d.db.database, null);
    const noDelete = await user(d.db.database, 'SELECT, INSERT, UPDATE, CREATE, ALTER');
    const noRoutine = await user(d.db.database, 'SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER');
    const allOnDb = await user(d.db.database, 'ALL');
    try {
      await m.applySchema(d.sql, '', { contract: '3.0.0', pendingWork: false });
      const grant = (u, privs) => `GRANT ${privs} ON \`${d.db.database}\`.* TO '${u.name}'@'%';`;

      // No privilege at all: the server refuses the database, and the doctor names the GRANT.
      const zero = await checkDatabase(withUser(d.db.url, none.name, none.password), '', V3);
      assert.deepEqual(
        failures(zero).map((x) => x.name),
        ['connection'],
      );
      assert.match(failures(zero)[0].detail, /Access denied/);
      assert.ok(
        failures(zero)[0].detail.includes(
          `GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER ON \`${d.db.database}\`.* TO '${none.name}'@'%';`,
        ),
        failures(zero)[0].detail,
      );
      assert.doesNotMatch(JSON.stringify(zero), new RegExp(none.password));

      const a = await checkDatabase(withUser(d.db.url, noDelete.name, noDelete.password), '', V3);
      let c = byName(a);
      assert.deepEqual(
        failures(a).map((x) => x.name),
        ['privileges.data'],
      );
      assert.match(
        c['privileges.data'].detail,
        new RegExp(`${noDelete.name}@% lacks DELETE on the six tables in \`${d.db.database}\``),
      );
      assert.ok(
        c['privileges.data'].detail.includes(grant(noDelete, 'SELECT, INSERT, UPDATE, DELETE')),
        c['privileges.data'].detail,
      );
      assert.deepEqual(c['privileges.data'].value.missing, ['DELETE on the six tables']);
      assert.doesNotMatch(JSON.stringify(a), new RegExp(noDelete.password));

      const b = await checkDatabase(withUser(d.db.url, noRoutine.name, noRoutine.password), '', V3);
      c = byName(b);
      assert.equal(b.verdict, 'warn', 'the backend runs without the function: a warning, not a blocker');
      assert.equal(c['privileges.routine'].verdict, 'warn');
      assert.match(c['privileges.routine'].detail, /lacks CREATE ROUTINE, so it rejects with ER_NO_CREATE_ROUTINE/);
      assert.ok(c['privileges.routine'].detail.includes(grant(noRoutine, 'CREATE ROUTINE, ALTER ROUTINE')));
      assert.match(c['privileges.routine'].detail, /--no-pending-work/);
      const skip = byName(
        await checkDatabase(withUser(d.db.url, noRoutine.name, noRoutine.password), '', { ...V3, pendingWork: false }),
      );
      assert.equal(skip['privileges.routine'].verdict, 'ok');
      assert.equal(skip.pending_work.verdict, 'ok');
      assert.equal(
        byName(await checkDatabase(withUser(d.db.url, noRoutine.name, noRoutine.password)))['privileges.routine']
          .verdict,
        'ok',
        'alpha.2 has no function',
      );

      // ALL on the database: on MariaDB (no binary log) enough for the function; on MySQL (binary
      // log on by default) creating it also needs SUPER, which the doctor says with the setting to change.
      const all = byName(await checkDatabase(withUser(d.db.url, allOnDb.name, allOnDb.password), '', V3));
      if (STOCK.binlogOn) {
        assert.equal(all['privileges.routine'].verdict, 'warn');
        assert.match(
          all['privileges.routine'].detail,
          /needs SUPER \(error 1419\) — as an administrator, run: SET PERSIST log_bin_trust_function_creators = ON/,
        );
        const sql = v3.mysqlPool(withUser(d.db.url, allOnDb.name, allOnDb.password));
        try {
          await assert.rejects(
            v3.applySchema(sql, 'fn_'),
            (e) => e.errno === 1419 && /binary logging on, needs SUPER/.test(e.message),
          );
        } finally {
          await sql.close();
        }
      } else {
        assert.equal(all['privileges.routine'].verdict, 'ok');
        const sql = v3.mysqlPool(withUser(d.db.url, allOnDb.name, allOnDb.password));
        try {
          await v3.applySchema(sql, 'fn_');
        } finally {
          await sql.close();
        }
      }
    } finally {
      for (const u of [none, noDelete, noRoutine, allOnDb]) await u.drop();
      await d.done();
    }
  },
);

test(
  'isolation: with setIsolation: false the session gets the server default — one failure, with the statement that changes it',
  TO,
  async () => {
    const d = await database('iso');
    try {
      await m.applySchema(d.sql);
      assert.equal(await serverDefaultIsolation(), STOCK.defaultIsolation, 'a stock server: REPEATABLE READ');
      const r = await checkDatabase(d.db.url, '', { setIsolation: false });
      assert.deepEqual(
        failures(r).map((x) => x.name),
        ['isolation'],
      );
      const c = byName(r);
      assert.match(
        c.isolation.detail,
        /with setIsolation: false the server default must be READ COMMITTED — as an administrator, run: SET (GLOBAL|PERSIST) (transaction|tx)_isolation = 'READ-COMMITTED'/,
      );
      assert.equal(c['isolation.default'].verdict, 'ok', 'the default itself is information');
      const pinned = m.mysqlPool(d.db.url, { setIsolation: false });
      try {
        assert.equal(
          byName(await checkDatabase(pinned, '', { pool: { setIsolation: false } })).isolation.verdict,
          'fail',
        );
      } finally {
        await pinned.close();
      }
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
    assert.match(r.checks[0].detail, new RegExp(`someone@127\\.0\\.0\\.1:${port}/app: .*ECONNREFUSED`));
    assert.doesNotMatch(JSON.stringify(r), /Very-Secret/);

    const silent = await silentServer();
    try {
      t0 = Date.now();
      const s = await checkDatabase(`mysql://someone:${secret}@127.0.0.1:${silent.port}/app`, '', { timeoutMs: 400 });
      assert.ok(Date.now() - t0 < 3000, `bounded by timeoutMs: ${Date.now() - t0} ms`);
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

    // A database that does not exist: the statement that creates it.
    const nodb = await checkDatabase(urlWithDatabase(serverUrl(), 'no_such_db_here'));
    assert.equal(nodb.checks.length, 1);
    assert.match(
      nodb.checks[0].detail,
      /to create it, as an administrator, run: CREATE DATABASE `no_such_db_here` CHARACTER SET utf8mb4;/,
    );
  },
);

test('arguments: a bad prefix, contract or URL rejects with a TypeError before connecting', async () => {
  await assert.rejects(checkDatabase('mysql://root@127.0.0.1:1/x', 'a-b'), TypeError);
  await assert.rejects(checkDatabase('mysql://root@127.0.0.1:1/x', '', { contract: '9' }), TypeError);
  await assert.rejects(checkDatabase('http://x/'), TypeError);
  await assert.rejects(checkDatabase(42), TypeError);
});

test(
  'Galera: a one-node cluster is recognised (Synced, ROW, autoinc 2) and warned about for its size',
  {
    timeout: 60_000,
    skip:
      mariadbOnly(
        "Galera is MariaDB's cluster; MySQL's, Group Replication, has its own checks, tested in group-replication/push.test.mjs ('doctor knows the group')",
      ) || galeraSkip(),
  },
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
      assert.equal(c.cluster, undefined, 'the Galera lines instead of the cluster line');
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
    const c = byName(await checkDatabase(listed));
    assert.equal(c.connection.verdict, 'ok', c.connection.detail);
    assert.equal(c['pool.hosts'].verdict, 'warn', c['pool.hosts'].detail);
    assert.match(c['pool.hosts'].detail, /127\.0\.0\.1:1 set aside since .*refused/i);
    assert.deepEqual(
      c['pool.hosts'].value.map((h) => h.state),
      ['aside', 'healthy'],
    );
    assert.equal(byName(await checkDatabase(d.db.url))['pool.hosts'], undefined);
  } finally {
    await d.done();
  }
});

test("push: the listener's mode on this server and pool, and whose parks this account's rings reach", TO, async () => {
  const d = await database('push');
  const plain = await user(d.db.database, 'SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER');
  try {
    await m.applySchema(d.sql);
    // An account without PROCESS and CONNECTION ADMIN: its rings end its own parks only.
    const own = byName(await checkDatabase(withUser(d.db.url, plain.name, plain.password)));
    assert.equal(own['push.reach'].verdict, 'ok', 'one account for every process is fine');
    assert.equal(own['push.reach'].value.reach, 'account');
    const privileges = onMysql() ? 'PROCESS, CONNECTION_ADMIN' : 'PROCESS, CONNECTION ADMIN';
    assert.ok(
      own['push.reach'].detail.includes(`GRANT ${privileges} ON *.* TO '${plain.name}'@'%';`),
      own['push.reach'].detail,
    );
    // An Sql of the user's own (here over our pool): on MySQL a listener over it polls, having
    // no park connection; on MariaDB it parks on the Sql's connections.
    const wrapped = { query: (t, p) => d.sql.query(t, p), exec: (t, p) => d.sql.exec(t, p), tx: (fn) => d.sql.tx(fn) };
    const over = byName(await checkDatabase(wrapped))['push'];
    assert.equal(over.value.mode, onMysql() ? 'polling' : 'doorbell', over.detail);
    assert.equal(byName(await checkDatabase(d.sql))['push'].value.mode, 'doorbell');
  } finally {
    await d.done();
  }
});
