'use strict';
// The isolation checks: what the sessions of this Sql run (the package needs READ COMMITTED)
// and the server default (what setIsolation: false falls back to).
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
            ? 'with setIsolation: false the server default must be READ COMMITTED (transaction_isolation = READ-COMMITTED)'
            : "mysqlPool's setup did not take effect"),
        { session },
      ),
    );
  }
  if (!server) out.push(check('isolation.default', 'warn', 'could not read the server default isolation level'));
  else if (server === RC)
    out.push(
      check('isolation.default', 'ok', 'server default READ COMMITTED (also right for setIsolation: false)', {
        server,
      }),
    );
  else {
    out.push(
      check(
        'isolation.default',
        'warn',
        `server default ${pretty(server)}: fine while mysqlPool sets READ COMMITTED on each connection (the default), ` +
          'but with mysqlPool(x, { setIsolation: false }) (servers that pin connections) the default must be READ COMMITTED',
        { server },
      ),
    );
  }
  return out;
}

module.exports = { isolationChecks };
