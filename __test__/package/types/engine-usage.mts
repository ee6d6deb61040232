// A TypeScript consumer of the package (ESM, named imports), type-checked by
// __test__/package/types.test.mjs with `tsc --noEmit --strict`. Never executed.
//
// It uses the whole public surface the way the iterativeflow engine does, and assigns the
// backend to a `Backend` interface written independently here from docs/contract.md §2–§6, so that
// index.d.ts is checked for structural compatibility with core, not against itself. Lines marked
// `@ts-expect-error` must stay errors (tsc fails on an unused directive).
import {
  applySchema,
  createMysqlBackend,
  ddl,
  mysqlPool,
  tables,
  type ClaimOpts,
  type CronRow,
  type CronSpec,
  type DeliveredSignal,
  type EnqueueOpts,
  type EnqueueRequest,
  type FlowError,
  type IdGen,
  type Lease,
  type MysqlBackend,
  type MysqlBackendOpts,
  type NativeSql,
  type Outbox,
  type Page,
  type PoolOptions,
  type PoolSource,
  type PoolStats,
  type Queue,
  type QueueDepth,
  type RunFilter,
  type RunPage,
  type RunRow,
  type RunSnapshot,
  type RunSpec,
  type RunStatus,
  type SpawnRequest,
  type Sql,
  type SqlParam,
  type SslOptions,
  type StartResult,
  type StepCheckpoint,
  type StepOutcome,
  type StepStatus,
  type Store,
  type SuspendStatus,
  type TerminalOutcome,
  type Timer,
  type TimerDueOpts,
  type TimerRequest,
  type Wakeup,
  type WriteResult,
} from 'iterativeflow-mysql-native';

// ---- core's side, written from docs/contract.md §1.1, §2 and §3–§6 -------------------------

namespace Core {
  export type RunStatus =
    | 'pending'
    | 'running'
    | 'sleeping'
    | 'awaiting_signal'
    | 'awaiting_child'
    | 'retrying'
    | 'done'
    | 'failed'
    | 'canceled';
  export type SuspendStatus = 'sleeping' | 'awaiting_signal' | 'awaiting_child' | 'retrying';
  export type StepStatus = 'ok';
  export interface FlowError {
    code: string;
    message: string;
    stack?: string;
  }
  export interface RunSpec {
    name: string;
    version: number;
    input: unknown;
    idempotencyKey?: string;
    tags?: readonly string[];
    parentRunId?: string;
    parentCursorKey?: string;
    depth?: number;
    createdAt?: Date;
  }
  export interface StartResult {
    runId: string;
    created: boolean;
    status: RunStatus;
  }
  export interface RunRow {
    id: string;
    name: string;
    version: number;
    status: RunStatus;
    input: unknown;
    attempts: number;
    output?: unknown;
    error?: FlowError;
    idempotencyKey?: string;
    tags?: readonly string[];
    parentRunId?: string;
    parentCursorKey?: string;
    depth?: number;
    createdAt?: Date;
  }
  export interface StepOutcome {
    status: StepStatus;
    result?: unknown;
    error?: FlowError;
    attempts: number;
    shape?: string;
  }
  export interface StepCheckpoint extends StepOutcome {
    runId: string;
    cursorKey: string;
  }
  export interface DeliveredSignal {
    id: string;
    name: string;
    payload: unknown;
  }
  export interface RunSnapshot {
    run: RunRow;
    steps: ReadonlyMap<string, StepOutcome>;
    signals: readonly DeliveredSignal[];
  }
  export interface RunFilter {
    status?: RunStatus | readonly RunStatus[];
    name?: string;
    tag?: string;
  }
  export interface Page {
    limit: number;
    cursor?: string;
  }
  export interface RunPage {
    runs: readonly RunRow[];
    cursor?: string;
  }
  export interface CronSpec {
    name: string;
    schedule: string;
    flowName: string;
    flowVersion: number;
    input?: unknown;
    overlap?: 'allow' | 'skip';
    nextRunAt: Date;
  }
  export interface CronRow {
    name: string;
    schedule: string;
    flowName: string;
    flowVersion: number;
    input: unknown;
    overlap: 'allow' | 'skip';
    nextRunAt: Date;
    lastRunAt?: Date;
  }
  export type TerminalOutcome =
    | { status: 'done'; output: unknown }
    | { status: 'failed'; error: FlowError }
    | { status: 'canceled'; error?: FlowError };
  export interface EnqueueOpts {
    runAt?: Date;
    priority?: number;
  }
  export interface ClaimOpts {
    limit: number;
    leaseMs: number;
    now?: Date;
  }
  export interface Lease {
    runId: string;
    token: string;
    expiresAt: Date;
    version: number;
  }
  export interface QueueDepth {
    claimable: number;
    leased: number;
    oldestClaimableAgeMs: number | null;
  }
  export interface TimerDueOpts {
    now?: Date;
    limit: number;
  }
  export interface SpawnRequest {
    runId: string;
    spec: RunSpec;
    enqueue?: EnqueueOpts;
  }
  export interface EnqueueRequest {
    runId: string;
    opts?: EnqueueOpts;
  }
  export interface TimerRequest {
    runId: string;
    fireAt: Date;
  }
  export interface Outbox {
    spawn?: readonly SpawnRequest[];
    enqueue?: readonly EnqueueRequest[];
    timers?: readonly TimerRequest[];
    cancelTimers?: readonly string[];
    consumeSignals?: readonly string[];
    joinTarget?: { runId: string; count: number };
  }
  export interface Store {
    startRun(spec: RunSpec): Promise<StartResult>;
    startManyRuns(specs: readonly RunSpec[]): Promise<StartResult[]>;
    loadRun(runId: string): Promise<RunSnapshot | undefined>;
    loadRunRow(runId: string): Promise<RunRow | undefined>;
    loadRunRows(runIds: readonly string[]): Promise<(RunRow | undefined)[]>;
    arriveAtJoin(parentRunId: string): Promise<number | undefined>;
    postSignal(
      runId: string,
      name: string,
      payload: unknown,
      opts?: { idempotencyKey?: string },
    ): Promise<{ delivered: boolean }>;
    markRunning(runId: string): Promise<number>;
    checkpointStep(c: StepCheckpoint, fx?: Outbox): Promise<StepOutcome>;
    suspendRun(runId: string, status: SuspendStatus, fx?: Outbox): Promise<void>;
    markTerminal(runId: string, outcome: TerminalOutcome, fx?: Outbox): Promise<void>;
    listRuns(filter: RunFilter, page: Page): Promise<RunPage>;
    childrenOf(runId: string): Promise<RunRow[]>;
    runStats(): Promise<Record<RunStatus, number>>;
    orphanedRuns(limit: number): Promise<string[]>;
    deleteRunsOlderThan(before: Date, limit: number): Promise<number>;
    retryRun(runId: string): Promise<{ retried: boolean }>;
    upsertCron(spec: CronSpec): Promise<void>;
    dueCrons(now: Date, limit: number): Promise<CronRow[]>;
    advanceCron(name: string, expectedNextRunAt: Date, nextRunAt: Date, lastRunAt: Date): Promise<boolean>;
  }
  export interface Queue {
    enqueue(runId: string, opts?: EnqueueOpts): Promise<void>;
    claim(opts: ClaimOpts): Promise<Lease[]>;
    heartbeat(lease: Lease, opts: { leaseMs: number; now?: Date }): Promise<Lease>;
    ack(lease: Lease, opts?: { now?: Date }): Promise<void>;
    depth(now: Date): Promise<QueueDepth>;
    /** Optional push hook of core's interface; the MySQL backend does not provide it. */
    waitForWork?(timeoutMs: number): Promise<void>;
  }
  export interface Timer {
    schedule(runId: string, fireAt: Date): Promise<void>;
    dueBatch(opts: TimerDueOpts): Promise<string[]>;
    cancel(runId: string): Promise<void>;
  }
  export interface Wakeup {
    wait(runId: string, timeoutMs: number): Promise<void>;
    signal(runId: string): Promise<void>;
  }
  export interface Backend {
    readonly store: Store;
    readonly queue: Queue;
    readonly timer: Timer;
    readonly wakeup: Wakeup;
  }

  // §1.1: what core and users hand to the package.
  export interface WriteResult {
    affectedRows: number;
    insertId: number;
  }
  export interface Sql {
    query<R = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<R[]>;
    exec(text: string, params?: readonly unknown[]): Promise<WriteResult>;
    tx<T>(fn: (t: Sql) => Promise<T>): Promise<T>;
  }
  export type IdGen = () => string;
  export interface MysqlBackendOpts {
    prefix?: string;
    id?: IdGen;
  }
}

// ---- type-level equivalences (exported names ⇔ core's shapes) ----------------------------------

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function same<A, B>(_proof: Equal<A, B>): void {}

same<RunStatus, Core.RunStatus>(true);
same<SuspendStatus, Core.SuspendStatus>(true);
same<StepStatus, Core.StepStatus>(true);
same<FlowError, Core.FlowError>(true);
same<RunSpec, Core.RunSpec>(true);
same<StartResult, Core.StartResult>(true);
same<RunRow, Core.RunRow>(true);
same<StepOutcome, Core.StepOutcome>(true);
same<StepCheckpoint, Core.StepCheckpoint>(true);
same<DeliveredSignal, Core.DeliveredSignal>(true);
same<RunSnapshot, Core.RunSnapshot>(true);
same<RunFilter, Core.RunFilter>(true);
same<Page, Core.Page>(true);
same<RunPage, Core.RunPage>(true);
same<CronSpec, Core.CronSpec>(true);
same<CronRow, Core.CronRow>(true);
same<TerminalOutcome, Core.TerminalOutcome>(true);
same<EnqueueOpts, Core.EnqueueOpts>(true);
same<ClaimOpts, Core.ClaimOpts>(true);
same<Lease, Core.Lease>(true);
same<QueueDepth, Core.QueueDepth>(true);
same<TimerDueOpts, Core.TimerDueOpts>(true);
same<SpawnRequest, Core.SpawnRequest>(true);
same<EnqueueRequest, Core.EnqueueRequest>(true);
same<TimerRequest, Core.TimerRequest>(true);
same<Outbox, Core.Outbox>(true);
same<WriteResult, Core.WriteResult>(true);
same<IdGen, Core.IdGen>(true);
same<MysqlBackendOpts, Core.MysqlBackendOpts>(true);

// Structural compatibility both ways where core hands values in or takes them out.
const asCoreStore = (s: Store): Core.Store => s;
const asCoreQueue = (q: Queue): Core.Queue => q;
const asCoreTimer = (t: Timer): Core.Timer => t;
const asCoreWakeup = (w: Wakeup): Core.Wakeup => w;
const asCoreBackend = (b: MysqlBackend): Core.Backend => b;
const fromCoreSql = (s: Core.Sql): Sql => s;
const toCoreSql = (s: Sql): Core.Sql => s;
const nativeIsSql = (s: NativeSql): Core.Sql => s;
void [asCoreStore, asCoreQueue, asCoreTimer, asCoreWakeup, asCoreBackend, fromCoreSql, toCoreSql, nativeIsSql];

// ---- the package surface, used the way users and the engine use it --------------------------

// mysqlPool: a URL, an options object; the result is an Sql with close/closed/stats.
const byUrl: NativeSql = mysqlPool('mysql://app:secret@127.0.0.1:3306/app?connectionLimit=4');
const ssl: SslOptions = { ca: ['-----BEGIN CERTIFICATE-----'], rejectUnauthorized: true, verifyIdentity: false };
const options: PoolOptions = {
  host: '127.0.0.1',
  port: 3306,
  user: 'app',
  password: 'secret',
  database: 'app',
  connectionLimit: 10,
  acquireTimeoutMs: 5_000,
  ssl,
};
const byOptions = mysqlPool(options);
const byUrlOption = mysqlPool({ url: 'mysql://127.0.0.1/app', ssl: true });
// As a mysql2 user writes it: uri, connectTimeout, and mysql2 options at the values taken here.
const asMysql2 = mysqlPool({
  uri: 'mysql://app:secret@127.0.0.1:3306/app',
  connectTimeout: 5_000,
  waitForConnections: true,
  charset: 'utf8mb4',
  timezone: 'Z',
  supportBigNumbers: true,
  idleTimeout: 30_000,
  enableKeepAlive: true,
  ssl: { ca: Buffer.from('pem'), cert: 'pem', key: 'pem', servername: 'db.internal' },
});
const source: PoolSource = 'mysql://127.0.0.1/app';
const sql: Sql = mysqlPool(source);
void [byOptions, byUrlOption, asMysql2];

// A user-supplied Sql (e.g. a logging wrapper) is accepted anywhere the package wants one.
const logging: Core.Sql = {
  query: (text, params) => sql.query(text, params),
  exec: (text, params) => sql.exec(text, params),
  tx: (fn) => sql.tx((t) => fn(t)),
};

const params: SqlParam[] = ['a', 1, 2n, true, null, undefined, new Date(), Buffer.from('x'), [1, 2]];
void params;

async function main(): Promise<void> {
  // Schema.
  const statements: string[] = ddl();
  const prefixed: string[] = ddl('app_');
  await applySchema(sql);
  await applySchema(logging, 'app_');
  const t = tables('');
  const names: string[] = [t.run, t.step, t.job, t.timer, t.signal, t.cron];
  void [statements, prefixed, names];

  // Raw SQL through the Sql interface (typed rows, write results, transactions).
  const rows = await sql.query<{ n: number }>(`SELECT COUNT(*) AS n FROM ${t.run} WHERE status = ?`, ['done']);
  const n: number = rows[0]!.n;
  const w: WriteResult = await sql.exec(`DELETE FROM ${t.timer} WHERE run_id = ?`, ['x']);
  const affected: number = w.affectedRows + w.insertId;
  const inTx: number = await sql.tx(async (tx) => {
    await tx.exec(`UPDATE ${t.job} SET priority = ? WHERE run_id = ?`, [1, 'x']);
    return tx.tx(async (same) => (await same.query<{ one: number }>('SELECT 1 AS one'))[0]!.one);
  });
  void [n, affected, inTx];

  // Backends: on the native pool, on a wrapped Sql, with options.
  const newId: IdGen = () => `id-${Math.random()}`;
  const opts: MysqlBackendOpts = { prefix: 'app_', id: newId };
  const backend: Core.Backend = createMysqlBackend(sql);
  const wrapped: MysqlBackend = createMysqlBackend(logging, opts);
  void wrapped;

  await engineLikeUsage(backend);

  // Pool lifecycle.
  const stats: PoolStats = byUrl.stats();
  const trips: number = stats.roundTrips + stats.deadlockRetries;
  const closed: boolean = byUrl.closed;
  await byUrl.close();
  void [trips, closed];

  wrongUsage(createMysqlBackend(sql), byUrl);
}

/** core's calls (docs/contract.md §11), made through core's own `Backend` type. */
async function engineLikeUsage({ store, queue, timer, wakeup }: Core.Backend): Promise<void> {
  const now = new Date();

  // submit / submitMany
  const started: Core.StartResult = await store.startRun({
    name: 'greet',
    version: 1,
    input: { who: 'ann' },
    idempotencyKey: 'k',
    depth: 0,
    createdAt: now,
  });
  if (started.created) await queue.enqueue(started.runId, { runAt: now, priority: 0 });
  const many = await store.startManyRuns([
    { name: 'greet', version: 1, input: null, tags: ['a', 'b'] },
    { name: 'greet', version: 1, input: 1, parentRunId: started.runId, parentCursorKey: 's0', depth: 1 },
  ]);
  await Promise.all(many.filter((r) => r.created).map((r) => queue.enqueue(r.runId)));

  // tickOnce
  const due: string[] = await timer.dueBatch({ now, limit: 20 });
  await Promise.all(due.map((id) => queue.enqueue(id)));
  const leases: Core.Lease[] = await queue.claim({ limit: 20, leaseMs: 30_000, now });
  for (const lease of leases) {
    const snap = await store.loadRun(lease.runId);
    if (!snap) {
      await queue.ack(lease);
      continue;
    }
    const { run, steps, signals } = snap;
    const status: Core.RunStatus = run.status;
    if (status === 'done' || status === 'failed' || status === 'canceled') {
      await queue.ack(lease, { now });
      continue;
    }
    if (run.parentRunId !== undefined) {
      const parent = await store.loadRunRow(run.parentRunId);
      if (parent?.status === 'failed') {
        await store.markTerminal(run.id, { status: 'canceled' }, { cancelTimers: [run.id] });
      }
    }
    const attempt: number = await store.markRunning(run.id);
    const memo: Core.StepOutcome | undefined = steps.get('s0');
    const result: unknown = memo
      ? memo.result
      : (
          await store.checkpointStep({
            runId: run.id,
            cursorKey: 's0',
            status: 'ok',
            result: { x: 1 },
            attempts: attempt,
            shape: 'step:a',
          })
        ).result;
    const signal: Core.DeliveredSignal | undefined = signals[0];
    if (signal) {
      await store.checkpointStep(
        {
          runId: run.id,
          cursorKey: 's1',
          status: 'ok',
          result: signal.payload,
          attempts: attempt,
          shape: `signal:${signal.name}`,
        },
        { consumeSignals: [signal.id] },
      );
    }
    const child = `${run.id}:c0`;
    await store.checkpointStep(
      { runId: run.id, cursorKey: 's2', status: 'ok', result: child, attempts: attempt, shape: 'invoke:child@1' },
      {
        spawn: [
          {
            runId: child,
            spec: { name: 'child', version: 1, input: result, parentRunId: run.id, parentCursorKey: 's2', depth: 1 },
            enqueue: { priority: 1 },
          },
        ],
        joinTarget: { runId: run.id, count: 1 },
        enqueue: [{ runId: child, opts: { runAt: now } }],
      },
    );
    const children = await store.loadRunRows([child]);
    const output: unknown = children[0]?.output;
    await store.suspendRun(run.id, 'sleeping', { timers: [{ runId: run.id, fireAt: new Date(now.getTime() + 1000) }] });
    await store.suspendRun(run.id, 'awaiting_child');
    const failure: Core.FlowError = { code: 'E', message: 'boom' };
    await store.markTerminal(run.id, attempt > 10 ? { status: 'failed', error: failure } : { status: 'done', output });
    for (const c of await store.childrenOf(run.id))
      await store.markTerminal(c.id, { status: 'canceled', error: failure });
    const remaining: number | undefined = await store.arriveAtJoin(run.id);
    if (remaining !== undefined && remaining <= 0) await queue.enqueue(run.id);
    await wakeup.signal(run.id);
    await queue.ack(lease);
    const renewed: Core.Lease = await queue.heartbeat(lease, { leaseMs: 30_000, now });
    const expires: Date = renewed.expiresAt;
    void expires;
  }

  // signal / retry / result / status / health / liveness
  const { delivered } = await store.postSignal(started.runId, 'go', { ok: true }, { idempotencyKey: 'once' });
  if (delivered) await wakeup.signal(started.runId);
  const { retried } = await store.retryRun(started.runId);
  if (retried) await wakeup.signal(started.runId);
  await wakeup.wait(started.runId, 500);
  const page: Core.RunPage = await store.listRuns(
    { status: ['pending', 'running'], name: 'greet', tag: 'a' },
    { limit: 10 },
  );
  const next =
    page.cursor === undefined
      ? undefined
      : await store.listRuns({ status: 'done' }, { limit: 10, cursor: page.cursor });
  void next;
  const health: Record<Core.RunStatus, number> = await store.runStats();
  const depth: Core.QueueDepth = await queue.depth(now);
  const oldest: number | null = depth.oldestClaimableAgeMs;
  void [health.awaiting_child, depth.claimable + depth.leased, oldest];

  // reconcile / prune / timers
  for (const id of await store.orphanedRuns(20)) await queue.enqueue(id);
  const pruned: number = await store.deleteRunsOlderThan(new Date(now.getTime() - 86_400_000), 1000);
  await timer.schedule(started.runId, now);
  await timer.cancel(started.runId);
  void pruned;

  // crons
  await store.upsertCron({
    name: 'nightly',
    schedule: '0 3 * * *',
    flowName: 'greet',
    flowVersion: 1,
    input: {},
    overlap: 'skip',
    nextRunAt: now,
  });
  for (const cron of await store.dueCrons(now, 100)) {
    const row: Core.CronRow = cron;
    const last: Date | undefined = row.lastRunAt;
    const won: boolean = await store.advanceCron(
      row.name,
      row.nextRunAt,
      new Date(row.nextRunAt.getTime() + 60_000),
      now,
    );
    void [last, won];
  }
}

/** Wrong usages that must not compile. */
function wrongUsage(b: MysqlBackend, pool: NativeSql): void {
  const { store, queue, timer, wakeup } = b;
  // @ts-expect-error a RunSpec needs name, version and input
  void store.startRun({});
  // @ts-expect-error version is a number
  void store.startRun({ name: 'x', version: '1', input: null });
  // @ts-expect-error limit is a number
  void queue.claim({ limit: '1', leaseMs: 1000 });
  // @ts-expect-error leaseMs is required
  void queue.claim({ limit: 1 });
  // @ts-expect-error 'done' is not a suspend status
  void store.suspendRun('r', 'done');
  // @ts-expect-error a failed outcome carries an error
  void store.markTerminal('r', { status: 'failed' });
  // @ts-expect-error only successful steps are checkpointed
  void store.checkpointStep({ runId: 'r', cursorKey: 's0', status: 'failed', attempts: 1 });
  // @ts-expect-error timers take Dates, not epoch numbers
  void store.suspendRun('r', 'sleeping', { timers: [{ runId: 'r', fireAt: Date.now() }] });
  // @ts-expect-error dueBatch needs a limit
  void timer.dueBatch({});
  // @ts-expect-error wait needs a timeout
  void wakeup.wait('r');
  // @ts-expect-error loadRun may resolve to undefined
  void store.loadRun('r').then((snap) => snap.run.id);
  // @ts-expect-error steps are read-only
  void store.loadRun('r').then((snap) => snap?.steps.set('s0', { status: 'ok', attempts: 1 }));
  // @ts-expect-error the backend's ports are read-only
  b.store = store;
  // @ts-expect-error params are an array
  void pool.query('SELECT ?', 'x');
  // @ts-expect-error closed is read-only
  pool.closed = true;
  // @ts-expect-error a prefix is a string
  void createMysqlBackend(pool, { prefix: 1 });
  // @ts-expect-error mysqlPool needs a pool, a URL or options
  void mysqlPool(42);
  // @ts-expect-error dateStrings: true cannot be honoured (Dates are read as Date)
  void mysqlPool({ uri: 'mysql://127.0.0.1/app', dateStrings: true });
  // @ts-expect-error an unknown option (a typo of connectionLimit)
  void mysqlPool({ host: '127.0.0.1', conectionLimit: 5 });
  // @ts-expect-error ddl takes a prefix string
  void ddl(1);
  // @ts-expect-error applySchema needs an Sql
  void applySchema('mysql://127.0.0.1/app');
  // @ts-expect-error createMysqlBackend needs an Sql
  void createMysqlBackend({ query: async () => [] });
}

void main;
