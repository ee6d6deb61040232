'use strict';
// Privileges: SHOW GRANTS lines (or information_schema rows, facts.js) as a small model that
// answers "does this account have PRIV on this table / routine of this database, and at which level".

const IDENT = '(?:`(?:[^`]|``)*`|\\*|[^\\s.`@]+)';
const GRANT_RE = new RegExp(
  `^(GRANT|REVOKE)\\s+(.+?)\\s+ON\\s+(?:(TABLE|FUNCTION|PROCEDURE|PACKAGE BODY|PACKAGE)\\s+)?(${IDENT})(?:\\.(${IDENT}))?\\s+(?:TO|FROM)\\s`,
  'i',
);

const unquoteIdent = (id) => (id.startsWith('`') ? id.slice(1, -1).replace(/``/g, '`') : id);

/** Privilege names of a grant's list; column-level ones (`SELECT (a, b)`) are left out. */
function privileges(list) {
  const out = new Set();
  let depth = 0;
  let cur = '';
  const flush = () => {
    const p = cur.trim().toUpperCase().replace(/\s+/g, ' ');
    cur = '';
    if (!p || p.includes('(')) return; // column-level: not enough for a whole table
    out.add(p === 'ALL' || p === 'ALL PRIVILEGES' ? 'ALL' : p);
  };
  for (const ch of list) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) flush();
    else cur += ch;
  }
  flush();
  return out;
}

/** One SHOW GRANTS line as `{ revoke, privs, level, db, object }`, or null (roles, PROXY, …). */
function parseGrant(line) {
  const m = GRANT_RE.exec(String(line).trim());
  if (!m) return null;
  const [, verb, list, type, first, second] = m;
  const privs = privileges(list);
  let level;
  let db;
  let object;
  if (first === '*' && (second === undefined || second === '*')) level = 'global';
  else if (second === undefined)
    return null; // `ON tbl` relative to a default database: not shown by servers
  else {
    db = unquoteIdent(first);
    if (second === '*') level = 'db';
    else {
      object = unquoteIdent(second);
      level = type && /FUNCTION|PROCEDURE|PACKAGE/i.test(type) ? 'routine' : 'table';
    }
  }
  return { revoke: /^REVOKE$/i.test(verb), privs, level, db, object };
}

/** A database-level grant's name matches `name` (`%` and `_` are wildcards there, `\` escapes). */
function dbMatches(pattern, name, fold) {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === '\\' && i + 1 < pattern.length) re += escapeRe(pattern[++i]);
    else if (ch === '%') re += '.*';
    else if (ch === '_') re += '.';
    else re += escapeRe(ch);
  }
  return new RegExp(`^${re}$`, fold ? 'is' : 's').test(name);
}

const escapeRe = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Privileges that exist only at the global level (`ALL ON db.*` does not include them). */
const GLOBAL_ONLY = new Set([
  'SUPER',
  'PROCESS',
  'RELOAD',
  'SHUTDOWN',
  'FILE',
  'REPLICATION CLIENT',
  'REPLICATION SLAVE',
  'CREATE USER',
  'BINLOG MONITOR',
  'SLAVE MONITOR',
  'READ_ONLY ADMIN',
]);

/** `has(priv, { table?, routine? })` over parsed grants, for database `db`. */
function privilegeModel(grants, db, fold) {
  const eq = (a, b) => (fold ? a.toLowerCase() === b.toLowerCase() : a === b);
  const gives = (g, priv) => !g.revoke && (g.privs.has(priv) || g.privs.has('ALL'));
  const revokedHere = (priv) => grants.some((g) => g.revoke && g.level === 'db' && eq(g.db, db) && g.privs.has(priv));
  return (priv, where = {}) => {
    for (const g of grants) {
      if (!gives(g, priv)) continue;
      if (g.level === 'global' && !revokedHere(priv)) return 'global';
      if (GLOBAL_ONLY.has(priv)) continue;
      if (g.level === 'db' && dbMatches(g.db, db, fold)) return 'database';
      if (g.level === 'table' && where.table && eq(g.db, db) && eq(g.object, where.table)) return 'table';
      if (
        g.level === 'routine' &&
        where.routine &&
        eq(g.db, db) &&
        g.object.toLowerCase() === where.routine.toLowerCase()
      ) {
        return 'routine';
      }
    }
    return null;
  };
}

module.exports = { parseGrant, dbMatches, privilegeModel };
