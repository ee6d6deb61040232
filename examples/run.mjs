#!/usr/bin/env node
// A small durable-workflow worker on iterativeflow-mysql-native, driving the backend the way the
// iterativeflow engine does (docs/contract.md §11): submit runs with idempotency keys, then a
// worker loop of timer.dueBatch → enqueue, claim, loadRun, markRunning, memoized checkpoint steps,
// a durable sleep (suspendRun 'sleeping' + a timer in the same transaction) and markTerminal.
//
//   npm run example                      # starts a private MariaDB (needs mariadbd), then stops it
//   MYSQL_URL=mysql://user:pw@host:3306/db npm run example
//                                        # an existing database (tables are created if missing);
//                                        # a URL without a database gets a temporary one
//
// Environment: RUNS (default 20), SLEEP_MS (default 300): the flow's durable sleep.
// Exit code 0 when every submitted run finished `done` with the expected output.
import { randomBytes } from 'node:crypto';

import { applySchema, createMysqlBackend, mysqlPool, tables } from '../index.js';
import { readUrl, reportFailure } from './failure.mjs';

const RUNS = intFromEnv('RUNS', 20);
const SLEEP_MS = intFromEnv('SLEEP_MS', 300);
const RESUBMIT = Math.min(5, RUNS);
const BATCH = 20; // claim / dueBatch size (core's batchMax)
const LEASE_MS = 30_000; // core's leaseMs
const DEADLINE_MS = 60_000;
const TERMINAL = ['done', 'failed', 'canceled'];

function intFromEnv(name, fallback) {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer`);
  return n;
}

const t0 = Date.now();
const log = (msg) => console.log(`[${((Date.now() - t0) / 1000).toFixed(2).padStart(6)} s] ${msg}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- the flow ---------------------------------------------------------------------------------

/** Thrown by ctx.sleep to park the run until `wakeAt`; never reaches the backend. */
class Suspend {
  constructor(wakeAt) {
    this.wakeAt = wakeAt;
  }
}

/**
 * `fulfil-order` v1: two steps, a durable sleep, one more step. On the dispatch after the sleep
 * the first two steps and the sleep are replayed from the run's step memos (no backend call).
 */
async function fulfilOrder(ctx, input) {
  const reservation = await ctx.step('reserve', () => ({ sku: `sku-${input.order % 7}`, qty: 1 }));
  const charge = await ctx.step('charge', () => ({ chargeId: `ch_${input.order}`, amount: input.amount }));
  await ctx.sleep(SLEEP_MS); // e.g. wait for the payment to settle
  const shipment = await ctx.step('ship', () => ({ tracking: `TRK${String(input.order).padStart(5, '0')}` }));
  return { order: input.order, sku: reservation.sku, chargeId: charge.chargeId, tracking: shipment.tracking };
}

/** The output `fulfilOrder` must produce for `input` (for the final check). */
function expectedOutput(input) {
  return {
    order: input.order,
    sku: `sku-${input.order % 7}`,
    chargeId: `ch_${input.order}`,
    tracking: `TRK${String(input.order).padStart(5, '0')}`,
  };
}

// ---- a minimal engine: one tick = docs/contract.md §11.1 --------------------------------------

function createWorker(backend, counters) {
  const { store, queue, timer, wakeup } = backend;

  /** The flow context over one snapshot: cursor keys s0, s1, … replayed from `snap.steps`. */
  function context(snap, attempt) {
    let cursor = 0;
    const runId = snap.run.id;
    async function checkpoint(cursorKey, shape, result) {
      // First writer wins: the stored (winner's) outcome comes back.
      const outcome = await store.checkpointStep({ runId, cursorKey, status: 'ok', result, attempts: attempt, shape });
      counters.checkpoints++;
      return outcome.result;
    }
    return {
      async step(name, fn) {
        const key = `s${cursor++}`;
        const memo = snap.steps.get(key);
        if (memo) {
          counters.memoHits++;
          return memo.result;
        }
        return checkpoint(key, `step:${name}`, await fn());
      },
      async sleep(ms) {
        const key = `s${cursor++}`;
        const memo = snap.steps.get(key);
        let wakeAt;
        if (memo) {
          counters.memoHits++;
          wakeAt = new Date(memo.result);
        } else {
          wakeAt = new Date(await checkpoint(key, 'sleep', new Date(Date.now() + ms).toISOString()));
        }
        if (wakeAt.getTime() > Date.now()) throw new Suspend(wakeAt);
      },
    };
  }

  /** One dispatch of one leased run; returns what happened. */
  async function runTick(lease) {
    const snap = await store.loadRun(lease.runId);
    if (!snap || TERMINAL.includes(snap.run.status)) {
      await queue.ack(lease);
      return 'gone';
    }
    if (snap.run.name !== 'fulfil-order' || snap.run.version !== 1) {
      // Not ours (another program's flow in the same database): park it for an hour.
      await store.suspendRun(snap.run.id, 'retrying', {
        timers: [{ runId: snap.run.id, fireAt: new Date(Date.now() + 3_600_000) }],
      });
      await queue.ack(lease);
      return 'parked';
    }
    const attempt = await store.markRunning(snap.run.id);
    try {
      const output = await fulfilOrder(context(snap, attempt), snap.run.input);
      await store.markTerminal(snap.run.id, { status: 'done', output });
      await wakeup.signal(snap.run.id);
      await queue.ack(lease);
      return 'done';
    } catch (e) {
      if (e instanceof Suspend) {
        // The sleep: status and timer commit together; then the job is released.
        await store.suspendRun(snap.run.id, 'sleeping', { timers: [{ runId: snap.run.id, fireAt: e.wakeAt }] });
        await queue.ack(lease);
        return 'slept';
      }
      await store.markTerminal(snap.run.id, {
        status: 'failed',
        error: { code: 'FLOW_ERROR', message: String(e?.message ?? e) },
      });
      await queue.ack(lease);
      return 'failed';
    }
  }

  /** dueBatch → enqueue, claim, runTick per lease (sequentially, like core). */
  async function tickOnce() {
    const due = await timer.dueBatch({ limit: BATCH });
    await Promise.all(due.map((id) => queue.enqueue(id)));
    const leases = await queue.claim({ limit: BATCH, leaseMs: LEASE_MS });
    const outcomes = {};
    for (const lease of leases) {
      const what = await runTick(lease);
      outcomes[what] = (outcomes[what] ?? 0) + 1;
    }
    return { due: due.length, claimed: leases.length, outcomes };
  }

  return { tickOnce };
}

// ---- the program ------------------------------------------------------------------------------

/** Where the example runs (host:port/database), for the line an error ends it with. */
let target = 'the server';

/** Where to run: MYSQL_URL, or a private MariaDB started here. */
async function openDatabase() {
  let server = null;
  let url = process.env.MYSQL_URL;
  if (url) target = readUrl('example', url).where; // a URL the package cannot read ends it here
  if (!url) {
    const { startPrivateServer } = await import('../__test__/helpers/server.mjs');
    log('MYSQL_URL is not set: starting a private MariaDB…');
    server = await startPrivateServer();
    url = server.url;
    log(`private MariaDB on 127.0.0.1:${server.port} (ready in ${server.startupMs} ms)`);
  } else {
    log('using the server named by MYSQL_URL');
  }
  const u = new URL(url);
  let dropDatabase = null;
  if (u.pathname.length <= 1) {
    // No database in the URL: a temporary one, dropped at the end.
    const name = `iterflow_example_${randomBytes(4).toString('hex')}`;
    const admin = mysqlPool(url);
    try {
      await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4`);
    } finally {
      await admin.close();
    }
    u.pathname = `/${name}`;
    dropDatabase = async () => {
      const a = mysqlPool(url);
      try {
        await a.query(`DROP DATABASE IF EXISTS \`${name}\``);
      } finally {
        await a.close();
      }
    };
  }
  const where = `${u.hostname}:${u.port || 3306}${u.pathname}`;
  target = where;
  return {
    url: u.toString(),
    where,
    async cleanup() {
      try {
        if (dropDatabase) await dropDatabase();
      } finally {
        if (server) await server.stop();
      }
    },
  };
}

async function main() {
  const db = await openDatabase();
  const sql = mysqlPool(db.url);
  try {
    await applySchema(sql);
    const t = tables('');
    log(`schema applied on ${db.where} (${Object.values(t).join(', ')})`);
    const backend = createMysqlBackend(sql);
    const { store, queue } = backend;

    // Submit (core's `submit`: startRun, then enqueue only when created).
    const batch = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
    const tag = `example:${batch}`;
    const specOf = (i) => ({
      name: 'fulfil-order',
      version: 1,
      input: { order: i, amount: 10 * i + 5 },
      idempotencyKey: `order-${batch}-${i}`,
      tags: [tag],
    });
    const submit = async (spec) => {
      const r = await store.startRun(spec);
      if (r.created) await queue.enqueue(r.runId);
      return r;
    };
    const runs = new Map(); // runId -> input
    for (let i = 1; i <= RUNS; i++) {
      const r = await submit(specOf(i));
      if (!r.created) throw new Error(`order ${i}: a fresh idempotency key did not create a run`);
      runs.set(r.runId, specOf(i).input);
    }
    log(`submitted ${RUNS} runs of fulfil-order@1 (tag ${tag})`);

    // Re-submitting the same keys returns the same runs and creates nothing.
    const again = await Promise.all(Array.from({ length: RESUBMIT }, (_, k) => submit(specOf(k + 1))));
    const dedupOk = again.every((r, k) => !r.created && runs.has(r.runId) && [...runs.keys()][k] === r.runId);
    log(
      `re-submitted ${RESUBMIT} keys: ${again.filter((r) => r.created).length} created, ` +
        `${again.filter((r) => !r.created).length} deduplicated to the existing runs (status ${again[0]?.status})`,
    );
    if (!dedupOk) throw new Error('idempotent re-submission did not return the original runs');

    // The worker loop: tick until every run of this batch is terminal.
    const counters = { checkpoints: 0, memoHits: 0 };
    const worker = createWorker(backend, counters);
    const terminal = new Set();
    const deadline = Date.now() + DEADLINE_MS;
    let ticks = 0;
    let idle = 0;
    while (terminal.size < runs.size) {
      if (Date.now() > deadline) throw new Error(`not finished after ${DEADLINE_MS / 1000} s`);
      const { due, claimed, outcomes } = await worker.tickOnce();
      if (claimed === 0 && due === 0) {
        idle++;
        await sleep(Math.min(25 * idle, 200)); // idle back-off, like core's resident loop
        continue;
      }
      idle = 0;
      ticks++;
      const what = Object.entries(outcomes)
        .map(([k, v]) => `${v} ${k}`)
        .join(', ');
      log(`tick ${ticks}: ${due} timer(s) due and enqueued, ${claimed} claimed → ${what}`);
      // Which of our runs are terminal now (one IN query for all of them).
      const rows = await store.loadRunRows([...runs.keys()]);
      for (const row of rows) if (row && TERMINAL.includes(row.status)) terminal.add(row.id);
    }

    // A key submitted again after completion reports the run's current status.
    const late = await submit(specOf(1));
    log(`re-submitted order 1 after completion: created=${late.created}, status=${late.status}`);

    // Check every run: done, the expected output, four memoized steps.
    let done = 0;
    let steps = 0;
    const problems = [];
    for (const [runId, input] of runs) {
      const snap = await store.loadRun(runId);
      steps += snap?.steps.size ?? 0;
      if (snap?.run.status !== 'done') problems.push(`${runId}: status ${snap?.run.status}`);
      else if (JSON.stringify(snap.run.output) !== JSON.stringify(expectedOutput(input)))
        problems.push(`${runId}: output ${JSON.stringify(snap.run.output)}`);
      else if (snap.steps.size !== 4) problems.push(`${runId}: ${snap.steps.size} steps`);
      else done++;
    }
    const page = await store.listRuns({ tag, status: 'done' }, { limit: RUNS + 1 });
    if (page.runs.length !== RUNS) problems.push(`listRuns by tag found ${page.runs.length} done runs`);
    if (late.created || late.status !== 'done') problems.push('re-submission after completion');
    const depth = await queue.depth(new Date());
    const [left] = await sql.query(
      `SELECT (SELECT COUNT(*) FROM ${t.timer}) AS timers, (SELECT COUNT(*) FROM ${t.job}) AS jobs`,
    );

    const { roundTrips } = sql.stats();
    const elapsed = ((Date.now() - t0) / 1000).toFixed(2);
    log(
      `queue after the run: ${depth.claimable} claimable, ${depth.leased} leased; ${left.jobs} job rows, ${left.timers} timer rows left`,
    );
    for (const p of problems) log(`PROBLEM ${p}`);
    console.log(
      `summary: ${done}/${RUNS} runs done, ${steps} steps stored (${counters.checkpoints} checkpoint calls, ` +
        `${counters.memoHits} replayed from memo), ${ticks} ticks, ${roundTrips} round trips, ${elapsed} s`,
    );
    return problems.length === 0 && done === RUNS ? 0 : 1;
  } finally {
    await sql.close();
    await db.cleanup();
  }
}

let code = 1;
try {
  code = await main();
} catch (e) {
  reportFailure('example', e, target);
  code = 1;
}
process.exit(code);
