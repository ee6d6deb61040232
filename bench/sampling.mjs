// Sampling around a measured region: CPU time of the process's main thread and of the private
// server, and the server's counters (status variables, InnoDB's commit metrics), with the cost of
// the bench's own probe statements measured once and subtracted. (Statement digests: digests.mjs.)
import { readFileSync } from 'node:fs';

import { bench } from './context.mjs';

/** CPU time of the main (JS) thread in µs: /proc schedstat (ns) or stat (ticks), else NaN. */
export function mainThreadCpuUs() {
  try {
    const s = readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8');
    return Number(s.split(' ')[0]) / 1000;
  } catch {}
  try {
    const s = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1e6) / 100;
  } catch {}
  return NaN;
}

/** CPU time (user + system) of the private server process in µs, NaN when the server is not ours. */
export function serverCpuUs() {
  try {
    if (!bench.server?.pid) return NaN;
    const s = readFileSync(`/proc/${bench.server.pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1e6) / 100;
  } catch {}
  return NaN;
}

/**
 * Server counters: status variables, plus InnoDB's transaction-commit metrics when they could be
 * enabled (`innodbMetrics`). Read on `probe`, a connection without a default database, so its
 * statements stay out of the bench database's performance_schema digests.
 */
export async function statusCounters() {
  const [rows] = await bench.probe.query(
    "SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Com_stmt_prepare', 'Com_commit', 'Com_rollback', 'Handler_commit')",
  );
  const out = Object.fromEntries(rows.map((r) => [r.Variable_name, Number(r.Value)]));
  if (innodbMetrics) {
    const [m] = await bench.probe.query(
      `SELECT NAME, COUNT FROM information_schema.INNODB_METRICS WHERE NAME IN (${INNODB_COMMIT_METRICS.map((x) => `'${x}'`).join(', ')})`,
    );
    for (const r of m) out[r.NAME] = Number(r.COUNT);
  }
  return out;
}

// trx_rw_commits: read-write transactions InnoDB committed (an autocommit write statement, or an
// explicit transaction that wrote or took row locks). trx_ro_commits / trx_nl_ro_commits:
// read-only ones (explicit / autocommit SELECTs). Off by default; enabled at start.
const INNODB_COMMIT_METRICS = ['trx_rw_commits', 'trx_ro_commits', 'trx_nl_ro_commits'];
export let innodbMetrics = false;

export async function enableInnodbMetrics() {
  try {
    for (const m of INNODB_COMMIT_METRICS) await bench.probe.query(`SET GLOBAL innodb_monitor_enable = '${m}'`);
    const [m] = await bench.probe.query(
      `SELECT COUNT(*) AS c FROM information_schema.INNODB_METRICS WHERE NAME = 'trx_rw_commits'`,
    );
    innodbMetrics = Number(m[0].c) === 1;
  } catch (e) {
    console.error(`note: cannot enable InnoDB commit metrics (${e.message}); commits/op falls back to Com_commit`);
  }
}

export const commitsLabel = () =>
  innodbMetrics
    ? "InnoDB's trx_rw_commits (read-write transactions committed: autocommit writes and explicit COMMITs of transactions that wrote or locked rows)"
    : 'Com_commit (explicit COMMIT statements only: autocommit writes are not counted)';

let probeCost = {};

/** What statusCounters() itself adds to the counters (two reads back to back), subtracted by delta(). */
export async function measureProbeCost() {
  const a = await statusCounters();
  const b = await statusCounters();
  probeCost = Object.fromEntries(Object.keys(b).map((k) => [k, b[k] - a[k]]));
}

/** Counter deltas over a measured region, the bench's own probe statements subtracted. */
export const delta = (s0, s1, k) =>
  s1[k] === undefined || s0[k] === undefined ? NaN : s1[k] - s0[k] - (probeCost[k] ?? 0);
