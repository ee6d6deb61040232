// The scale benchmark on one server: for each size, the tables of both contracts filled straight
// in SQL (__test__/helpers/history.mjs: 93 % finished runs, 7 % live), then every call of
// calls.mjs timed on this package and on the JavaScript package of the same contract
// (2.0.0-alpha.2: the seed; 3.0.0: the reference), interleaved, medians; and once per call and
// side, untimed, the statements it sent with the server's EXPLAIN of each.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { resolve as resolvePath } from 'node:path';

import mysql from 'mysql2/promise';

import { fillHistory } from '../../__test__/helpers/history.mjs';
import { explain, explainable, planText, recording } from '../../__test__/helpers/plans.mjs';
import { loadReference, referenceAvailability, referenceSql } from '../../__test__/helpers/reference.mjs';
import { loadSeed, seedAvailability } from '../../__test__/helpers/seed.mjs';
import { median } from '../stats.mjs';
import { CALLS } from './calls.mjs';

const require = createRequire(import.meta.url);
const NOW = Date.parse('2030-01-01T00:00:00Z');
/** A call slower than this on its first repetition gets 3 repetitions, not `reps`. */
const SLOW_MS = 2000;

/** This package, from BENCH_NATIVE_MODULE or the repository root. */
function loadNative() {
  const path = process.env.BENCH_NATIVE_MODULE ? resolvePath(process.env.BENCH_NATIVE_MODULE) : '../../index.js';
  return require(path);
}

/** The JavaScript packages that load here (the seed and the 3.0.0 reference are optional). */
async function loadJs(log) {
  const out = {};
  if (seedAvailability().available) out.seed = await loadSeed();
  else log(`JavaScript 2.0.0-alpha.2 not measured: ${seedAvailability().reason}`);
  const ref = referenceAvailability('3.0.0');
  if (ref.available) out.reference = await loadReference('3.0.0');
  else log(`JavaScript 3.0.0 not measured: ${ref.reason}`);
  return out;
}

/** The sides of one contract over `prefix`: `{ name, backend, make(sql) }`, plus what to close. */
function sidesOf(contract, prefix, { native, js, pools, kind }) {
  const sides = [];
  const nativeSql = native.mysqlPool(pools.url);
  pools.closers.push(() => nativeSql.close());
  const nativeMake = (sql) => native.createMysqlBackend(sql, { prefix, contract });
  sides.push({ name: 'native', sql: nativeSql, make: nativeMake, backend: nativeMake(nativeSql) });
  const pool = mysql.createPool({ uri: pools.url, connectionLimit: 10 });
  pools.closers.push(() => pool.end());
  if (contract === '2.0.0-alpha.2' && js.seed) {
    const sql = js.seed.mysqlPool(pool);
    const make = (s) => js.seed.createMysqlBackend(s, { prefix });
    sides.push({ name: 'js', sql, make, backend: make(sql) });
  }
  if (contract === '3.0.0' && js.reference) {
    const sql = kind === 'mariadb' ? referenceSql(js.reference, pool) : js.reference.mysqlPool(pool);
    const make = (s) => js.reference.createMysqlBackend(s, { prefix });
    sides.push({ name: 'js', sql, make, backend: make(sql) });
  }
  return sides;
}

/** The statements `call` sends through `side` (untimed, once) with the EXPLAIN of each. */
async function plansOf(call, side, f) {
  const log = [];
  const before = await call.before?.(f);
  const answer = await call.run(side.make(recording(side.sql, log)), f);
  await call.restore?.(f, answer, before);
  const out = [];
  for (const s of log.filter((x) => explainable(x.text) && x.text.includes(`\`${f.prefix}`))) {
    let plan;
    try {
      plan = planText(await explain(f.admin, s.text, s.params ?? []));
    } catch (e) {
      plan = `EXPLAIN failed: ${e.message}`;
    }
    out.push({ sql: s.text.replace(/\s+/g, ' ').trim(), plan });
  }
  return out;
}

/** CPU time (user + system) of the server process `pid` in ms (10 ms ticks), NaN without one. */
function cpuMs(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return NaN;
  }
}

/**
 * Times `call` on every side, interleaved (the order reverses each repetition): wall time in
 * the Node process and, on a private server, the server's CPU time over the call.
 */
async function timeCall(call, sides, f, reps) {
  const times = new Map(sides.map((s) => [s.name, []]));
  const cpu = new Map(sides.map((s) => [s.name, []]));
  const limit = new Map(sides.map((s) => [s.name, reps]));
  for (let r = 0; r < reps; r++) {
    for (const side of r % 2 ? [...sides].reverse() : sides) {
      const mine = times.get(side.name);
      if (mine.length >= limit.get(side.name)) continue;
      const before = await call.before?.(f);
      const c0 = cpuMs(f.serverPid);
      const t0 = performance.now();
      const answer = await call.run(side.backend, f);
      const ms = performance.now() - t0;
      cpu.get(side.name).push(cpuMs(f.serverPid) - c0);
      await call.restore?.(f, answer, before);
      mine.push(ms);
      if (mine.length === 1 && ms > SLOW_MS) limit.set(side.name, Math.min(reps, 3));
    }
  }
  return new Map(sides.map((s) => [s.name, { times: times.get(s.name), cpu: cpu.get(s.name) }]));
}

/**
 * The scale benchmark on the server at `url` (a database is made and dropped): `sizes` (runs),
 * `reps` repetitions per call and side; `serverPid`, the server's process when it is a private
 * one (its CPU time is then read too). `log(line)` reports progress. Returns `{ server, sizes:
 * [{ runs, fillMs: { contract: ms }, calls: [{ name, contract, live, sides: { native: { medianMs,
 * serverCpuMs, reps, times, plans }, js? } }] }] }`.
 */
export async function measureScale({
  url,
  sizes,
  reps,
  serverPid,
  contracts = ['2.0.0-alpha.2', '3.0.0'],
  log = () => {},
}) {
  const native = loadNative();
  const js = await loadJs(log);
  const root = await mysql.createConnection({ uri: url });
  const [[{ v }]] = await root.query('SELECT VERSION() AS v');
  const kind = /mariadb/i.test(v) ? 'mariadb' : 'mysql';
  const db = `ifw_scale_${process.pid}`;
  await root.query(`CREATE DATABASE \`${db}\` CHARACTER SET utf8mb4`);
  const dbUrl = Object.assign(new URL(url), { pathname: `/${db}` }).toString();
  const admin = mysql.createPool({ uri: dbUrl, connectionLimit: 2 });
  const result = { server: `${kind === 'mariadb' ? 'MariaDB' : 'MySQL'} ${v.split('-')[0]}`, kind, reps, sizes: [] };
  try {
    for (const runs of sizes) {
      const size = { runs, fillMs: {}, calls: [] };
      result.sizes.push(size);
      for (const contract of contracts) {
        const prefix = `s${runs}_${contract === '3.0.0' ? 3 : 2}_`;
        const pools = { url: dbUrl, closers: [] };
        try {
          const fill = await mysql.createConnection({ uri: dbUrl });
          const ddlSql = native.mysqlPool(dbUrl);
          await native.applySchema(ddlSql, prefix, { contract });
          await ddlSql.close();
          const t = native.tables(prefix);
          const t0 = performance.now();
          await fillHistory(fill, t, { runs, now: NOW });
          size.fillMs[contract] = Math.round(performance.now() - t0);
          await fill.end();
          log(`${result.server}: ${runs} runs (${contract}) filled in ${(size.fillMs[contract] / 1000).toFixed(1)} s`);
          const [[some]] = await admin.query(
            `SELECT id FROM ${t.run} WHERE status = 'pending' ORDER BY seq DESC LIMIT 1`,
          );
          const f = { admin, t, prefix, now: NOW, someRun: some.id, serverPid };
          const sides = sidesOf(contract, prefix, { native, js, pools, kind });
          for (const call of CALLS.filter((c) => !c.v3 || contract === '3.0.0')) {
            const entry = { name: call.name, contract, live: Boolean(call.live), sides: {} };
            const ok = [];
            for (const side of sides) {
              try {
                entry.sides[side.name] = { plans: await plansOf(call, side, f) };
                ok.push(side);
              } catch (e) {
                entry.sides[side.name] = { error: e.message.split('\n')[0] };
              }
            }
            for (const [name, { times, cpu }] of await timeCall(call, ok, f, reps)) {
              Object.assign(entry.sides[name], {
                medianMs: median(times),
                serverCpuMs: median(cpu),
                reps: times.length,
                times,
              });
            }
            size.calls.push(entry);
            const shown = sides.map(
              (s) => `${s.name} ${entry.sides[s.name].medianMs?.toFixed(1) ?? entry.sides[s.name].error} ms`,
            );
            log(`  ${runs} ${contract} ${call.name}: ${shown.join(', ')}`);
          }
          for (const table of Object.values(t)) await admin.query(`DROP TABLE IF EXISTS ${table}`);
        } finally {
          for (const close of pools.closers) await close();
        }
      }
    }
  } finally {
    await admin.end();
    await root.query(`DROP DATABASE IF EXISTS \`${db}\``);
    await root.end();
  }
  return result;
}
