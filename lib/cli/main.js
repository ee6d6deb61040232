'use strict';
// The command line (bin/iterativeflow-mysql-native.js): picks the verb and hands it the rest.
// Every verb answers an exit status: 0 done, 1 a problem with the server or database, 2 a usage
// error. `io` is { out, err, env } (process.stdout, process.stderr, process.env), so that tests
// and the verbs share one way to write.
const { version } = require('../../package.json');
const usage = require('./usage');
const { usageError } = usage;

async function main(argv, io) {
  const [command, ...rest] = argv;
  if (command === undefined) return usageError(io, 'no command given');
  if (command === '-h' || command === '--help' || command === 'help') {
    io.out.write(`${usage.TOP}\n`);
    return 0;
  }
  if (command === '--version' || command === '-v' || command === 'version') {
    io.out.write(`iterativeflow-mysql-native ${version}\n`);
    return 0;
  }
  if (command === 'doctor') return require('./doctor').doctor(rest, io);
  if (command === 'schema') return require('./schema').schema(rest, io);
  return usageError(io, `unknown command ${JSON.stringify(command)}`);
}

module.exports = { main };
