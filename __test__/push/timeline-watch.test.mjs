// watch(runId) over the timeline: a listener in a child process yields the events of a run that an
// engine (with createMysqlEventSink) runs in this process, as they land — the run's first step
// waits until the child has yielded `run.started` — then the run's terminal status, and ends.
// Without the event table the same watcher sees status events only (as before).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import m from '../../index.js';
import { closeAdmin } from '../helpers/db.mjs';
import { createEngine } from '../engine/mini-engine.mjs';
import { forkChild, pushDatabase } from './helpers.mjs';

test.after(closeAdmin);

/** Values the child's watch yields from now until it ends (or `until(value)` holds). */
async function collect(child, until = () => false) {
  const seen = [];
  for (;;) {
    const msg = await child.next('watched', 20_000);
    if (msg.end) return seen;
    seen.push(msg.event);
    if (until(msg.event)) return seen;
  }
}

function engineWith(env, sink, hooks) {
  const e = createEngine(env.backend, { leaseMs: 30_000, observe: sink ? { sink, level: 'all' } : undefined });
  e.register('push', 1, async (c) => {
    await c.step('a', () => hooks.inA());
    await c.step('b', () => 2);
    return 'ok';
  });
  return e;
}

test('watch() in another process yields the run events as they land, then its end', { timeout: 120_000 }, async () => {
  const env = await pushDatabase('tl_watch');
  await m.applySchema(env.sql, '', { events: true });
  const sink = m.createMysqlEventSink(env.sql);
  const child = await forkChild(env.db.url, { PUSH_INTERVAL_MS: '20' });
  try {
    const runId = await env.run();
    child.send({ type: 'watch', runId });
    // the child's stream opens with the run's status (pending) once its first probe answers
    const opening = await child.next('watched', 10_000);
    assert.deepEqual(opening.event, { runId, type: 'status', status: 'pending' });

    let startedSeenLive = false;
    const e = engineWith(env, sink, {
      async inA() {
        // run.started was recorded before this step: the watcher must yield it while we wait here
        const got = await collect(child, (ev) => ev.type === 'run.started');
        startedSeenLive = got.some((ev) => ev.type === 'run.started');
        return 1;
      },
    });
    await env.backend.queue.enqueue(runId);
    for (;;) {
      const r = await e.tickOnce();
      if (r.claimed === 0) break;
    }
    await sink.flush();
    assert.ok(startedSeenLive, 'run.started reached the other process while the run was still in its first step');
    const rest = await collect(child);
    const timeline = rest.filter((ev) => ev.type !== 'status');
    assert.deepEqual(
      timeline.map((ev) => [ev.type, ev.data]),
      [
        ['step.finished', { cursorKey: 's0' }],
        ['step.finished', { cursorKey: 's1' }],
        ['run.completed', undefined],
      ],
    );
    for (const ev of timeline) {
      assert.equal(ev.runId, runId);
      assert.equal(typeof ev.at, 'number');
    }
    const statuses = rest.filter((ev) => ev.type === 'status').map((ev) => ev.status);
    assert.equal(statuses.at(-1), 'done');
    // the stream ends after both the terminal event and the terminal status
    assert.ok(rest.indexOf(timeline.at(-1)) >= 0);

    // A watcher opened after the run ended reads the whole timeline from the start, then ends.
    child.send({ type: 'watch', runId });
    const late = await collect(child);
    assert.deepEqual(
      late.filter((ev) => ev.type !== 'status').map((ev) => ev.type),
      ['run.started', 'step.finished', 'step.finished', 'run.completed'],
    );
    assert.deepEqual(
      late.filter((ev) => ev.type === 'status').map((ev) => ev.status),
      ['done'],
    );
  } finally {
    await child.close();
    await env.close();
  }
});

test('without the event table a watcher sees status events only', { timeout: 120_000 }, async () => {
  const env = await pushDatabase('tl_watch_plain');
  const child = await forkChild(env.db.url, { PUSH_INTERVAL_MS: '20' });
  try {
    const runId = await env.run();
    child.send({ type: 'watch', runId });
    assert.equal((await child.next('watched', 10_000)).event.status, 'pending');
    const e = engineWith(env, undefined, { inA: () => 1 });
    await env.backend.queue.enqueue(runId);
    for (;;) {
      const r = await e.tickOnce();
      if (r.claimed === 0) break;
    }
    const t0 = Date.now();
    const rest = await collect(child);
    assert.ok(
      rest.every((ev) => ev.type === 'status'),
      JSON.stringify(rest),
    );
    assert.equal(rest.at(-1).status, 'done');
    assert.ok(Date.now() - t0 < 1500, 'ended at the terminal status, without the timeline grace');
  } finally {
    await child.close();
    await env.close();
  }
});

test('an event table dropped under an open watch: the probe goes on without it', { timeout: 120_000 }, async () => {
  const env = await pushDatabase('tl_watch_drop');
  await m.applySchema(env.sql, '', { events: true });
  const child = await forkChild(env.db.url, { PUSH_INTERVAL_MS: '20' });
  try {
    const runId = await env.run();
    child.send({ type: 'watch', runId });
    assert.equal((await child.next('watched', 10_000)).event.status, 'pending');
    await env.sql.query('DROP TABLE `event`');
    const e = engineWith(env, undefined, { inA: () => 1 });
    await env.backend.queue.enqueue(runId);
    for (;;) {
      const r = await e.tickOnce();
      if (r.claimed === 0) break;
    }
    const rest = await collect(child);
    assert.equal(rest.at(-1)?.status, 'done', JSON.stringify(rest));
  } finally {
    await child.close();
    await env.close();
  }
});
