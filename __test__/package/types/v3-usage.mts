// The 3.0 contract at the type level: the `/v3` entry's defaults, the main entry's
// `contract: '3.0.0'` overloads, and 3.0 calls that must not compile against an alpha.2 backend.
import { createMysqlBackend as createV2, mysqlPool } from 'iterativeflow-mysql-native';
import {
  applySchema,
  createMysqlBackend,
  inTx,
  type CheckpointResult,
  type MysqlBackend,
  type MysqlBackendV3,
} from 'iterativeflow-mysql-native/v3';

export async function v3Usage(url: string): Promise<void> {
  const sql = mysqlPool(url, { setIsolation: false });
  await applySchema(sql, 'p_', { pendingWork: false });
  const b: MysqlBackendV3 = createMysqlBackend(sql, { prefix: 'p_' });
  const same: MysqlBackendV3 = createV2(sql, { contract: '3.0.0' });
  const old: MysqlBackend = createMysqlBackend(sql, { contract: '2.0.0-alpha.2' });
  void same;
  void old;

  const { runId } = await b.store.startRun({ name: 'f', version: 1, input: null, priority: 3 });
  const memo: CheckpointResult = await b.store.checkpointStep(
    { runId, cursorKey: 's0', status: 'ok', result: 1, attempts: 1, call: 'step:a' },
    { requireVersion: 1, enqueue: [{ runId }] },
  );
  if ('committed' in memo) {
    const fenced: false = memo.committed;
    void fenced;
  } else {
    const call: string | undefined = memo.call;
    void call;
  }
  await b.queue.enqueueMany([{ runId }, { runId, opts: { priority: 1 } }]);
  const leases = await b.queue.claim({ limit: 5, leaseMs: 1000, names: ['f'] });
  const depth = await b.queue.depth(new Date(), ['f']);
  const due: number = await b.timer.dueCount(new Date(), ['f']);
  const next: Date | null = await b.timer.nextDueAt(new Date());
  const deleted: number = await b.store.deleteRuns({ before: new Date(), status: 'done' }, 100);
  const canceled: number = await b.store.cancelRuns({ name: 'f' }, 100);
  const retried: number = await b.store.retryRuns({ tag: 't' }, 100);
  const crons = await b.store.listCrons();
  const removed: boolean = await b.store.removeCron('c');
  const cronsDue: number = await b.store.dueCronCount(new Date());
  await b.store.listRuns({ version: 1 }, { limit: 10 });
  void [leases, depth, due, next, deleted, canceled, retried, crons, removed, cronsDue];

  const order = await inTx(sql, async (backend, tx) => {
    await tx.exec('INSERT INTO orders (id) VALUES (?)', [1]);
    const v3: MysqlBackendV3 = backend;
    return v3.store.startRun({ name: 'fulfil', version: 1, input: { order: 1 } });
  });
  void order;

  const v2 = createV2(sql);
  // @ts-expect-error alpha.2 backends have no enqueueMany
  await v2.queue.enqueueMany([{ runId }]);
  // @ts-expect-error a 3.0 checkpoint names the column `call`, not `shape`
  await b.store.checkpointStep({ runId, cursorKey: 's1', status: 'ok', attempts: 1, shape: 'x' });
  // @ts-expect-error only the two published contracts exist
  createV2(sql, { contract: '2.5.0' });
  // @ts-expect-error setIsolation is a boolean
  mysqlPool(url, { setIsolation: 'no' });
}
