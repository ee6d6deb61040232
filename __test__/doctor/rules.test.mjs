// The doctor's verdict rules on facts this run's server cannot be made to have (old versions,
// binlog STATEMENT, Galera settings, read-only, replicas, small limits): the facts are collected
// from the real server once, then altered and judged (lib/doctor/judge.js). And the SHOW GRANTS
// parser on lines both servers print.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';

import { closeAdmin } from '../helpers/db.mjs';
import { STOCK, TO, byName, database, doctor, v3 } from './helpers.mjs';

const { _internal } = doctor;

after(() => closeAdmin());

test(
  'verdict rules on altered facts: versions, isolation, binlog, Galera, read-only, replicas, limits',
  TO,
  async () => {
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
          if (v && typeof v === 'object' && !Array.isArray(v) && f[k] && typeof f[k] === 'object')
            Object.assign(f[k], v);
          else f[k] = v;
        }
        return byName({ checks: _internal.judge(f, { ...target, ...t }) });
      };
      const base = judge();
      assert.deepEqual(
        Object.values(base).filter((c) => c.verdict !== 'ok'),
        [],
        'the stock server as it is: every line ok',
      );
      assert.equal(base.binlog.value.logBin, STOCK.binlogOn);

      // Versions.
      const ver = (version, comment = '') => judge({ version, comment, maria: /mariadb/i.test(version) }).server;
      assert.equal(ver('10.5.22-MariaDB').verdict, 'fail');
      assert.match(ver('10.5.22-MariaDB').detail, /below 10\.6 has no SKIP LOCKED/);
      assert.equal(ver('10.6.0-MariaDB').verdict, 'ok');
      assert.match(ver('11.4.2-MariaDB').detail, /not tested/);
      assert.match(ver('10.11.9-MariaDB').detail, /tested with this package/);
      assert.equal(ver('5.7.44').verdict, 'fail');
      assert.equal(ver('8.0.0').verdict, 'fail');
      assert.equal(ver('8.0.1').verdict, 'ok');
      for (const v of ['8.0.40', '8.4.3', '9.7.4']) assert.match(ver(v).detail, /tested with this package/, v);
      assert.match(ver('9.1.0').detail, /supported \(≥ 8\.0\.1\), not tested/);
      assert.match(ver('8.0.36-28', 'Percona Server (GPL)').detail, /^MySQL \(Percona Server\) 8\.0\.36/);
      assert.equal(ver('8.0.11-TiDB-v7.5.0').verdict, 'warn');
      assert.equal(judge({ skipLocked: { supported: false, error: 'syntax' } })['skip-locked'].verdict, 'fail');

      // Isolation: the session's is judged; the server default is information only.
      const iso = (txIsolation, setIsolation) => judge({ txIsolation }, { setIsolation }).isolation;
      assert.equal(iso('REPEATABLE-READ', false).verdict, 'fail');
      assert.equal(iso('REPEATABLE-READ', undefined).verdict, 'fail');
      assert.equal(
        judge({ txIsolation: 'REPEATABLE-READ' }, { native: false }).isolation.verdict,
        'warn',
        'a wrapped Sql may set it per transaction',
      );
      for (const server of ['READ-COMMITTED', 'REPEATABLE-READ', 'SERIALIZABLE']) {
        const g = { tx_isolation: server, transaction_isolation: server };
        assert.equal(judge({ global: g })['isolation.default'].verdict, 'ok', server);
        assert.equal(judge({ global: g }, { setIsolation: false })['isolation.default'].verdict, 'ok', server);
      }
      // The statement to change the default, in each server's dialect.
      const fix = (maria) => judge({ maria, txIsolation: 'REPEATABLE-READ' }, { setIsolation: false }).isolation.detail;
      assert.match(
        fix(true),
        /SET GLOBAL \w+ = 'READ-COMMITTED' \(and transaction-isolation = READ-COMMITTED in the server configuration\)/,
      );
      assert.match(fix(false), /SET PERSIST \w+ = 'READ-COMMITTED'/);

      // Binlog.
      assert.equal(judge({ session: { log_bin: 'ON', binlog_format: 'STATEMENT' } }).binlog.verdict, 'fail');
      assert.equal(judge({ session: { log_bin: 'ON', binlog_format: 'MIXED' } }).binlog.verdict, 'ok');
      assert.equal(judge({ session: { log_bin: 'OFF', binlog_format: 'STATEMENT' } }).binlog.verdict, 'ok');
      // Binary logging without log_bin_trust_function_creators: creating the function needs SUPER.
      const routine = (maria) =>
        judge({
          maria,
          global: { log_bin: 'ON', log_bin_trust_function_creators: 'OFF' },
          grants: { source: 'SHOW GRANTS', list: [_internal.parseGrant('GRANT ALL PRIVILEGES ON `x`.* TO `u`@`%`')] },
          database: 'x',
        })['privileges.routine'];
      assert.equal(routine(false).verdict, 'warn');
      assert.match(routine(false).detail, /SET PERSIST log_bin_trust_function_creators = ON/);
      assert.match(routine(true).detail, /SET GLOBAL log_bin_trust_function_creators = ON/);

      // Cluster: Galera's lines on a Galera node (MariaDB), one cluster line elsewhere.
      const galera = {
        maria: true,
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
      assert.equal(g.cluster, undefined);
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
        judge({ ...galera, status: { ...galera.status, wsrep_cluster_status: 'non-Primary', wsrep_ready: 'OFF' } })
          .galera.verdict,
        'fail',
      );
      assert.equal(judge({ ...galera, status: { ...galera.status, wsrep_cluster_size: '2' } }).galera.verdict, 'warn');
      assert.match(
        judge({ maria: false, session: { wsrep_on: undefined }, global: { wsrep_on: undefined } }).cluster.detail,
        /Galera is a MariaDB cluster/,
      );
      assert.match(
        judge({ maria: true, session: { wsrep_on: 'OFF' }, global: { wsrep_on: 'OFF' } }).cluster.detail,
        /Galera: wsrep_on OFF/,
      );

      // Replication role (super_read_only is MySQL's).
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
  },
);

test('SHOW GRANTS parsing: levels, quoting, wildcards, column grants, routines, partial revokes, MySQL dynamic privileges', () => {
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
  // MariaDB's root: ALL PRIVILEGES. MySQL's root: static privileges by name plus a line of dynamic ones.
  const mariaRoot = privilegeModel(
    [parseGrant('GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION')],
    'x',
    false,
  );
  assert.equal(mariaRoot('CREATE ROUTINE'), 'global');
  const mysqlRoot = privilegeModel(
    [
      parseGrant(
        'GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, SUPER, CREATE ROUTINE, ALTER ROUTINE ON *.* TO `root`@`127.0.0.1` WITH GRANT OPTION',
      ),
      parseGrant(
        'GRANT APPLICATION_PASSWORD_ADMIN,BINLOG_ADMIN,SET_ANY_DEFINER,SYSTEM_USER ON *.* TO `root`@`127.0.0.1` WITH GRANT OPTION',
      ),
    ],
    'x',
    false,
  );
  assert.equal(mysqlRoot('SUPER'), 'global');
  assert.equal(mysqlRoot('DELETE', { table: 't' }), 'global');
  assert.equal(mysqlRoot('BINLOG_ADMIN'), 'global');
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
  assert.equal(b.run.columns.size - a.run.columns.size, 1, '3.0 adds run.priority');
  assert.ok(b.run.columns.has('priority') && !a.run.columns.has('priority'));
  assert.equal(b.signal.columns.get('consumed').default, '0');
  assert.equal(b.cron.columns.get('overlap').default, 'allow');
  assert.deepEqual(
    b.run.indexes.map((i) => i.name),
    ['PRIMARY', 'seq', 'run_idem', 'run_created', 'run_parent', 'run_status'],
  );
});
