#!/usr/bin/env node
// The scale benchmark on its own: how the calls about live work, and the ones that count
// everything, cost as the finished history grows (docs/benchmarks.md, "Cost with history").
//
//   node bench/scale.mjs [--sizes 10000,100000,1000000] [--reps 9] [--servers mariadb,mysql]
//                        [--contracts 2.0.0-alpha.2,3.0.0] [--json out.json] [--no-plans]
//
// Starts a private server of each kind (the test harness's; MySQL needs scripts/mysql-prefix.sh),
// or uses MYSQL_URL's server alone. Measure a release build (npm run build). The same scenario runs
// inside the main bench as `npm run bench -- --only scale`, on the bench's server.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

import { startPrivateServer } from '../__test__/helpers/server.mjs';
import { measureScale } from './scale/measure.mjs';
import { planLines, timeTables } from './scale/report.mjs';

const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string', default: process.env.BENCH_SCALE_SIZES ?? '10000,100000,1000000' },
    reps: { type: 'string', default: process.env.BENCH_SCALE_REPS ?? '9' },
    servers: { type: 'string', default: 'mariadb,mysql' },
    contracts: { type: 'string', default: '2.0.0-alpha.2,3.0.0' },
    json: { type: 'string' },
    'no-plans': { type: 'boolean', default: false },
  },
});
const sizes = args.sizes.split(',').map(Number);
const log = (line) => console.error(line);
const results = [];
const targets = process.env.MYSQL_URL
  ? [{ url: process.env.MYSQL_URL }]
  : args.servers.split(',').map((kind) => ({ kind }));
for (const target of targets) {
  const server = target.url ? undefined : await startPrivateServer({ kind: target.kind });
  try {
    const result = await measureScale({
      url: target.url ?? server.url,
      sizes,
      reps: Number(args.reps),
      serverPid: server?.pid,
      contracts: args.contracts.split(','),
      log,
    });
    results.push(result);
    console.log(timeTables(result));
    if (server) console.log(timeTables(result, 'serverCpuMs'));
    if (!args['no-plans']) console.log(planLines(result));
  } finally {
    await server?.stop();
  }
}
if (args.json) writeFileSync(args.json, `${JSON.stringify({ date: new Date().toISOString(), results }, null, 1)}\n`);
