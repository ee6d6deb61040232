// The floor's store: the run and step methods the bench's drains and flows call, each in as few
// statements as MariaDB allows, written by hand from docs/contract.md §3 and §7.
//
//   loadRun        1 statement: the run row, its steps and its signals as one UNION ALL (one
//                  JSON_ARRAYAGG subquery per kind was 1 statement too, but cost the server 4x)
//   loadRunRow     1
//   markRunning    1 (the new attempt count comes back as LAST_INSERT_ID(expr) in the OK packet)
//   checkpointStep 1 without an outbox (INSERT IGNORE … SELECT FROM run: an unknown run inserts
//                  nothing); with one, a transaction of 2 round trips
//   suspendRun     1 without an outbox; with timers only, one packet (the timer insert guarded
//                  by the run's new status); otherwise 2 round trips
//   markTerminal   1 without an outbox
//   arriveAtJoin   1 (LAST_INSERT_ID again, offset so that a negative count fits)
//   submitMany     1 round trip per chunk: one multi-row INSERT of the runs, one of their jobs
import { randomUUID } from 'node:crypto';

import { TERMINAL, emptyOutbox, fromJson, outboxStatements, toJson, tx } from './pool.mjs';

const RUN_COLUMNS =
  'id, name, version, status, input, attempts, output, error, idempotency_key, tags, parent_run_id, ' +
  'parent_cursor_key, depth, created_at';

/** A run row as the engine reads it (§2.2 RunRow, 14 keys). */
function runRow(r) {
  return {
    id: r.id,
    name: r.name,
    version: r.version,
    status: r.status,
    input: fromJson(r.input),
    attempts: r.attempts,
    output: fromJson(r.output),
    error: fromJson(r.error),
    idempotencyKey: r.idempotency_key ?? undefined,
    tags: fromJson(r.tags),
    parentRunId: r.parent_run_id ?? undefined,
    parentCursorKey: r.parent_cursor_key ?? undefined,
    depth: r.depth,
    createdAt: new Date(Number(r.created_at)),
  };
}

const stepOutcome = (s) => ({
  status: s.status,
  result: fromJson(s.result),
  error: fromJson(s.error),
  attempts: s.attempts,
  shape: s.shape ?? undefined,
});

// LAST_INSERT_ID keeps an unsigned value: join_remaining (a signed INT) travels with this offset.
const JOIN_OFFSET = 2 ** 31;

export function floorStore(pool, t) {
  // One row per run ('r'), step ('s') and signal ('g'); text columns c1…c10, numbers n1…n4.
  const loadRunSql =
    "SELECT 'r' AS k, id AS c1, name AS c2, status AS c3, input AS c4, output AS c5, error AS c6, " +
    'idempotency_key AS c7, tags AS c8, parent_run_id AS c9, parent_cursor_key AS c10, version AS n1, ' +
    `attempts AS n2, depth AS n3, created_at AS n4 FROM ${t.run} WHERE id = ? UNION ALL ` +
    "SELECT 's', cursor_key, shape, status, result, NULL, error, NULL, NULL, NULL, NULL, NULL, attempts, NULL, NULL " +
    `FROM ${t.step} WHERE run_id = ? UNION ALL ` +
    "SELECT 'g', id, name, NULL, payload, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, seq " +
    `FROM ${t.signal} WHERE run_id = ?`;
  const insertStep =
    `INSERT IGNORE INTO ${t.step} (run_id, cursor_key, status, result, error, attempts, shape) ` +
    `SELECT ?, ?, ?, ?, ?, ?, ? FROM ${t.run} WHERE id = ?`;
  const readStep = `SELECT status, result, error, attempts, shape FROM ${t.step} WHERE run_id = ? AND cursor_key = ?`;
  const markTerminalSql = `UPDATE ${t.run} SET status = ?, output = ?, error = ? WHERE id = ? AND status <> 'canceled'`;

  /** The stored step of `c` when the insert was ignored: the first writer's, or a rejection. */
  const firstWriter = (rows, c) => {
    if (rows.length === 0) throw new Error(`checkpointStep: unknown run ${c.runId}`);
    return { runId: c.runId, cursorKey: c.cursorKey, ...stepOutcome(rows[0]) };
  };

  return {
    async loadRun(runId) {
      const [rows] = await pool.execute(loadRunSql, [runId, runId, runId]);
      const r = rows.find((x) => x.k === 'r');
      if (!r) return undefined;
      const steps = new Map();
      const signals = [];
      for (const x of rows) {
        if (x.k === 's') {
          steps.set(
            x.c1,
            stepOutcome({ status: x.c3, result: x.c4, error: x.c6, attempts: Number(x.n2), shape: x.c2 }),
          );
        } else if (x.k === 'g') signals.push(x);
      }
      signals.sort((a, b) => Number(a.n4) - Number(b.n4));
      const run = runRow({
        id: r.c1,
        name: r.c2,
        status: r.c3,
        input: r.c4,
        output: r.c5,
        error: r.c6,
        idempotency_key: r.c7,
        tags: r.c8,
        parent_run_id: r.c9,
        parent_cursor_key: r.c10,
        version: Number(r.n1),
        attempts: Number(r.n2),
        depth: Number(r.n3),
        created_at: r.n4,
      });
      return { run, steps, signals: signals.map((g) => ({ id: g.c1, name: g.c2, payload: fromJson(g.c4) })) };
    },

    async loadRunRow(runId) {
      const [rows] = await pool.execute(`SELECT ${RUN_COLUMNS} FROM ${t.run} WHERE id = ?`, [runId]);
      return rows.length ? runRow(rows[0]) : undefined;
    },

    async markRunning(runId) {
      const [r] = await pool.execute(
        `UPDATE ${t.run} SET attempts = LAST_INSERT_ID(IF(status IN ${TERMINAL}, attempts, attempts + 1)), ` +
          `status = IF(status IN ${TERMINAL}, status, 'running') WHERE id = ?`,
        [runId],
      );
      if (r.affectedRows === 0) throw new Error(`markRunning: unknown run ${runId}`);
      return Number(r.insertId);
    },

    async checkpointStep(c, fx) {
      const result = toJson(c.result);
      const error = toJson(c.error);
      const params = [c.runId, c.cursorKey, c.status, result, error, c.attempts, c.shape ?? null, c.runId];
      const mine = { runId: c.runId, cursorKey: c.cursorKey, ...stepOutcome({ ...c, result, error }) };
      if (emptyOutbox(fx)) {
        const [r] = await pool.execute(insertStep, params);
        if (r.affectedRows === 1) return mine;
        const [rows] = await pool.execute(readStep, [c.runId, c.cursorKey]);
        return firstWriter(rows, c);
      }
      return tx(pool, insertStep, params, async (r, conn) => {
        if (r.affectedRows === 1) return { ...outboxStatements(t, fx), value: mine };
        const [rows] = await conn.execute(readStep, [c.runId, c.cursorKey]);
        return { value: firstWriter(rows, c) };
      });
    },

    async suspendRun(runId, status, fx) {
      const update =
        `UPDATE ${t.run} SET status = ?${status === 'retrying' ? '' : ', attempts = 0'} ` +
        `WHERE id = ? AND status NOT IN ${TERMINAL}`;
      if (emptyOutbox(fx)) {
        await pool.execute(update, [status, runId]);
        return;
      }
      const onlyTimers = Object.entries(fx).every(([k, v]) => k === 'timers' || !v || v.length === 0);
      if (onlyTimers) {
        // One packet: the timers are written only where the run now has the status (it matched).
        const sql = ['START TRANSACTION', update];
        const params = [status, runId];
        for (const { runId: id, fireAt } of fx.timers) {
          sql.push(
            `INSERT INTO ${t.timer} (run_id, fire_at) SELECT ?, ? FROM ${t.run} WHERE id = ? AND status = ? ` +
              'ON DUPLICATE KEY UPDATE fire_at = VALUES(fire_at)',
          );
          params.push(id, new Date(fireAt).getTime(), runId, status);
        }
        sql.push('COMMIT');
        const conn = await pool.getConnection();
        try {
          await conn.query(sql.join('; '), params);
        } catch (e) {
          await conn.query('ROLLBACK').catch(() => {});
          throw e;
        } finally {
          conn.release();
        }
        return;
      }
      await tx(pool, update, [status, runId], (r) => (r.affectedRows === 1 ? outboxStatements(t, fx) : {}));
    },

    async markTerminal(runId, outcome, fx) {
      const params = [
        outcome.status,
        outcome.status === 'done' ? toJson(outcome.output) : null,
        outcome.status === 'done' ? null : toJson(outcome.error),
        runId,
      ];
      if (emptyOutbox(fx)) {
        await pool.execute(markTerminalSql, params);
        return;
      }
      await tx(pool, markTerminalSql, params, (r) => (r.affectedRows === 1 ? outboxStatements(t, fx) : {}));
    },

    async arriveAtJoin(parentRunId) {
      const [r] = await pool.execute(
        `UPDATE ${t.run} SET join_remaining = CAST(LAST_INSERT_ID(join_remaining - 1 + ${JOIN_OFFSET}) AS SIGNED) ` +
          `- ${JOIN_OFFSET} WHERE id = ?`,
        [parentRunId],
      );
      return r.affectedRows === 0 ? undefined : Number(r.insertId) - JOIN_OFFSET;
    },

    /**
     * The floor's bulk submission (not a port method): `specs` as pending runs and their jobs, due
     * now, in one packet of two multi-row INSERTs (two autocommit statements: like core's
     * submitMany, the runs and their jobs are not one transaction).
     */
    async submitMany(specs) {
      const now = Date.now();
      const ids = specs.map(() => randomUUID());
      await pool.query(
        `INSERT INTO ${t.run} (id, name, version, status, input, tags, depth, created_at) VALUES ?; ` +
          `INSERT INTO ${t.job} (run_id, run_at, priority, version) VALUES ?`,
        [
          specs.map((s, i) => [ids[i], s.name, s.version, 'pending', toJson(s.input), toJson(s.tags), 0, now]),
          ids.map((id) => [id, 0, 0, 1]),
        ],
      );
      return ids.map((runId) => ({ runId, created: true, status: 'pending' }));
    },
  };
}
