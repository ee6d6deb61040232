// Statements inside one transaction reach the server in the order they were issued, also when
// `fn` does not await each one (the README allows that): for `sql.tx`, and for `inTx` mixing the
// caller's statements with backend units. Each trial's statements observe their own order (an
// insert records how many rows it found; a count before / after a unit), so a statement that
// overtook an earlier one shows. Run in this process (one tokio worker, the default) and in a
// child whose addon runs four (IFW_TOKIO_WORKERS=4), where more of them race.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { useDatabase } from './helpers.mjs';
import { wrapSql } from '../reliability/roundtrip.mjs';
import m from '../../index.js';
import { inTxTrials, prepare, sqlTxTrials } from './fixtures/tx-order.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const CHILD = path.join(here, 'fixtures', 'tx-order.mjs');
/** Transactions per trial kind: in this process (where a race is rarer), and in the child. */
const TRIALS = 150;
const CHILD_TRIALS = 50;
const TO = { timeout: 120_000 };

const ctx = useDatabase('sql_tx_order', { init: ({ sql }) => prepare(sql) });

/** Runs the trials in a child process with `workers` tokio workers; resolves to its report. */
function inChild(workers) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD], {
      env: { ...process.env, TXO_URL: ctx.db.url, TXO_N: String(CHILD_TRIALS), IFW_TOKIO_WORKERS: String(workers) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err = (err + d).slice(-4000)));
    child.once('error', reject);
    child.once('close', (code) => {
      if (code !== 0) reject(new Error(`the child exited with ${code}: ${err}`));
      else resolve(JSON.parse(out.trim().split('\n').pop()));
    });
  });
}

test(`sql.tx: ${TRIALS} transactions of ten un-awaited statements run in issue order`, TO, async () => {
  assert.deepEqual(await sqlTxTrials(ctx.sql, TRIALS, 0), []);
});

test(`inTx: ${TRIALS} transactions mixing statements and backend units run in issue order`, TO, async () => {
  assert.deepEqual(await inTxTrials(ctx.sql, TRIALS, 0), []);
});

test(`inTx over a wrapped Sql: ${TRIALS} such transactions run in issue order`, TO, async () => {
  assert.deepEqual(await inTxTrials(wrapSql(ctx.sql), TRIALS, 2_000_000), []);
});

test(
  'inTx over a wrapped Sql commits only once every statement fn issued (and did not await) has run',
  TO,
  async () => {
    const failures = [];
    for (const [path, over] of [
      ['native', ctx.sql],
      ['wrapped', wrapSql(ctx.sql)],
    ]) {
      const tx = path === 'native' ? 3_000_001 : 3_000_002;
      await m.inTx(over, (b, h) => {
        for (let k = 0; k < 10; k++) {
          h.exec('INSERT INTO item (tx, k, seen) VALUES (?, ?, 0)', [tx, k]).catch((e) =>
            failures.push(`${path}: ${e.message}`),
          );
        }
        b.store
          .startRun({ name: `drained-${path}`, version: 1, input: null })
          .catch((e) => failures.push(`${path}: ${e.message}`));
        // returns at once: nothing above was awaited
      });
      const [{ n }] = await ctx.sql.query('SELECT COUNT(*) AS n FROM item WHERE tx = ?', [tx]);
      assert.equal(Number(n), 10, `${path}: every insert committed with the transaction`);
      const runs = await ctx.sql.query('SELECT COUNT(*) AS n FROM run WHERE name = ?', [`drained-${path}`]);
      assert.equal(Number(runs[0].n), 1, `${path}: the backend call committed with it`);
    }
    assert.deepEqual(failures, []);
  },
);

test('with four tokio workers (a child process) both stay in issue order', TO, async () => {
  const report = await inChild(4);
  assert.deepEqual(report, { sqlTx: [], inTx: [] });
});
