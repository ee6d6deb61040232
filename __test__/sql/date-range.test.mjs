// A Date parameter whose year a DATETIME cannot hold is refused with a RangeError naming the
// parameter, before anything is sent. The wire format's year is 16 bits: year 67560 used to be
// sent as 2024 and stored as a valid 2024 DATETIME, year -1 as 65535.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { useDatabase } from './helpers.mjs';

const ctx = useDatabase('sql_date_range', {
  init: ({ sql }) => sql.query('CREATE TABLE d (id INT PRIMARY KEY, at DATETIME(3) NULL) ENGINE=InnoDB'),
});

/** A Date in UTC year `year` (Date.UTC reads 0..99 as 19xx, setUTCFullYear does not). */
function inYear(year) {
  const d = new Date(Date.UTC(2000, 5, 15, 12, 30, 45, 678));
  d.setUTCFullYear(year);
  return d;
}

test('years outside 0..9999 are refused for query, exec and tx statements; years 0..9999 are stored exactly', async () => {
  for (const year of [67560, 10000, -1, -271821, 275759]) {
    const d = inYear(year);
    for (const [how, run] of [
      ['query', () => ctx.sql.query('SELECT ? AS d', [d])],
      ['exec', () => ctx.sql.exec('INSERT INTO d (id, at) VALUES (?, ?)', [1, d])],
      ['tx', () => ctx.sql.tx((t) => t.exec('INSERT INTO d (id, at) VALUES (?, ?)', [2, d]))],
      ['list', () => ctx.sql.query('SELECT 1 AS one FROM DUAL WHERE ? IN (?)', [1, [1, d]])],
    ]) {
      await assert.rejects(
        run(),
        (e) => e instanceof RangeError && e.kind === 'argument' && /params\[1\]|params\[0\]/.test(e.message),
        `${how}: year ${year} is refused`,
      );
    }
  }
  assert.deepEqual(await ctx.sql.query('SELECT COUNT(*) AS n FROM d'), [{ n: 0 }], 'nothing was written');
  // The first and last years a DATETIME holds are stored exactly.
  for (const [id, year] of [
    [10, 9999],
    [11, 1000],
    [12, 0],
  ]) {
    const d = inYear(year);
    await ctx.sql.exec('INSERT INTO d (id, at) VALUES (?, ?)', [id, d]);
    const [row] = await ctx.sql.query("SELECT DATE_FORMAT(at, '%Y-%m-%d %H:%i:%s.%f') AS s FROM d WHERE id = ?", [id]);
    assert.equal(row.s, `${String(year).padStart(4, '0')}-06-15 12:30:45.678000`, `year ${year}`);
  }
});
