// Result typing of Sql.query rows, column type by column type (mysql2's defaults, with BIGINT beyond
// 2^53 as a string so no digit is lost).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { mysqlPool, useDatabase } from './helpers.mjs';

const ctx = useDatabase('sql_types', {
  init: ({ sql }) =>
    sql.query(`CREATE TABLE ty (
    id   INT AUTO_INCREMENT PRIMARY KEY,
    ti   TINYINT NULL,
    si   SMALLINT NULL,
    mi   MEDIUMINT NULL,
    ii   INT NULL,
    iu   INT UNSIGNED NULL,
    bi   BIGINT NULL,
    bu   BIGINT UNSIGNED NULL,
    yr   YEAR NULL,
    de   DECIMAL(20,4) NULL,
    db   DOUBLE NULL,
    fl   FLOAT NULL,
    dt   DATETIME NULL,
    dt3  DATETIME(3) NULL,
    ts3  TIMESTAMP(3) NULL DEFAULT NULL,
    da   DATE NULL,
    vc   VARCHAR(64) NULL,
    vcb  VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    ch   CHAR(4) NULL,
    tx   TEXT NULL,
    lt   LONGTEXT NULL,
    bl   BLOB NULL,
    lb   LONGBLOB NULL,
    vb   VARBINARY(16) NULL,
    bn   BINARY(3) NULL
  ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`),
});

const COLUMNS = [
  'ti',
  'si',
  'mi',
  'ii',
  'iu',
  'bi',
  'bu',
  'yr',
  'de',
  'db',
  'fl',
  'dt',
  'dt3',
  'ts3',
  'da',
  'vc',
  'vcb',
  'ch',
  'tx',
  'lt',
  'bl',
  'lb',
  'vb',
  'bn',
];

test('every column type comes back as the documented JS type', async () => {
  const { insertId } = await ctx.sql.exec(
    `INSERT INTO ty (ti, si, mi, ii, iu, bi, bu, yr, de, db, fl, dt, dt3, da, vc, vcb, ch, tx, lt, bl, lb, vb, bn)
     VALUES (-128, -32768, 8388607, -2147483648, 4294967295, 9007199254740991, 18446744073709551615, 2024,
             '-12345678901234.5678', 2.5, 0.5, '2030-01-02 03:04:05', '2030-01-02 03:04:05.678', '2030-01-02',
             'varchar', 'Bin', 'ch', 'text ✓', 'long text', X'00FF10', X'DEADBEEF', X'0102', X'AABB')`,
  );
  const [row] = await ctx.sql.query(`SELECT ${COLUMNS.join(', ')} FROM ty WHERE id = ?`, [insertId]);
  assert.deepEqual(Object.keys(row), COLUMNS, 'one key per selected column, in select-list order');
  assert.deepEqual(row, {
    ti: -128,
    si: -32768,
    mi: 8388607,
    ii: -2147483648,
    iu: 4294967295,
    bi: 9007199254740991, // still exactly representable: a number
    bu: '18446744073709551615',
    yr: 2024,
    de: '-12345678901234.5678',
    db: 2.5,
    fl: 0.5,
    dt: new Date(Date.UTC(2030, 0, 2, 3, 4, 5)),
    dt3: new Date(Date.UTC(2030, 0, 2, 3, 4, 5, 678)),
    ts3: null,
    da: row.da, // checked below (DATE: only the calendar day is meaningful)
    vc: 'varchar',
    vcb: 'Bin',
    ch: 'ch',
    tx: 'text ✓',
    lt: 'long text',
    bl: Buffer.from([0x00, 0xff, 0x10]),
    lb: Buffer.from([0xde, 0xad, 0xbe, 0xef]),
    vb: Buffer.from([1, 2]),
    bn: Buffer.from([0xaa, 0xbb, 0x00]), // BINARY pads with NUL
  });
  assert.ok(row.da instanceof Date, 'DATE comes back as a Date');
  assert.equal(row.da.toISOString().slice(0, 10), '2030-01-02');
  for (const k of ['ti', 'si', 'mi', 'ii', 'iu', 'bi', 'yr', 'db', 'fl']) assert.equal(typeof row[k], 'number', k);
  for (const k of ['bu', 'de', 'vc', 'vcb', 'ch', 'tx', 'lt']) assert.equal(typeof row[k], 'string', k);
  for (const k of ['bl', 'lb', 'vb', 'bn']) assert.ok(Buffer.isBuffer(row[k]), `${k} is a Buffer`);
});

test('BIGINT: numbers up to 2^53-1 in magnitude, strings beyond', async () => {
  const cases = [
    ['0', 0],
    ['9007199254740991', 9007199254740991],
    ['-9007199254740991', -9007199254740991],
    ['9007199254740992', '9007199254740992'],
    ['9007199254740993', '9007199254740993'],
    ['-9007199254740993', '-9007199254740993'],
    ['9223372036854775807', '9223372036854775807'],
    ['-9223372036854775808', '-9223372036854775808'],
  ];
  for (const [lit, expected] of cases) {
    const { insertId } = await ctx.sql.exec(`INSERT INTO ty (bi) VALUES (${lit})`);
    const [{ bi }] = await ctx.sql.query('SELECT bi FROM ty WHERE id = ?', [insertId]);
    assert.strictEqual(bi, expected, `BIGINT ${lit}`);
  }
  // Computed BIGINT expressions follow the same rule.
  const [r] = await ctx.sql.query('SELECT COUNT(*) AS c, CAST(9007199254740993 AS SIGNED) AS big, 2 + 3 AS small');
  assert.equal(typeof r.c, 'number');
  assert.deepEqual({ big: r.big, small: r.small }, { big: '9007199254740993', small: 5 });
});

test('DECIMAL keeps its exact digits as a string; DOUBLE is a number', async () => {
  const [r] = await ctx.sql.query(
    `SELECT CAST('0.10' AS DECIMAL(10,2)) AS d1, CAST('123456789012345678.9012' AS DECIMAL(30,4)) AS d2,
            SUM(1.5) AS s, CAST(0.1 AS DOUBLE) AS f1, 1e300 AS f2, -0.25e0 AS f3`,
  );
  assert.deepEqual(r, { d1: '0.10', d2: '123456789012345678.9012', s: '1.5', f1: 0.1, f2: 1e300, f3: -0.25 });
});

test('DATETIME and TIMESTAMP come back as Dates (UTC wall clock)', async () => {
  // TIMESTAMP converts through the session time zone: pin it on a private single connection.
  const sql = mysqlPool(`${ctx.db.url}?connectionLimit=1`);
  try {
    const when = new Date(Date.UTC(2031, 6, 8, 9, 10, 11, 123));
    const row = await sql.tx(async (t) => {
      await t.query("SET time_zone = '+00:00'");
      const { insertId } = await t.exec('INSERT INTO ty (dt, dt3, ts3) VALUES (?, ?, ?)', [when, when, when]);
      const [r] = await t.query('SELECT dt, dt3, ts3, NOW() AS now, CURRENT_TIMESTAMP(3) AS cur FROM ty WHERE id = ?', [
        insertId,
      ]);
      return r;
    });
    for (const k of ['dt', 'dt3', 'ts3', 'now', 'cur']) assert.ok(row[k] instanceof Date, `${k} is a Date`);
    assert.equal(row.dt.getTime(), Date.UTC(2031, 6, 8, 9, 10, 11), 'DATETIME (no fraction) truncates ms');
    assert.equal(row.dt3.getTime(), when.getTime());
    assert.equal(row.ts3.getTime(), when.getTime());
    assert.ok(
      Math.abs(row.cur.getTime() - Date.now()) < 60_000,
      `CURRENT_TIMESTAMP near now: ${row.cur.toISOString()}`,
    );
  } finally {
    await sql.close();
  }
});

test('strings (VARCHAR, CHAR, TEXT, binary collation) are strings; BLOB / BINARY are Buffers', async () => {
  const [r] = await ctx.sql.query(
    `SELECT 'abc' AS lit, CONVERT('é' USING utf8mb4) AS conv, CAST('x' AS BINARY) AS bin, X'41' AS hex,
            REPEAT('z', 3) AS rep, CONCAT('a', 1) AS cat`,
  );
  assert.deepEqual(r, { lit: 'abc', conv: 'é', bin: Buffer.from('x'), hex: Buffer.from('A'), rep: 'zzz', cat: 'a1' });
});

test('NULL is null in every column type', async () => {
  const { insertId } = await ctx.sql.exec('INSERT INTO ty () VALUES ()');
  const [row] = await ctx.sql.query(`SELECT ${COLUMNS.join(', ')}, NULL AS lit FROM ty WHERE id = ?`, [insertId]);
  for (const k of [...COLUMNS, 'lit']) assert.strictEqual(row[k], null, k);
});

test('rows are plain objects; duplicate names keep the last; an empty result is []', async () => {
  const [r] = await ctx.sql.query('SELECT 1 AS a, 2 AS a, 3 AS b');
  assert.equal(Object.getPrototypeOf(r), Object.prototype);
  assert.deepEqual(r, { a: 2, b: 3 });
  assert.deepEqual(await ctx.sql.query('SELECT * FROM ty WHERE 1 = 0'), []);
  const many = await ctx.sql.query(
    'SELECT seq FROM (SELECT 1 AS seq UNION ALL SELECT 2 UNION ALL SELECT 3) x ORDER BY seq',
  );
  assert.deepEqual(many, [{ seq: 1 }, { seq: 2 }, { seq: 3 }]);
});
