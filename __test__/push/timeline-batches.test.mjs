// The event sink's batches (docs/timeline.md, "Writing"): an INSERT holds at most what the
// server's max_allowed_packet takes, and one the server refuses is written again in halves, so
// an event too large to write costs only itself — never the events of other runs queued with it.
// On a private server with a 1 MiB packet limit, so that events near it are cheap to make.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import mysql from 'mysql2/promise';
import m from '../../index.js';
import { startPrivateServer } from '../helpers/server.mjs';

const KB = 1024;

/**
 * A private server started with `packet` as its max_allowed_packet, a database `tl` on it with
 * the event table, a pool on it and a root connection; all closed when `t` ends.
 */
async function eventServer(t, packet) {
  const server = await startPrivateServer({ extraArgs: [`--max-allowed-packet=${packet}`] });
  const root = await mysql.createConnection({ uri: server.url });
  await root.query('CREATE DATABASE tl');
  const sql = m.mysqlPool(`${server.url}tl`);
  // Clients first, the server last.
  t.after(async () => {
    await sql.close().catch(() => {});
    await root.end().catch(() => {});
    await server.stop();
  });
  await m.applySchema(sql, '', { events: true });
  return { root, sql };
}

test(
  'events of mixed sizes near max_allowed_packet: each is written but the one that cannot fit',
  { timeout: 120_000 },
  async (t) => {
    const { sql } = await eventServer(t, '1M');
    const errors = [];
    const sink = m.createMysqlEventSink(sql, '', { onError: (e) => errors.push(e) });
    const at = new Date('2030-01-01T00:00:00Z');
    const big = (n) => ({ blob: 'x'.repeat(n) });
    // Small runs' events around two large ones that each fit alone but not together, and one too
    // large for any packet: one batch's worth, recorded in one turn.
    for (let i = 0; i < 10; i++) {
      for (let r = 0; r < 10; r++) sink.record({ runId: `small-${r}`, type: 'step.completed', at, data: { i, r } });
      if (i === 2) sink.record({ runId: 'big-1', type: 'step.completed', at, data: big(600 * KB) });
      if (i === 5) sink.record({ runId: 'big-2', type: 'step.completed', at, data: big(600 * KB) });
      if (i === 7) sink.record({ runId: 'huge', type: 'step.completed', at, data: big(1500 * KB) });
    }
    await sink.flush();
    const stats = sink.stats();
    assert.equal(stats.recorded, 103);
    assert.equal(stats.written, 102, `every event that fits a packet was written (${JSON.stringify(stats)})`);
    assert.equal(stats.failed, 1, 'only the event too large for any packet failed');
    assert.equal(errors.length, 1, 'and it was reported once');
    for (let r = 0; r < 10; r++) {
      const events = await m.listEvents(sql, `small-${r}`);
      assert.deepEqual(
        events.map((e) => e.data.i),
        [...Array(10).keys()],
        `run small-${r} has its ten events, in order`,
      );
    }
    for (const id of ['big-1', 'big-2']) {
      const [ev] = await m.listEvents(sql, id);
      assert.equal(ev?.data.blob.length, 600 * KB, `${id}'s large event is whole`);
    }
    assert.deepEqual(await m.listEvents(sql, 'huge'), []);
  },
);

test(
  'max_allowed_packet lowered while the sink runs: a refused batch is split, no event lost',
  { timeout: 120_000 },
  async (t) => {
    const { root, sql } = await eventServer(t, '64M');
    const errors = [];
    const sink = m.createMysqlEventSink(sql, '', { onError: (e) => errors.push(e) });
    const at = new Date('2030-01-01T00:00:00Z');
    // The sink learns the limit (64 MiB) on its first write.
    sink.record({ runId: 'first', type: 'run.started', at, data: {} });
    await sink.flush();
    // Lowered; connections opened from now on carry 1 MiB: the pool's are closed, so that the
    // next INSERT goes on one of those.
    await root.query('SET GLOBAL max_allowed_packet = 1048576');
    const [ours] = await root.query(
      "SELECT ID AS id FROM information_schema.PROCESSLIST WHERE DB = 'tl' AND ID <> CONNECTION_ID()",
    );
    for (const { id } of ours) await root.query(`KILL ${Number(id)}`).catch(() => {});
    // 200 events of 20 KB in one turn: one batch of ~4 MB as the sink last knew the limit.
    for (let i = 0; i < 200; i++) {
      sink.record({ runId: `r-${i % 10}`, type: 'step.completed', at, data: { i, blob: 'y'.repeat(20 * KB) } });
    }
    await sink.flush();
    const stats = sink.stats();
    assert.equal(stats.failed, 0, `no event failed (${JSON.stringify(stats)}; ${errors.map((e) => e.message)})`);
    assert.equal(stats.written, 201);
    const [[{ n }]] = await root.query('SELECT COUNT(*) AS n FROM tl.event');
    assert.equal(Number(n), 201, 'each event is in the table once');
    // The pool reads the lowered limit again: a statement over it is an argument error before
    // anything is sent, and a small one still runs.
    const big = 'z'.repeat(2 * 1024 * KB);
    await sql.query('SELECT ? AS v', [big]).catch(() => {});
    await assert.rejects(sql.query('SELECT ? AS v', [big]), (e) => {
      assert.equal(e.name, 'RangeError', e.message);
      assert.match(e.message, /max_allowed_packet/);
      return true;
    });
    const [{ v }] = await sql.query('SELECT ? AS v', ['small']);
    assert.equal(v, 'small');
  },
);
