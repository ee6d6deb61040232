// The on-disk layout as information_schema describes it, and every row of it: what the schema
// tests compare (a fresh 3.0 layout against an upgraded one, before and after a fault).
// `sql` is any Sql (query); names are those of the connection's current database.

const BASES = ['run', 'step', 'job', 'timer', 'signal', 'cron'];

/** Table names of `prefix`, as information_schema spells them. */
const names = (prefix) => BASES.map((b) => `${prefix}${b}`);

/**
 * Everything information_schema says about the layout of `prefix` in the pool's database:
 * columns (in order, with types, nullability, defaults, charsets), indexes, table options, the
 * `pending_work` routine and its parameters, and SHOW CREATE TABLE texts.
 */
export async function layout(sql, prefix = '') {
  const tablesIn = names(prefix);
  const columns = await sql.query(
    `SELECT TABLE_NAME, COLUMN_NAME, ORDINAL_POSITION, COLUMN_DEFAULT, IS_NULLABLE, COLUMN_TYPE,
            CHARACTER_SET_NAME, COLLATION_NAME, COLUMN_KEY, EXTRA
       FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (?)
      ORDER BY TABLE_NAME, ORDINAL_POSITION`,
    [tablesIn],
  );
  const indexes = await sql.query(
    `SELECT TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, NON_UNIQUE
       FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (?)
      ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX`,
    [tablesIn],
  );
  const options = await sql.query(
    `SELECT TABLE_NAME, ENGINE, TABLE_COLLATION FROM information_schema.TABLES
      WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (?) ORDER BY TABLE_NAME`,
    [tablesIn],
  );
  const routines = await sql.query(
    `SELECT ROUTINE_NAME, ROUTINE_TYPE, DATA_TYPE, DTD_IDENTIFIER, ROUTINE_DEFINITION, SQL_DATA_ACCESS,
            IS_DETERMINISTIC, SECURITY_TYPE
       FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME = ?`,
    [`${prefix}pending_work`],
  );
  const params = await sql.query(
    `SELECT PARAMETER_NAME, ORDINAL_POSITION, DATA_TYPE, DTD_IDENTIFIER FROM information_schema.PARAMETERS
      WHERE SPECIFIC_SCHEMA = DATABASE() AND SPECIFIC_NAME = ? AND ORDINAL_POSITION > 0 ORDER BY ORDINAL_POSITION`,
    [`${prefix}pending_work`],
  );
  const create = {};
  for (const b of BASES) {
    const rows = await sql.query(`SHOW TABLES LIKE ?`, [`${prefix}${b}`]);
    if (rows.length === 0) continue;
    const [row] = await sql.query(`SHOW CREATE TABLE \`${prefix}${b}\``);
    create[b] = row['Create Table'].replace(/ AUTO_INCREMENT=\d+/, '');
  }
  const plain = (rows) => rows.map((r) => ({ ...r }));
  return {
    columns: plain(columns),
    indexes: plain(indexes),
    options: plain(options),
    routines: plain(routines),
    params: plain(params),
    create,
  };
}

/** Column names of one table, in order. */
export function columnsOf(l, table) {
  return l.columns.filter((c) => c.TABLE_NAME === table).map((c) => c.COLUMN_NAME);
}

/** Every row of every table of `prefix`, ordered by primary key. */
export async function dump(sql, prefix = '') {
  const pk = { run: 'id', step: 'run_id, cursor_key', job: 'run_id', timer: 'run_id', signal: 'id', cron: 'name' };
  const out = {};
  for (const b of BASES)
    out[b] = (await sql.query(`SELECT * FROM \`${prefix}${b}\` ORDER BY ${pk[b]}`)).map((r) => ({ ...r }));
  return out;
}
