// The fault-trial machinery of the atomicity tests (atomicity.test.mjs for the 2.0.0-alpha.2
// units, v3-atomicity.test.mjs for the 3.0 ones). Not a test file itself.
//
// A fault proxy (helpers/faultproxy.mjs) sits between a small native pool and the server. Each
// trial prepares fresh rows with a direct connection, arms ONE fault for the packet carrying one
// of the unit's targets — its guarding write or its `COMMIT` by default, chosen by a seeded coin —
// and makes the call:
//   reset-after-send  the whole request reaches the server, then both sides get an RST
//   reset-on-answer   the request reaches the server, the RST comes as its answer starts
//   cut-mid-request   only part of the request reaches the server, then the RST
//   delay             the answer is held for a while (the call must succeed)
// After the call settles (bounded) we wait until the server has finished with the faulted
// session (it is gone from PROCESSLIST), then read the database directly (mysql2, not through the
// proxy) and classify the unit: committed whole, rolled back whole, or partial — which must never
// happen. A call that resolved must have committed whole, and the next call through the same pool
// must succeed.
//
// A unit: `write` matches the request carrying its guarding write (or, for two-round-trip units,
// its writes); `targets` (optional) names every packet a fault may hit instead, `{ name: RegExp }`
// (default `{ write, commit: COMMIT }`; an autocommit unit has no COMMIT to hit) — or `{ name:
// () => matcher }`, a fresh proxy matcher per trial (e.g. one counting commands); `init(q)` runs
// once; `prepare(q, k)` makes the rows trial k needs; `call(env, ctx)` is the one call under test;
// `inspect(q, ctx)` reads every effect of the unit; `verify(q, ctx, value)` lists problems with a
// resolved call's answer; `trials` (optional) caps the trials per reset kind for a unit whose
// trial is slow.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import mysql from 'mysql2/promise';
import { closeAdmin, freshDatabase, serverUrl } from '../helpers/db.mjs';
import { startFaultProxy } from '../helpers/faultproxy.mjs';
import { applySchema, createMysqlBackend, mysqlPool, settle, sleep, withParams, within } from './helpers.mjs';
import { rngOf } from '../helpers/rng.mjs';
import { COMMIT, classify, describeParts } from './outcome.mjs';
import { processList } from '../helpers/server.mjs';

export { COMMIT, classify, describeParts, gone } from './outcome.mjs';

export const RESET_KINDS = ['reset-after-send', 'reset-on-answer', 'cut-mid-request'];
export const QUERY_TIMEOUT_MS = 5000;
export const CALL_BOUND_MS = QUERY_TIMEOUT_MS + 3000; // a reset rejects at once; this only catches hangs
const SESSION_GONE_MS = 10_000;
const MAX_HUNG = 3; // stop a method's trials after this many calls that never settled

/** The private server's host and port, for a proxy in front of it. */
export function serverAddress() {
  const u = new URL(serverUrl());
  return { host: u.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1', port: Number(u.port) || 3306 };
}

/**
 * Starts one fault proxy for the test file (before) and closes it (after), with the admin
 * connection. `holder.proxy` is the proxy once the file's tests run.
 */
export function useFaultProxy() {
  const holder = { proxy: undefined };
  before(async () => {
    holder.proxy = await startFaultProxy(serverAddress());
  });
  after(async () => {
    if (holder.proxy) await holder.proxy.close();
    await closeAdmin();
  });
  return holder;
}

/** `url` pointed at the proxy instead of the server. */
export function viaProxy(proxy, url) {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(proxy.port);
  return u.toString();
}

/** A 32-bit seed for `label` derived from `seed` (FNV-1a over the label). */
export function seedFor(seed, label) {
  let h = seed >>> 0;
  for (const ch of label) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  return h;
}

/**
 * A fresh database, a native pool on it THROUGH the proxy and a direct mysql2 connection to it.
 * `q(text, params)` runs SQL on the direct connection and returns the rows. `schema(sql)` applies
 * the layout (default: the 2.0.0-alpha.2 applySchema), `backend(sql)` builds `env.b` (default: the
 * 2.0.0-alpha.2 backend).
 */
export async function openEnv(proxy, label, params = {}, { schema = applySchema, backend = createMysqlBackend } = {}) {
  const db = await freshDatabase(`atom_${label}`);
  const url = withParams(viaProxy(proxy, db.url), {
    connectionLimit: 2,
    acquireTimeoutMs: 3000,
    queryTimeoutMs: QUERY_TIMEOUT_MS,
    ...params,
  });
  const sql = mysqlPool(url);
  await schema(sql);
  const direct = await mysql.createConnection({ uri: db.url, multipleStatements: true });
  const q = async (text, values) => (await direct.query(text, values))[0];
  return {
    db,
    sql,
    b: backend(sql),
    q,
    async close() {
      // A call stuck on a faulted connection would keep close() waiting: then reset them all.
      const closed = await settle(within(sql.close(), 2000, 'sql.close()'));
      if (!closed.ok) {
        proxy.dropAll();
        await within(sql.close(), 10_000, 'sql.close()').catch(() => {});
      }
      await direct.end().catch(() => {});
      await db.drop();
    },
  };
}

/**
 * Waits until the server has finished with a proxied session (`hit` from the proxy: its server
 * thread id, or else its outbound port, which PROCESSLIST shows as HOST `127.0.0.1:<port>`).
 * Returns the ms it took.
 */
export async function waitSessionGone(q, hit) {
  const [where, arg] =
    hit.threadId !== null ? ['ID = ?', hit.threadId] : ["HOST LIKE CONCAT('%:', ?)", hit.upstreamPort];
  const t0 = performance.now();
  while (performance.now() - t0 < SESSION_GONE_MS) {
    const [{ n }] = await q(`SELECT COUNT(*) AS n FROM ${processList()} WHERE ${where}`, [arg]);
    if (Number(n) === 0) return performance.now() - t0;
    await sleep(5);
  }
  throw new Error(
    `server session ${hit.threadId ?? `from port ${hit.upstreamPort}`} still there after ${SESSION_GONE_MS} ms`,
  );
}

/** The packets a fault may hit in `unit`'s trials, `{ name: RegExp }`. */
const targetsOf = (unit) => unit.targets || { write: unit.write, commit: COMMIT };

function newFigures(unit) {
  return {
    trials: 0,
    fired: 0,
    targets: Object.fromEntries(Object.keys(targetsOf(unit)).map((n) => [n, 0])),
    committed: 0,
    rolledBack: 0,
    partial: 0,
    rejected: 0,
    resolvedNotWhole: 0,
    badAnswers: 0,
    recoveryFailed: 0,
    hung: 0,
    lingering: 0,
    unfired: 0,
    maxSettleMs: 0,
    maxGoneMs: 0,
    examples: [],
    errors: new Map(),
  };
}

function note(fig, line) {
  if (fig.examples.length < 4) fig.examples.push(line);
}

/** One trial: prepare, arm, call (bounded), wait for the session, inspect, check recovery. */
async function trial(proxy, env, unit, fig, { k, kind, target, rng }) {
  const ctx = await unit.prepare(env.q, k);
  const aim = targetsOf(unit)[target];
  const arm = { match: aim instanceof RegExp ? aim : aim(), kind };
  if (kind === 'delay') arm.delayMs = 20 + Math.floor(rng() * 180);
  if (kind === 'cut-mid-request') arm.cutAt = rng();
  const h = proxy.arm(arm);
  const r = await settle(within(unit.call(env, ctx), CALL_BOUND_MS, `${unit.name} under ${kind}`));
  h.cancel();
  fig.trials++;
  fig.targets[target]++;
  fig.maxSettleMs = Math.max(fig.maxSettleMs, r.ms);
  const hung = !r.ok && /did not settle/.test(r.error.message);
  if (hung) {
    fig.hung++;
    note(fig, `k=${k} ${target}: the call did not settle within ${CALL_BOUND_MS} ms`);
  }
  if (h.hit) {
    fig.fired++;
    // A delayed session stays healthy in the pool; a reset one must be ended by the server.
    if (kind !== 'delay') {
      try {
        fig.maxGoneMs = Math.max(fig.maxGoneMs, await waitSessionGone(env.q, h.hit));
      } catch (e) {
        fig.lingering++;
        note(fig, `k=${k} ${target}: ${e.message}`);
      }
    }
  } else {
    fig.unfired++;
  }
  if (!r.ok) {
    fig.rejected++;
    const kindOf = String(r.error.message).replace(/\d+/g, 'N').slice(0, 90);
    fig.errors.set(kindOf, (fig.errors.get(kindOf) || 0) + 1);
  }
  const parts = await unit.inspect(env.q, ctx);
  const state = classify(parts);
  fig[state]++;
  if (state === 'partial') {
    note(
      fig,
      `k=${k} ${target}${h.hit ? '' : ' (not fired)'}: partial, ${describeParts(parts)} (call ${r.ok ? 'resolved' : 'rejected'})`,
    );
  }
  if (r.ok) {
    if (state !== 'committed') {
      fig.resolvedNotWhole++;
      note(fig, `k=${k} ${target}: the call resolved but the unit is ${state}`);
    }
    const problems = unit.verify ? await unit.verify(env.q, ctx, r.value) : [];
    if (problems.length) {
      fig.badAnswers++;
      note(fig, `k=${k} ${target}: ${problems.join('; ')}`);
    }
  }
  // the pool recovers: the next call through it succeeds
  const rec = await settle(within(env.b.store.runStats(), CALL_BOUND_MS, 'the call after the fault'));
  if (!rec.ok) {
    fig.recoveryFailed++;
    note(fig, `k=${k} ${target}: the next call failed: ${rec.error.message}`);
  }
  return hung;
}

function report(t, tag, unit, kind, f) {
  const label = (n) => (n === 'commit' ? 'COMMIT' : n);
  const targets = Object.entries(f.targets)
    .map(([n, c]) => `${label(n)} ${c}`)
    .join(' / ');
  t.diagnostic(
    `${tag}/${unit.name}/${kind}: ${f.trials} trials (target ${targets}; fired ${f.fired}), ` +
      `committed-whole ${f.committed}, rolled-back-whole ${f.rolledBack}, partial ${f.partial}, rejected ${f.rejected}` +
      `${f.resolvedNotWhole ? `, resolved-but-not-whole ${f.resolvedNotWhole}` : ''}${f.badAnswers ? `, bad answers ${f.badAnswers}` : ''}` +
      `${f.recoveryFailed ? `, next call failed ${f.recoveryFailed}` : ''}${f.hung ? `, hung ${f.hung}` : ''}` +
      `${f.lingering ? `, sessions lingering ${f.lingering}` : ''}; max settle ${Math.round(f.maxSettleMs)} ms` +
      `${kind === 'delay' ? '' : `, server done with the faulted session ≤ ${Math.round(f.maxGoneMs)} ms later`}`,
  );
  for (const [e, n] of f.errors) t.diagnostic(`  ${n} × ${e}`);
  for (const ex of f.examples) t.diagnostic(`  e.g. ${ex}`);
}

/**
 * Registers the test of one unit: `trials` trials per reset kind and `delayTrials` delayed ones,
 * each aimed at one of the unit's targets (seeded by `seed` and the unit's name), then asserts
 * that no unit was left partial, every resolved call committed whole and answered right, nothing
 * hung or lingered, the pool recovered after every fault and every fault fired. `holder.proxy`
 * is the file's proxy (useFaultProxy); `envOpts` go to openEnv; `tag` starts the report lines.
 */
export function attackUnit(holder, unit, { trials, delayTrials, seed, tag = 'atomicity', envOpts, timeout = 150_000 }) {
  const targetNames = Object.keys(targetsOf(unit));
  const what =
    targetNames.length === 2 && targetNames[1] === 'commit' ? 'write or COMMIT packet' : targetNames.join(', ');
  if (unit.trials) trials = Math.min(trials, unit.trials);
  test(`${unit.name} is all-or-nothing when its connection is reset (${what})`, { timeout }, async (t) => {
    const proxy = holder.proxy;
    const env = await openEnv(proxy, unit.name.replace(/[^a-z]+/gi, '_'), {}, envOpts);
    const figs = new Map();
    const t0 = performance.now();
    try {
      if (unit.init) await unit.init(env.q);
      const rng = rngOf(seedFor(seed, unit.name));
      const plan = [...RESET_KINDS.flatMap((kind) => Array(trials).fill(kind)), ...Array(delayTrials).fill('delay')];
      let k = 0;
      let hung = 0;
      for (const kind of plan) {
        if (!figs.has(kind)) figs.set(kind, newFigures(unit));
        k++;
        const target = targetNames[Math.floor(rng() * targetNames.length)];
        if (await trial(proxy, env, unit, figs.get(kind), { k, kind, target, rng })) hung++;
        if (hung >= MAX_HUNG) break;
      }
    } finally {
      await env.close();
    }
    t.diagnostic(
      `${tag}/${unit.name}: seed ${seed}, ${trials} trials per reset kind, ${delayTrials} delay trials, pool of 2 through the proxy, queryTimeoutMs ${QUERY_TIMEOUT_MS}; ${Math.round(performance.now() - t0)} ms`,
    );
    for (const [kind, f] of figs) report(t, tag, unit, kind, f);

    const total = (key) => [...figs.values()].reduce((n, f) => n + f[key], 0);
    const byKind = (key) => [...figs].map(([kind, f]) => `${kind} ${f[key]}`).join(', ');
    assert.equal(total('partial'), 0, `${unit.name}: units left half-applied (${byKind('partial')})`);
    assert.equal(total('resolvedNotWhole'), 0, `${unit.name}: calls that resolved without the unit committed whole`);
    assert.equal(total('badAnswers'), 0, `${unit.name}: resolved calls whose answer disagrees with the database`);
    assert.equal(total('hung'), 0, `${unit.name}: calls that never settled`);
    assert.equal(total('lingering'), 0, `${unit.name}: faulted server sessions that did not end`);
    assert.equal(
      total('recoveryFailed'),
      0,
      `${unit.name}: calls after a fault that failed (the pool did not recover)`,
    );
    assert.equal(
      total('unfired'),
      0,
      `${unit.name}: trials whose target packet was never sent (${byKind('unfired')}; a COMMIT folded into the unit's text cannot be targeted)`,
    );
    const delay = figs.get('delay');
    assert.equal(delay.rejected, 0, `${unit.name}: calls rejected under a mere delay`);
    assert.equal(delay.committed, delay.trials, `${unit.name}: delayed calls committed whole`);
    for (const kind of RESET_KINDS) assert.equal(figs.get(kind).trials, trials, `${unit.name}: ${kind} trials run`);
  });
}

/**
 * Runs a child process (`script`, with `env` added to this one's) that SIGKILLs itself while its
 * call is on the wire, to its death (SIGKILLed by the parent after `boundMs`: "the parent
 * (hung)"). Resolves with the server connection id it printed (`CONN <id>`), how it ended and
 * the tail of its stderr.
 */
export function runKilledChild(script, env, boundMs = 15_000) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      err = (err + d).slice(-2000);
    });
    let hung = false;
    const timer = setTimeout(() => {
      hung = true;
      child.kill('SIGKILL');
    }, boundMs);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const m = /^CONN (\d+)$/m.exec(out);
      resolve({ connId: m ? Number(m[1]) : null, code, signal: hung ? 'the parent (hung)' : signal, stderr: err });
    });
  });
}
