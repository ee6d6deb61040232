// A sparse array with a huge length (`new Array(2 ** 32 - 1)`) passed where a list is expected is
// refused with a RangeError naming the argument, before anything allocates room for its length
// (which aborted the whole process). Each entry point runs in a child process, so that an abort
// shows as a failed test instead of killing the runner.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { freshPool } from './helpers.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Entry points: `[label, argument named in the error, body run with sql, b (3.0), huge]`. */
const CASES = [
  ['claim({ names })', 'opts.names', 'await b.queue.claim({ names: huge, limit: 1, leaseMs: 1000 })'],
  ['enqueueMany', 'requests', 'await b.queue.enqueueMany(huge)'],
  [
    'checkpointStep outbox cancelTimers',
    'outbox.cancelTimers',
    "await b.store.checkpointStep({ runId: 'r', cursorKey: 'k', status: 'ok', attempts: 1 }, { cancelTimers: huge })",
  ],
  ['loadRunRows', 'runIds', 'await b.store.loadRunRows(huge)'],
  ['listRuns status', 'filter.status', 'await b.store.listRuns({ status: huge }, { limit: 1 })'],
  ['a query parameter list', 'params', "await sql.query('SELECT ?', huge)"],
  ['a nested IN (?) list', 'params[0]', "await sql.query('SELECT 1 FROM DUAL WHERE 1 IN (?)', [huge])"],
  ['a bulk VALUES row', 'params[0][0]', "await sql.query('SELECT ?', [[huge]])"],
  ['tx statement parameters', 'params', "await sql.tx((t) => t.query('SELECT ?', huge))"],
];

function child(url, body) {
  const src = `
    const m = require(${JSON.stringify(path.join(root, 'v3.js'))});
    (async () => {
      const sql = m.mysqlPool(${JSON.stringify(url)});
      const b = m.createMysqlBackend(sql);
      const huge = new Array(2 ** 32 - 1);
      try {
        ${body};
        console.log('RESOLVED');
      } catch (e) {
        console.log(JSON.stringify({ name: e.name, kind: e.kind, message: e.message }));
      } finally {
        await sql.close();
      }
    })();
  `;
  return spawnSync(process.execPath, ['-e', src], { encoding: 'utf8', timeout: 60_000 });
}

test(
  'a sparse array of length 2^32-1 is refused at every list argument, the process lives',
  { timeout: 600_000 },
  async (t) => {
    const env = await freshPool('rel_sparse');
    t.after(() => env.close());
    const failures = [];
    for (const [label, arg, body] of CASES) {
      const r = child(env.url, body);
      const line = r.stdout.trim().split('\n').pop() || '';
      let out;
      try {
        out = JSON.parse(line);
      } catch {
        failures.push(
          `${label}: child exited with status ${r.status} signal ${r.signal}, stdout ${JSON.stringify(line)}, stderr ${JSON.stringify(r.stderr.slice(0, 200))}`,
        );
        continue;
      }
      if (out.name !== 'RangeError' || out.kind !== 'argument' || !out.message.includes(arg)) {
        failures.push(`${label}: ${JSON.stringify(out)}`);
      }
    }
    assert.deepEqual(failures, []);
  },
);
