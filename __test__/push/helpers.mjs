// Shared bits of the push tests: a database with the schema, children (fixtures/child.mjs)
// driven over IPC, and a plain backend (no listener) to enqueue and finish runs with.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import m from '../../index.js';
import { freshDatabase } from '../helpers/db.mjs';

const CHILD = fileURLToPath(new URL('./fixtures/child.mjs', import.meta.url));

/**
 * A fresh database with the 2.0.0-alpha.2 schema and a pool + backend on it: a plain backend, or
 * with `{ ring: true }` one given a listener (never started: it only rings, as a submitter's does).
 */
export async function pushDatabase(label, url, { ring = false } = {}) {
  const db = url ? { url, drop: async () => {} } : await freshDatabase(label);
  const sql = m.mysqlPool(db.url);
  await m.applySchema(sql);
  const listener = ring ? m.createMysqlListener(sql) : undefined;
  const backend = m.createMysqlBackend(sql, listener ? { listener } : {});
  return {
    db,
    sql,
    backend,
    /** A new pending run, not enqueued. */
    async run(name = 'push') {
      const { runId } = await backend.store.startRun({ name, version: 1, input: 1 });
      return runId;
    },
    listener,
    async close() {
      await listener?.close();
      await sql.close();
      await db.drop();
    },
  };
}

/**
 * Forks fixtures/child.mjs on `url` (env: PUSH_OFF, PUSH_INTERVAL_MS). `next(type, ms)` resolves
 * the next message of that type (rejects after `ms`); `send(msg)`; `close()` ends the child.
 */
export async function forkChild(url, env = {}) {
  const child = fork(CHILD, [], {
    env: { ...process.env, PUSH_URL: url, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const inbox = [];
  const wanted = [];
  let failure;
  const deliver = () => {
    for (let i = 0; i < wanted.length; i++) {
      const w = wanted[i];
      const k = inbox.findIndex((msg) => msg.type === w.type);
      if (k >= 0) {
        wanted.splice(i--, 1);
        clearTimeout(w.timer);
        w.resolve(inbox.splice(k, 1)[0]);
      } else if (failure) {
        wanted.splice(i--, 1);
        clearTimeout(w.timer);
        w.reject(failure);
      }
    }
  };
  child.on('message', (msg) => {
    if (msg.type === 'error') failure = new Error(`push child: ${msg.message}`);
    inbox.push(msg);
    deliver();
  });
  child.on('exit', (code) => {
    failure ??= new Error(`push child exited with code ${code}`);
    deliver();
  });
  const handle = {
    child,
    next(type, ms = 30_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no '${type}' from the push child within ${ms} ms`)), ms);
        wanted.push({ type, resolve, reject, timer });
        deliver();
      });
    },
    send: (msg) => child.send(msg),
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((r) => child.once('exit', r));
      child.send({ type: 'close' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await gone;
      clearTimeout(timer);
    },
  };
  handle.ready = await handle.next('ready');
  return handle;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Forks a listening child (its env: `childEnv`) on a fresh database made by pushDatabase (with a
 * listener that rings when `ring`), runs `body(env, child)`, and closes both whatever happens.
 */
export async function withChild(label, body, { childEnv = {}, ring = false } = {}) {
  const env = await pushDatabase(label, undefined, { ring });
  const child = await forkChild(env.db.url, childEnv);
  try {
    if (child.ready.state !== 'listening') throw new Error(`child started in state ${child.ready.state}`);
    await body(env, child);
  } finally {
    await child.close();
    await env.close();
  }
}

/** The ways to make claimable work that a push test's waiter must hear of: a plain enqueue, an
 * outbox spawn (work made inside a Rust unit), and a timer falling due (no enqueue at all). */
export const WAYS = {
  'queue.enqueue': async ({ backend, run }) => backend.queue.enqueue(await run()),
  'a spawn in a checkpoint outbox': async ({ backend, run }) => {
    const parent = await run();
    await backend.store.checkpointStep(
      { runId: parent, cursorKey: 's0', status: 'ok', result: 'c', attempts: 1, shape: 'invoke:push@1' },
      { spawn: [{ runId: `${parent}-c`, spec: { name: 'push', version: 1, input: 2, parentRunId: parent } }] },
    );
  },
  'a timer falling due': async ({ backend, run }) => backend.timer.schedule(await run(), new Date(Date.now() + 300)),
};
