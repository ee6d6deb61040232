// How the examples end on an error: one line saying where (host:port) and why — not a stack —
// for what a user can fix (a server that cannot be reached, a refused login, a malformed URL).
// An error the package did not raise (a bug in an example) keeps its stack.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { describeFailure, whereOf } = require('../lib/cli/terminal.js');
const { configOf } = require('../lib/sql.js');

/**
 * `{ url, where }` of MYSQL_URL — `where` is host:port/database — or, for a URL the package cannot
 * read, a one-line message on stderr and exit status 2.
 */
export function readUrl(name, url) {
  try {
    const cfg = configOf(url);
    return { url, where: `${whereOf(cfg)}${cfg.database ? `/${cfg.database}` : ''}` };
  } catch (e) {
    console.error(`${name}: MYSQL_URL is not usable: ${e.message.replace(/^mysqlPool: /, '')}`);
    process.exit(2);
  }
}

/** Prints how `name` failed on `where`, in one line when the package raised the error. */
export function reportFailure(name, e, where) {
  if (e && typeof e === 'object' && typeof e.kind === 'string') {
    console.error(`${name} failed: ${describeFailure(e, where, 'a call')}`);
  } else {
    console.error(`${name} failed: ${e && e.stack ? e.stack : e}`);
  }
}
