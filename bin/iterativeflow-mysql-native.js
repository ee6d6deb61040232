#!/usr/bin/env node
'use strict';
// iterativeflow-mysql-native <command>: `doctor` (a read-only health check of a database),
// `schema apply` / `schema print`, `--version`. The commands live in lib/cli/. Exit status: 0
// done, 1 a problem with the server or database, 2 a usage error.

let main;
try {
  ({ main } = require('../lib/cli/main'));
} catch (e) {
  process.stderr.write(`iterativeflow-mysql-native: cannot load the package: ${e.message}\n`);
  process.exit(1);
}

main(process.argv.slice(2), { out: process.stdout, err: process.stderr, env: process.env }).then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    process.stderr.write(`iterativeflow-mysql-native: ${e && e.message ? e.message.split('\n')[0] : String(e)}\n`);
    process.exitCode = 1;
  },
);
