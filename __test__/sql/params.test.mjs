// Sql.query / Sql.exec parameters: every JS type the native renderer accepts round-trips through a
// real column, lists expand, `?` inside quotes/comments is text, and anything unbindable is refused
// with an error naming the parameter - before anything reaches the server.
//
// The process runs in a far-from-UTC zone so that a renderer using local time would be caught.
process.env.TZ = 'Pacific/Chatham'; // UTC+12:45 / +13:45

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { mysqlPool, settle, useDatabase } from './helpers.mjs';

const ctx = useDatabase('sql_params', {
  init: ({ sql }) =>
    sql.query(`CREATE TABLE p (
    id INT AUTO_INCREMENT PRIMARY KEY,
    s  LONGTEXT NULL,
    i  BIGINT NULL,
    d  DOUBLE NULL,
    b  TINYINT(1) NULL,
    dt DATETIME(3) NULL,
    bl BLOB NULL,
    vb VARBINARY(512) NULL
  ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`),
});

/** Inserts `value` into column `col` of a new row and reads the row back. */
async function roundTrip(col, value) {
  const { insertId } = await ctx.sql.exec(`INSERT INTO p (${col}) VALUES (?)`, [value]);
  assert.ok(insertId > 0, 'insertId of the new row');
  const rows = await ctx.sql.query(`SELECT ${col} AS v, HEX(${col}) AS hex FROM p WHERE id = ?`, [insertId]);
  assert.equal(rows.length, 1);
  return rows[0];
}

const TRICKY_STRINGS = [
  '',
  'plain',
  "it's",
  "''",
  "'",
  'say "hi"',
  'back\\slash',
  '\\',
  "\\'",
  "a\\'; DROP TABLE p; --",
  "'); DROP TABLE p; --",
  'nul\0byte',
  '\0',
  '\\0 is not NUL',
  'ctrl-z \x1a and bell \x07',
  'line\nbreak\r\ttab',
  '  padded  ',
  '😀🎉 emoji 👩‍👩‍👧',
  'שלום עולם',
  'مرحبا بالعالم',
  '\u202Eright-to-left override\u202C',
  'mixed: abc שלום 123 مرحبا',
  '% and _ wildcards',
  'a ? question mark',
  '/* not a comment */ -- nor this # nor this',
  'x'.repeat(70_000),
];

test('strings round-trip byte-exact through a LONGTEXT column', async () => {
  for (const s of TRICKY_STRINGS) {
    const row = await roundTrip('s', s);
    const label = JSON.stringify(s.slice(0, 40));
    assert.equal(row.v, s, `value of ${label}`);
    assert.equal(row.hex, Buffer.from(s, 'utf8').toString('hex').toUpperCase(), `stored bytes of ${label}`);
  }
  // Nothing was injected: the table is still there and holds one row per string.
  const [{ n }] = await ctx.sql.query('SELECT COUNT(*) AS n FROM p WHERE s IS NOT NULL');
  assert.ok(n >= TRICKY_STRINGS.length);
});

test('strings are also correct as bare select-list literals and in comparisons', async () => {
  for (const s of TRICKY_STRINGS.slice(0, -1)) {
    const [row] = await ctx.sql.query('SELECT ? AS v, CHAR_LENGTH(?) AS len, ? = ? AS same', [s, s, s, s]);
    assert.equal(row.v, s);
    assert.equal(row.len, [...s].length, `character count of ${JSON.stringify(s)}`);
    assert.equal(row.same, 1);
  }
});

test('string rendering is safe under NO_BACKSLASH_ESCAPES too', async () => {
  // A dedicated single-connection pool so the session sql_mode cannot leak into other tests.
  const sql = mysqlPool(`${ctx.db.url}?connectionLimit=1`);
  try {
    await sql.tx(async (t) => {
      await t.query("SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')");
      const [{ mode }] = await t.query('SELECT @@SESSION.sql_mode AS mode');
      assert.match(mode, /NO_BACKSLASH_ESCAPES/);
      for (const s of TRICKY_STRINGS.slice(0, -1)) {
        const [row] = await t.query('SELECT ? AS v, HEX(?) AS hex', [s, s]);
        assert.equal(row.v, s, `value of ${JSON.stringify(s)}`);
        assert.equal(row.hex, Buffer.from(s, 'utf8').toString('hex').toUpperCase());
      }
    });
  } finally {
    await sql.close();
  }
});

test('integers and floats round-trip as numbers', async () => {
  const ints = [0, 1, -1, 42, 2 ** 31, -(2 ** 31) - 1, 2 ** 32 + 7, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER];
  for (const n of ints) {
    const row = await roundTrip('i', n);
    assert.equal(row.v, n, `BIGINT ${n}`);
  }
  const floats = [
    0.5,
    -1.25,
    0.1,
    1 / 3,
    Math.PI,
    -Math.E,
    1e-300,
    5e-324,
    1e300,
    1.7976931348623157e308,
    1e20,
    2 ** 60,
    123456.789,
  ];
  for (const f of floats) {
    const row = await roundTrip('d', f);
    assert.equal(row.v, f, `DOUBLE ${f}`);
  }
  // A float parameter compared server-side keeps its full precision.
  const [{ eq }] = await ctx.sql.query('SELECT CAST(? AS DOUBLE) = CAST(? AS DOUBLE) AS eq', [
    0.1 + 0.2,
    0.30000000000000004,
  ]);
  assert.equal(eq, 1);
  // Numbers bind where the grammar wants an integer literal (LIMIT ?).
  const rows = await ctx.sql.query('SELECT id FROM p ORDER BY id LIMIT ?', [2]);
  assert.equal(rows.length, 2);
  const off = await ctx.sql.query('SELECT id FROM p ORDER BY id LIMIT ? OFFSET ?', [1, 1]);
  assert.deepEqual(off, [rows[1]]);
});

test('booleans bind as 1 and 0', async () => {
  assert.equal((await roundTrip('b', true)).v, 1);
  assert.equal((await roundTrip('b', false)).v, 0);
  const [row] = await ctx.sql.query('SELECT ? IS TRUE AS t, ? IS FALSE AS f, ? + 0 AS n', [true, false, true]);
  assert.deepEqual(row, { t: 1, f: 1, n: 1 });
});

test('null and undefined bind as SQL NULL and come back as null', async () => {
  for (const v of [null, undefined]) {
    for (const col of ['s', 'i', 'd', 'dt', 'bl']) {
      const row = await roundTrip(col, v);
      assert.strictEqual(row.v, null, `${col} <- ${v}`);
      assert.strictEqual(row.hex, null);
    }
  }
  const [row] = await ctx.sql.query('SELECT ? IS NULL AS a, ? IS NULL AS b, ? AS c, ? AS d', [
    null,
    undefined,
    null,
    undefined,
  ]);
  assert.deepEqual(row, { a: 1, b: 1, c: null, d: null });
});

test('Dates are rendered as UTC DATETIME and read back equal to the millisecond', async () => {
  assert.notEqual(new Date(0).getTimezoneOffset(), 0, 'the test process runs off UTC');
  const dates = [
    new Date(Date.UTC(2030, 0, 1, 0, 0, 0, 123)),
    new Date(Date.UTC(1999, 11, 31, 23, 59, 59, 999)),
    new Date(Date.UTC(2024, 1, 29, 12, 30, 45, 1)), // leap day
    new Date(Date.UTC(2038, 0, 19, 3, 14, 8, 0)), // past the 32-bit epoch
    new Date(Date.UTC(1969, 11, 31, 23, 59, 59, 999)), // before 1970 (negative epoch ms)
    new Date(Date.UTC(1000, 0, 1, 0, 0, 0, 0)), // DATETIME's minimum
    new Date(Date.UTC(9999, 11, 31, 23, 59, 59, 999)), // and maximum
    new Date(Date.UTC(2030, 5, 15, 14, 3, 9, 50)), // local-date != UTC-date in +12:45
  ];
  for (const d of dates) {
    const { insertId } = await ctx.sql.exec('INSERT INTO p (dt) VALUES (?)', [d]);
    const [row] = await ctx.sql.query(
      "SELECT dt, DATE_FORMAT(dt, '%Y-%m-%dT%H:%i:%s.%f') AS text FROM p WHERE id = ?",
      [insertId],
    );
    assert.ok(row.dt instanceof Date, `${d.toISOString()} comes back as a Date`);
    assert.equal(row.dt.getTime(), d.getTime(), `${d.toISOString()} round-trips`);
    // What the server stored is the UTC wall-clock time.
    assert.equal(row.text.slice(0, 23), d.toISOString().slice(0, 23), 'stored as UTC');
  }
  // Comparisons against a Date parameter happen in UTC too.
  const d = new Date(Date.UTC(2030, 0, 1, 0, 0, 0, 123));
  const [{ n }] = await ctx.sql.query('SELECT COUNT(*) AS n FROM p WHERE dt = ?', [d]);
  assert.ok(n >= 1);
  const [{ s }] = await ctx.sql.query('SELECT CAST(? AS CHAR) AS s', [new Date(Date.UTC(2031, 2, 4, 5, 6, 7, 89))]);
  assert.match(s, /^2031-03-04 05:06:07\.089/);
});

test('Buffers go into BLOB / VARBINARY and come back as identical Buffers', async () => {
  const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  const samples = [
    all,
    Buffer.alloc(0),
    Buffer.from([0]),
    Buffer.from([0x27, 0x5c, 0x00, 0x22]), // ' \ NUL "
    Buffer.from([0xff, 0xfe, 0xc3, 0x28]), // not valid UTF-8
    Buffer.from('plain ascii text'),
  ];
  for (const col of ['bl', 'vb']) {
    for (const buf of samples) {
      const row = await roundTrip(col, buf);
      assert.ok(Buffer.isBuffer(row.v), `${col} comes back as a Buffer`);
      assert.ok(row.v.equals(buf), `${col} <- ${buf.toString('hex').slice(0, 24)}`);
      assert.equal(row.hex, buf.toString('hex').toUpperCase());
    }
  }
  const [{ len }] = await ctx.sql.query('SELECT LENGTH(?) AS len', [all]);
  assert.equal(len, 256);
});

test('BigInt within int64 binds exactly', async () => {
  const cases = [
    [0n, 0],
    [123n, 123],
    [-456n, -456],
    [BigInt(Number.MAX_SAFE_INTEGER), Number.MAX_SAFE_INTEGER],
    [2n ** 53n + 1n, '9007199254740993'],
    [9223372036854775807n, '9223372036854775807'],
    [-9223372036854775808n, '-9223372036854775808'],
  ];
  for (const [big, expected] of cases) {
    const row = await roundTrip('i', big);
    assert.strictEqual(row.v, expected, `BIGINT <- ${big}n`);
    const [{ s }] = await ctx.sql.query('SELECT CAST(? AS CHAR) AS s', [big]);
    assert.equal(s, String(big));
  }
});

test('arrays expand for IN (?)', async () => {
  await ctx.sql.exec('DELETE FROM p');
  const ids = [];
  for (const s of ['alpha', 'beta', 'gamma', "o'neil", 'x\\y']) {
    ids.push((await ctx.sql.exec('INSERT INTO p (s, i) VALUES (?, ?)', [s, ids.length])).insertId);
  }
  const byId = await ctx.sql.query('SELECT s FROM p WHERE id IN (?) ORDER BY id', [[ids[0], ids[2], ids[4]]]);
  assert.deepEqual(
    byId.map((r) => r.s),
    ['alpha', 'gamma', 'x\\y'],
  );
  const byText = await ctx.sql.query('SELECT id FROM p WHERE s IN (?) ORDER BY id', [["o'neil", 'beta', 'nope']]);
  assert.deepEqual(
    byText.map((r) => r.id),
    [ids[1], ids[3]],
  );
  // Mixed with scalar parameters on both sides.
  const mixed = await ctx.sql.query('SELECT s FROM p WHERE i >= ? AND s IN (?) AND i < ? ORDER BY id', [
    1,
    ['alpha', 'beta', 'gamma', "o'neil"],
    3,
  ]);
  assert.deepEqual(
    mixed.map((r) => r.s),
    ['beta', 'gamma'],
  );
  // A one-element list, and an empty list (matches nothing, like mysql2's `IN (NULL)`).
  assert.deepEqual(await ctx.sql.query('SELECT s FROM p WHERE id IN (?)', [[ids[1]]]), [{ s: 'beta' }]);
  assert.deepEqual(await ctx.sql.query('SELECT s FROM p WHERE id IN (?)', [[]]), []);
  // NOT IN with a list
  const rest = await ctx.sql.query('SELECT s FROM p WHERE s NOT IN (?) ORDER BY id', [['alpha', 'beta']]);
  assert.deepEqual(
    rest.map((r) => r.s),
    ['gamma', "o'neil", 'x\\y'],
  );
});

test('nested arrays expand for a bulk INSERT ... VALUES ?', async () => {
  await ctx.sql.exec('DELETE FROM p');
  const when = new Date(Date.UTC(2030, 0, 2, 3, 4, 5, 6));
  const res = await ctx.sql.exec('INSERT INTO p (s, i, d, dt, bl) VALUES ?', [
    [
      ['one', 1, 1.5, when, Buffer.from([1, 2])],
      ["two's", null, -0.25, null, null],
      ['three\\', 3n, 0, when, Buffer.alloc(0)],
    ],
  ]);
  assert.equal(res.affectedRows, 3);
  const rows = await ctx.sql.query('SELECT s, i, d, dt, bl FROM p ORDER BY id');
  assert.deepEqual(rows, [
    { s: 'one', i: 1, d: 1.5, dt: when, bl: Buffer.from([1, 2]) },
    { s: "two's", i: null, d: -0.25, dt: null, bl: null },
    { s: 'three\\', i: 3, d: 0, dt: when, bl: Buffer.alloc(0) },
  ]);
  // A bulk insert with a single row and with other parameters around it.
  await ctx.sql.exec('INSERT INTO p (s, i) VALUES ? ON DUPLICATE KEY UPDATE i = ?', [[['four', 4]], 99]);
  assert.deepEqual(await ctx.sql.query('SELECT i FROM p WHERE s = ?', ['four']), [{ i: 4 }]);
});

test('? inside quoted strings, identifiers and comments is not a placeholder', async () => {
  const text = [
    "SELECT '?' AS a,",
    '"?" AS b,',
    "'it''s ?' AS c,",
    "'back\\'?' AS d,",
    '? AS `q?`, /* ? ? */',
    '? AS e -- a comment with ?',
    '# another ? comment',
    '',
  ].join('\n');
  const [row] = await ctx.sql.query(text, ['first', 'second']);
  assert.deepEqual(row, { a: '?', b: '?', c: "it's ?", d: "back'?", 'q?': 'first', e: 'second' });
  // The same text with a wrong count is refused, so only the two real holes count.
  await assert.rejects(ctx.sql.query(text, ['only one']), /placeholder/i);
  await assert.rejects(ctx.sql.query(text, ['a', 'b', 'c']), /placeholder/i);
  // A parameter value containing ? is data, never re-scanned for placeholders.
  const [r2] = await ctx.sql.query('SELECT ? AS a, ? AS b', ['?', "'?'"]);
  assert.deepEqual(r2, { a: '?', b: "'?'" });
});

const BAD_PARAMS = [
  ['NaN', NaN],
  ['Infinity', Infinity],
  ['-Infinity', -Infinity],
  ['a plain object', { a: 1 }],
  ['an empty object', {}],
  ['a function', () => 1],
  ['a Symbol', Symbol('s')],
  ['an invalid Date', new Date(NaN)],
  ['a BigInt above int64', 2n ** 63n],
  ['a BigInt below int64', -(2n ** 63n) - 1n],
];

test('unbindable parameters reject (not throw) with an error naming params[i]; nothing runs', async () => {
  await ctx.sql.exec('DELETE FROM p');
  for (const [what, bad] of BAD_PARAMS) {
    for (const method of ['query', 'exec']) {
      let promise;
      assert.doesNotThrow(() => {
        promise = ctx.sql[method]('INSERT INTO p (s, i, d) VALUES (?, ?, ?)', ['ok', bad, 1]);
      }, `${method} with ${what} returns a promise`);
      await assert.rejects(promise, (e) => {
        assert.ok(e instanceof Error);
        assert.match(e.message, /params\[1\]/, `${method}(${what}): ${e.message}`);
        return true;
      });
    }
  }
  // Inside a nested list, the path names the element.
  await assert.rejects(ctx.sql.query('SELECT 1 FROM p WHERE id IN (?)', [[1, NaN]]), /params\[0\]\[1\]/);
  await assert.rejects(
    ctx.sql.exec('INSERT INTO p (s, i) VALUES ?', [
      [
        ['a', 1],
        ['b', { x: 1 }],
      ],
    ]),
    /params\[0\]\[1\]\[1\]/,
  );
  const [{ n }] = await ctx.sql.query('SELECT COUNT(*) AS n FROM p');
  assert.equal(n, 0, 'no statement with a bad parameter reached the server');
});

test('a wrong placeholder count rejects', async () => {
  const cases = [
    ['SELECT ?, ?', [1]],
    ['SELECT ?', [1, 2]],
    ['SELECT ?', []],
    ['SELECT ?', undefined],
    ['SELECT 1', [1]],
  ];
  for (const [text, params] of cases) {
    for (const method of ['query', 'exec']) {
      await assert.rejects(
        ctx.sql[method](text, params),
        /placeholder|param/i,
        `${method}(${text}, ${JSON.stringify(params)})`,
      );
    }
  }
  // No placeholders and no (or empty) params is fine.
  assert.deepEqual(await ctx.sql.query('SELECT 1 AS one', []), [{ one: 1 }]);
  assert.deepEqual(await ctx.sql.query('SELECT 1 AS one'), [{ one: 1 }]);
});

test('the transaction handle checks parameters the same way', async () => {
  await ctx.sql.exec('DELETE FROM p');
  await assert.rejects(
    ctx.sql.tx(async (t) => {
      await t.exec('INSERT INTO p (s) VALUES (?)', ['kept?']);
      await t.query('SELECT ?', [NaN]);
    }),
    /params\[0\]/,
  );
  await assert.rejects(
    ctx.sql.tx((t) => t.query('SELECT ?, ?', [1])),
    /placeholder/i,
  );
  const [{ n }] = await ctx.sql.query('SELECT COUNT(*) AS n FROM p');
  assert.equal(n, 0, 'the failed transaction was rolled back');
  // Inside a tx, arrays and Dates work as on the pool.
  const d = new Date(Date.UTC(2030, 0, 1, 1, 2, 3, 4));
  const rows = await ctx.sql.tx(async (t) => {
    await t.exec('INSERT INTO p (s, dt) VALUES ?', [
      [
        ['a', d],
        ['b', d],
      ],
    ]);
    return t.query('SELECT s, dt FROM p WHERE s IN (?) ORDER BY s', [['a', 'b']]);
  });
  assert.deepEqual(rows, [
    { s: 'a', dt: d },
    { s: 'b', dt: d },
  ]);
});

test('a bad parameter on the transaction handle rejects instead of throwing', async () => {
  const thrown = await ctx.sql.tx(async (t) => {
    const out = [];
    for (const method of ['query', 'exec']) {
      try {
        const p = t[method]('SELECT ?', [NaN]);
        await assert.rejects(p, /params\[0\]/);
      } catch (e) {
        out.push(`t.${method}: ${e.message}`);
      }
    }
    return out;
  });
  assert.deepEqual(thrown, [], 'the tx handle must return rejected promises, as the pool does');
});

test('a string with a backslash works where the grammar needs a plain string literal', async () => {
  // mysql2 renders these as quoted strings ('d\\_'), which every string-literal position accepts.
  const rows = await ctx.sql.query('SHOW TABLES LIKE ?', ['p\\_%']);
  assert.deepEqual(rows, []);
  const vars = await ctx.sql.query('SHOW VARIABLES LIKE ?', ['max\\_allowed\\_packet']);
  assert.equal(vars.length, 1);
  assert.deepEqual(await ctx.sql.query('CREATE TEMPORARY TABLE tcomment (a INT) COMMENT ?', ['a\\b']), []);
});

test('a non-array params argument and a non-string text are refused', async () => {
  const r1 = await settle(() => ctx.sql.query('SELECT ?', 1));
  assert.equal(r1.ok, false);
  assert.match(r1.error.message, /array/i);
  const r2 = await settle(() => ctx.sql.query(42));
  assert.equal(r2.ok, false);
});
