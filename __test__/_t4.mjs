import { startPrivateServer } from './helpers/mariadb.mjs';
const s = await startPrivateServer();
process.env.MYSQL_URL = s.url;
const { adminQuery } = await import('./helpers/db.mjs');
const mode = process.argv[2];
if (mode !== 'noq') console.log((await adminQuery('select 1 as x'))[0]);
await s.stop();
console.log('stopped', process.getActiveResourcesInfo());
setTimeout(() => { console.log(process.getActiveResourcesInfo()); process.exit(5) }, 3000).unref();
