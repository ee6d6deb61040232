'use strict';
// What a failing check tells its reader to run: the CLI command that applies the schema, and the
// GRANT statement an account that may grant runs for an account that lacks a privilege. One home
// for both, so that every check words them alike.
const { V3 } = require('./names');

/** The `schema apply` command for this check's target, prefix and contract. */
function schemaCommand(t) {
  const parts = ['npx iterativeflow-mysql-native schema apply'];
  if (t.commandTarget) parts.push(t.commandTarget);
  if (t.prefix) parts.push(`--prefix ${t.prefix}`);
  if (t.contract === V3) parts.push('--contract 3.0.0');
  if (t.contract === V3 && !t.pendingWork) parts.push('--no-pending-work');
  return parts.join(' ');
}

/** The same from code: `applySchema(sql, "p_", { contract: '3.0.0' })`. */
function schemaCall(t) {
  const opts = [];
  if (t.contract === V3) opts.push("contract: '3.0.0'");
  if (t.contract === V3 && !t.pendingWork) opts.push('pendingWork: false');
  return `applySchema(sql, ${JSON.stringify(t.prefix)}${opts.length ? `, { ${opts.join(', ')} }` : ''})`;
}

/** "run: <command> (or <call> from code)". */
const runSchema = (t) => `run: ${schemaCommand(t)} (or ${schemaCall(t)} from code)`;

/** `'user'@'host'` of a `CURRENT_USER()` value (`user@host`). */
function account(currentUser) {
  const at = currentUser.lastIndexOf('@');
  const user = at < 0 ? currentUser : currentUser.slice(0, at);
  const host = at < 0 ? '%' : currentUser.slice(at + 1);
  const q = (s) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
  return `${q(user)}@${q(host)}`;
}

/** A GRANT of `privs` on the whole database to the current account, to copy. */
function grantStatement(privs, database, currentUser) {
  return `GRANT ${privs.join(', ')} ON \`${database.replace(/`/g, '``')}\`.* TO ${account(currentUser)};`;
}

/** "as an account that may grant (e.g. root): GRANT …". */
const runGrant = (privs, f) =>
  `as an account that may grant (e.g. root), run: ${grantStatement(privs, f.database, f.currentUser)}`;

module.exports = { schemaCommand, schemaCall, runSchema, grantStatement, runGrant, account };
