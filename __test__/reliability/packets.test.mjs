// A unit of work larger than one max_allowed_packet is split into several packets of the same
// transaction instead of being refused; only a single over-sized value is refused.
import test from 'node:test';
import assert from 'node:assert/strict';
import { freshPool, createMysqlBackend, countAll } from './helpers.mjs';

test(
  'startManyRuns whose inputs add up past max_allowed_packet is sent in several packets, atomically',
  { timeout: 120_000 },
  async (t) => {
    const ctx = await freshPool('packets');
    t.after(() => ctx.close());
    const b = createMysqlBackend(ctx.sql);
    const [{ max }] = await ctx.sql.query('SELECT @@max_allowed_packet AS max');
    const each = Math.floor(max / 4); // four specs fill one packet; 10 need at least three
    const specs = Array.from({ length: 10 }, (_, i) => ({
      name: 'big',
      version: 1,
      input: String(i).repeat(each),
      idempotencyKey: `k${i}`,
    }));
    const before = ctx.sql.stats().roundTrips;
    const out = await b.store.startManyRuns(specs).catch((e) => e);
    assert.ok(Array.isArray(out), `startManyRuns rejected: ${out && out.message}`);
    assert.equal(out.filter((r) => r.created).length, 10);
    assert.ok(ctx.sql.stats().roundTrips - before >= 3, 'split into several round trips');
    const snap = await b.store.loadRun(out[9].runId);
    assert.equal(snap.run.input, '9'.repeat(each));

    // One value alone over the limit: refused, nothing written.
    const rows = await countAll(ctx.sql);
    await assert.rejects(
      b.store.startManyRuns([
        { name: 'ok', version: 1, input: 1 },
        { name: 'huge', version: 1, input: 'x'.repeat(max + 10) },
      ]),
      /max_allowed_packet/,
    );
    assert.deepEqual(await countAll(ctx.sql), rows);
  },
);
