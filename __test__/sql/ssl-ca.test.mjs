// `ssl.ca` (PEM text) reaches the driver in memory: building and closing pools leaves no file
// behind (each pool used to write one temp file, never removed). Runs in a child process with a
// temp directory of its own, so that nothing else writing there can disturb the count.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const PEM = '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUT2Y=\n-----END CERTIFICATE-----\n';

test('100 pools built with ssl.ca and closed leave no temp file', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ifw-ssl-ca-test-'));
  try {
    const src = `
      const { mysqlPool } = require(${JSON.stringify(path.join(root, 'index.js'))});
      (async () => {
        for (let i = 0; i < 100; i++) {
          const sql = mysqlPool({ host: '127.0.0.1', port: 9, ssl: { ca: ${JSON.stringify(PEM)} } });
          await sql.close();
        }
        console.log('built 100');
      })();
    `;
    const r = spawnSync(process.execPath, ['-e', src], {
      encoding: 'utf8',
      env: { ...process.env, TMPDIR: tmp },
      timeout: 60_000,
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /built 100/);
    assert.deepEqual(fs.readdirSync(tmp), [], 'files left in the temp directory');
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
