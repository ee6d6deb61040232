'use strict';
// The expected layouts, parsed from the DDL applySchema runs (src/model/schema.rs), so that they cannot
// drift from what it creates; plus the column-type and default normalisation the actual layout
// (facts.js) goes through too, so that both sides compare alike.
const binding = require('../binding');
const { BASES, V3 } = require('./names');

const INT_TYPES = /^(tinyint|smallint|mediumint|int|integer|bigint)\(\d+\)/;

/** Lower-case column type without integer display widths (`int(11)` = `int`, `tinyint(1)` = `tinyint`). */
function normType(t) {
  return String(t)
    .trim()
    .toLowerCase()
    .replace(INT_TYPES, '$1')
    .replace(/^integer\b/, 'int');
}

const isTextType = (t) => /^(var)?char\b|text$|^enum\b|^set\b/.test(t);

function splitCols(s) {
  return s.split(',').map((x) => x.trim().replace(/^`|`$/g, '').toLowerCase());
}

/** `{ table, engine, columns: Map, indexes: [] }` of one `CREATE TABLE IF NOT EXISTS` statement. */
function parseCreateTable(stmt) {
  const head = /^CREATE TABLE IF NOT EXISTS `([^`]+)` \(\n([\s\S]*)\n\s*\) ENGINE=(\w+)/.exec(stmt);
  if (!head) throw new Error(`doctor: cannot read the expected layout from ${stmt.slice(0, 60)}`);
  const columns = new Map();
  const indexes = [];
  for (const raw of head[2].split('\n')) {
    const line = raw.trim().replace(/,$/, '');
    if (!line) continue;
    let m;
    if ((m = /^PRIMARY KEY \(([^)]+)\)$/.exec(line))) {
      indexes.push({ name: 'PRIMARY', unique: true, columns: splitCols(m[1]) });
    } else if ((m = /^UNIQUE KEY (\w+) \(([^)]+)\)$/.exec(line))) {
      indexes.push({ name: m[1], unique: true, columns: splitCols(m[2]) });
    } else if ((m = /^KEY (\w+) \(([^)]+)\)$/.exec(line))) {
      indexes.push({ name: m[1], unique: false, columns: splitCols(m[2]) });
    } else if ((m = /^(\w+)\s+([A-Za-z]+(?:\(\d+\))?)(.*)$/.exec(line))) {
      const [, name, type, rest] = m;
      const def = /\bDEFAULT\s+('(?:[^']|'')*'|\S+)/i.exec(rest);
      const primary = /\bPRIMARY KEY\b/i.test(rest);
      const col = {
        name: name.toLowerCase(),
        type: normType(type),
        nullable: !(/\bNOT NULL\b/i.test(rest) || primary),
        default: def ? unquoteSql(def[1]) : null,
        autoIncrement: /\bAUTO_INCREMENT\b/i.test(rest),
      };
      col.text = isTextType(col.type);
      columns.set(col.name, col);
      if (primary) indexes.push({ name: 'PRIMARY', unique: true, columns: [col.name] });
      else if (/\bUNIQUE\b/i.test(rest)) indexes.push({ name: col.name, unique: true, columns: [col.name] });
    } else {
      throw new Error(`doctor: unexpected line in the expected layout: ${line}`);
    }
  }
  return { table: head[1], engine: head[3], columns, indexes };
}

function unquoteSql(v) {
  const m = /^'((?:[^']|'')*)'$/s.exec(v);
  return m ? m[1].replace(/''/g, "'") : v;
}

/** The six tables of `contract` for `prefix`, by base name. */
function expectedLayout(prefix, contract) {
  const stmts = binding.ddl(prefix, contract).filter((s) => s.startsWith('CREATE TABLE'));
  const out = {};
  BASES.forEach((base, i) => (out[base] = parseCreateTable(stmts[i])));
  return out;
}

/** The body of `pending_work` as this version creates it (what information_schema stores). */
function expectedFunctionBody(prefix) {
  const text = binding.schemaPlan(prefix, V3).createFunction || '';
  const at = text.indexOf('READS SQL DATA');
  return at < 0 ? text : text.slice(at + 'READS SQL DATA'.length);
}

const squash = (s) => String(s).replace(/\s+/g, ' ').trim();

module.exports = { normType, isTextType, unquoteSql, expectedLayout, expectedFunctionBody, squash };
