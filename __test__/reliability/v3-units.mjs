// The units of work only the 3.0 contract has, as the fault tests attack them
// (v3-atomicity.test.mjs through the fault proxy, v3-killed-worker.test.mjs by SIGKILL; the
// shape of a unit is described in faults.mjs). Not a test file itself.
//
// Each unit says which tables it touches and `inspect` reads every one of them: an effect is
// true (applied), false (not applied) or a string (odd: half of it, or a row it must never
// touch). Rows a unit must leave alone (decoys) only show up, as odd, when they were touched.
// `call(env, ctx)` needs only `env.sql` (the native pool) and `env.b` (a 3.0 backend on it), so
// a child process can make the same call (fixtures/kill-mid-unit.mjs); `ctx` is plain JSON and
// may carry `padBytes`, padding for the one large value a unit can carry.
import { createRequire } from 'node:module';
import { wrapSql } from '../conformance/fixture.mjs';
import { COMMIT, LEAD, gone, packet } from './outcome.mjs';

const require = createRequire(import.meta.url);
export const v3 = require('../../v3.js');

const T = Date.parse('2030-01-01T00:00:00Z');
const ENQUEUE_ROWS = 1000; // rows per enqueue statement (src/ports/statements.rs)
const pad = (ctx) => 'x'.repeat(ctx.padBytes || 0);
const n = (v) => Number(v);

/** A target hitting the `count`-th (1-based) command that matches `re` in a trial. */
function nth(re, count) {
  return () => {
    let seen = 0;
    return (text) => re.test(text) && ++seen === count;
  };
}

/** `{ name: ok }` for a decoy row, or `{}` when it was left alone (ok === true). */
const decoy = (name, ok, what) => (ok ? {} : { [name]: what });

/** The `inTx` body both inTx units run (natively and over a wrapped `Sql`); see its unit. */
async function inTxBody(b, tx, ctx) {
  await tx.exec('INSERT INTO app_order (trial, step, note) VALUES (?, ?, ?)', [ctx.k, 'a', pad(ctx)]);
  const started = await b.store.startRun({
    name: 'order',
    version: 1,
    input: { k: ctx.k },
    idempotencyKey: `o${ctx.k}`,
    priority: 2,
  });
  await b.queue.enqueueMany([{ runId: started.runId }, { runId: `x${ctx.k}`, opts: { priority: 1 } }]);
  // A unit failing half-way (its third insert clashes with its first; the keyed spec between
  // them keeps the two key-less runs from sharing one multi-row INSERT): fn goes on without it.
  const failed = await b.store
    .startManyRuns([
      { name: 'clash', version: 1, input: 1 },
      { name: 'clash', version: 1, input: 2, idempotencyKey: `clash-${ctx.k}` },
      { name: 'clash', version: 1, input: 3 },
    ])
    .then(
      () => 'resolved',
      (e) => String(e.message),
    );
  if (failed === 'resolved') throw new Error('the clashing startManyRuns resolved');
  await b.timer.schedule(started.runId, new Date(T + ctx.k));
  await tx.exec('INSERT INTO app_order (trial, step) VALUES (?, ?)', [ctx.k, 'b']);
  return started.runId;
}

/** Run ids for the inTx body: the startRun's, then the failing unit's (the same id twice, a keyed run between). */
function inTxIds(ctx) {
  const ids = [`i${ctx.k}-run`, `i${ctx.k}-clash`, `i${ctx.k}-keyed`, `i${ctx.k}-clash`];
  let next = 0;
  return () => ids[next++] ?? `i${ctx.k}-extra${next}`;
}

const inTxShared = {
  // fn runs on the JS thread, round trip by round trip: a child about to be killed must keep its
  // event loop turning (a timer, not a busy-wait), and the body takes a fresh child 10–30 ms, so
  // the kill lands anywhere in it (v3-killed-worker)
  drivenByJs: true,
  killWindowMs: 30,
  // app_order is the caller's own table; the units write run, job and timer.
  async init(q) {
    await q(
      'CREATE TABLE app_order (trial INT NOT NULL, step CHAR(1) NOT NULL, note LONGTEXT, PRIMARY KEY (trial, step)) ENGINE=InnoDB',
    );
  },
  async prepare(q, k) {
    return { k };
  },
  async inspect(q, ctx) {
    const id = `i${ctx.k}-run`;
    const [r] = await q(
      'SELECT (SELECT COUNT(*) FROM app_order WHERE trial = ? AND step = ?) AS a, ' +
        '(SELECT COUNT(*) FROM app_order WHERE trial = ? AND step = ?) AS b, ' +
        '(SELECT priority FROM `run` WHERE id = ?) AS runPriority, ' +
        '(SELECT priority FROM `job` WHERE run_id = ?) AS jobPriority, ' +
        '(SELECT priority FROM `job` WHERE run_id = ?) AS otherJob, ' +
        '(SELECT fire_at FROM `timer` WHERE run_id = ?) AS timer, ' +
        '(SELECT COUNT(*) FROM `run` WHERE id IN (?, ?)) AS clash',
      [ctx.k, 'a', ctx.k, 'b', id, id, `x${ctx.k}`, id, `i${ctx.k}-clash`, `i${ctx.k}-keyed`],
    );
    const was = (v, want) => (v === null ? false : n(v) === want ? true : `is ${v}, not ${want}`);
    return {
      appA: n(r.a) === 1,
      startRun: was(r.runPriority, 2),
      enqueueMany: was(r.jobPriority, 2), // inherited from the run
      enqueueOther: was(r.otherJob, 1),
      schedule: was(r.timer, T + ctx.k),
      appB: n(r.b) === 1,
      // the failed unit left nothing of itself, committed or not
      ...decoy('failedUnit', n(r.clash) === 0, `${r.clash} run row(s) of the failed startManyRuns`),
    };
  },
  verify(q, ctx, v) {
    return v === `i${ctx.k}-run` ? [] : [`answered ${JSON.stringify(v)}`];
  },
};

export const units = [
  {
    // 1003 distinct runs (two statements: 1000 rows, then 3): new jobs, two existing ones
    // re-enqueued (one leased: its lease stays), priority inherited from the run row or given,
    // a duplicate request (the last one wins). Autocommit, one round trip: no COMMIT to hit.
    // A trial writes and reads 1003 rows (~5x the others' time): 40 trials per reset kind.
    name: 'enqueueMany',
    trials: 40,
    write: /INSERT INTO `job`/,
    targets: { write: /INSERT INTO `job`/ },
    async prepare(q, k) {
      const ids = Array.from({ length: ENQUEUE_ROWS + 3 }, (_, i) => `e${k}-${i}`);
      await q(
        "INSERT INTO `run` (id, name, version, status, attempts, priority, created_at) VALUES (?, 'f', 1, 'pending', 0, 7, ?); " +
          'INSERT INTO `job` (run_id, run_at, priority, version, lease_token, lease_expires) VALUES (?, 5, 0, 1, NULL, NULL), (?, 5, 0, 1, ?, ?)',
        [ids[2], T, ids[0], ids[1], `held${k}`, T * 2],
      );
      return { ids, k };
    },
    call({ b }, ctx) {
      const requests = ctx.ids.map((runId, i) => ({
        runId,
        opts: i % 3 === 0 ? { priority: 1 } : i === 5 ? { runAt: new Date(T) } : undefined,
      }));
      requests.push({ runId: ctx.ids[5], opts: { runAt: new Date(T + 5), priority: 9 } }); // wins
      return b.queue.enqueueMany(requests);
    },
    async inspect(q, ctx) {
      const rows = await q('SELECT run_id, run_at, priority, version, lease_token FROM `job` WHERE run_id LIKE ?', [
        `e${ctx.k}-%`,
      ]);
      const by = new Map(rows.map((r) => [r.run_id, r]));
      const fresh = (from, to) => {
        const ids = ctx.ids.slice(from, to).filter((_, i) => i + from > 1);
        const have = ids.filter((id) => by.has(id)).length;
        return have === ids.length ? true : have === 0 ? false : `${have} of ${ids.length} new jobs`;
      };
      const bumped = [0, 1].map((i) => n(by.get(ctx.ids[i]).version));
      const lease = by.get(ctx.ids[1]).lease_token;
      const inherit = by.get(ctx.ids[2]);
      const last = by.get(ctx.ids[5]);
      return {
        reEnqueued: bumped.every((v) => v === 2) ? true : bumped.every((v) => v === 1) ? false : `versions ${bumped}`,
        firstStatement: fresh(0, ENQUEUE_ROWS),
        secondStatement: fresh(ENQUEUE_ROWS, ctx.ids.length),
        ...decoy('leaseKept', lease === `held${ctx.k}`, `lease ${lease}`),
        ...decoy('inherited', !inherit || n(inherit.priority) === 7, `priority ${inherit && inherit.priority}`),
        ...decoy('lastWins', !last || (n(last.run_at) === T + 5 && n(last.priority) === 9), JSON.stringify(last)),
      };
    },
    verify(q, ctx, v) {
      return v === undefined ? [] : [`answered ${JSON.stringify(v)}`];
    },
  },
  {
    // Two terminal runs named del<k>, tagged purge, with a step, a signal, a job and a timer
    // each: all of them go, from five tables, in one transaction. A live run of that name and a
    // done one without the tag stay.
    name: 'deleteRuns(filter)',
    write: /DELETE FROM `step`/,
    async prepare(q, k) {
      const ctx = { runs: [`d${k}a`, `d${k}b`], keep: [`d${k}live`, `d${k}untagged`], name: `del${k}`, k };
      const rows = [
        [ctx.runs[0], 'done', '["purge"]'],
        [ctx.runs[1], 'failed', '["x","purge"]'],
        [ctx.keep[0], 'running', '["purge"]'],
        [ctx.keep[1], 'done', '["other"]'],
      ];
      for (const [id, status, tags] of rows) {
        await q(
          'INSERT INTO `run` (id, name, version, status, attempts, tags, created_at) VALUES (?, ?, 1, ?, 1, ?, ?); ' +
            "INSERT INTO `step` (run_id, cursor_key, status, attempts) VALUES (?, 's0', 'ok', 1), (?, 's1', 'ok', 1); " +
            "INSERT INTO `signal` (id, run_id, name, consumed) VALUES (?, ?, 'go', 1); " +
            'INSERT INTO `job` (run_id, run_at, version) VALUES (?, ?, 1); ' +
            'INSERT INTO `timer` (run_id, fire_at) VALUES (?, ?)',
          [id, ctx.name, status, tags, T, id, id, `${id}-sig`, id, id, T, id, T],
        );
      }
      return ctx;
    },
    call({ b }, ctx) {
      return b.store.deleteRuns({ name: ctx.name, tag: 'purge' }, 100);
    },
    async inspect(q, ctx) {
      const parts = {};
      for (const id of [...ctx.runs, ...ctx.keep]) {
        const [r] = await q(
          'SELECT (SELECT COUNT(*) FROM `run` WHERE id = ?) AS run, (SELECT COUNT(*) FROM `step` WHERE run_id = ?) AS step, ' +
            '(SELECT COUNT(*) FROM `signal` WHERE run_id = ?) AS sig, (SELECT COUNT(*) FROM `job` WHERE run_id = ?) AS job, ' +
            '(SELECT COUNT(*) FROM `timer` WHERE run_id = ?) AS timer',
          [id, id, id, id, id],
        );
        const counts = [r.run, r.step, r.sig, r.job, r.timer].map(n);
        if (ctx.keep.includes(id)) {
          Object.assign(parts, decoy(id, counts.join() === '1,2,1,1,1', `rows ${counts.join('/')}`));
          continue;
        }
        parts[`${id}.run`] = gone(counts[0], 1);
        parts[`${id}.steps`] = gone(counts[1], 2);
        parts[`${id}.signal`] = gone(counts[2], 1);
        parts[`${id}.job`] = gone(counts[3], 1);
        parts[`${id}.timer`] = gone(counts[4], 1);
      }
      return parts;
    },
    verify(q, ctx, v) {
      return v === 2 ? [] : [`answered ${JSON.stringify(v)}`];
    },
  },
  {
    // Two live runs named can<k> (running, sleeping) with a timer and a job each: canceled, their
    // timers gone, their jobs left in place. A done run of that name stays done.
    name: 'cancelRuns(filter)',
    write: /DELETE FROM `timer`/,
    async prepare(q, k) {
      const ctx = { runs: [`c${k}a`, `c${k}b`], done: `c${k}done`, name: `can${k}`, k };
      for (const [id, status] of [
        [ctx.runs[0], 'running'],
        [ctx.runs[1], 'sleeping'],
        [ctx.done, 'done'],
      ]) {
        await q(
          'INSERT INTO `run` (id, name, version, status, attempts, created_at) VALUES (?, ?, 1, ?, 1, ?); ' +
            'INSERT INTO `job` (run_id, run_at, version) VALUES (?, 0, 1); INSERT INTO `timer` (run_id, fire_at) VALUES (?, ?)',
          [id, ctx.name, status, T, id, id, T],
        );
      }
      return ctx;
    },
    call({ b }, ctx) {
      return b.store.cancelRuns({ name: ctx.name }, 10);
    },
    async inspect(q, ctx) {
      const parts = {};
      for (const [i, id] of [...ctx.runs, ctx.done].entries()) {
        const [r] = await q(
          'SELECT status, error, (SELECT COUNT(*) FROM `timer` WHERE run_id = ?) AS timer, (SELECT COUNT(*) FROM `job` WHERE run_id = ?) AS job FROM `run` WHERE id = ?',
          [id, id, id],
        );
        Object.assign(parts, decoy(`${id}.job`, n(r.job) === 1, 'its job row was removed'));
        if (id === ctx.done) {
          Object.assign(parts, decoy(id, r.status === 'done' && n(r.timer) === 1, `${r.status}, timers ${r.timer}`));
          continue;
        }
        const before = i === 0 ? 'running' : 'sleeping';
        parts[`${id}.status`] =
          r.status === 'canceled' && r.error === null ? true : r.status === before ? false : `${r.status}/${r.error}`;
        parts[`${id}.timer`] = gone(n(r.timer), 1);
      }
      return parts;
    },
    verify(q, ctx, v) {
      return v === 2 ? [] : [`answered ${JSON.stringify(v)}`];
    },
  },
  {
    // Two failed version-1 runs named rty<k> (one with priority 4 and no job, one with a job
    // row): pending, error cleared, attempts 0, enqueued (new job at the run's priority, the
    // existing one re-enqueued). A failed version-2 run of that name stays failed.
    name: 'retryRuns(filter)',
    write: /UPDATE `run`[^;]* SET status = 'pending'/,
    async prepare(q, k) {
      const ctx = { runs: [`r${k}a`, `r${k}b`], other: `r${k}v2`, name: `rty${k}`, k };
      await q(
        "INSERT INTO `run` (id, name, version, status, error, attempts, priority, created_at) VALUES (?, ?, 1, 'failed', '\"boom\"', 3, 4, ?), " +
          "(?, ?, 1, 'failed', '\"boom\"', 3, 0, ?), (?, ?, 2, 'failed', '\"boom\"', 3, 0, ?); " +
          'INSERT INTO `job` (run_id, run_at, priority, version) VALUES (?, 5, 0, 1)',
        [ctx.runs[0], ctx.name, T, ctx.runs[1], ctx.name, T, ctx.other, ctx.name, T, ctx.runs[1]],
      );
      return ctx;
    },
    call({ b }, ctx) {
      return b.store.retryRuns({ name: ctx.name, version: 1 }, 10);
    },
    async inspect(q, ctx) {
      const rows = await q(
        'SELECT r.id, r.status, r.error, r.attempts, j.priority, j.version, j.run_at FROM `run` r LEFT JOIN `job` j ON j.run_id = r.id WHERE r.id IN (?)',
        [[...ctx.runs, ctx.other]],
      );
      const by = new Map(rows.map((r) => [r.id, r]));
      const state = (r) => `${r.status}/${r.error}/${r.attempts}`;
      const retried = (r) => (state(r) === 'pending/null/0' ? true : state(r) === 'failed/"boom"/3' ? false : state(r));
      const [a, b] = ctx.runs.map((id) => by.get(id));
      const o = by.get(ctx.other);
      return {
        [`${a.id}.run`]: retried(a),
        [`${a.id}.job`]:
          a.version === null ? false : n(a.priority) === 4 && n(a.version) === 1 ? true : JSON.stringify(a),
        [`${b.id}.run`]: retried(b),
        [`${b.id}.job`]:
          n(b.version) === 2 && n(b.run_at) === 0 ? true : n(b.version) === 1 ? false : JSON.stringify(b),
        ...decoy(o.id, state(o) === 'failed/"boom"/3' && o.version === null, JSON.stringify(o)),
      };
    },
    verify(q, ctx, v) {
      return v === 2 ? [] : [`answered ${JSON.stringify(v)}`];
    },
  },
  {
    // A checkpoint fenced by requireVersion (the run's job has that version) with a full
    // outbox: step, child run (priority 2) and its job, the run's own job re-enqueued (version
    // 3 → 4, lease kept), a timer, two signals soft-consumed, the join armed.
    name: 'checkpointStep(requireVersion)+outbox',
    write: /INSERT IGNORE INTO `step`/,
    async prepare(q, k) {
      const ctx = { parent: `p${k}`, child: `c${k}`, sigs: [`g${k}a`, `g${k}b`], k };
      await q(
        "INSERT INTO `run` (id, name, version, status, attempts, created_at) VALUES (?, 'parent', 1, 'running', 1, ?); " +
          "INSERT INTO `signal` (id, run_id, name, payload) VALUES (?, ?, 'go', '1'), (?, ?, 'go', '2'); " +
          'INSERT INTO `job` (run_id, run_at, version, lease_token, lease_expires) VALUES (?, 0, 3, ?, ?)',
        [ctx.parent, T, ctx.sigs[0], ctx.parent, ctx.sigs[1], ctx.parent, ctx.parent, `lease${k}`, T * 2],
      );
      return ctx;
    },
    call({ b }, ctx) {
      return b.store.checkpointStep(
        {
          runId: ctx.parent,
          cursorKey: 's0',
          status: 'ok',
          result: { k: ctx.k, pad: pad(ctx) },
          attempts: 1,
          call: 'step:a',
        },
        {
          requireVersion: 3,
          spawn: [
            {
              runId: ctx.child,
              spec: {
                name: 'child',
                version: 1,
                input: { k: ctx.k },
                parentRunId: ctx.parent,
                parentCursorKey: 's0',
                depth: 1,
                priority: 2,
              },
            },
          ],
          enqueue: [{ runId: ctx.parent }],
          timers: [{ runId: ctx.parent, fireAt: new Date(T + ctx.k) }],
          consumeSignals: ctx.sigs,
          joinTarget: { runId: ctx.parent, count: 1 },
        },
      );
    },
    async inspect(q, ctx) {
      const [r] = await q(
        "SELECT (SELECT shape FROM `step` WHERE run_id = ? AND cursor_key = 's0') AS step, " +
          '(SELECT priority FROM `run` WHERE id = ?) AS child, ' +
          '(SELECT priority FROM `job` WHERE run_id = ?) AS childJob, ' +
          '(SELECT version FROM `job` WHERE run_id = ?) AS selfJob, ' +
          '(SELECT lease_token FROM `job` WHERE run_id = ?) AS lease, ' +
          '(SELECT COUNT(*) FROM `timer` WHERE run_id = ?) AS timer, ' +
          '(SELECT SUM(consumed) FROM `signal` WHERE id IN (?, ?)) AS consumed, ' +
          '(SELECT COUNT(*) FROM `signal` WHERE id IN (?, ?)) AS signals, ' +
          '(SELECT join_remaining FROM `run` WHERE id = ?) AS joinRemaining',
        [ctx.parent, ctx.child, ctx.child, ctx.parent, ctx.parent, ctx.parent, ...ctx.sigs, ...ctx.sigs, ctx.parent],
      );
      const c = n(r.consumed);
      return {
        step: r.step === null ? false : r.step === 'step:a' ? true : `shape ${r.step}`,
        spawn: r.child === null ? false : n(r.child) === 2 ? true : `child priority ${r.child}`,
        spawnEnqueued: r.childJob === null ? false : n(r.childJob) === 2 ? true : `child job priority ${r.childJob}`,
        enqueue: n(r.selfJob) === 4 ? true : n(r.selfJob) === 3 ? false : `job version ${r.selfJob}`,
        timer: n(r.timer) === 1,
        consumeSignals: c === 2 ? true : c === 0 ? false : `${c} of 2 consumed`,
        joinTarget: n(r.joinRemaining) === 1,
        ...decoy('signalsKept', n(r.signals) === 2, `${r.signals} of 2 signal rows left (consumption is soft)`),
        ...decoy('leaseKept', r.lease === `lease${ctx.k}`, `lease ${r.lease}`),
      };
    },
    verify(q, ctx, v) {
      return v && v.status === 'ok' && v.result && v.result.k === ctx.k && v.call === 'step:a' && v.committed !== false
        ? []
        : [`answered ${JSON.stringify(v).slice(0, 200)}`];
    },
  },
  {
    // suspendRun with an outbox carrying requireVersion (the 3.0 fence only guards checkpoints;
    // here it rides along): sleeping with attempts reset, its timer, another run enqueued.
    name: 'suspendRun(requireVersion)+outbox',
    write: /UPDATE `run`[^;]* SET status = 'sleeping'/,
    async prepare(q, k) {
      const ctx = { run: `s${k}`, other: `s${k}next`, k };
      await q(
        "INSERT INTO `run` (id, name, version, status, attempts, created_at) VALUES (?, 'f', 1, 'running', 2, ?); " +
          'INSERT INTO `job` (run_id, run_at, version) VALUES (?, 0, 1)',
        [ctx.run, T, ctx.run],
      );
      return ctx;
    },
    call({ b }, ctx) {
      return b.store.suspendRun(ctx.run, 'sleeping', {
        requireVersion: 1,
        timers: [{ runId: ctx.run, fireAt: new Date(T + 5000 + ctx.k) }],
        enqueue: [{ runId: ctx.other, opts: { priority: 3 } }],
      });
    },
    async inspect(q, ctx) {
      const [r] = await q(
        'SELECT status, attempts, (SELECT COUNT(*) FROM `timer` WHERE run_id = ? AND fire_at = ?) AS timer, ' +
          '(SELECT priority FROM `job` WHERE run_id = ?) AS next FROM `run` WHERE id = ?',
        [ctx.run, T + 5000 + ctx.k, ctx.other, ctx.run],
      );
      const st = `${r.status}/${r.attempts}`;
      return {
        suspended: st === 'sleeping/0' ? true : st === 'running/2' ? false : st,
        timer: n(r.timer) === 1,
        enqueue: r.next === null ? false : n(r.next) === 3 ? true : `priority ${r.next}`,
      };
    },
  },
  {
    // A schedule change: every definition column is overwritten and, the schedule being new,
    // next_run_at adopts the new value; last_run_at stays. One autocommit statement (sent
    // prepared: its packet is an EXECUTE).
    name: 'upsertCron(schedule change)',
    write: /^EXECUTE$|INSERT INTO `cron`/,
    targets: { write: /^EXECUTE$|INSERT INTO `cron`/ },
    async prepare(q, k) {
      const ctx = { name: `cron${k}`, k };
      await q(
        "INSERT INTO `cron` (name, schedule, flow_name, flow_version, input, overlap, next_run_at, last_run_at) VALUES (?, '* * * * *', 'f', 1, '{\"a\":1}', 'allow', ?, ?)",
        [ctx.name, T, T - 60_000],
      );
      return ctx;
    },
    call({ b }, ctx) {
      return b.store.upsertCron({
        name: ctx.name,
        schedule: '*/5 * * * *',
        flowName: 'g',
        flowVersion: 2,
        input: { k: ctx.k, pad: pad(ctx) },
        overlap: 'skip',
        nextRunAt: new Date(T + 300_000),
      });
    },
    async inspect(q, ctx) {
      const [r] = await q('SELECT * FROM `cron` WHERE name = ?', [ctx.name]);
      const col = (have, now, was) => (have === now ? true : have === was ? false : `${have}`);
      const input = r.input && JSON.parse(r.input);
      return {
        schedule: col(r.schedule, '*/5 * * * *', '* * * * *'),
        flowName: col(r.flow_name, 'g', 'f'),
        flowVersion: col(n(r.flow_version), 2, 1),
        input: input && input.k === ctx.k ? true : r.input === '{"a":1}' ? false : `${r.input}`.slice(0, 40),
        overlap: col(r.overlap, 'skip', 'allow'),
        nextRunAt: col(n(r.next_run_at), T + 300_000, T),
        ...decoy('lastRunAt', n(r.last_run_at) === T - 60_000, `last_run_at ${r.last_run_at}`),
      };
    },
    verify(q, ctx, v) {
      return v === undefined ? [] : [`answered ${JSON.stringify(v)}`];
    },
  },
  {
    // claim with names: the jobs of runs of the flow `want` and the job without a run row are
    // leased by one claim; the jobs of `other` runs are never touched.
    name: 'claim(names)',
    write: /UPDATE `job` SET lease_token/,
    async prepare(q, k) {
      const ctx = { want: [0, 1, 2].map((i) => `w${k}-${i}`), orphan: `o${k}`, other: [`x${k}-0`, `x${k}-1`], k };
      await q(
        'DELETE FROM `job`; INSERT INTO `run` (id, name, version, status, attempts, created_at) VALUES ?; INSERT INTO `job` (run_id, run_at, priority, version) VALUES ?',
        [
          [
            ...ctx.want.map((id) => [id, 'want', 1, 'pending', 0, T]),
            ...ctx.other.map((id) => [id, 'other', 1, 'pending', 0, T]),
          ],
          // the other flow's jobs come first by priority: a claim ignoring `names` would take them
          [...ctx.other.map((id) => [id, 0, -1, 1]), ...[...ctx.want, ctx.orphan].map((id) => [id, 0, 0, 1])],
        ],
      );
      return ctx;
    },
    call({ b }, ctx) {
      return b.queue.claim({ limit: 10, leaseMs: 600_000, names: ['want'] });
    },
    async inspect(q, ctx) {
      const mine = [...ctx.want, ctx.orphan];
      const rows = await q('SELECT run_id, lease_token, lease_expires FROM `job` WHERE run_id IN (?)', [
        [...mine, ...ctx.other],
      ]);
      const leased = (id) => rows.some((r) => r.run_id === id && r.lease_token !== null);
      const parts = Object.fromEntries(mine.map((id) => [id, leased(id)]));
      for (const id of ctx.other) Object.assign(parts, decoy(id, !leased(id), 'leased, though not of the flows named'));
      const expiries = new Set(rows.filter((r) => r.lease_token !== null).map((r) => String(r.lease_expires)));
      if (expiries.size > 1) parts.oneClaim = `${expiries.size} different lease expiries`;
      return parts;
    },
    async verify(q, ctx, v) {
      if (!Array.isArray(v) || v.length !== 4) return [`answered ${JSON.stringify(v)}`];
      const rows = await q('SELECT run_id, lease_token FROM `job` WHERE run_id IN (?)', [v.map((l) => l.runId)]);
      const held = new Map(rows.map((r) => [r.run_id, r.lease_token]));
      return v
        .filter((l) => held.get(l.runId) !== l.token)
        .map((l) => `lease of ${l.runId} (${l.token}) is not in the table (${held.get(l.runId)})`);
    },
  },
  {
    // inTx on the native pool: the caller's two inserts around four units joined to its
    // transaction — startRun, enqueueMany, a startManyRuns that fails half-way (fn goes on
    // without it) and timer.schedule — each behind its savepoint, all in one packet stream. A
    // fault on any of its packets (BEGIN, each write, the savepoint rollback, COMMIT) leaves none
    // of it; the failed unit never leaves anything.
    name: 'inTx(native: 4 units, 2 own writes)',
    write: /INSERT IGNORE INTO `run`/,
    targets: {
      begin: new RegExp(`${LEAD}BEGIN\\b`, 'i'),
      appA: /INSERT INTO app_order[^;]*'a'/,
      startRun: packet('SAVEPOINT ifw_unit', 'INSERT IGNORE INTO `run`'),
      enqueueMany: packet('SAVEPOINT ifw_unit', 'INSERT INTO `job`'),
      failingUnit: packet('SAVEPOINT ifw_unit', 'INSERT INTO `run`'),
      undo: packet('ROLLBACK TO SAVEPOINT ifw_unit'),
      schedule: packet('SAVEPOINT ifw_unit', 'INSERT INTO `timer`'),
      appB: /INSERT INTO app_order[^;]*'b'/,
      commit: COMMIT,
    },
    ...inTxShared,
    call({ sql }, ctx) {
      return v3.inTx(sql, (b, tx) => inTxBody(b, tx, ctx), { id: inTxIds(ctx) });
    },
  },
  {
    // The same inTx over a plain JS `Sql` wrapped around the pool: every statement goes through
    // the wrapper's transaction handle on its own, each unit behind its own SAVEPOINT statement.
    name: 'inTx(wrapped Sql: 4 units, 2 own writes)',
    write: /INSERT IGNORE INTO `run`/,
    targets: {
      begin: new RegExp(`${LEAD}BEGIN\\b`, 'i'),
      appA: /INSERT INTO app_order[^;]*'a'/,
      savepoint1: nth(packet('SAVEPOINT ifw_unit', packet.END), 1),
      startRun: packet('INSERT IGNORE INTO `run`'),
      startRunRead: packet('SELECT id, status FROM `run`'),
      enqueueMany: packet('INSERT INTO `job`'),
      savepoint3: nth(packet('SAVEPOINT ifw_unit', packet.END), 3),
      failingUnit: nth(packet('INSERT INTO `run`'), 2),
      undo: packet('ROLLBACK TO SAVEPOINT ifw_unit'),
      schedule: packet('INSERT INTO `timer`'),
      appB: /INSERT INTO app_order[^;]*'b'/,
      commit: COMMIT,
    },
    ...inTxShared,
    call({ sql }, ctx) {
      return v3.inTx(wrapSql(sql), (b, tx) => inTxBody(b, tx, ctx), { id: inTxIds(ctx) });
    },
  },
];
