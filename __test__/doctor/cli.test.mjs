// The command line (bin/iterativeflow-mysql-native.js, lib/cli/): `doctor` (one line per check,
// --json, colour only on request or a terminal, exit 0 / 1 / 2), `schema apply` and `schema print`
// (both contracts, a prefix, the timeline table), `--version`, and that the password never shows.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

import { adminQuery, closeAdmin } from '../helpers/db.mjs';
import { PASSWORD_USER } from '../helpers/server.mjs';
import {
  BASES,
  TO,
  V3,
  assertHealthy,
  byName,
  cli,
  closedPort,
  database,
  doctor,
  m,
  v3,
  withUser,
} from './helpers.mjs';

const require = createRequire(import.meta.url);
const { version } = require('../../package.json');
const ESC = '\u001b[';

after(() => closeAdmin());

const noPassword = (...outs) => {
  for (const out of outs) {
    assert.ok(
      !out.stdout.includes(PASSWORD_USER.password) && !out.stderr.includes(PASSWORD_USER.password),
      'no password',
    );
  }
};

test('--version prints the package version; help and usage errors', async () => {
  for (const flag of ['--version', '-v']) {
    const r = await cli([flag]);
    assert.equal(r.code, 0);
    assert.equal(r.stdout, `iterativeflow-mysql-native ${version}\n`);
  }
  const help = await cli(['--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /doctor \[url\][\s\S]*schema apply \[url\][\s\S]*schema print[\s\S]*--version/);
  assert.equal((await cli([])).code, 2, 'no command');
  assert.equal((await cli(['frobnicate'])).code, 2);
  assert.equal((await cli(['schema'])).code, 2);
  assert.equal((await cli(['schema', 'drop'])).code, 2);
  const dh = await cli(['doctor', '--help']);
  assert.equal(dh.code, 0);
  assert.match(dh.stdout, /usage: iterativeflow-mysql-native doctor/);
  assert.match((await cli(['schema', '--help'])).stdout, /usage: iterativeflow-mysql-native schema apply/);
});

test(
  'doctor on a healthy 3.0 database: exit 0, one line per check, no warning; --json prints the object',
  TO,
  async () => {
    const d = await database('cli');
    try {
      await v3.applySchema(d.sql, 'p_');
      const url = withUser(d.db.url, PASSWORD_USER.user, PASSWORD_USER.password);
      const r = await cli(['doctor', url, '--prefix', 'p_', '--contract', '3.0.0']);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      const lines = r.stdout.trim().split('\n');
      assert.equal(
        lines[0],
        `iterativeflow-mysql-native doctor: ${PASSWORD_USER.user}@${new URL(url).host}/${d.db.database} (prefix "p_", contract 3.0.0)`,
      );
      const n = lines.length - 2;
      assert.equal(lines.at(-1), `verdict: OK (${n} ok, 0 warn, 0 fail)`);
      for (const l of lines.slice(1, -1)) assert.match(l, /^ {2}ok {4}[a-z_.-]+ +\S/, l);
      assert.ok(lines.some((l) => /^ {2}ok {4}layout +the 3\.0\.0 layout$/.test(l)));
      assert.ok(!r.stdout.includes(ESC), 'no colour when not on a terminal');

      const j = await cli(['doctor', '--json', '--prefix=p_', '--contract=3.0.0'], { env: { MYSQL_URL: url } });
      assert.equal(j.code, 0);
      const obj = JSON.parse(j.stdout);
      assertHealthy(obj);
      assert.equal(obj.checks.length, n);
      assert.deepEqual(Object.keys(obj.checks[0]).sort(), ['detail', 'name', 'value', 'verdict']);
      noPassword(r, j);
    } finally {
      await d.done();
    }
  },
);

test('colour: on with --color or FORCE_COLOR, off with NO_COLOR or --no-color', TO, async () => {
  const d = await database('color');
  try {
    await m.applySchema(d.sql);
    const env = { MYSQL_URL: d.db.url };
    const green = `${ESC}32mok  ${ESC}0m`;
    assert.ok((await cli(['doctor', '--color'], { env })).stdout.includes(green));
    assert.ok((await cli(['doctor'], { env: { ...env, FORCE_COLOR: '1' } })).stdout.includes(green));
    assert.ok(!(await cli(['doctor', '--color', '--no-color'], { env })).stdout.includes(ESC));
    assert.ok(!(await cli(['doctor'], { env: { ...env, FORCE_COLOR: '1', NO_COLOR: '1' } })).stdout.includes(ESC));
    const fail = await cli(['doctor', '--color', '--prefix', 'none_'], { env });
    assert.ok(fail.stdout.includes(`${ESC}31mFAIL${ESC}0m`));
    assert.match(fail.stdout, new RegExp(`verdict: \\u001b\\[31mFAIL\\u001b\\[0m`));
  } finally {
    await d.done();
  }
});

test(
  'doctor on an empty database: one FAIL line with the exact command; running it makes doctor exit 0',
  TO,
  async () => {
    const d = await database('cli_empty');
    try {
      const env = { MYSQL_URL: withUser(d.db.url, PASSWORD_USER.user, PASSWORD_USER.password) };
      const r = await cli(['doctor', '--prefix', 'app_', '--contract', '3.0.0'], { env });
      assert.equal(r.code, 1, r.stdout + r.stderr);
      const fails = r.stdout.split('\n').filter((l) => /^ {2}FAIL/.test(l));
      assert.equal(fails.length, 1, r.stdout);
      assert.doesNotMatch(r.stdout, /WARN/);
      const cmd = 'npx iterativeflow-mysql-native schema apply --prefix app_ --contract 3.0.0';
      assert.ok(fails[0].includes(`run: ${cmd} (`), fails[0]);
      assert.match(r.stdout, /verdict: FAIL \(\d+ ok, 0 warn, 1 fail\)/);
      // The command, as printed (with the same MYSQL_URL), fixes it.
      const applied = await cli(cmd.split(' ').slice(2), { env });
      assert.equal(applied.code, 0, applied.stdout + applied.stderr);
      assert.match(applied.stdout, /^ok: the 3\.0\.0 schema is in place on 127\.0\.0\.1:\d+\/\S+ \(prefix "app_"\)\n$/);
      const after = await cli(['doctor', '--prefix', 'app_', '--contract', '3.0.0'], { env });
      assert.equal(after.code, 0, after.stdout);
      // With the URL as an argument, the command names it — with PASSWORD for the password.
      const arg = await cli(['doctor', env.MYSQL_URL, '--prefix', 'other_']);
      assert.ok(
        arg.stdout.includes(
          `schema apply mysql://${PASSWORD_USER.user}:PASSWORD@${new URL(d.db.url).host}/${d.db.database} --prefix other_`,
        ),
        arg.stdout,
      );
      noPassword(r, applied, after, arg);
    } finally {
      await d.done();
    }
  },
);

test('doctor: drift and an unreachable server exit 1; usage errors exit 2', TO, async () => {
  const d = await database('cli_fail');
  try {
    await v3.applySchema(d.sql);
    await d.sql.query('ALTER TABLE job MODIFY lease_token VARCHAR(64)');
    const url = withUser(d.db.url, PASSWORD_USER.user, PASSWORD_USER.password);
    const drift = await cli(['doctor', url, '--contract', '3.0.0']);
    assert.equal(drift.code, 1, drift.stdout + drift.stderr);
    assert.match(
      drift.stdout,
      /\n {2}FAIL {2}table\.job +column lease_token is varchar\(64\), expected varchar\(191\) — /,
    );
    assert.match(drift.stdout, /\nverdict: FAIL \(\d+ ok, 0 warn, 1 fail\)\n$/);

    const port = await closedPort();
    const downUrl = `mysql://${PASSWORD_USER.user}:${PASSWORD_USER.password}@127.0.0.1:${port}/x`;
    const down = await cli(['doctor', downUrl, '--timeout', '1000']);
    assert.equal(down.code, 1);
    assert.ok(down.ms < 5000, `${down.ms} ms`);
    assert.match(
      down.stdout,
      /FAIL {2}connection +cannot connect to or query iterflow@127\.0\.0\.1:\d+\/x: .*refused/i,
    );
    assert.match(down.stdout, /verdict: FAIL \(0 ok, 0 warn, 1 fail\)/);
    const downJson = await cli(['doctor', downUrl, '--json']);
    assert.equal(downJson.code, 1);
    assert.equal(JSON.parse(downJson.stdout).checks.length, 1);
    noPassword(drift, down, downJson);

    assert.equal((await cli(['doctor', url, '--contract', '4'])).code, 2);
    assert.equal((await cli(['doctor'])).code, 2, 'no URL and no MYSQL_URL');
    assert.equal((await cli(['doctor', url, '--bogus'])).code, 2);
    const bad = await cli(['doctor', 'mysql://x@[::1/db']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^iterativeflow-mysql-native: mysqlPool: the connection string is not a valid URL/);
    assert.doesNotMatch(bad.stderr, /\n\s+at /, 'no stack');
  } finally {
    await d.done();
  }
});

test(
  'schema print: the DDL of each contract, prefix and option, as ddl() gives it; the printed file sets a database up',
  TO,
  async () => {
    const cases = [
      [[], m.ddl('')],
      [['--prefix', 'p_'], m.ddl('p_')],
      [['--contract', '3.0.0', '--prefix', 'q_'], m.ddl('q_', V3)],
      [['--contract', '3.0.0', '--events'], m.ddl('', { ...V3, events: true })],
      [['--contract', '3.0.0', '--no-pending-work'], m.ddl('', V3).filter((s) => !/FUNCTION/.test(s))],
    ];
    for (const [args, want] of cases) {
      const r = await cli(['schema', 'print', ...args]);
      assert.equal(r.code, 0, r.stderr);
      const body = r.stdout.replace(/^(--[^\n]*\n)+\n/, '');
      assert.equal(body, `${want.map((s) => `${s};`).join('\n\n')}\n`, args.join(' '));
      assert.match(r.stdout, /^-- iterativeflow-mysql-native \S+: schema for contract /);
    }
    assert.equal((await cli(['schema', 'print', '--prefix', 'a-b'])).code, 2);
    assert.equal((await cli(['schema', 'print', 'mysql://x/y'])).code, 2, 'print takes no URL');

    // A migration tool runs the file as it is: the doctor then finds a healthy 3.0 database.
    const d = await database('print');
    try {
      const file = (await cli(['schema', 'print', '--contract', '3.0.0', '--prefix', 'mt_'])).stdout;
      await adminQuery(`USE \`${d.db.database}\`; ${file}`);
      assertHealthy(await doctor.checkDatabase(d.sql, 'mt_', V3));
    } finally {
      await d.done();
    }
  },
);

test(
  'schema apply: both contracts, a prefix, the timeline table; again is harmless; an unreachable server is one line',
  TO,
  async () => {
    const d = await database('apply');
    try {
      const env = { MYSQL_URL: d.db.url };
      let r = await cli(['schema', 'apply', '--prefix', 'a_'], { env });
      assert.equal(r.code, 0, r.stderr);
      assertHealthy(await doctor.checkDatabase(d.sql, 'a_'));
      // Upgrade in place to 3.0, with the timeline table.
      r = await cli(['schema', 'apply', d.db.url, '--prefix', 'a_', '--contract', '3.0.0', '--events']);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /the 3\.0\.0 schema with the run timeline table is in place/);
      assertHealthy(await doctor.checkDatabase(d.sql, 'a_', V3));
      const [{ n }] = await d.sql.query(
        "SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'a_event'",
      );
      assert.equal(Number(n), 1);
      r = await cli(['schema', 'apply', '--prefix', 'a_', '--contract', '3.0.0'], { env });
      assert.equal(r.code, 0, 'again: nothing to do, no error');
      for (const b of BASES)
        assert.equal(byName(await doctor.checkDatabase(d.sql, 'a_', V3))[`table.${b}`].verdict, 'ok');

      const port = await closedPort();
      const down = await cli([
        'schema',
        'apply',
        `mysql://someone:Secret-Pw-9@127.0.0.1:${port}/x`,
        '--timeout',
        '1000',
      ]);
      assert.equal(down.code, 1);
      assert.match(
        down.stderr,
        new RegExp(`^iterativeflow-mysql-native: cannot connect to 127\\.0\\.0\\.1:${port}/x: .*\\n$`),
      );
      assert.doesNotMatch(down.stderr, /Secret-Pw-9|\n\s+at /);
      assert.equal((await cli(['schema', 'apply', urlNoDb(d.db.url)])).code, 2, 'a URL without a database');
    } finally {
      await d.done();
    }
  },
);

const urlNoDb = (url) => {
  const u = new URL(url);
  u.pathname = '/';
  return u.toString();
};
