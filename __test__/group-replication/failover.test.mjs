// Group Replication, single-primary: the primary (or another member) lost under an
// engine-shaped drain, with every worker on a sequential host list naming all three members.
//
// A private 3-member group (helpers/group-replication.mjs); 6 workers in 3 child processes
// (worker.mjs), each with its own pool on the host list, claim and drive runs with outboxes while
// one fault hits the group:
//   (a) the primary SIGKILLed, restarted outside its group (a plain, writable server) and joined
//       to it 5 s later — no write may reach it in between;
//   (b) the primary SIGKILLed, restarted (Group Replication starts with it); a call made right
//       after the kill waits for the new primary instead of failing;
//   (c) two planned switchovers (group_replication_set_as_primary), the second with a timeout of
//       0: the old primary blocks new statements while it hands over (4094) and disconnects the
//       clients still in a transaction;
//   (c') commits held in flight — both secondaries SIGSTOPped, so the primary's commits wait for
//       a majority — then the primary SIGKILLed and the secondaries SIGCONTed: whether each of
//       those commits happened is decided by the survivors, the workers only see a lost connection;
//   (d) a secondary SIGKILLed, restarted;
//   (e) a rolling restart, each member in turn shut down cleanly and started again;
//   (f) the primary cut off (SIGSTOP) until the group has expelled it, then SIGCONT: it finds
//       itself expelled and rejoins (auto-rejoin).
//   (f') the moment right after (f)'s SIGCONT, when the old primary still names itself ONLINE
//       PRIMARY in its old view: no pool that saw the group's newer view reads from it;
//   (g) an account that may not read performance_schema (its probe sees only read_only): its
//       pool still writes only to the primary, through a switchover.
// Each of (a)–(f) asserts (drain.mjs): runs lost 0, done twice 0, outboxes partial 0, leased twice 0, the
// same CHECKSUM TABLE on every member, no write committed outside the group, every error that
// reached a worker one whose write may or may not have happened (a lost connection, a commit the
// member could not finish with its group); and it prints the time from the fault to the first
// successful claim, and the writes members refused as read-only (a write sent to a member that
// had just stopped being the primary, refused and run again on the new one).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import m from '../../index.js';
import { APP_USER, useGroup } from '../helpers/group-replication.mjs';
import { drainUnderFault, foreignGtids, hostList, unknownOutcome } from './drain.mjs';

const { mysqlPool } = m;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const gr = useGroup({ mode: 'single' });
const { skip } = gr;

/** 3 processes × 2 workers on the host list (`params`: more pool options). */
const onHostList =
  (params = '') =>
  (db) =>
    [0, 1, 2].map((p) => [0, 1].map((w) => ({ name: `p${p}w${w}`, url: hostList(gr.group, db, params) })));

/**
 * The drain each fault runs under (drain.mjs): 300 runs paced 20 ms apart, 3 × 2 workers on the
 * host list, only errors of unknown outcome acceptable; `opts` adds the fault and overrides.
 */
const drain = (t, label, opts) =>
  drainUnderFault(t, gr.group, {
    label,
    main: 300,
    paceMs: 20,
    processes: onHostList(),
    acceptable: unknownOutcome,
    ...opts,
  });

/** A secondary of the group now. */
async function aSecondary() {
  const p = await gr.group.primary();
  return gr.group.members.find((mb) => mb !== p && mb.running && !mb.frozen);
}

test(
  'the primary SIGKILLed, back outside its group for 5 s before it joins: no write reaches it',
  { skip, timeout: 300_000 },
  async (t) => {
    await drain(t, 'gr_outside', {
      async fault(ctx) {
        await ctx.waitDone(0.2);
        const p = await gr.group.primary();
        ctx.mark(`SIGKILL ${p.name} (primary)`, p.port);
        await p.kill();
        await sleep(2000);
        // A plain server with the group's data, writable, until START GROUP_REPLICATION.
        await p.start({ onBoot: false, joinAfterMs: 5000 });
      },
    });
  },
);

test(
  'the primary SIGKILLed mid-drain and restarted; a call made meanwhile waits for the new primary',
  { skip, timeout: 300_000 },
  async (t) => {
    let waited;
    await drain(t, 'gr_kill', {
      async fault(ctx) {
        await ctx.waitDone(0.2);
        const p = await gr.group.primary();
        // A pool that has not connected yet: its first call finds no member that can take writes
        // until the group has elected a new primary.
        const probe = mysqlPool(hostList(gr.group, { name: 'mysql' }));
        try {
          ctx.mark(`SIGKILL ${p.name} (primary)`, p.port);
          const killed = Date.now();
          await p.kill();
          const r = await probe.query('SELECT 1 AS one').then(
            () => ({ ok: true }),
            (e) => ({ ok: false, e }),
          );
          waited = { ...r, ms: Date.now() - killed };
        } finally {
          await probe.close();
        }
        await sleep(1000);
        await p.start();
      },
    });
    t.diagnostic(
      `a call made right after the kill: ${waited.ok ? 'answered' : `failed (${waited.e.message})`} after ${waited.ms} ms`,
    );
    assert.ok(waited.ok, `a call made while the group elects its new primary waits for it: ${waited.e?.message}`);
  },
);

test(
  'commits held in flight (both secondaries frozen), then the primary SIGKILLed: none lost or done twice',
  { skip, timeout: 300_000 },
  async (t) => {
    await drain(t, 'gr_inflight', {
      async fault(ctx) {
        await ctx.waitDone(0.2);
        const p = await gr.group.primary();
        const secondaries = gr.group.members.filter((mb) => mb !== p);
        // Without a majority the primary's commits wait for the group: every worker's next
        // COMMIT is in flight, sent to the group or about to be, when the primary dies.
        for (const s of secondaries) s.freeze();
        await sleep(1500);
        ctx.mark(`SIGKILL ${p.name} (primary) with commits in flight`, p.port);
        await p.kill();
        for (const s of secondaries) s.thaw();
        await sleep(1000);
        await p.start();
      },
    });
  },
);

test(
  'two planned switchovers mid-drain, the second without waiting for transactions',
  { skip, timeout: 300_000 },
  async (t) => {
    await drain(t, 'gr_switch', {
      // Enough runs that the second switchover still lands mid-drain with a release build.
      main: 600,
      // Each demoted primary refuses what its pools' connections send next: 6 pools × 2.
      maxRefused: 2 * 12,
      async fault(ctx) {
        await ctx.waitDone(0.2);
        for (const timeoutS of [undefined, 0]) {
          const p = await gr.group.primary();
          const next = await aSecondary();
          ctx.mark(
            `switchover ${p.name} -> ${next.name}${timeoutS === undefined ? '' : ` (timeout ${timeoutS})`}`,
            p.port,
          );
          await gr.group.setPrimary(next, { timeoutS });
          await sleep(2000);
        }
      },
    });
  },
);

test('a secondary SIGKILLed mid-drain and restarted', { skip, timeout: 300_000 }, async (t) => {
  await drain(t, 'gr_secondary', {
    async fault(ctx) {
      await ctx.waitDone(0.2);
      const s = await aSecondary();
      ctx.mark(`SIGKILL ${s.name} (secondary)`, s.port);
      await s.kill();
      await sleep(2000);
      await s.start();
    },
  });
});

test('a rolling restart of all three members mid-drain', { skip, timeout: 400_000 }, async (t) => {
  await drain(t, 'gr_rolling', {
    main: 600,
    paceMs: 40,
    deadlineMs: 240_000,
    async fault(ctx) {
      await ctx.waitDone(0.1);
      for (const mb of gr.group.members) {
        const role = (await mb.facts()).role?.toLowerCase();
        ctx.mark(`restart ${mb.name} (${role})`, mb.port);
        await mb.shutdown();
        await mb.start();
      }
    },
  });
});

test(
  'the primary cut off (SIGSTOP) until expelled, then SIGCONT: it rejoins by itself',
  { skip, timeout: 300_000 },
  async (t) => {
    await drain(t, 'gr_freeze', {
      // A statement sent to a member that stopped answering waits for queryTimeoutMs: a bound
      // shorter than the group's failover keeps the workers from waiting out the freeze.
      processes: onHostList('&queryTimeoutMs=4000'),
      // Thawed, the old primary refuses what the connections it had kept waiting send next.
      maxRefused: 12,
      async fault(ctx) {
        await ctx.waitDone(0.2);
        const p = await gr.group.primary();
        ctx.mark(`SIGSTOP ${p.name} (primary)`, p.port);
        p.freeze();
        // The group suspects it after 5 s and expels it (member_expel_timeout 0), then elects.
        await gr.group.primary({ timeoutMs: 60_000, writable: true });
        await sleep(3000);
        p.thaw();
        await gr.group.waitOnline();
      },
    });
  },
);

test(
  'a primary back from a freeze still names itself primary in its old view: a pool that saw the newer view sends it nothing',
  { skip, timeout: 180_000 },
  async () => {
    const { group } = gr;
    const db = await group.createDatabase('gr_stale');
    const p = await group.primary();
    await p.query(`CREATE TABLE \`${db.name}\`.kv (k INT PRIMARY KEY, port INT NOT NULL)`);
    const url = (members, params) =>
      `mysql://${APP_USER}@${members.map((mb) => `127.0.0.1:${mb.port}`).join(',')}/${db.name}?${params}`;
    // A long-lived pool with the primary first, as the workers have: it fails over during the
    // freeze and reads the new primary's (newer) view there.
    const others = group.members.filter((mb) => mb !== p);
    const lived = mysqlPool(url([p, ...others], 'connectionLimit=2&acquireTimeoutMs=30000&queryTimeoutMs=2000'));
    let fresh;
    try {
      await lived.exec('INSERT INTO kv VALUES (1, @@port)');
      p.freeze();
      const np = await group.primary({ timeoutMs: 60_000, writable: true });
      for (let i = 0; ; i++) {
        const r = await lived.exec('INSERT INTO kv VALUES (2, @@port)').catch((e) => e);
        if (!(r instanceof Error)) break;
        assert.ok(i < 30, `the pool reaches the new primary: ${r.message}`);
        await sleep(200);
      }
      const newView = (await np.facts()).viewId;
      p.thaw();
      // The weak moment: for a few seconds the thawed member has not learnt it was expelled.
      const back = await p.facts();
      assert.deepEqual(
        [back.state, back.role],
        ['ONLINE', 'PRIMARY'],
        'thawed, the old primary still names itself ONLINE PRIMARY',
      );
      assert.notEqual(back.viewId, newView, `…in its old view (${back.viewId}, the group's ${newView})`);
      // A pool made now: its first checkout reads the new primary's view, the next ones try the
      // secondary and then the member that is behind.
      const sec = others.find((mb) => mb !== np);
      fresh = mysqlPool(url([np, sec, p], 'failover=loadbalance&connectionLimit=2&acquireTimeoutMs=30000'));
      const answers = [];
      const deadline = Date.now() + 1500;
      while (Date.now() < deadline) {
        for (const sql of [lived, fresh]) {
          const [row] = await sql.query('SELECT @@port AS port, (SELECT COUNT(*) FROM kv WHERE k = 2) AS seen');
          answers.push([Number(row.port), Number(row.seen)]);
        }
      }
      assert.equal((await p.facts()).role, 'PRIMARY', 'the member was still behind while the pools were asked');
      const fromIt = answers.filter(([port]) => port === p.port);
      assert.deepEqual(fromIt, [], `none of ${answers.length} reads answered by the member behind its group`);
      assert.deepEqual(
        answers.filter(([, seen]) => seen !== 1),
        [],
        'every read sees the write the new primary took',
      );
      const aside = fresh.stats().hosts.find((h) => h.port === p.port);
      assert.match(aside.reason ?? '', /behind its group/, 'the fresh pool set it aside for its view');
      await group.waitOnline({ timeoutMs: 60_000 });
    } finally {
      await lived.close();
      await fresh?.close();
    }
  },
);

test(
  'an account that may not read performance_schema: its pool still writes only to the primary, through a switchover',
  { skip, timeout: 120_000 },
  async () => {
    const { group } = gr;
    const db = await group.createDatabase('gr_noperf');
    const p = await group.primary();
    // Privileges on its own database only: the group tables answer it 1142.
    await p.query(
      `CREATE USER IF NOT EXISTS 'narrow'@'127.0.0.1'; GRANT ALL ON \`${db.name}\`.* TO 'narrow'@'127.0.0.1'`,
    );
    await group.waitForSync();
    const hosts = group.members.map((mb) => `127.0.0.1:${mb.port}`).join(',');
    const sql = mysqlPool(`mysql://narrow@${hosts}/${db.name}?connectionLimit=2&acquireTimeoutMs=20000`);
    try {
      await sql.exec('CREATE TABLE w (k INT PRIMARY KEY, port INT NOT NULL)');
      await sql.exec('INSERT INTO w VALUES (1, @@port)');
      const next = await aSecondary();
      await group.setPrimary(next);
      // A plain statement is not run again: one on a connection to the demoted primary fails
      // with 1290 and takes that connection out of the pool (at most connectionLimit of them).
      const refused = [];
      for (;;) {
        const r = await sql.exec('INSERT INTO w VALUES (2, @@port)').catch((e) => e);
        if (!(r instanceof Error)) break;
        assert.equal(r.errno, 1290, r.message);
        refused.push(r);
        assert.ok(refused.length <= 2, 'at most connectionLimit plain writes refused');
      }
      const rows = await sql.query('SELECT k, port FROM w ORDER BY k');
      assert.deepEqual(
        rows.map((r) => [Number(r.k), Number(r.port)]),
        [
          [1, p.port],
          [2, next.port],
        ],
        'each write on the primary of its moment',
      );
      assert.deepEqual(await foreignGtids(group), [], 'nothing written outside the group');
    } finally {
      await sql.close();
    }
  },
);
