'use strict';
// The isolation checks: what the sessions of this Sql run (the package needs READ COMMITTED)
// and the server default (what setIsolation: false falls back to). The default is information,
// never a warning of its own: stock servers default to REPEATABLE READ, harmless while mysqlPool
// sets READ COMMITTED on each connection, and with setIsolation: false the `isolation` line
// already fails — one cause, one line.
const { isolationOf } = require('../facts');
const { check } = require('../verdict');

function isolationChecks(f, t) {
  const out = [];
  const session = f.txIsolation || isolationOf(f.session);
  const server = isolationOf(f.global);
  const RC = 'READ-COMMITTED';
  const pretty = (v) => (v ? v.replace(/-/g, ' ') : 'unknown');
  if (!session) out.push(check('isolation', 'warn', 'could not read the session isolation level'));
  else if (session === RC) {
    const how =
      t.setIsolation === false
        ? 'with setIsolation: false, from the server default'
        : "set by mysqlPool's connection setup";
    out.push(
      check(
        'isolation',
        'ok',
        `transactions run READ COMMITTED (${t.native || t.own ? how : 'as this Sql runs them'})`,
        { session },
      ),
    );
  } else if (!t.native && !t.own) {
    out.push(
      check(
        'isolation',
        'warn',
        `this Sql's sessions run ${pretty(session)}; the package needs READ COMMITTED — make sure its tx() sets it (a wrapped Sql may set it per transaction, which the session does not show)`,
        { session },
      ),
    );
  } else {
    out.push(
      check(
        'isolation',
        'fail',
        `transactions run ${pretty(session)}: the package needs READ COMMITTED (its first-writer-wins re-read) — ` +
          (t.setIsolation === false
            ? `with setIsolation: false the server default must be READ COMMITTED — as an administrator, run: ${setDefault(f)}`
            : "mysqlPool's setup did not take effect"),
        { session },
      ),
    );
  }
  if (!server)
    out.push(check('isolation.default', 'ok', 'could not read the server default (only setIsolation: false uses it)'));
  else if (server === RC)
    out.push(
      check('isolation.default', 'ok', 'server default READ COMMITTED (also right for setIsolation: false)', {
        server,
      }),
    );
  else {
    const why =
      t.setIsolation === false
        ? 'which setIsolation: false leaves in force (see isolation)'
        : t.native || t.own
          ? 'not used: mysqlPool sets READ COMMITTED on each connection (only setIsolation: false would fall back to it)'
          : "what this Sql's sessions start with unless it sets the isolation itself (see isolation)";
    out.push(check('isolation.default', 'ok', `server default ${pretty(server)}, ${why}`, { server }));
  }
  return out;
}

/** The statement that makes READ COMMITTED the server default, in this server's dialect. */
function setDefault(f) {
  const name = f.global.transaction_isolation !== undefined ? 'transaction_isolation' : 'tx_isolation';
  return f.maria
    ? `SET GLOBAL ${name} = 'READ-COMMITTED' (and transaction-isolation = READ-COMMITTED in the server configuration)`
    : `SET PERSIST ${name} = 'READ-COMMITTED'`;
}

module.exports = { isolationChecks };
