// Private, throwaway MariaDB Galera cluster for the Galera tests (__test__/galera/*.test.mjs).
//
//   galeraUnavailable()                      // null, or a one-line reason Galera cannot run here
//   test('…', { skip: galeraSkip() }, …)     // that reason as a skip — but never under CI=true
//   const cluster = await startGaleraCluster({ nodes: 3 });
//   cluster.nodes[k].url                     // 'mysql://root@127.0.0.1:PORT/' (root, empty password)
//   await cluster.nodes[k].query(sql, params)       // rows, on node k (cached mysql2 connection)
//   await cluster.nodes[k].queryCausal(sql, params) // the same after node k caught up (wsrep_sync_wait)
//   const db = await cluster.createDatabase('x');   // { name, urls: [per node, database selected] }
//   await cluster.waitForSync();             // every node committed the same last write set
//   await cluster.checksum(db.name, ['run']); // [{ node: 'n1', sums: { run: '123' } }, …]
//   await cluster.status(['wsrep_local_cert_failures']); // SHOW GLOBAL STATUS, per node
//   await cluster.nodes[k].kill() / .shutdown()     // SIGKILL (a crash) / SIGTERM (a clean leave)
//   await cluster.nodes[k].start()           // rejoin (IST, or SST after a crash); all Synced
//   cluster.startupMs, cluster.phases        // start-up time, and where it went
//   await cluster.stop();                    // SIGKILL the servers, delete the directories
//
// Like helpers/mariadb.mjs: no Docker, no system service. Node 1 gets a datadir from
// `mariadb-install-db` and bootstraps a new cluster (--wsrep-new-cluster); the other nodes start
// on EMPTY datadirs and receive node 1's by rsync SST, one after the other. Everything listens on
// 127.0.0.1 only: the SQL port, the group-communication port (gmcast.listen_addr), the IST
// receiver and the rsync daemon of an SST each get their own free loopback port. The servers are
// killed (and the directory removed) when this Node process exits, is interrupted, or dies from
// SIGKILL (a detached watchdog notices that). Start-up measured here: ≈ 9 s (install-db 0.3 s,
// bootstrap 0.1 s, each joiner ≈ 4.4 s: group handshake ≈ 1 s, SST ≈ 2.5 s, the rest the SST
// script's own waits).
//
// Each node reads its own my.cnf through --defaults-file rather than options on the command line
// with --no-defaults: the SST scripts (wsrep_sst_rsync) read server options with
// my_print_defaults, which without a defaults file would read the system's /etc/mysql/my.cnf
// (another datadir, log-bin, user, …). --defaults-file makes mariadbd and the scripts read only
// ours. As root, the servers run as `mysql` (see runUser). GALERA_KEEP=1 keeps the directories
// (error logs, my.cnf) after the cluster is gone, for a post-mortem.

import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

import { after, before } from 'node:test';
import mysql from 'mysql2/promise';
import { adminQuery, dropConn, killMember, launchMember, running } from './cluster-member.mjs';
import { killOnExit } from './exit-hooks.mjs';
import { isRoot, readTail, serverBinaries, startWatchdog, tempBase, which, within } from './server-tools.mjs';

export const GALERA_PROVIDER = process.env.GALERA_PROVIDER || '/usr/lib/galera/libgalera_smm.so';

const READY_TIMEOUT_MS = 60_000; // per node: start-up, including a joiner's SST
const SYNC_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 15_000;
const SHUTDOWN_TIMEOUT_MS = 60_000; // a clean leave waits for the group (≈ 5 s)

const live = new Set(); // clusters still running in this process

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Why a Galera cluster cannot be started here (a one-line reason), or null when everything it
 * needs is present: the server binaries, the provider library, the rsync SST script and what that
 * script calls (rsync, my_print_defaults, one of ss / lsof / sockstat).
 */
export function galeraUnavailable() {
  const bins = serverBinaries();
  const missing = [];
  if (!bins.mariadbd || !bins.installDb) missing.push('mariadbd / mariadb-install-db (apt-get install mariadb-server)');
  if (!fs.existsSync(GALERA_PROVIDER)) missing.push(`${GALERA_PROVIDER} (apt-get install galera-4)`);
  if (!which('wsrep_sst_rsync')) missing.push('wsrep_sst_rsync (apt-get install mariadb-server)');
  if (!which('rsync')) missing.push('rsync (apt-get install rsync)');
  if (!which('my_print_defaults')) missing.push('my_print_defaults (apt-get install mariadb-client)');
  if (!which('ss') && !which('lsof') && !which('sockstat')) missing.push('ss or lsof (apt-get install iproute2)');
  if (runUser() === undefined)
    missing.push(`user '${process.env.GALERA_USER || 'mysql'}' to run the servers as (we are root)`);
  return missing.length ? `Galera cannot run here, missing: ${missing.join(', ')}` : null;
}

/**
 * The `{ skip }` value for a Galera test: false when Galera can run; the reason when it cannot —
 * except under CI=true, where the test must run (and fail in startGaleraCluster) instead.
 */
export function galeraSkip() {
  const why = galeraUnavailable();
  if (!why || process.env.CI === 'true') return false;
  return why;
}

/** `n` distinct free loopback ports (all held open together, so none is handed out twice). */
export async function freePorts(n) {
  const servers = [];
  try {
    for (let k = 0; k < n; k++) {
      const srv = net.createServer();
      srv.unref();
      await new Promise((resolve, reject) => {
        srv.once('error', reject);
        srv.listen(0, '127.0.0.1', resolve);
      });
      servers.push(srv);
    }
    return servers.map((s) => s.address().port);
  } finally {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  }
}

/**
 * The account the servers run as. Not root even when we are: the joiner side of an rsync SST is
 * an rsync daemon started by mariadbd, and an rsync daemon running as root writes as `nobody`,
 * which cannot create anything in a root-owned datadir. So as root the servers run as `mysql`
 * (GALERA_USER overrides) and their directories are chowned to it. null: run as ourselves.
 */
function runUser() {
  if (!isRoot()) return null;
  const name = process.env.GALERA_USER || 'mysql';
  let passwd = '';
  try {
    passwd = fs.readFileSync('/etc/passwd', 'utf8');
  } catch {}
  for (const line of passwd.split('\n')) {
    const [user, , uid, gid] = line.split(':');
    if (user === name) return { name, uid: Number(uid), gid: Number(gid) };
  }
  return undefined; // wanted, but missing
}

function chownTree(p, u) {
  fs.chownSync(p, u.uid, u.gid);
  if (!fs.statSync(p).isDirectory()) return;
  for (const ent of fs.readdirSync(p)) chownTree(path.join(p, ent), u);
}

// Shared by install-db and the servers: InnoDB must find the redo log size it was created with.
// The joiners receive node 1's files by SST, so one size for all.
const INNODB_LOG_FILE_SIZE = '32M';

/** The [mysqld] section of one node's my.cnf. */
function nodeConfig(c, n) {
  const gcomm = c.nodes.map((m) => `127.0.0.1:${m.gcommPort}`).join(',');
  const provider = [
    // Group communication, IST receiver: loopback only, own ports.
    `gmcast.listen_addr=tcp://127.0.0.1:${n.gcommPort}`,
    `base_host=127.0.0.1`,
    `base_port=${n.gcommPort}`,
    `ist.recv_addr=127.0.0.1:${n.istPort}`,
    // The write-set cache lives in the datadir (tmpfs): keep it small.
    'gcache.size=32M',
    'gcache.page_size=16M',
  ].join('; ');
  const opts = {
    datadir: n.datadir,
    port: n.port,
    socket: n.socket,
    'bind-address': '127.0.0.1',
    ...(c.user ? { user: c.user.name } : {}),
    'pid-file': path.join(n.dir, 'mariadbd.pid'),
    'log-error': n.errLog,
    tmpdir: n.tmp,
    'skip-name-resolve': null,
    'character-set-server': 'utf8mb4',
    'collation-server': 'utf8mb4_general_ci',
    'max-connections': 300,
    // Small and fast: durability does not matter for a throwaway cluster on tmpfs.
    'innodb-buffer-pool-size': '64M',
    'innodb-log-file-size': INNODB_LOG_FILE_SIZE,
    'innodb-flush-log-at-trx-commit': 2,
    'innodb-doublewrite': 0,
    'innodb-buffer-pool-dump-at-shutdown': 0,
    'innodb-buffer-pool-load-at-startup': 0,
    'performance-schema': 'OFF',
    'skip-log-bin': null,
    // What Galera requires of every node: row events (write sets are built from them, even
    // without a binary log), InnoDB, and interleaved auto-increment locking (the cluster spreads
    // AUTO_INCREMENT values over the nodes, wsrep_auto_increment_control).
    'binlog-format': 'ROW',
    'default-storage-engine': 'InnoDB',
    'innodb-autoinc-lock-mode': 2,
    // The cluster: its own name (a node never joins another test's cluster), every node's
    // group-communication address, state transfers by rsync to a loopback port of our own.
    'wsrep-on': 'ON',
    'wsrep-provider': GALERA_PROVIDER,
    'wsrep-cluster-name': c.name,
    'wsrep-cluster-address': `gcomm://${gcomm}`,
    'wsrep-node-name': n.name,
    'wsrep-node-address': '127.0.0.1',
    'wsrep-node-incoming-address': `127.0.0.1:${n.port}`,
    'wsrep-provider-options': `"${provider}"`,
    'wsrep-sst-method': 'rsync',
    'wsrep-sst-receive-address': `127.0.0.1:${n.sstPort}`,
    // Two appliers: a node lags less behind the others under the tests' write load.
    'wsrep-slave-threads': 2,
    ...c.extraOptions,
  };
  const lines = ['[mysqld]'];
  for (const [k, v] of Object.entries(opts)) lines.push(v === null ? k : `${k} = ${v}`);
  return lines.join('\n') + '\n';
}

function killClusterSync(c) {
  live.delete(c);
  for (const n of c.nodes) {
    if (n.conn)
      try {
        n.conn.destroy();
      } catch {}
    n.conn = null;
    killMember(n);
  }
  if (c.watchdog)
    try {
      process.kill(c.watchdog.pid, 'SIGKILL');
    } catch {}
  // GALERA_KEEP=1 leaves the directories (error logs, my.cnf) behind for a post-mortem.
  if (process.env.GALERA_KEEP === '1') return;
  try {
    fs.rmSync(c.dir, { recursive: true, force: true });
  } catch {}
}

function initDatadir(n, bins, user) {
  const args = [
    '--no-defaults',
    '--auth-root-authentication-method=normal',
    `--datadir=${n.datadir}`,
    ...(user ? [`--user=${user.name}`] : []),
    '--skip-test-db',
    '--skip-name-resolve',
    `--innodb-log-file-size=${INNODB_LOG_FILE_SIZE}`,
    '--innodb-buffer-pool-size=64M',
  ];
  const r = spawnSync(bins.installDb, args, { encoding: 'utf8', timeout: 120_000 });
  if (r.error || r.status !== 0) {
    throw new Error(
      `mariadb-install-db failed (${r.error ? r.error.message : `exit ${r.status}`}):\n` +
        `${bins.installDb} ${args.join(' ')}\n${r.stdout || ''}${r.stderr || ''}`,
    );
  }
}

function connectNode(n, timeoutMs = 2000) {
  return mysql.createConnection({
    host: '127.0.0.1',
    port: n.port,
    user: 'root',
    password: '',
    connectTimeout: timeoutMs,
    multipleStatements: true,
  });
}

function failure(n, why) {
  const err = new Error(
    `Galera node ${n.name} (port ${n.port}): ${why}\n--- ${n.errLog} ---\n${readTail(n.errLog)}` +
      (n.stderr ? `\n--- stderr ---\n${n.stderr}` : ''),
  );
  err.portInUse = /address already in use|bind on tcp\/ip port|failed to bind|Can't start server: Bind/i.test(
    readTail(n.errLog) + n.stderr,
  );
  return err;
}

/** Spawn one node's mariadbd; resolves once it accepts a root connection (a joiner: after its SST). */
async function launch(c, n, bins, { bootstrap = false } = {}) {
  await launchMember(n, {
    bin: bins.mariadbd,
    args: [`--defaults-file=${n.cnf}`, ...(bootstrap ? ['--wsrep-new-cluster'] : [])],
    // The SST scripts are found on the PATH, my_print_defaults too.
    env: { ...process.env, PATH: `${process.env.PATH || ''}:/usr/bin:/usr/sbin:/bin` },
    connect: connectNode,
    failure,
    what: 'mariadbd',
    readyTimeoutMs: READY_TIMEOUT_MS,
    pollMs: 100,
  });
}

const nodeQuery = (n, sql, params) => adminQuery(n, connectNode, sql, params);

async function statusOf(n, names) {
  const rows = await nodeQuery(n, `SHOW GLOBAL STATUS WHERE Variable_name IN (?)`, [names]);
  const out = {};
  for (const r of rows) out[r.Variable_name.toLowerCase()] = r.Value;
  return out;
}

/** Waits (bounded) until every node is Synced, ready, and sees a cluster of `size`. */
async function waitSynced(c, size, timeoutMs = SYNC_TIMEOUT_MS) {
  const deadline = Date.now() + timeoutMs;
  let last = [];
  while (Date.now() < deadline) {
    last = await Promise.all(
      c.nodes.map((n) =>
        statusOf(n, ['wsrep_local_state_comment', 'wsrep_cluster_size', 'wsrep_ready']).catch((e) => ({
          error: e.message,
        })),
      ),
    );
    if (
      last.every(
        (s) =>
          s.wsrep_local_state_comment === 'Synced' && Number(s.wsrep_cluster_size) === size && s.wsrep_ready === 'ON',
      )
    )
      return;
    await sleep(100);
  }
  const states = c.nodes.map((n, k) => `${n.name}: ${JSON.stringify(last[k])}`).join('; ');
  const tails = c.nodes.map((n) => `--- ${n.name} ${n.errLog} ---\n${readTail(n.errLog, 3000)}`).join('\n');
  throw new Error(`Galera cluster not Synced with size ${size} within ${timeoutMs / 1000}s (${states})\n${tails}`);
}

/**
 * Start a private Galera cluster of `nodes` MariaDB servers on 127.0.0.1.
 *
 * @param {object} [opts]
 * @param {number} [opts.nodes=3]
 * @param {Record<string, string|number|null>} [opts.options]  extra [mysqld] options for every node
 * @returns {Promise<object>} see the top of this file
 */
export async function startGaleraCluster({ nodes = 3, options = {} } = {}) {
  const why = galeraUnavailable();
  if (why) throw new Error(why);
  const bins = serverBinaries();
  // A port taken between probing and binding fails the start: try again with new ports.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(nodes, options, bins);
    } catch (e) {
      if (!e.portInUse || attempt >= 3) throw e;
    }
  }
}

async function startOnce(size, extraOptions, bins) {
  const t0 = Date.now();
  const dir = fs.mkdtempSync(path.join(tempBase(3), 'iterflow-galera-'));
  const c = {
    dir,
    // A cluster name of our own: a node can never join another test's cluster by mistake.
    name: `iterflow-${crypto.randomBytes(4).toString('hex')}`,
    nodes: [],
    extraOptions,
    user: runUser(),
    watchdog: null,
  };
  killOnExit(live, killClusterSync);
  live.add(c);
  const phases = {};
  try {
    c.watchdog = startWatchdog(dir);

    const ports = await freePorts(4 * size);
    for (let k = 0; k < size; k++) {
      const name = `n${k + 1}`;
      const ndir = path.join(dir, name);
      const n = {
        name,
        dir: ndir,
        datadir: path.join(ndir, 'data'),
        tmp: path.join(ndir, 'tmp'),
        socket: path.join(ndir, 'mysql.sock'),
        errLog: path.join(ndir, 'err.log'),
        cnf: path.join(ndir, 'my.cnf'),
        port: ports[4 * k],
        gcommPort: ports[4 * k + 1],
        istPort: ports[4 * k + 2],
        sstPort: ports[4 * k + 3],
        proc: null,
        exited: null,
        conn: null,
        stderr: '',
      };
      // The joiners' datadirs stay empty: the SST fills them.
      fs.mkdirSync(n.datadir, { recursive: true });
      fs.mkdirSync(n.tmp);
      c.nodes.push(n);
    }
    for (const n of c.nodes) fs.writeFileSync(n.cnf, nodeConfig(c, n));

    // The run-time user must own everything, the joiners' empty datadirs included (the SST's
    // rsync daemon writes into them as that user); the temp dir itself is mode 0700.
    if (c.user) chownTree(dir, c.user);
    let t = Date.now();
    initDatadir(c.nodes[0], bins, c.user);
    phases.installDbMs = Date.now() - t;

    t = Date.now();
    await launch(c, c.nodes[0], bins, { bootstrap: true });
    await waitSynced({ nodes: [c.nodes[0]] }, 1);
    phases.bootstrapMs = Date.now() - t;

    // Joiners one at a time: a donor serves one SST at a time, and a joiner that finds none free
    // retries only every second (starting both at once measured ~1.5 s slower in total).
    t = Date.now();
    for (const n of c.nodes.slice(1)) {
      try {
        await launch(c, n, bins);
      } catch (e) {
        // A failed SST is usually explained on the donor's side.
        e.message +=
          '\n' +
          c.nodes
            .filter((m) => m !== n && m.proc)
            .map((m) => `--- ${m.name} ${m.errLog} ---\n${readTail(m.errLog, 4000)}`)
            .join('\n');
        throw e;
      }
    }
    await waitSynced(c, size);
    phases.joinMs = Date.now() - t;
  } catch (e) {
    killClusterSync(c);
    throw e;
  }

  let stopped = false;
  const handle = {
    name: c.name,
    dir,
    startupMs: Date.now() - t0,
    phases,
    nodes: c.nodes.map((n) => ({
      name: n.name,
      url: `mysql://root@127.0.0.1:${n.port}/`,
      port: n.port,
      gcommPort: n.gcommPort,
      istPort: n.istPort,
      sstPort: n.sstPort,
      socket: n.socket,
      dir: n.dir,
      datadir: n.datadir,
      errLog: n.errLog,
      get pid() {
        return n.proc && n.proc.pid;
      },
      /** SIGKILL this node (a crash); resolves once it has exited. */
      async kill() {
        dropConn(n);
        killMember(n);
        if (!(await within(n.exited, STOP_TIMEOUT_MS))) throw failure(n, 'did not exit after SIGKILL');
      },
      /** A clean shutdown (SIGTERM, as before an upgrade): the node leaves the cluster first. */
      async shutdown() {
        dropConn(n);
        if (!running(n)) return;
        try {
          process.kill(n.proc.pid, 'SIGTERM');
        } catch {}
        if (!(await within(n.exited, SHUTDOWN_TIMEOUT_MS))) throw failure(n, 'did not shut down after SIGTERM');
      },
      /**
       * Start this stopped node again with its datadir: it rejoins by IST, or by SST after a crash
       * (no saved position). Resolves once every node is Synced in a cluster of all of them.
       */
      async start() {
        if (running(n)) throw new Error(`Galera node ${n.name} is running`);
        await launch(c, n, bins);
        await waitSynced(c, c.nodes.length);
      },
      /** Rows of `sql` on this node (one cached mysql2 connection per node, multi-statements on). */
      query: (sql, params) => nodeQuery(n, sql, params),
      /**
       * Rows of one SELECT run after this node has applied every write set committed anywhere
       * before it was sent (wsrep_sync_wait = 1 for this statement only): a read that cannot lag.
       */
      async queryCausal(sql, params) {
        const sets = await nodeQuery(
          n,
          `SET SESSION wsrep_sync_wait = 1; ${sql}; SET SESSION wsrep_sync_wait = 0`,
          params,
        );
        return sets[1];
      },
    })),

    /** `SHOW GLOBAL STATUS` values by lower-case name, one object per node. */
    status: (names) => Promise.all(c.nodes.map((n) => statusOf(n, names))),

    /**
     * Waits (bounded) until every node has committed the same last write set and is Synced:
     * once writers have stopped, every node then holds the same data.
     */
    async waitForSync({ timeoutMs = SYNC_TIMEOUT_MS } = {}) {
      const deadline = Date.now() + timeoutMs;
      let last = [];
      while (Date.now() < deadline) {
        last = await Promise.all(
          c.nodes.map((n) =>
            statusOf(n, ['wsrep_last_committed', 'wsrep_local_state_comment', 'wsrep_local_recv_queue']),
          ),
        );
        const seqnos = new Set(last.map((s) => s.wsrep_last_committed));
        if (
          seqnos.size === 1 &&
          last.every((s) => s.wsrep_local_state_comment === 'Synced' && Number(s.wsrep_local_recv_queue) === 0)
        ) {
          return Number(last[0].wsrep_last_committed);
        }
        await sleep(50);
      }
      throw new Error(`Galera nodes did not converge within ${timeoutMs} ms: ${JSON.stringify(last)}`);
    },

    /**
     * `CHECKSUM TABLE` of `tables` in `database` on every node, after waitForSync():
     * `[{ node, sums: { table: checksum } }]`.
     */
    async checksum(database, tables) {
      await handle.waitForSync();
      const list = tables.map((tb) => `\`${database}\`.\`${tb}\``).join(', ');
      return Promise.all(
        c.nodes.map(async (n) => {
          const rows = await nodeQuery(n, `CHECKSUM TABLE ${list}`);
          const sums = {};
          for (const r of rows)
            sums[r.Table.slice(database.length + 1)] = r.Checksum === null ? null : String(r.Checksum);
          return { node: n.name, sums };
        }),
      );
    },

    /**
     * A new database, created on node 1 (DDL replicates) and present on every node when this
     * resolves: `{ name, urls }`, `urls[k]` pointing at node k with the database selected.
     */
    async createDatabase(label = 't') {
      const name = `${label.replace(/[^a-z0-9_]/gi, '_')}_${crypto.randomBytes(4).toString('hex')}`;
      await nodeQuery(c.nodes[0], `CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci`);
      await handle.waitForSync();
      return { name, urls: handle.nodes.map((n) => `${n.url}${name}`) };
    },

    /** Error-log tails of every node (for assertion messages). */
    logs(max = 3000) {
      return c.nodes.map((n) => `--- ${n.name} ${n.errLog} ---\n${readTail(n.errLog, max)}`).join('\n');
    },

    /** Stop every node and delete the directory. Idempotent. */
    async stop() {
      if (stopped) return;
      stopped = true;
      for (const n of c.nodes) {
        const conn = n.conn;
        n.conn = null;
        if (conn) await within(conn.end(), 2000).then((ok) => ok || conn.destroy());
      }
      // SIGKILL, all at once: the data is thrown away, and a graceful Galera leave costs ~5 s.
      await Promise.all(
        c.nodes.map(async (n) => {
          if (!running(n)) return;
          killMember(n);
          await within(n.exited, STOP_TIMEOUT_MS);
        }),
      );
      killClusterSync(c);
    },
  };
  return handle;
}

/**
 * The file's cluster: a 3-node cluster started before its tests (unless Galera is unavailable)
 * and stopped after them. `skip` is the reason to skip (or false); `cluster` is set once started.
 */
export function useGaleraCluster({ nodes = 3 } = {}) {
  const ctx = { skip: galeraSkip(), cluster: undefined };
  before(
    async () => {
      if (ctx.skip) return;
      ctx.cluster = await startGaleraCluster({ nodes });
    },
    { timeout: 120_000 },
  );
  after(async () => ctx.cluster && ctx.cluster.stop());
  return ctx;
}

const CONFLICT_STATUS = ['wsrep_local_cert_failures', 'wsrep_local_bf_aborts'];

/**
 * Starts counting certification conflicts on every node of `cluster`; the function it resolves
 * to answers `{ certFailures, bfAborts }` since then, summed over the nodes.
 */
export async function countConflicts(cluster) {
  const sum = (rows, name) => rows.reduce((n, r) => n + Number(r[name] || 0), 0);
  const start = await cluster.status(CONFLICT_STATUS);
  return async () => {
    const now = await cluster.status(CONFLICT_STATUS);
    return {
      certFailures: sum(now, 'wsrep_local_cert_failures') - sum(start, 'wsrep_local_cert_failures'),
      bfAborts: sum(now, 'wsrep_local_bf_aborts') - sum(start, 'wsrep_local_bf_aborts'),
    };
  };
}
