// Connections a node can no longer serve leave the pool (issue #24, point 2).
//
// A server turned read-only (`SET GLOBAL read_only = 1`, as a managed service's failover does to
// yesterday's primary) answers every write with errno 1290; a connection that got that answer
// is closed, not handed out again — on a single-host pool too, through each path a connection
// goes back to the pool by: a pooled statement, a transaction, a backend unit. The user is one
// without SUPER / READ ONLY ADMIN, else read_only would not apply to it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import mysql from 'mysql2/promise';
import { startPrivateServer } from '../helpers/server.mjs';
import { applySchema, createAppUser, createMysqlBackend, mysqlPool } from './helpers.mjs';

let server;
let root;
let url;

before(async () => {
  server = await startPrivateServer();
  root = await mysql.createConnection({ uri: server.url });
  const app = await createAppUser(root, 'ro', 'ro_app');
  url = `mysql://${app}@127.0.0.1:${server.port}/ro?connectionLimit=1`;
  const setup = mysqlPool(url);
  await applySchema(setup);
  await setup.exec('CREATE TABLE w (id INT PRIMARY KEY)');
  await setup.close();
});
after(async () => {
  if (root) await root.end().catch(() => {});
  if (server) await server.stop();
});

async function readOnly(on) {
  await root.query(`SET GLOBAL read_only = ${on ? 1 : 0}`);
}

async function connectionId(sql) {
  const [{ id }] = await sql.query('SELECT CONNECTION_ID() AS id');
  return Number(id);
}

/** Runs `write` on a read-only server: it must fail with 1290 and take its connection along. */
async function writeOnReadOnly(sql, write) {
  const before = await connectionId(sql);
  assert.equal(sql.stats().pool.open, 1, 'one connection open before the write');
  await readOnly(true);
  try {
    await assert.rejects(write(), (e) => e.errno === 1290 && e.kind === 'server', 'the write fails with 1290');
  } finally {
    await readOnly(false);
  }
  // With connectionLimit 1 a connection given back would be the one the next call gets (the
  // pool's count drops only once its recycler task has closed a discarded one, so that count
  // is not what is checked).
  const after = await connectionId(sql);
  assert.notEqual(after, before, 'the next call runs on a new connection');
}

test('a pooled statement answered 1290 (read-only) leaves the pool', { timeout: 60_000 }, async () => {
  const sql = mysqlPool(url);
  try {
    await writeOnReadOnly(sql, () => sql.exec('INSERT INTO w VALUES (1)'));
  } finally {
    await sql.close();
  }
});

test('a transaction answered 1290 (read-only) does not give its connection back', { timeout: 60_000 }, async () => {
  const sql = mysqlPool(url);
  try {
    await writeOnReadOnly(sql, () => sql.tx((t) => t.exec('INSERT INTO w VALUES (2)')));
  } finally {
    await sql.close();
  }
});

test('a backend unit answered 1290 (read-only) does not give its connection back', { timeout: 60_000 }, async () => {
  const sql = mysqlPool(url);
  try {
    const b = createMysqlBackend(sql);
    await writeOnReadOnly(sql, () => b.store.startRun({ name: 'ro', version: 1, input: {} }));
    await writeOnReadOnly(sql, () => b.queue.enqueue('00000000-0000-0000-0000-000000000000'));
  } finally {
    await sql.close();
  }
});
