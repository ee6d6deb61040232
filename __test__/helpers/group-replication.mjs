// Private, throwaway MySQL Group Replication group for the tests in __test__/group-replication/.
//
//   groupReplicationUnavailable()             // null, or a one-line reason no group can start here
//   test('…', { skip: groupReplicationSkip() }, …)   // that reason as a skip — never under CI=true
//   const group = await startGroup({ members: 3, mode: 'single' | 'multi' });
//   group.members[k].url                      // 'mysql://root@127.0.0.1:PORT/' (root, empty password)
//   await group.members[k].query(sql, params)  // rows, on member k (one cached mysql2 connection)
//   await group.members[k].kill() / .shutdown()   // SIGKILL (a crash) / SIGTERM (a clean leave)
//   await group.members[k].start()            // back with its datadir, joined again, all ONLINE
//   await group.members[k].start({ onBoot: false, joinAfterMs: 3000 })  // up outside the group first
//   await group.members[k].freeze() / .thaw() // SIGSTOP / SIGCONT: cut off, expelled, back
//   await group.members[k].facts()            // { state, role, primary, queue, … } from P_S
//   await group.waitOnline()                  // every running member ONLINE in one view
//   await group.primary()                     // the member that is PRIMARY (single-primary mode)
//   await group.setPrimary(member, { timeoutS })   // group_replication_set_as_primary(its uuid[, timeout])
//   const db = await group.createDatabase('x')   // { name, urls: [per member, database selected] }
//   await group.waitForSync()                 // every member applied the same GTID set
//   await group.checksum(db.name, ['run'])    // [{ member: 'm1', sums: { run: '123' } }, …]
//   await group.rowCounts(db.name, ['run'])   // [{ member: 'm1', counts: { run: 12 } }, …]
//   group.startupMs, group.phases             // start-up time, and where it went
//   await group.stop()                        // SIGKILL the servers, delete the directory
//
// Like helpers/galera.mjs: no Docker, no system service. One datadir is made by
// `mysqld --initialize-insecure` (helpers/mysql.mjs, the private MySQL prefix) and copied to the
// other members (without auto.cnf, so each gets its own server_uuid): every member starts with the
// same, empty transaction history, so joining needs no state transfer. All members start at once;
// member 1 bootstraps the group, the others join together. Each listens on 127.0.0.1 only: its
// SQL port and its XCom (group communication) port. The recovery account and root@127.0.0.1 are
// made with sql_log_bin = 0 (a GTID of a member's own would keep it out of the group).
// The servers are killed (and the directory removed) when this Node process exits, is interrupted,
// or dies from SIGKILL (a detached watchdog notices that). GR_KEEP=1 keeps the directories (error
// logs) after the group is gone, for a post-mortem.
//
// Failure detection is shortened for tests: group_replication_member_expel_timeout = 0, so a
// member that stops answering is expelled once its 5 s suspicion period ends (the server's fixed
// detection time), and then a new primary is elected.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { after, before } from 'node:test';
import mysql from 'mysql2/promise';
import { adminQuery, dropConn, killMember, launchMember, running } from './cluster-member.mjs';
import { killOnExit } from './exit-hooks.mjs';
import { freePorts } from './galera.mjs';
import { mysqlKind, mysqlPrefix } from './mysql.mjs';
import { readTail, startWatchdog, tempBase, within } from './server-tools.mjs';

const READY_TIMEOUT_MS = 60_000; // per member: until it accepts a root connection
const ONLINE_TIMEOUT_MS = 90_000; // until every member is ONLINE (a joiner's recovery included)
const STOP_TIMEOUT_MS = 15_000;
const SHUTDOWN_TIMEOUT_MS = 60_000;
const SYNC_TIMEOUT_MS = 60_000;

/** The recovery account joiners replicate the group's history with. */
const RECOVERY = Object.freeze({ user: 'gr_recovery', password: 'gr-recovery-pw' });

/** The account the tests' workers use: no SUPER, no CONNECTION_ADMIN (offline_mode applies). */
export const APP_USER = 'app';

const live = new Set(); // groups still running in this process

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Why a group cannot be started here (one line), or null. */
export function groupReplicationUnavailable() {
  const p = mysqlPrefix();
  if (p.missing) return p.missing;
  const plugin = path.join(p.prefix, 'usr', 'lib', 'mysql', 'plugin', 'group_replication.so');
  if (!fs.existsSync(plugin)) return `no Group Replication plugin at ${plugin}`;
  return null;
}

/** `{ skip }` for a Group Replication test: the reason, or false — never a skip under CI=true. */
export function groupReplicationSkip() {
  const why = groupReplicationUnavailable();
  if (!why || process.env.CI === 'true') return false;
  return why;
}

/** Running and not frozen: a member that can answer a query. */
const answering = (m) => running(m) && !m.frozen;

function killGroupSync(g) {
  live.delete(g);
  for (const m of g.members) {
    dropConn(m);
    killMember(m);
  }
  if (g.watchdog)
    try {
      process.kill(g.watchdog.pid, 'SIGKILL');
    } catch {}
  if (process.env.GR_KEEP === '1') return;
  try {
    fs.rmSync(g.dir, { recursive: true, force: true });
  } catch {}
}

function failure(m, why) {
  const log = readTail(m.errLog);
  const err = new Error(
    `Group Replication member ${m.name} (port ${m.port}): ${why}\n--- ${m.errLog} ---\n${log}` +
      (m.stderr ? `\n--- stderr ---\n${m.stderr}` : ''),
  );
  err.portInUse = /bind on tcp\/ip port|address already in use|Unable to bind/i.test(log + m.stderr);
  return err;
}

/** The mysqld options of member `m` (after the private MySQL's own, which they override). */
function memberArgs(g, m, { onBoot }) {
  const seeds = g.members.map((x) => `127.0.0.1:${x.xcomPort}`).join(',');
  const multi = g.mode === 'multi';
  return [
    ...g.kind.args(m),
    // Three servers on a shared machine: smaller than the private MySQL's single server.
    '--innodb-buffer-pool-size=128M',
    '--replica-parallel-workers=2',
    `--server-id=${m.id}`,
    '--gtid-mode=ON',
    '--enforce-gtid-consistency=ON',
    '--plugin-load-add=group_replication.so',
    `--group-replication-group-name=${g.name}`,
    `--group-replication-local-address=127.0.0.1:${m.xcomPort}`,
    `--group-replication-group-seeds=${seeds}`,
    '--group-replication-ip-allowlist=127.0.0.1/8',
    `--group-replication-start-on-boot=${onBoot ? 'ON' : 'OFF'}`,
    '--group-replication-bootstrap-group=OFF',
    `--group-replication-single-primary-mode=${multi ? 'OFF' : 'ON'}`,
    `--group-replication-enforce-update-everywhere-checks=${multi ? 'ON' : 'OFF'}`,
    '--group-replication-member-expel-timeout=0',
    '--group-replication-recovery-get-public-key=ON',
    `--report-host=127.0.0.1`,
    `--report-port=${m.port}`,
    ...g.extraArgs,
  ];
}

function connectMember(m, timeoutMs = 2000) {
  return mysql.createConnection({
    host: '127.0.0.1',
    port: m.port,
    user: 'root',
    password: '',
    connectTimeout: timeoutMs,
    multipleStatements: true,
  });
}

/** Spawns member `m`'s mysqld; resolves once it accepts a root connection. */
async function launch(g, m, opts) {
  try {
    fs.rmSync(m.errLog, { force: true });
  } catch {}
  const [bin, ...pre] = g.kind.command();
  await launchMember(m, {
    bin,
    args: [...pre, ...memberArgs(g, m, opts)],
    connect: connectMember,
    failure,
    what: 'mysqld',
    readyTimeoutMs: READY_TIMEOUT_MS,
  });
}

const memberQuery = (m, sql, params) => adminQuery(m, connectMember, sql, params);

async function memberFacts(m) {
  const rows = await memberQuery(
    m,
    `SELECT g.MEMBER_ID AS id, g.MEMBER_HOST AS host, g.MEMBER_PORT AS port, g.MEMBER_STATE AS state,
            g.MEMBER_ROLE AS role, g.MEMBER_ID = @@GLOBAL.server_uuid AS self,
            s.COUNT_TRANSACTIONS_IN_QUEUE AS certQueue, s.COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE AS applierQueue,
            s.COUNT_CONFLICTS_DETECTED AS conflicts, s.VIEW_ID AS viewId,
            @@GLOBAL.super_read_only AS superReadOnly, @@GLOBAL.offline_mode AS offline
       FROM performance_schema.replication_group_members g
       LEFT JOIN performance_schema.replication_group_member_stats s ON s.MEMBER_ID = g.MEMBER_ID`,
  );
  const self = rows.find((r) => Number(r.self) === 1) ?? {};
  const primary = rows.find((r) => r.role === 'PRIMARY' && r.state === 'ONLINE');
  return {
    name: m.name,
    uuid: self.id ?? m.uuid,
    state: self.state ?? 'OFFLINE',
    role: self.role || null,
    superReadOnly: Number(self.superReadOnly ?? rows[0]?.superReadOnly) === 1,
    offline: Number(self.offline ?? rows[0]?.offline) === 1,
    primary: primary ? `${primary.host}:${primary.port}` : null,
    view: rows.filter((r) => r.id).map((r) => ({ host: `${r.host}:${r.port}`, state: r.state, role: r.role })),
    certQueue: Number(self.certQueue ?? 0),
    applierQueue: Number(self.applierQueue ?? 0),
    conflicts: Number(self.conflicts ?? 0),
    viewId: self.viewId || null,
  };
}

/** Makes the recovery account and root@127.0.0.1's twin on a fresh member, outside the binary log. */
async function prepareMember(m) {
  await memberQuery(
    m,
    [
      'SET SESSION sql_log_bin = 0',
      `CREATE USER IF NOT EXISTS '${RECOVERY.user}'@'127.0.0.1' IDENTIFIED BY '${RECOVERY.password}'`,
      `GRANT REPLICATION SLAVE, BACKUP_ADMIN, GROUP_REPLICATION_STREAM ON *.* TO '${RECOVERY.user}'@'127.0.0.1'`,
      `CREATE USER IF NOT EXISTS '${APP_USER}'@'127.0.0.1'`,
      // What an application account has: data and schema, routines, the process list — no
      // SUPER, CONNECTION_ADMIN or *_ADMIN (super_read_only and offline_mode apply to it).
      `GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, ALTER, REFERENCES, CREATE ROUTINE, ALTER ROUTINE, EXECUTE, CREATE TEMPORARY TABLES, LOCK TABLES, CREATE VIEW, SHOW VIEW, TRIGGER, PROCESS ON *.* TO '${APP_USER}'@'127.0.0.1'`,
      'SET SESSION sql_log_bin = 1',
      `CHANGE REPLICATION SOURCE TO SOURCE_USER = '${RECOVERY.user}', SOURCE_PASSWORD = '${RECOVERY.password}' FOR CHANNEL 'group_replication_recovery'`,
    ].join('; '),
  );
  const [{ uuid }] = await memberQuery(m, 'SELECT @@GLOBAL.server_uuid AS uuid');
  m.uuid = uuid;
}

/** START GROUP_REPLICATION on `m` (bootstrapping a new group when `bootstrap`). */
async function startGr(m, { bootstrap = false } = {}) {
  if (bootstrap) {
    await memberQuery(
      m,
      'SET GLOBAL group_replication_bootstrap_group = ON; START GROUP_REPLICATION; SET GLOBAL group_replication_bootstrap_group = OFF',
    );
  } else {
    await memberQuery(m, 'START GROUP_REPLICATION');
  }
}

/**
 * Waits (bounded) until every member in `expected` is ONLINE and each sees exactly them ONLINE,
 * with one primary in single-primary mode. A member left OFFLINE or in ERROR (a boot-time join
 * refused because the group had not yet expelled its previous incarnation) is asked to start
 * Group Replication again.
 */
async function waitOnline(g, expected = g.members.filter(running), timeoutMs = ONLINE_TIMEOUT_MS) {
  const deadline = Date.now() + timeoutMs;
  let last = [];
  let nudged = 0;
  while (Date.now() < deadline) {
    last = await Promise.all(expected.map((m) => memberFacts(m).catch((e) => ({ name: m.name, error: e.message }))));
    const ok = last.every(
      (f) =>
        f.state === 'ONLINE' &&
        f.view.length === expected.length &&
        f.view.every((v) => v.state === 'ONLINE') &&
        (g.mode === 'multi' || f.view.filter((v) => v.role === 'PRIMARY').length === 1),
    );
    if (ok) return last;
    // Every 3 s, restart GR on a member that gave up (OFFLINE after a refused join, or ERROR).
    if (Date.now() - nudged > 3000) {
      nudged = Date.now();
      for (const [k, f] of last.entries()) {
        if (f.state === 'OFFLINE' || f.state === 'ERROR') {
          const again = `${f.state === 'ERROR' ? 'STOP GROUP_REPLICATION; ' : ''}START GROUP_REPLICATION`;
          await memberQuery(expected[k], again).catch(() => {});
        }
      }
    }
    await sleep(100);
  }
  throw new Error(
    `Group Replication members not all ONLINE within ${timeoutMs / 1000}s: ${JSON.stringify(last)}\n${g.logs(2000)}`,
  );
}

/**
 * Starts a private group of `members` MySQL servers on 127.0.0.1.
 *
 * @param {object} [opts]
 * @param {number} [opts.members=3]
 * @param {'single'|'multi'} [opts.mode='single']  single-primary or multi-primary
 * @param {string[]} [opts.extraArgs]  more mysqld options for every member
 */
export async function startGroup({ members = 3, mode = 'single', extraArgs = [] } = {}) {
  const why = groupReplicationUnavailable();
  if (why) throw new Error(why);
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(members, mode, extraArgs);
    } catch (e) {
      if (!e.portInUse || attempt >= 3) throw e;
    }
  }
}

async function startOnce(size, mode, extraArgs) {
  const t0 = Date.now();
  const dir = fs.mkdtempSync(path.join(tempBase(3), 'iterflow-gr-'));
  const g = {
    dir,
    name: crypto.randomUUID(),
    mode,
    kind: mysqlKind(),
    extraArgs,
    members: [],
    watchdog: null,
    logs: (max = 3000) => g.members.map((m) => `--- ${m.name} ${m.errLog} ---\n${readTail(m.errLog, max)}`).join('\n'),
  };
  killOnExit(live, killGroupSync);
  live.add(g);
  const phases = {};
  try {
    g.watchdog = startWatchdog(dir);
    const ports = await freePorts(2 * size);
    for (let k = 0; k < size; k++) {
      const mdir = path.join(dir, `m${k + 1}`);
      const m = {
        name: `m${k + 1}`,
        id: k + 1,
        dir: mdir,
        datadir: path.join(mdir, 'data'),
        tmp: path.join(mdir, 'tmp'),
        socket: path.join(mdir, 'mysql.sock'),
        errLog: path.join(mdir, 'err.log'),
        port: ports[2 * k],
        xcomPort: ports[2 * k + 1],
        proc: null,
        exited: null,
        conn: null,
        stderr: '',
        frozen: false,
        uuid: null,
      };
      fs.mkdirSync(m.tmp, { recursive: true });
      g.members.push(m);
    }

    // One datadir, copied: every member starts from the same (empty) history.
    let t = Date.now();
    const [first, ...rest] = g.members;
    g.kind.init(first);
    phases.initMs = Date.now() - t;
    t = Date.now();
    for (const m of rest) {
      fs.cpSync(first.datadir, m.datadir, { recursive: true });
      fs.rmSync(path.join(m.datadir, 'auto.cnf'), { force: true });
    }
    phases.copyMs = Date.now() - t;

    t = Date.now();
    await Promise.all(g.members.map((m) => launch(g, m, { onBoot: false })));
    await Promise.all(g.members.map(prepareMember));
    phases.launchMs = Date.now() - t;

    t = Date.now();
    await startGr(first, { bootstrap: true });
    await waitOnline(g, [first]);
    phases.bootstrapMs = Date.now() - t;

    t = Date.now();
    await Promise.all(rest.map((m) => startGr(m)));
    await waitOnline(g, g.members);
    phases.joinMs = Date.now() - t;
  } catch (e) {
    e.message += `\n${g.logs(2000)}`;
    killGroupSync(g);
    throw e;
  }
  return groupHandle(g, Date.now() - t0, phases);
}

function groupHandle(g, startupMs, phases) {
  let stopped = false;
  const memberHandle = (m) => ({
    name: m.name,
    get url() {
      return `mysql://root@127.0.0.1:${m.port}/`;
    },
    port: m.port,
    xcomPort: m.xcomPort,
    get uuid() {
      return m.uuid;
    },
    dir: m.dir,
    errLog: m.errLog,
    get pid() {
      return m.proc && m.proc.pid;
    },
    get running() {
      return running(m);
    },
    get frozen() {
      return m.frozen;
    },
    /** SIGKILL (a crash); resolves once it has exited. */
    async kill() {
      dropConn(m);
      killMember(m);
      if (!(await within(m.exited, STOP_TIMEOUT_MS))) throw failure(m, 'did not exit after SIGKILL');
    },
    /** A clean shutdown (SIGTERM): the member leaves the group first. */
    async shutdown() {
      dropConn(m);
      if (!running(m)) return;
      if (m.frozen) await handle.members[g.members.indexOf(m)].thaw();
      try {
        process.kill(m.proc.pid, 'SIGTERM');
      } catch {}
      if (!(await within(m.exited, SHUTDOWN_TIMEOUT_MS))) throw failure(m, 'did not shut down after SIGTERM');
    },
    /**
     * Starts this stopped member again with its datadir. `onBoot` (default true): Group
     * Replication starts with the server (group_replication_start_on_boot, as an InnoDB Cluster
     * member restarts), so it never accepts a write outside the group. `onBoot: false`: the server
     * comes up as a plain server first (writable: nothing in its options makes it read-only) and
     * START GROUP_REPLICATION is sent `joinAfterMs` later, as an operator would. `wait` (default
     * true): resolves once every running member is ONLINE in one view.
     */
    async start({ onBoot = true, joinAfterMs = 0, wait = true } = {}) {
      if (running(m)) throw new Error(`member ${m.name} is running`);
      await launch(g, m, { onBoot });
      if (!onBoot) {
        if (joinAfterMs > 0) await sleep(joinAfterMs);
        await startGr(m).catch(() => {}); // waitOnline tries again where it was refused
      }
      if (wait) await waitOnline(g);
    },
    /** SIGSTOP: the member stops answering anyone, the group included (and expels it). */
    freeze() {
      dropConn(m);
      process.kill(m.proc.pid, 'SIGSTOP');
      m.frozen = true;
    },
    /** SIGCONT: the member runs again (finds itself expelled, and rejoins by auto-rejoin). */
    thaw() {
      process.kill(m.proc.pid, 'SIGCONT');
      m.frozen = false;
    },
    query: (sql, params) => memberQuery(m, sql, params),
    /**
     * `{ name, uuid, state, role, superReadOnly, offline, primary: 'host:port' | null, view,
     * certQueue, applierQueue, conflicts, viewId }` as this member sees itself and its group
     * (`viewId`: the view it has installed, '<fixed>:<counter>').
     */
    facts: () => memberFacts(m),
  });
  const handle = {
    name: g.name,
    mode: g.mode,
    dir: g.dir,
    startupMs,
    phases,
    members: g.members.map(memberHandle),
    logs: g.logs,

    /** Resolves once every running, unfrozen member is ONLINE in one view: their facts. */
    waitOnline: ({ timeoutMs } = {}) => waitOnline(g, g.members.filter(answering), timeoutMs),

    /**
     * The member that is PRIMARY now (bounded wait): a running member that says it is an ONLINE
     * primary and sees a majority of its view ONLINE (a member cut off still thinks it is).
     * `writable`: also wait until it takes writes (super_read_only off).
     */
    async primary({ timeoutMs = 60_000, writable = false } = {}) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        for (const [k, m] of g.members.entries()) {
          if (!answering(m)) continue;
          const f = await memberFacts(m).catch(() => null);
          if (f?.state !== 'ONLINE' || f.role !== 'PRIMARY') continue;
          if (2 * f.view.filter((v) => v.state === 'ONLINE').length <= f.view.length) continue;
          if (writable && f.superReadOnly) continue;
          return handle.members[k];
        }
        if (Date.now() > deadline) throw new Error(`no primary within ${timeoutMs} ms`);
        await sleep(50);
      }
    },

    /**
     * A planned switchover: `member` becomes the primary (returns once the group says so).
     * `timeoutS`: how long the old primary lets running transactions finish; it blocks new ones
     * meanwhile (4094) and then disconnects the clients still in one (the function's 2nd argument).
     */
    async setPrimary(member, { timeoutS } = {}) {
      const via = g.members.find(answering);
      if (timeoutS === undefined) await memberQuery(via, 'SELECT group_replication_set_as_primary(?)', [member.uuid]);
      else await memberQuery(via, 'SELECT group_replication_set_as_primary(?, ?)', [member.uuid, timeoutS]);
    },

    /** Every member's facts (an error where one cannot answer). */
    facts: () =>
      Promise.all(
        g.members.map((m) =>
          running(m) && !m.frozen
            ? memberFacts(m).catch((e) => ({ name: m.name, error: e.message }))
            : { name: m.name, state: m.frozen ? 'FROZEN' : 'DOWN' },
        ),
      ),

    /**
     * Waits (bounded) until every running member has applied the same GTID set with empty
     * queues: once writers have stopped, every member then holds the same data.
     */
    async waitForSync({ timeoutMs = SYNC_TIMEOUT_MS } = {}) {
      const deadline = Date.now() + timeoutMs;
      let last = [];
      const up = g.members.filter(answering);
      while (Date.now() < deadline) {
        last = await Promise.all(
          up.map((m) =>
            memberQuery(m, 'SELECT @@GLOBAL.gtid_executed AS gtids').then(
              ([r]) => r.gtids.replace(/\s+/g, ''),
              (e) => `error: ${e.message}`,
            ),
          ),
        );
        if (new Set(last).size === 1 && !last[0].startsWith('error')) return last[0];
        await sleep(50);
      }
      throw new Error(`members did not converge within ${timeoutMs} ms: ${JSON.stringify(last)}`);
    },

    /** `CHECKSUM TABLE` per running member, after waitForSync(). */
    async checksum(database, tables) {
      await handle.waitForSync();
      const list = tables.map((tb) => `\`${database}\`.\`${tb}\``).join(', ');
      return Promise.all(
        g.members.filter(answering).map(async (m) => {
          const rows = await memberQuery(m, `CHECKSUM TABLE ${list}`);
          const sums = {};
          for (const r of rows)
            sums[r.Table.slice(database.length + 1)] = r.Checksum === null ? null : String(r.Checksum);
          return { member: m.name, sums };
        }),
      );
    },

    /** Row counts per running member, after waitForSync(). */
    async rowCounts(database, tables) {
      await handle.waitForSync();
      return Promise.all(
        g.members.filter(answering).map(async (m) => {
          const counts = {};
          for (const tb of tables) {
            const [{ n }] = await memberQuery(m, `SELECT COUNT(*) AS n FROM \`${database}\`.\`${tb}\``);
            counts[tb] = Number(n);
          }
          return { member: m.name, counts };
        }),
      );
    },

    /**
     * A new database, created on the primary (member 1 in multi-primary mode) and present on
     * every member when this resolves: `{ name, urls }`, `urls[k]` = member k, database selected.
     */
    async createDatabase(label = 't') {
      const name = `${label.replace(/[^a-z0-9_]/gi, '_')}_${crypto.randomBytes(4).toString('hex')}`;
      const p = g.mode === 'multi' ? handle.members[0] : await handle.primary();
      await p.query(`CREATE DATABASE \`${name}\``);
      await handle.waitForSync();
      return { name, urls: handle.members.map((m) => `${m.url}${name}`) };
    },

    /** Every member down and the directory gone. Idempotent. */
    async stop() {
      if (stopped) return;
      stopped = true;
      await Promise.all(
        g.members.map(async (m) => {
          dropConn(m);
          if (!running(m)) return;
          killMember(m);
          await within(m.exited, STOP_TIMEOUT_MS);
        }),
      );
      killGroupSync(g);
    },
  };
  return handle;
}

/**
 * The file's group: started before its tests (unless unavailable) and stopped after them. `skip`
 * is the reason to skip (or false); `group` is set once started.
 */
export function useGroup({ members = 3, mode = 'single', extraArgs } = {}) {
  const ctx = { skip: groupReplicationSkip(), group: undefined };
  before(
    async () => {
      if (ctx.skip) return;
      ctx.group = await startGroup({ members, mode, extraArgs });
    },
    { timeout: 180_000 },
  );
  after(async () => ctx.group && ctx.group.stop());
  return ctx;
}
