// The engine-shaped runs of the cluster drains (galera/, group-replication/drain.mjs): seeding them,
// driving one lease (loadRun → markRunning → 3 × checkpointStep → markTerminal → ack) with
// outboxes, and judging the outcome once every node applied everything.
//
// A third of the runs spawn a child from a step's outbox (and schedule a timer from markTerminal's),
// a third enqueue a side run and schedule a timer from a step's outbox, so that a unit of work
// aborted or lost but reported as done shows as a missing child, side run, timer or step.
import assert from 'node:assert/strict';
import { TERMINAL } from '../reliability/engine.mjs';

export const FAR = Date.parse('2100-01-01T00:00:00Z');
export const TABLES = ['run', 'step', 'job', 'timer', 'signal', 'cron'];

export const childOf = (id) => `${id}.child`;

/** The outbox a run's step `i` carries, by the run's kind (its flow name). */
function stepOutbox(run, i) {
  if (run.name === 'parent' && i === 1) {
    return {
      spawn: [
        {
          runId: childOf(run.id),
          spec: {
            name: 'child',
            version: 1,
            input: { parent: run.id },
            parentRunId: run.id,
            parentCursorKey: 's1',
            depth: 1,
          },
        },
      ],
    };
  }
  if (run.name === 'fanout' && i === 0) {
    return { enqueue: [{ runId: run.input.side }], timers: [{ runId: run.id, fireAt: new Date(FAR + run.input.i) }] };
  }
  return undefined;
}

/** The outbox of a run's terminal write: parents schedule a follow-up timer. */
function terminalOutbox(run) {
  return run.name === 'parent' ? { timers: [{ runId: run.id, fireAt: new Date(FAR - run.input.i) }] } : undefined;
}

/**
 * Starts `main` runs (a third each plain, parent, fan-out; `main` a multiple of 3) and their side
 * runs through backend `b`, and enqueues the main runs. Side runs are enqueued only by their
 * fan-out's step outbox. Returns what `judge` needs.
 */
export async function seedRuns(b, main) {
  const third = main / 3;
  const sides = await b.store.startManyRuns(
    Array.from({ length: third }, (_, i) => ({ name: 'side', version: 1, input: { i }, idempotencyKey: `side${i}` })),
  );
  const specs = [];
  for (let i = 0; i < third; i++) {
    specs.push({ name: 'plain', version: 1, input: { i }, idempotencyKey: `plain${i}` });
    specs.push({ name: 'parent', version: 1, input: { i }, idempotencyKey: `parent${i}` });
    specs.push({ name: 'fanout', version: 1, input: { i, side: sides[i].runId }, idempotencyKey: `fanout${i}` });
  }
  const runs = await b.store.startManyRuns(specs);
  for (let k = 0; k < runs.length; k += 50)
    await Promise.all(runs.slice(k, k + 50).map((r) => b.queue.enqueue(r.runId)));
  const parents = runs.filter((_, k) => specs[k].name === 'parent').map((r) => r.runId);
  const fanouts = runs
    .filter((_, k) => specs[k].name === 'fanout')
    .map((r, i) => ({ id: r.runId, side: sides[i].runId, i }));
  return { main, parents, fanouts, sides: sides.length, expectedRuns: main + parents.length + sides.length };
}

/**
 * Drives one leased run to done, with outboxes (as reliability/engine.mjs's driveLease). A
 * rejection carries `where` (the port method that rejected).
 */
export async function drive(backend, lease, onDone) {
  const { store, queue } = backend;
  let where = 'loadRun';
  try {
    const snap = await store.loadRun(lease.runId);
    if (!snap || TERMINAL.has(snap.run.status)) {
      where = 'ack';
      await queue.ack(lease);
      return snap ? 'terminal' : 'gone';
    }
    where = 'markRunning';
    const attempt = await store.markRunning(lease.runId);
    for (let i = 0; i < 3; i++) {
      const key = `s${i}`;
      if (snap.steps.has(key)) continue; // memoized by an earlier attempt
      const fx = stepOutbox(snap.run, i);
      where = fx ? 'checkpointStep+outbox' : 'checkpointStep';
      await store.checkpointStep(
        {
          runId: lease.runId,
          cursorKey: key,
          status: 'ok',
          result: { i, token: lease.token },
          attempts: attempt,
          shape: `step:${key}`,
        },
        fx,
      );
    }
    where = terminalOutbox(snap.run) ? 'markTerminal+outbox' : 'markTerminal';
    await store.markTerminal(
      lease.runId,
      { status: 'done', output: { token: lease.token, attempt } },
      terminalOutbox(snap.run),
    );
    onDone(lease.runId, lease.token);
    where = 'ack';
    await queue.ack(lease);
    return 'done';
  } catch (e) {
    e.where = where;
    throw e;
  }
}

/** A worker's acknowledged terminal write, with when it came against its lease's end when known. */
const doneAt = (d) =>
  d.at === undefined
    ? d.worker
    : `${d.worker} (at ${d.at}, ${d.at <= d.expiresAt ? 'within' : 'AFTER'} its lease to ${d.expiresAt})`;

/**
 * What the drain left behind, read through `q(sql)` (`T.run` names the table in the test
 * database; reads must not lag): every list should be empty. `doneBy`: runId -> [{ worker,
 * token }] per acknowledged terminal write; `leasesOf`: runId -> [{ worker, at, expiresAt }] per
 * successful claim (a claim returned before an earlier lease's expiry is a double lease).
 */
export async function judge(q, seeded, doneBy, leasesOf) {
  const rows = await q('SELECT id, name, status, output, parent_run_id AS parent FROM `T.run`');
  const runs = new Map(rows.map((r) => [r.id, r]));
  const stepCounts = new Map(
    (await q('SELECT run_id, COUNT(*) AS n FROM `T.step` GROUP BY run_id')).map((r) => [r.run_id, Number(r.n)]),
  );
  const timers = new Map((await q('SELECT run_id, fire_at FROM `T.timer`')).map((r) => [r.run_id, Number(r.fire_at)]));
  const [{ jobs }] = await q('SELECT COUNT(*) AS jobs FROM `T.job`');

  const notDone = rows.filter((r) => r.status !== 'done').map((r) => `${r.name} ${r.id}: ${r.status}`);
  const doubleLeases = [];
  for (const [id, list] of leasesOf) {
    for (let k = 1; k < list.length; k++) {
      const live = list.slice(0, k).filter((l) => l.expiresAt > list[k].at);
      if (live.length)
        doubleLeases.push(`${runs.get(id)?.name} ${id} by ${live.map((l) => l.worker).join('+')}+${list[k].worker}`);
    }
  }
  // A worker that outlives its lease (its calls held up past the lease's end, no heartbeat) may
  // finish a run that another worker claimed after the lease expired: the contract's own
  // at-least-once, which core prevents by heartbeating. Done twice is a fault when two terminal
  // writes were each acknowledged within their own lease; the others are counted apart.
  const withinLease = (d) => d.at === undefined || d.at <= d.expiresAt;
  const doneTwice = [...doneBy]
    .filter(([, l]) => l.filter(withinLease).length > 1)
    .map(([id, l]) => `${runs.get(id)?.name} ${id} by ${l.map(doneAt).join('+')}`);
  const donePastLease = [...doneBy]
    .filter(([, l]) => l.length > 1 && l.filter(withinLease).length <= 1)
    .map(([id, l]) => `${runs.get(id)?.name} ${id} by ${l.map(doneAt).join('+')}`);
  const wrongOutput = [...doneBy]
    .filter(([id, l]) => l.length === 1 && JSON.parse(runs.get(id)?.output ?? 'null')?.token !== l[0].token)
    .map(([id]) => id);
  const neverDone = rows.filter((r) => !doneBy.has(r.id)).map((r) => `${r.name} ${r.id}`);
  const badSteps = rows
    .filter((r) => stepCounts.get(r.id) !== 3)
    .map((r) => `${r.name} ${r.id}: ${stepCounts.get(r.id) ?? 0} steps`);
  const strayStepRuns = [...stepCounts.keys()].filter((id) => !runs.has(id));
  // Outboxes: each step (or terminal write) that is stored must have brought its rows along.
  const missingOutbox = [];
  for (const id of seeded.parents) {
    const child = runs.get(childOf(id));
    if (stepCounts.get(id) >= 2 && (!child || child.parent !== id || child.status !== 'done'))
      missingOutbox.push(`parent ${id}: child ${child ? child.status : 'missing'}`);
    if (runs.get(id)?.status === 'done' && timers.get(id) === undefined)
      missingOutbox.push(`parent ${id}: terminal timer missing`);
  }
  for (const f of seeded.fanouts) {
    if (!stepCounts.get(f.id)) continue;
    if (runs.get(f.side)?.status !== 'done')
      missingOutbox.push(`fanout ${f.id}: side run ${runs.get(f.side)?.status ?? 'missing'}`);
    if (timers.get(f.id) !== FAR + f.i) missingOutbox.push(`fanout ${f.id}: timer ${timers.get(f.id) ?? 'missing'}`);
  }
  const strayTimers = timers.size - (seeded.parents.length + seeded.fanouts.length);
  return {
    rows,
    jobs: Number(jobs),
    notDone,
    doubleLeases,
    doneTwice,
    donePastLease,
    wrongOutput,
    neverDone,
    badSteps,
    strayStepRuns,
    missingOutbox,
    strayTimers,
  };
}

/**
 * Asserts what `judge` found after a drain under a fault: every run there once and done once,
 * leased once at a time, its output the acknowledged one, its steps and outbox whole, no timer or
 * job left over. A run done without an acknowledged terminal write is allowed only when its
 * `markTerminal` failed with an outcome the worker could not know (`terminalUnknown`: run ids).
 */
export function assertJudged(out, seeded, terminalUnknown, summary) {
  assert.equal(out.rows.length, seeded.expectedRuns, `every run exists, no other (${summary})`);
  assert.deepEqual(out.doubleLeases.slice(0, 20), [], `no run leased twice (${summary})`);
  assert.deepEqual(out.doneTwice.slice(0, 20), [], `no run done twice (${summary})`);
  assert.deepEqual(out.notDone.slice(0, 20), [], `every run done (${summary})`);
  assert.deepEqual(
    out.neverDone.filter((r) => !terminalUnknown.has(r.slice(r.lastIndexOf(' ') + 1))).slice(0, 20),
    [],
    'every stored done came from an acknowledged terminal write, or one whose outcome the worker could not know',
  );
  assert.deepEqual(out.wrongOutput.slice(0, 20), [], "the stored output is the acknowledged write's");
  assert.deepEqual(out.badSteps.slice(0, 20), [], 'exactly 3 step rows per run');
  assert.deepEqual(out.strayStepRuns, [], 'no step rows without a run');
  assert.deepEqual(out.missingOutbox.slice(0, 20), [], 'every outbox complete');
  assert.equal(out.strayTimers, 0, "no timer rows besides the outboxes'");
  assert.equal(out.jobs, 0, 'every job acked');
}

/**
 * How far a drain has come, read through `q` (`T.` names the test database): runs done and jobs
 * left; the previous reading `last` when the read fails (its member may be the one down), and
 * whether every seeded run is done with no job left.
 */
export async function drainProgress(q, seeded, last) {
  let now = last;
  try {
    const [row] = await q(
      "SELECT (SELECT COUNT(*) FROM `T.run` WHERE status = 'done') AS done, (SELECT COUNT(*) FROM `T.job`) AS jobs",
    );
    now = { done: Number(row.done), jobs: Number(row.jobs) };
  } catch {}
  return { ...now, drained: now.done >= seeded.expectedRuns && now.jobs === 0 };
}
