// Reliability — a worker process killed while a 3.0 unit (v3-units.mjs) is on the wire leaves
// nothing or everything of it, as killed-worker.test.mjs shows for the alpha.2 outbox calls.
//
// Per unit, each trial prepares the unit's rows (directly), spawns a child
// (fixtures/kill-mid-unit.mjs) with its own one-connection native pool straight to the server,
// which makes the ONE call and SIGKILLs itself 0–3 ms later (seeded). The parent waits until the
// server has finished with the child's session (gone from PROCESSLIST), then reads every table
// the unit touches and classifies it. For the units that carry a value, every other pair of
// trials pads it to 1 MB, which keeps the server busy with the unit for about as long as the
// kill window (see killed-worker.test.mjs).
//
// A trial costs a process start (~0.5 s with the debug addon), so V3_KILLED_TRIALS (default 12)
// trials per unit, not the 100 of the proxy faults; V3_KILLED_SEED seeds the delays. An inTx
// body takes several ms, so its kill window is its unit's `killWindowMs` (the kill lands
// anywhere in it, the commit included).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  classify,
  describeParts,
  openEnv,
  runKilledChild,
  seedFor,
  useFaultProxy,
  waitSessionGone,
} from './faults.mjs';
import { units, v3 } from './v3-units.mjs';
import { rngOf } from '../helpers/rng.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const CHILD = path.join(here, 'fixtures', 'kill-mid-unit.mjs');
const TRIALS = Number(process.env.V3_KILLED_TRIALS) || 12;
const SEED = Number(process.env.V3_KILLED_SEED) || 0x6b11;
const MAX_DELAY_MS = 3;
const LARGE = 1 << 20;
const CHILD_BOUND_MS = 15_000;
/** The units whose call carries a value `padBytes` pads (v3-units.mjs). */
const PADDED = new Set(['checkpointStep(requireVersion)+outbox', 'upsertCron(schedule change)']);

// The proxy only serves openEnv's pool (schema, recovery reads); the children connect directly.
const holder = useFaultProxy();

for (const unit of units) {
  test(
    `${unit.name}: a worker SIGKILLed 0–${unit.killWindowMs || MAX_DELAY_MS} ms after sending it leaves nothing or everything (${TRIALS} trials)`,
    { timeout: 120_000 },
    async (t) => {
      const env = await openEnv(
        holder.proxy,
        `kw_${unit.name.replace(/[^a-z]+/gi, '_')}`,
        {},
        {
          schema: v3.applySchema,
          backend: v3.createMysqlBackend,
        },
      );
      const rng = rngOf(seedFor(SEED, unit.name));
      const windowMs = unit.killWindowMs || MAX_DELAY_MS;
      const fig = new Map(); // bucket -> { committed, rolledBack, partial }
      const problems = [];
      const partials = [];
      let maxGoneMs = 0;
      const t0 = performance.now();
      try {
        if (unit.init) await unit.init(env.q);
        for (let k = 1; k <= TRIALS; k++) {
          const ctx = await unit.prepare(env.q, k);
          if (PADDED.has(unit.name) && k % 4 >= 2) ctx.padBytes = LARGE;
          const delayMs = Math.round(rng() * windowMs * 1000) / 1000;
          const res = await runKilledChild(
            CHILD,
            { KW_URL: env.db.url, KW_TRIAL: JSON.stringify({ unit: unit.name, ctx, delayMs }) },
            CHILD_BOUND_MS,
          );
          if (res.signal !== 'SIGKILL' || res.connId === null) {
            problems.push(
              `trial ${k}: the child ended with ${res.signal || `exit ${res.code}`} before/without its call: ${res.stderr.trim().split('\n').pop()}`,
            );
            continue;
          }
          try {
            maxGoneMs = Math.max(maxGoneMs, await waitSessionGone(env.q, { threadId: res.connId }));
          } catch (e) {
            problems.push(`trial ${k}: ${e.message}`);
            continue;
          }
          const parts = await unit.inspect(env.q, ctx);
          const state = classify(parts);
          const third = windowMs / 3; // three buckets over the window
          const lo = Math.min(2, Math.floor(delayMs / third)) * third;
          const key = `${ctx.padBytes ? '1 MB value' : 'small values'}, killed ${lo}–${lo + third} ms after the call`;
          if (!fig.has(key)) fig.set(key, { committed: 0, rolledBack: 0, partial: 0 });
          fig.get(key)[state]++;
          if (state === 'partial') partials.push(`trial ${k} (killed after ${delayMs} ms): ${describeParts(parts)}`);
        }
      } finally {
        await env.close();
      }
      const sum = (s) => [...fig.values()].reduce((n, f) => n + f[s], 0);
      t.diagnostic(
        `v3-killed-worker/${unit.name}: ${TRIALS} trials (seed ${SEED}${PADDED.has(unit.name) ? '; half with a 1 MB value' : ''}), SIGKILL 0–${windowMs} ms after the call; ` +
          `committed-whole ${sum('committed')}, rolled-back-whole ${sum('rolledBack')}, partial ${sum('partial')}; ` +
          `server done with a session ≤ ${Math.round(maxGoneMs)} ms after the kill; ${Math.round(performance.now() - t0)} ms`,
      );
      for (const [key, f] of [...fig].sort()) {
        t.diagnostic(
          `  ${key}: committed-whole ${f.committed}, rolled-back-whole ${f.rolledBack}, partial ${f.partial}`,
        );
      }
      for (const p of partials.slice(0, 6)) t.diagnostic(`  e.g. ${p}`);
      for (const p of problems.slice(0, 6)) t.diagnostic(`  problem: ${p}`);

      assert.equal(
        sum('partial'),
        0,
        `${unit.name}: units left half-applied by a killed worker (${partials.slice(0, 3).join('; ')})`,
      );
      assert.deepEqual(
        problems,
        [],
        'every child died by SIGKILL with its call sent, and the server ended its session',
      );
      assert.equal(sum('committed') + sum('rolledBack'), TRIALS, 'every trial was classified');
    },
  );
}
