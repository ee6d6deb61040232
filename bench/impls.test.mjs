// Unit check of the implementation choice in bench/impls.mjs (not part of npm test):
//   node --test bench/impls.test.mjs
// `--impl` names, the A/B side native-b (only when asked for, and only with its module), and the
// environment it is loaded under coming back afterwards.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { implsWanted, nativeBEnv, withEnv } from './impls.mjs';

test('both means seed, native and floor (no seed without its text), never native-b', () => {
  assert.deepEqual(implsWanted('both', true), ['seed', 'native', 'floor']);
  assert.deepEqual(implsWanted('both', false), ['native', 'floor']);
});

test('a list keeps the report order and refuses unknown names', () => {
  assert.deepEqual(implsWanted('floor, native', true), ['native', 'floor']);
  assert.throws(() => implsWanted('native,mysql2', true), /--impl must be .*native-b/);
  assert.throws(() => implsWanted(' , ', true), /--impl must be/);
});

test('native-b needs BENCH_NATIVE_B_MODULE', async () => {
  await withEnv({ BENCH_NATIVE_B_MODULE: '' }, () => {
    delete process.env.BENCH_NATIVE_B_MODULE;
    assert.throws(() => implsWanted('native,native-b', true), /BENCH_NATIVE_B_MODULE/);
  });
  await withEnv({ BENCH_NATIVE_B_MODULE: '/elsewhere/index.js' }, () => {
    assert.deepEqual(implsWanted('native-b,native', true), ['native', 'native-b']);
  });
});

test('BENCH_NATIVE_B_ENV is NAME=value pairs', () => {
  assert.deepEqual(nativeBEnv(''), {});
  assert.deepEqual(nativeBEnv('IFW_EAGER_POLL=0, IFW_TOKIO_WORKERS=2'), {
    IFW_EAGER_POLL: '0',
    IFW_TOKIO_WORKERS: '2',
  });
  assert.deepEqual(nativeBEnv('A=b=c'), { A: 'b=c' });
  assert.throws(() => nativeBEnv('IFW_EAGER_POLL'), /NAME=value/);
  assert.throws(() => nativeBEnv('=1'), /NAME=value/);
});

test('withEnv sets the variables for its callback only, also when it throws', async () => {
  process.env.IFW_BENCH_PROBE_SET = 'before';
  delete process.env.IFW_BENCH_PROBE_UNSET;
  const seen = await withEnv({ IFW_BENCH_PROBE_SET: 'during', IFW_BENCH_PROBE_UNSET: 'during' }, async () => [
    process.env.IFW_BENCH_PROBE_SET,
    process.env.IFW_BENCH_PROBE_UNSET,
  ]);
  assert.deepEqual(seen, ['during', 'during']);
  assert.equal(process.env.IFW_BENCH_PROBE_SET, 'before');
  assert.equal('IFW_BENCH_PROBE_UNSET' in process.env, false);
  await assert.rejects(
    withEnv({ IFW_BENCH_PROBE_SET: 'during' }, () => {
      throw new Error('boom');
    }),
    /boom/,
  );
  assert.equal(process.env.IFW_BENCH_PROBE_SET, 'before');
  delete process.env.IFW_BENCH_PROBE_SET;
});
