// An engine-shaped drain over a Group Replication group, with workers in child processes
// (worker.mjs), while a fault hits the group; then the accounting every Group Replication test
// asserts. The runs are the Galera drains' (../galera/outbox-runs.mjs): a third plain, a third
// spawning a child from a step's outbox, a third enqueueing a side run and scheduling a timer.
//
//   const out = await drainUnderFault(t, group, { label, main, paceMs, processes, fault });
//
// `processes`: `(db) => [[{ name, url }, …], …]`, the workers of each child process.
// `fault(ctx)`: runs beside the drain; `ctx.waitDone(f)` resolves once a fraction f of the runs is
// done, `ctx.mark(label, port)` records a fault on the member with SQL port `port`.
//
// Asserted, as on Galera: every run exists and is done exactly once (one acknowledged terminal
// write, whose output is the stored one — or a terminal write whose outcome the worker could not
// know, a lost connection or a commit its member could not finish with the group), no run leased
// twice while a lease was live, 3 steps per run, every outbox complete, the queue empty, the same
// CHECKSUM TABLE on every member; every error that reached a worker is one of `acceptable`; no
// member ever committed a write outside the group (its executed GTIDs are all the group's); at
// most `maxRefused` writes reached a member that could not take them (refused as read-only, counted
// by each member's performance_schema for the app account: only a primary demoted under
// statements in flight may see some); claims succeeded after every fault. Reported: the fault → first successful claim times, the errors,
// the re-runs inside the package, and how many writes members refused as read-only.
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import m from '../../index.js';
import { TABLES, assertJudged, drainProgress, judge, seedRuns } from '../galera/outbox-runs.mjs';
import { APP_USER } from '../helpers/group-replication.mjs';

const { mysqlPool, applySchema, createMysqlBackend } = m;
const WORKER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'worker.mjs');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Errors counted per member for the app account: a write refused by a member that cannot take
 * writes (read-only, offline, handing its primary role over), and a commit the group did not take
 * (a certification conflict, or a member that could not finish it with its group).
 */
export const REFUSALS = [1290, 1836, 3032, 4094];
export const COMMIT_FAILURES = [3100, 3101];
const COUNTED = [...REFUSALS, ...COMMIT_FAILURES];

/** The members as one sequential host list for the app account (every worker on the primary). */
export function hostList(group, db, params = '') {
  const hosts = group.members.map((mb) => `127.0.0.1:${mb.port}`).join(',');
  return `mysql://${APP_USER}@${hosts}/${db.name}?failover=sequential&connectionLimit=2&acquireTimeoutMs=20000${params}`;
}

/** Rows of `sql` from the first member that answers (never a frozen or stopped one). */
function reader(group, db) {
  return async (sql, params) => {
    let last;
    for (const mb of group.members) {
      if (!mb.running || mb.frozen) continue;
      try {
        return await mb.query(sql.replaceAll('`T.', `\`${db.name}\`.\``), params);
      } catch (e) {
        last = e;
      }
    }
    throw last ?? new Error('no member answers');
  };
}

/** Starts a child process of workers; resolves once its pools exist. */
function startChild(workers, env, sink) {
  const child = fork(WORKER, [], {
    env: { ...process.env, GR_WORKERS: JSON.stringify(workers), ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let summary;
  const ready = new Promise((resolve, reject) => {
    child.on('message', (msg) => {
      if (msg.type === 'ready') resolve();
      else if (msg.type === 'exit') summary = msg.workers;
      else sink(msg);
    });
    child.once('exit', (code) => reject(new Error(`worker process exited early (code ${code})`)));
  });
  return {
    ready,
    async stop() {
      if (child.connected) child.send('stop');
      const done = await Promise.race([exited.then(() => true), sleep(60_000).then(() => false)]);
      if (!done) child.kill('SIGKILL');
      return summary ?? [];
    },
    kill: () => child.kill('SIGKILL'),
  };
}

/** The members that can answer a query now (not stopped, not frozen). */
const answering = (group) => group.members.filter((mb) => mb.running && !mb.frozen);

/**
 * How often each of `errnos` was raised to `user`'s statements on each answering member since it
 * started (performance_schema.events_errors_summary_by_user_by_error): `[{ member, counts }]`. A
 * write a member refused as read-only (1290) is a write sent to a member that could not take it.
 */
export function errorsRaised(group, user, errnos) {
  return Promise.all(
    answering(group).map(async (mb) => {
      const rows = await mb.query(
        'SELECT ERROR_NUMBER AS errno, SUM(SUM_ERROR_RAISED) AS n FROM performance_schema.events_errors_summary_by_user_by_error WHERE USER = ? AND ERROR_NUMBER IN (?) GROUP BY ERROR_NUMBER',
        [user, errnos],
      );
      const counts = Object.fromEntries(errnos.map((e) => [e, 0]));
      for (const r of rows) counts[r.errno] = Number(r.n);
      return { member: mb.name, counts };
    }),
  );
}

/**
 * Per answering member, the part of its executed GTID set that was not committed through the
 * group (a write it took while outside it), when there is one: `[{ member, foreign }]`.
 */
export async function foreignGtids(group) {
  const all = await Promise.all(
    answering(group).map(async (mb) => {
      const [{ outside }] = await mb.query(
        "SELECT GTID_SUBTRACT(@@GLOBAL.gtid_executed, CONCAT(@@GLOBAL.group_replication_group_name, ':1-9223372036854775806')) AS outside",
      );
      return { member: mb.name, foreign: outside.replace(/\s+/g, '') };
    }),
  );
  return all.filter((f) => f.foreign !== '');
}

/** Per member (by name): errors `errnos` raised for the app account since the snapshot `before`. */
function raisedSince(before, after, errnos) {
  const out = {};
  for (const a of after) {
    const b = before.find((x) => x.member === a.member && x.pid === a.pid);
    for (const e of errnos) {
      const n = a.counts[e] - (b ? b.counts[e] : 0);
      if (n > 0) out[`${a.member} ${e}`] = n;
    }
  }
  return out;
}

async function errorCounts(group) {
  const rows = await errorsRaised(group, APP_USER, COUNTED);
  return rows.map((r) => ({ ...r, pid: group.members.find((mb) => mb.name === r.member).pid }));
}

/**
 * Runs the drain (see the module comment) and asserts its outcome. `acceptable(e)` says which
 * errors may reach a worker. Returns `{ summary, failovers, refused, uncommitted, errors, retries }`.
 */
export async function drainUnderFault(
  t,
  group,
  {
    label,
    main,
    paceMs,
    leaseMs = 20_000,
    limit = 2,
    processes,
    fault,
    acceptable,
    maxRefused = 0,
    deadlineMs = 150_000,
  },
) {
  const db = await group.createDatabase(label);
  const q = reader(group, db);
  const setup = mysqlPool(`${(await group.primary()).url}${db.name}`);
  let seeded;
  try {
    await applySchema(setup);
    seeded = await seedRuns(createMysqlBackend(setup), main);
  } finally {
    await setup.close();
  }
  await group.waitForSync();

  const doneBy = new Map();
  const terminalUnknown = new Set();
  const leasesOf = new Map();
  const claims = [];
  const errors = [];
  const faults = [];
  const sink = (msg) => {
    if (msg.type === 'claim') {
      claims.push(msg);
      for (const l of msg.leases)
        leasesOf.set(l.runId, [
          ...(leasesOf.get(l.runId) || []),
          { worker: msg.worker, at: msg.at, expiresAt: l.expiresAt },
        ]);
    } else if (msg.type === 'done') {
      doneBy.set(msg.runId, [
        ...(doneBy.get(msg.runId) || []),
        { worker: msg.worker, token: msg.token, at: msg.at, expiresAt: msg.expiresAt },
      ]);
    } else if (msg.type === 'error') {
      errors.push(msg);
      // A terminal write whose answer was lost, or whose member could not finish its commit with
      // the group: applied or not, the worker cannot know.
      if (String(msg.where).startsWith('markTerminal') && unknownOutcome(msg)) terminalUnknown.add(msg.runId);
    }
  };
  const before = await errorCounts(group);
  const env = { GR_LEASE_MS: String(leaseMs), GR_LIMIT: String(limit), GR_PACE_MS: String(paceMs) };
  const children = processes(db).map((workers) => startChild(workers, env, sink));
  let progress = { done: 0, jobs: -1 };
  let finished = false;
  const ctx = {
    async waitDone(fraction) {
      while (progress.done < fraction * seeded.expectedRuns && !finished) await sleep(100);
    },
    mark(what, port) {
      faults.push({ label: what, at: Date.now(), port, pending: progress.done < 0.9 * seeded.expectedRuns });
    },
  };
  const t0 = Date.now();
  let faultError = null;
  let faultDone = false;
  let faulting;
  let summaries = [];
  try {
    await Promise.all(children.map((c) => c.ready));
    faulting = (fault ? fault(ctx) : Promise.resolve()).then(
      () => (faultDone = true),
      (e) => (faultError = e),
    );
    const deadline = Date.now() + deadlineMs;
    for (;;) {
      progress = await drainProgress(q, seeded, progress);
      if ((progress.drained && faultDone) || Date.now() > deadline || faultError) break;
      await sleep(250);
    }
  } finally {
    finished = true;
    summaries = (await Promise.all(children.map((c) => c.stop()))).flat();
    await faulting;
  }
  const drainMs = Date.now() - t0;
  if (faultError) throw faultError;

  await group.waitOnline();
  const sums = await group.checksum(db.name, TABLES);
  const out = await judge(q, seeded, doneBy, leasesOf);
  const after = await errorCounts(group);
  const refused = raisedSince(before, after, REFUSALS);
  const uncommitted = raisedSince(before, after, COMMIT_FAILURES);
  const foreign = await foreignGtids(group);
  const retries = summaries.reduce((n, s) => n + s.retries, 0);
  const differing = TABLES.filter((tb) => new Set(sums.map((s) => s.sums[tb])).size !== 1);
  const byKind = {};
  for (const e of errors) {
    const k = e.kind === 'connection' ? 'connection' : `${e.kind} ${e.errno ?? e.code ?? ''}`.trim();
    byKind[k] = (byKind[k] || 0) + 1;
  }
  // A worker held past its lease finds the run finished by the next holder: the contract refuses
  // its late write (see judge's donePastLease).
  const lateRefusals = errors.filter((e) => e.afterLease && e.kind === 'contract');
  const unexpected = errors.filter((e) => !acceptable(e) && !lateRefusals.includes(e));
  const failovers = faults.map((f) => {
    const c = claims.find((c) => c.sentAt > f.at);
    const off = claims.find((c) => c.sentAt > f.at && c.port !== undefined && c.port !== f.port);
    return {
      label: f.label,
      firstClaimMs: c ? c.at - f.at : null,
      offMs: off ? off.at - f.at : null,
    };
  });
  const failText = failovers
    .map(
      (f) =>
        `${f.label}: ${f.firstClaimMs ?? 'none'} ms${f.offMs !== null && f.offMs !== f.firstClaimMs ? ` (on another member: ${f.offMs} ms)` : ''}`,
    )
    .join(', ');
  const summary =
    `${label}: ${seeded.expectedRuns} runs, ${summaries.length} workers in ${children.length} processes, lease ${leaseMs / 1000} s; ` +
    (faults.length ? `fault to first claim: ${failText}; ` : '') +
    `leased twice ${out.doubleLeases.length}, done twice ${out.doneTwice.length}, not done ${out.notDone.length}, ` +
    `done again by a worker past its lease ${out.donePastLease.length} (its late writes refused ${lateRefusals.length}), ` +
    `wrong steps ${out.badSteps.length}, outbox rows missing ${out.missingOutbox.length}; ` +
    `errors that reached a worker ${errors.length} ${JSON.stringify(byKind)}, ${retries} re-runs inside the package; ` +
    `terminal writes of unknown outcome ${terminalUnknown.size} (applied ${out.neverDone.length}); ` +
    `writes refused by a member that could not take them ${JSON.stringify(refused)}; ` +
    `commits the group did not take ${JSON.stringify(uncommitted)}; ` +
    `writes committed outside the group ${foreign.length ? JSON.stringify(foreign) : 0}; ` +
    `checksums ${differing.length ? `DIFFER in ${differing.join(', ')}` : 'identical on every member'}; drain ${drainMs} ms`;
  t.diagnostic(summary);
  console.log(`# ${summary}`);
  if (out.donePastLease.length) t.diagnostic(`done again past a lease: ${out.donePastLease.slice(0, 5).join(' | ')}`);
  if (errors.length)
    t.diagnostic(
      `first errors: ${errors
        .slice(0, 4)
        .map((e) => `${e.worker} ${e.where}: ${e.message}`)
        .join(' | ')}`,
    );

  if (fault) assert.ok(faults.length > 0, 'the fault happened');
  assert.deepEqual(foreign, [], 'no member committed a write outside the group');
  const refusedTotal = Object.values(refused).reduce((a, b) => a + b, 0);
  assert.ok(
    refusedTotal <= maxRefused,
    `writes sent to a member that could not take them: ${refusedTotal} (bound: ${maxRefused}, the connections in use when a primary was demoted)`,
  );
  assertJudged(out, seeded, terminalUnknown, summary);
  assert.deepEqual(
    unexpected.slice(0, 10).map((e) => `${e.where}: ${e.kind} ${e.errno ?? e.code}: ${e.message}`),
    [],
    'every error that reached a worker is an acceptable one',
  );
  if (fault) assert.ok(faults[0].pending, 'the first fault landed with runs left to claim');
  assert.ok(
    faults.every((f) => !f.pending || claims.some((c) => c.sentAt > f.at)),
    'claims succeeded after every fault that left runs to claim',
  );
  assert.deepEqual(differing, [], 'identical CHECKSUM TABLE on every member');
  return { summary, failovers, refused, uncommitted, errors, retries };
}

/** How many times the package runs a unit again after a transient error at least before that
 * error reaches the caller (MIN_TX_ATTEMPTS in src/exec/mod.rs, less the first attempt; it goes
 * on for up to CONFLICT_BUDGET after the first). */
export const RERUNS = 7;

/**
 * A conflict that outlasted every attempt the package makes: a certification failure (3101), or
 * a local deadlock with a transaction the group had certified (1213, or 1180 "Lock deadlock" when
 * it came while committing).
 */
export const conflictAfterReruns = (e) =>
  (e.errno === 3101 || e.errno === 1213 || (e.errno === 1180 && /Lock deadlock/.test(e.message))) && e.reran >= RERUNS;

/**
 * Whether an error leaves the outcome of the write unknown: a lost connection, a commit the
 * member could not finish with its group (3100, or 3101 from a member that has left it), a
 * statement ended by a server shutting down (1053).
 */
export function unknownOutcome(e) {
  return e.kind === 'connection' || e.errno === 3100 || e.errno === 3101 || e.errno === 1053;
}
