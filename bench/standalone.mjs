// What the stand-alone benches (push-drain.mjs, timeline.mjs) share: a scratch database on
// MYSQL_URL's server or on a private MariaDB started for the run, the addon, and the median.
import { createRequire } from 'node:module';
import { startPrivateServer } from '../__test__/helpers/server.mjs';
export { median } from './stats.mjs';

const require = createRequire(import.meta.url);
export const m = require('../index.js');

/**
 * A database `bench_<label>_<pid>` made for this run: `pool()` opens a pool on it (each caller
 * closes its own), `close()` drops it and stops the private server if one was started.
 */
export async function scratchDatabase(label) {
  const server = process.env.MYSQL_URL ? undefined : await startPrivateServer();
  const base = process.env.MYSQL_URL ?? server.url;
  const admin = m.mysqlPool(base);
  const name = `bench_${label}_${process.pid}`;
  await admin.query(`CREATE DATABASE \`${name}\``);
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    pool: () => m.mysqlPool(url.toString()),
    async close() {
      await admin.query(`DROP DATABASE IF EXISTS \`${name}\``);
      await admin.close();
      await server?.stop();
    },
  };
}
