'use strict';
// The command line's help texts, one per verb, the top-level one that lists them, and how a
// usage error is told (the message, then the text; exit status 2).

const DOCTOR = `usage: iterativeflow-mysql-native doctor [url] [options]

Checks, read-only, whether a database is fit for this package's workers.

  url                      mysql://user:password@host:port/database (default: $MYSQL_URL;
                           the environment keeps the password out of the process list)
  --prefix <p>             table prefix (default "")
  --contract <c>           2.0.0-alpha.2 (default) or 3.0.0
  --json                   print the result object as JSON
  --no-set-isolation       check as mysqlPool(x, { setIsolation: false }) would run
  --no-pending-work        under 3.0.0: the pending_work function is not wanted
  --timeout <ms>           bound on connecting (default 5000)
  --color, --no-color      colour the verdicts (default: on a terminal, unless NO_COLOR is set)
  -h, --help               this text

Exit status: 0 ok (no check failed), 1 a check failed, 2 usage error.`;

const SCHEMA = `usage: iterativeflow-mysql-native schema apply [url] [options]
       iterativeflow-mysql-native schema print [options]

  apply                    create the tables (and, under 3.0.0, the pending_work function) where
                           they are missing, upgrade an alpha.2 layout in place under 3.0.0 — what
                           applySchema(sql, prefix, opts) does; safe to run again
  print                    print the same DDL as SQL statements, for a migration tool
                           (no server needed)
  url                      mysql://user:password@host:port/database (default: $MYSQL_URL)
  --prefix <p>             table prefix (default "")
  --contract <c>           2.0.0-alpha.2 (default) or 3.0.0
  --events                 also the opt-in run timeline table (\`event\`)
  --no-pending-work        under 3.0.0: leave out the pending_work function
  --timeout <ms>           apply: bound on connecting (default 5000)
  -h, --help               this text

Exit status: 0 done, 1 the server refused or could not be reached, 2 usage error.`;

const TOP = `usage: iterativeflow-mysql-native <command> [options]

commands:
  doctor [url]             is this database fit for the workers? (read-only)
  schema apply [url]       create or upgrade the tables
  schema print             print the DDL for a migration tool

  --version, -v            print the package version
  -h, --help               this text; <command> --help for a command's options

The URL defaults to $MYSQL_URL (mysql://user:password@host:port/database).`;

/** Writes `message` (if any) and `text` to stderr; answers the usage-error status, 2. */
function usageError(io, message, text = TOP) {
  if (message) io.err.write(`iterativeflow-mysql-native: ${message}\n\n`);
  io.err.write(`${text}\n`);
  return 2;
}

module.exports = { DOCTOR, SCHEMA, TOP, usageError };
