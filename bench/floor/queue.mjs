// The floor's queue and timer (docs/contract.md §4, §5), by hand:
//
//   enqueue   1 statement (an upsert)
//   claim     one transaction of 2 round trips: START TRANSACTION + SELECT … FOR UPDATE SKIP
//             LOCKED, then one UPDATE of all the leases + COMMIT
//   ack       1 DELETE guarded by token, expiry and version; only when it deleted nothing, the
//             release UPDATE (a mid-lease enqueue bumped the version)
//   dueBatch  1 statement on MariaDB: DELETE … ORDER BY fire_at LIMIT n RETURNING run_id (no SKIP
//             LOCKED: concurrent callers wait for each other's few row locks instead of skipping
//             them; each deadline still fires once); elsewhere a SELECT … FOR UPDATE SKIP LOCKED +
//             DELETE transaction
import { randomUUID } from 'node:crypto';

import { tx } from './pool.mjs';

const ms = (d) => (d === undefined || d === null ? Date.now() : new Date(d).getTime());
const limitOf = (n) => Math.max(0, Math.floor(Number(n) || 0));

export function floorQueue(pool, t) {
  const upsert =
    `INSERT INTO ${t.job} (run_id, run_at, priority, version) VALUES (?, ?, ?, 1) ` +
    'ON DUPLICATE KEY UPDATE run_at = VALUES(run_at), priority = VALUES(priority), version = version + 1';
  return {
    async enqueue(runId, opts = {}) {
      await pool.execute(upsert, [runId, opts?.runAt ? ms(opts.runAt) : 0, opts?.priority ?? 0]);
    },

    async claim({ limit, leaseMs, now } = {}) {
      const at = ms(now);
      const expires = at + leaseMs;
      const token = `${randomUUID()}:`;
      return tx(
        pool,
        `SELECT run_id, version FROM ${t.job} WHERE run_at <= ? AND (lease_expires IS NULL OR lease_expires <= ?) ` +
          `ORDER BY priority, run_at LIMIT ${limitOf(limit)} FOR UPDATE SKIP LOCKED`,
        [at, at],
        (rows) => {
          if (rows.length === 0) return { value: [] };
          const ids = rows.map((r) => r.run_id);
          return {
            sql: [`UPDATE ${t.job} SET lease_token = CONCAT(?, run_id), lease_expires = ? WHERE run_id IN (?)`],
            params: [token, expires, ids],
            value: rows.map((r) => ({
              runId: r.run_id,
              token: token + r.run_id,
              expiresAt: new Date(expires),
              version: Number(r.version),
            })),
          };
        },
      );
    },

    async ack(lease, opts = {}) {
      const at = ms(opts?.now);
      const [r] = await pool.execute(
        `DELETE FROM ${t.job} WHERE run_id = ? AND lease_token = ? AND version = ? AND lease_expires > ?`,
        [lease.runId, lease.token, lease.version, at],
      );
      if (r.affectedRows > 0) return;
      await pool.execute(
        `UPDATE ${t.job} SET lease_token = NULL, lease_expires = NULL, run_at = 0 ` +
          'WHERE run_id = ? AND lease_token = ? AND lease_expires > ?',
        [lease.runId, lease.token, at],
      );
    },
  };
}

export function floorTimer(pool, t) {
  let returning = true; // MariaDB's DELETE … RETURNING; switched off at the first parse error
  const fallback = (at, limit) =>
    tx(
      pool,
      `SELECT run_id FROM ${t.timer} WHERE fire_at <= ? ORDER BY fire_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`,
      [at],
      (rows) => {
        const ids = rows.map((r) => r.run_id);
        return ids.length
          ? { sql: [`DELETE FROM ${t.timer} WHERE run_id IN (?)`], params: [ids], value: ids }
          : { value: [] };
      },
    );
  return {
    async dueBatch({ now, limit } = {}) {
      const at = ms(now);
      const n = limitOf(limit);
      if (returning) {
        try {
          const [rows] = await pool.execute(
            `DELETE FROM ${t.timer} WHERE fire_at <= ? ORDER BY fire_at LIMIT ${n} RETURNING run_id`,
            [at],
          );
          return rows.map((r) => r.run_id);
        } catch (e) {
          if (e?.errno !== 1064) throw e;
          returning = false;
        }
      }
      return fallback(at, n);
    },
  };
}
