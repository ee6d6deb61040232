// Types of iterativeflow-mysql-native: a drop-in for @iterativeflow/mysql 2.0.0-alpha.2 (the
// default contract) and 3.0.0 (`{ contract: '3.0.0' }`, or the `iterativeflow-mysql-native/v3`
// entry). The shapes mirror the iterativeflow core `Backend` contract of each version
// structurally, so a `MysqlBackend` / `MysqlBackendV3` can be passed wherever that core expects
// a `Backend`.

/// <reference types="node" />

// ---- SQL surface ---------------------------------------------------------------------------

/** What a write reports (found-rows semantics: an UPDATE counts matched rows). */
export interface WriteResult {
  affectedRows: number;
  insertId: number;
}

/** A bound SQL parameter; arrays expand to `?, ?, …` (nested arrays to `(…), (…)`). */
export type SqlParam = string | number | bigint | boolean | null | undefined | Date | Buffer | readonly SqlParam[];

/**
 * The minimal SQL surface the backend needs. `mysqlPool()` returns the native implementation;
 * any object with these three methods (e.g. a logging wrapper) is accepted by
 * `createMysqlBackend` too.
 */
export interface Sql {
  query<R = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<R[]>;
  exec(text: string, params?: readonly unknown[]): Promise<WriteResult>;
  tx<T>(fn: (t: Sql) => Promise<T>): Promise<T>;
}

/**
 * TLS settings (these keys of Node's TLS options; any other key is refused). `true` = encrypt
 * without verifying the certificate.
 */
export interface SslOptions {
  /** PEM text of the CA certificate(s) to trust. */
  ca?: string | Buffer | readonly (string | Buffer)[];
  /** Path of a PEM CA bundle to trust. */
  caPath?: string;
  /** Verify the certificate chain (default true when an object is given). */
  rejectUnauthorized?: boolean;
  /** Verify that the certificate names the host (default: same as rejectUnauthorized). */
  verifyIdentity?: boolean;
  /** A client certificate (PEM) and its private key, for accounts that `REQUIRE X509`. */
  cert?: string | Buffer;
  key?: string | Buffer;
  /** The name the server's certificate must carry, when it is not the host connected to. */
  servername?: string;
}

/**
 * Connection options for `mysqlPool`. mysql2's names are accepted where this package honours them
 * (`uri`, `connectTimeout`, …) or takes them with the value it has anyway (`charset: 'utf8mb4'`,
 * `timezone: 'Z'`, …); any other name throws a TypeError naming it (docs/configuration.md).
 */
export interface PoolOptions extends Mysql2AcceptedOptions {
  /** A `mysql://user:password@host:port/database?…` URL; explicit fields override it. */
  url?: string;
  /** mysql2's name for `url`. */
  uri?: string;
  host?: string;
  port?: number;
  /**
   * Several hosts in one pool, instead of `host` / `port` (in a URL:
   * `mysql://app@db1:3306,db2:3306/app`). A host that refuses, times out, is read-only or is a
   * Galera node not `Synced` is set aside with a backoff; calls not yet sent go to the next one.
   */
  hosts?: Array<{ host: string; port?: number } | string>;
  /**
   * With `hosts`: `'sequential'` (default: every connection to the first healthy host, one
   * writer node) or `'loadbalance'` (connections spread over the healthy hosts).
   */
  failover?: 'sequential' | 'loadbalance';
  user?: string;
  password?: string;
  database?: string;
  socketPath?: string;
  /** Maximum open connections (default 10). */
  connectionLimit?: number;
  /** Maximum wait for a connection (checkout, or connect + handshake), ms (default 10 000). */
  acquireTimeoutMs?: number;
  /** mysql2's name, read as `acquireTimeoutMs` (give one of the two). */
  connectTimeout?: number;
  /**
   * Maximum time one round trip on an open connection may go unanswered, ms (default 60 000;
   * 0 = no bound). On expiry the call rejects, the connection is closed and the server is asked
   * to kill its session.
   */
  queryTimeoutMs?: number;
  /**
   * Prepared statements each connection keeps (default 16). The backend's single-statement
   * units (outside transactions) run prepared (binary protocol), which spares the server parsing
   * them; 0 sends every
   * statement as text (for proxies that cannot keep prepared statements).
   */
  statementCacheSize?: number;
  /** ms an idle connection beyond `maxIdle` may stay open (default 60 000). */
  idleTimeout?: number;
  /** Idle connections kept however long they idle (default 0). */
  maxIdle?: number;
  /** TCP keepalive on every connection (default true). */
  enableKeepAlive?: boolean;
  /** ms of idleness before the first keepalive probe (default 30 000). */
  keepAliveInitialDelay?: number;
  /** Compress the protocol where the server supports it (default false). */
  compress?: boolean;
  /** Attributes sent with the handshake (MySQL shows them in performance_schema). */
  connectAttributes?: Record<string, string>;
  /** Answer a server that asks for `mysql_clear_password` (a token as the password; TLS only). */
  enableCleartextPlugin?: boolean;
  /**
   * Reset every connection a call of yours used before the next borrower gets it (default: only
   * those whose session a statement of yours may have changed).
   */
  resetOnRelease?: boolean;
  /** Set READ COMMITTED and utf8mb4 on each new connection (default true); also `opts.setIsolation`. */
  setIsolation?: boolean;
  ssl?: boolean | SslOptions;
}

/**
 * mysql2 options taken only with the value this package has anyway (another value throws a
 * TypeError saying why; docs/configuration.md).
 */
export interface Mysql2AcceptedOptions {
  waitForConnections?: true;
  queueLimit?: 0;
  charset?: 'utf8mb4' | 'UTF8MB4';
  timezone?: 'Z' | '+00:00' | '-00:00';
  dateStrings?: false;
  supportBigNumbers?: true;
  bigNumberStrings?: false;
  decimalNumbers?: false;
  jsonStrings?: false;
  multipleStatements?: true;
  namedPlaceholders?: false;
  rowsAsArray?: false;
  nestTables?: false;
  typeCast?: true;
  stringifyObjects?: false;
  insecureAuth?: false;
  gracefulEnd?: true;
  disableEval?: boolean;
  trace?: boolean;
  debug?: false;
  flags?: '';
}

/** Counters kept by the native pool. */
export interface PoolStats {
  /** Round trips sent by the backend's executors. */
  roundTrips: number;
  /** Units of work re-run after a deadlock, lock-wait timeout or Galera certification failure. */
  deadlockRetries: number;
  /** Statements sent by the backend's executors. */
  statements: number;
  /**
   * Single statements sent as text instead of prepared because the server's
   * `max_prepared_stmt_count` was used up (error 1461, possibly by another client).
   */
  preparedFallbacks: number;
  /**
   * `enqueue` calls that arrived while their backend had an `enqueue` statement in flight, and
   * so went together as multi-row upserts: the
   * statements (`batches`), the calls they carried (`calls`), and of those the calls sent again
   * one by one because the server refused their batch (`resent`). See docs/coalescing.md.
   */
  coalesced: { batches: number; calls: number; resent: number };
  /** The pool's connections right now, and calls waiting for one. */
  pool: { open: number; idle: number; inUse: number; waiters: number };
  /**
   * Each host of the pool in list order (one for a single-host pool): `healthy`, or `aside`
   * (after `reason`, tried again after a backoff); `since` = when it entered that state, ms
   * since the epoch. `group`: what a Group Replication member said at its last probe (multi-host
   * pools only) — its state and role, the group's primary and whether the pool lists it, how
   * many members its view holds and how many are ONLINE, and its view id (`<fixed>:<counter>`).
   */
  hosts: Array<{
    host: string;
    port: number;
    state: 'healthy' | 'aside';
    reason?: string;
    since: number;
    group?: {
      state: string;
      role: string;
      singlePrimary: boolean;
      primary?: string;
      primaryListed?: boolean;
      members: number;
      online: number;
      view?: string;
    };
  }>;
  /** Per port method called at least once (native backends on this pool). */
  methods: Record<
    string,
    {
      calls: number;
      errors: { argument: number; server: number; connection: number; contract: number };
      /** Latency percentiles, ms, estimated within their histogram bucket. */
      p50Ms: number;
      p90Ms: number;
      p99Ms: number;
      /** Total time of all calls, ms. */
      sumMs: number;
      /** Calls per latency bucket; the bounds are in `latencyBucketsMs()` order (last: +Inf). */
      buckets: number[];
    }
  >;
}

/** The native pool returned by `mysqlPool`. */
export interface NativeSql extends Sql {
  /** Waits for in-flight work, closes every connection; later calls reject. */
  close(): Promise<void>;
  readonly closed: boolean;
  stats(): PoolStats;
  /**
   * `stats()` in the Prometheus text format (docs/metrics.md): metric names start with `prefix`
   * (default `iterativeflow_mysql`), every sample is labelled `pool` (default `host:port/database`).
   */
  prometheus(opts?: { prefix?: string; pool?: string }): string;
  /**
   * Registers the same families in a prom-client `Registry`, read at each scrape; pools registered
   * in one registry share them, each under its `pool` label. Answers a function that unregisters
   * this pool.
   */
  registerPromClient(registry: PromClientRegistryLike, opts?: { prefix?: string; pool?: string }): () => void;
  /**
   * Observes the pool with instruments of an OpenTelemetry `Meter` (db.client.operation.duration,
   * db.client.connection.count / .pending_requests, …; docs/metrics.md); `pool` is the
   * `db.client.connection.pool.name`. Answers a stop function.
   */
  observeOpenTelemetry(meter: OtelMeterLike, opts?: { pool?: string }): () => void;
}

/** What `registerPromClient` uses of a prom-client `Registry`. */
export interface PromClientRegistryLike {
  registerMetric(metric: object): void;
  removeSingleMetric(name: string): void;
  getSingleMetric?(name: string): unknown;
}

/** What `observeOpenTelemetry` uses of an OpenTelemetry `Meter`. */
export interface OtelMeterLike {
  createHistogram(name: string, options?: object): { record(value: number, attributes?: object): void };
  createObservableCounter(name: string, options?: object): object;
  createObservableUpDownCounter(name: string, options?: object): object;
  addBatchObservableCallback(cb: (result: any) => void | Promise<void>, instruments: object[]): void;
  removeBatchObservableCallback(cb: (result: any) => void | Promise<void>, instruments: object[]): void;
}

/** The tracing channel names (`node:diagnostics_channel` `tracingChannel(name)`); stable. */
export declare const channels: {
  readonly call: 'iterativeflow-mysql-native:call';
  readonly query: 'iterativeflow-mysql-native:query';
  readonly connect: 'iterativeflow-mysql-native:connect';
  readonly acquire: 'iterativeflow-mysql-native:pool:acquire';
};
/** mysql2's channel names, published on with `mysqlPool(x, { tracing: { mysql2: true } })`. */
export declare const mysql2Channels: {
  readonly query: 'mysql2:query';
  readonly execute: 'mysql2:execute';
  readonly connect: 'mysql2:connect';
  readonly poolConnect: 'mysql2:pool:connect';
};

/** What every event says about the server (a socket path is the address, with no port). */
export interface ServerContext {
  serverAddress?: string;
  serverPort?: number;
  database?: string;
}

/** `iterativeflow-mysql-native:call`: one port call. */
export interface CallContext extends ServerContext {
  method: string;
  runId?: string;
  flow?: string;
  contract: '2.0.0-alpha.2' | '3.0.0';
  /** Set before `asyncEnd`: what the call sent, and how often it re-ran after a transient failure. */
  roundTrips?: number;
  statements?: number;
  retries?: number;
  result?: unknown;
  error?: unknown;
}

/** `iterativeflow-mysql-native:query`: one statement. */
export interface QueryContext extends ServerContext {
  /** The text with `?` placeholders; never the values. */
  query: string;
  /** Its leading keyword (SELECT, INSERT, …). */
  operation?: string;
  /** Bound values of a user statement, only with `tracing: { values: true }`. */
  values?: unknown[];
  /** The port call it belongs to (its context object), or the user statement a wrapped Sql ran it for. */
  parent?: CallContext | QueryContext;
  /** The port method, for a port call's statements. */
  method?: string;
  /** Which round trip of the call carried it (statements sharing one share its times). */
  roundTrip?: number;
  prepared?: boolean;
  /** ms since the epoch (fractional): when it was sent and when its answer was read. */
  startTime: number;
  endTime?: number;
  result?: unknown;
  error?: unknown;
}

/** `iterativeflow-mysql-native:pool:acquire` (and `:connect` when the checkout opened a connection). */
export interface AcquireContext extends ServerContext {
  method?: string;
  parent?: CallContext | QueryContext;
  startTime: number;
  endTime: number;
  waitMs?: number;
  error?: unknown;
}

/**
 * Turns the channels into OpenTelemetry spans of `api` (your `@opentelemetry/api`): an INTERNAL
 * span per port call, CLIENT children per statement, INTERNAL ones per connection checkout;
 * `db.system.name` as the server says it is (`system`: only for a wrapped `Sql`, which cannot be
 * asked; default 'mysql'). Answers an unsubscribe function.
 */
export declare function traceOpenTelemetry(
  api: unknown,
  opts?: { tracerProvider?: unknown; system?: 'mysql' | 'mariadb' | string; acquire?: boolean },
): () => void;

/** A `mysql2` pool (promise or callback API); its connection config is read at runtime. */
export type Mysql2PoolLike = { readonly config: object } | { readonly pool: { readonly config: object } };
/** A `mysql2` `PoolCluster` (promise or callback API); its nodes become a host list. */
export type Mysql2PoolClusterLike = { readonly poolCluster: object } | { readonly _nodes: object };
/** Anything `mysqlPool` can read connection settings from: a mysql2 pool or pool cluster, a URL, or options. */
export type PoolSource = string | PoolOptions | Mysql2PoolLike | Mysql2PoolClusterLike;

export interface MysqlPoolOpts {
  /**
   * Set READ COMMITTED on each new connection (default true). `false` sends no `SET` at all,
   * for servers that pin a connection on any session change (PlanetScale/Vitess); the server's
   * default isolation must then be READ COMMITTED.
   */
  setIsolation?: boolean;
  /** Tracing channel options (docs/observability.md). */
  tracing?: {
    /** Also publish statements and checkouts on mysql2's channel names and context shape. */
    mysql2?: boolean;
    /** Publish user statements' bound values (`sql.query` / `exec` / `tx`); off by default. */
    values?: boolean;
  };
}

export declare function mysqlPool(source: PoolSource, opts?: MysqlPoolOpts): NativeSql;

// ---- schema --------------------------------------------------------------------------------

/** Which published contract a backend follows (behaviour and table layout). */
export type Contract = '2.0.0-alpha.2' | '3.0.0';

export interface SchemaOpts {
  /** Default '2.0.0-alpha.2' (the `/v3` entry: '3.0.0'). */
  contract?: Contract;
  /** 3.0: create the `pending_work` function (needs CREATE ROUTINE); default true. */
  pendingWork?: boolean;
  /**
   * Also create the opt-in timeline table `<prefix>event` (docs/timeline.md); default false:
   * without it nothing about the table is created, listed or sent.
   */
  events?: boolean;
}

/**
 * The DDL: six `CREATE TABLE IF NOT EXISTS` statements (run, step, job, timer, signal, cron);
 * under 3.0 the tables have `priority` / `consumed`, followed by the `pending_work` function's
 * drop and create.
 */
export declare function ddl(prefix?: string, opts?: SchemaOpts): string[];
/**
 * Applies the schema; idempotent. Under 3.0 it also upgrades an older layout in place and
 * (re)creates `pending_work`, serialised across processes by a named lock.
 */
export declare function applySchema(sql: Sql, prefix?: string, opts?: SchemaOpts): Promise<void>;
/** Back-quoted table names for a prefix. */
export declare function tables(prefix: string): {
  run: string;
  step: string;
  job: string;
  timer: string;
  signal: string;
  cron: string;
};

// ---- backend contract ----------------------------------------------------------------------

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
  /** Present when the backend was given a `listener` (dispatch push); never rejects. */
  waitForWork?(timeoutMs: number, signal?: AbortSignal): Promise<void>;
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
export interface MysqlBackend {
  readonly store: Store;
  readonly queue: Queue;
  readonly timer: Timer;
  readonly wakeup: Wakeup;
}

/** Id generator for runs, signals and lease tokens (default: RFC-4122 v4 UUIDs). */
export type IdGen = () => string;
export interface MysqlBackendOpts {
  /** Table-name prefix (letters, digits, underscore). Default none. */
  prefix?: string;
  id?: IdGen;
}
/** `MysqlBackendOpts` (the JavaScript package's) plus the contract to follow. */
export interface NativeBackendOpts extends MysqlBackendOpts {
  /** Default '2.0.0-alpha.2' (the `/v3` entry: '3.0.0'). */
  contract?: Contract;
  /**
   * Push (docs/push.md): the backend's `queue.waitForWork` and `wakeup` come from this listener,
   * and its own enqueues wake the listener's waiters at once. Absent: no push, nothing changes.
   */
  listener?: MysqlListener;
}

/** What the listener watcher is doing: not started, probing, retrying after an error, closed. */
export type ListenerState = 'idle' | 'listening' | 'reconnecting' | 'stopped';
/** A watched run's new status, as the probe saw it (the first one is its status when watched). */
export interface StatusEvent {
  runId: string;
  type: 'status';
  status: RunStatus;
}
/**
 * What `watch` and `onProgress` yield: status changes, and — where the event table exists — the
 * run's timeline rows as they land (docs/timeline.md).
 */
export type ProgressEvent = StatusEvent | FlowEvent;

// ---- the durable timeline (docs/timeline.md) -------------------------------------------------

/** Core's durable event kinds (`observe` in @iterativeflow/core). */
export type EventType = 'run.started' | 'run.completed' | 'run.failed' | 'run.suspended' | 'step.finished' | 'run.log';
/** Core's event log granularity: `lifecycle` = run events only, `all` adds step events. */
export type EventLevel = 'all' | 'lifecycle' | 'off';
/** One timeline entry, as core records it and listEvents reads it back. */
export interface FlowEvent {
  runId: string;
  type: EventType;
  at: Date;
  data?: unknown;
}
/** Core's `observe.sink`. */
export interface EventSink {
  record(event: FlowEvent): void | Promise<void>;
}
export interface MysqlEventSinkOpts {
  /** Called with each failed INSERT's error (its rows are counted in `stats().failed`). */
  onError?: (err: unknown) => void;
  /** How long a first queued event waits for more before the INSERT, ms (0..10000, default 50). */
  lingerMs?: number;
}
export interface MysqlEventSinkStats {
  recorded: number;
  written: number;
  /** Rows of INSERTs that failed (never retried). */
  failed: number;
  /** Events refused because 50,000 were already waiting. */
  dropped: number;
  /** INSERT statements that succeeded. */
  batches: number;
  pending: number;
}
/** An `EventSink` writing to `<prefix>event`, behind the run: `record` only queues. */
export interface MysqlEventSink extends EventSink {
  /** Queues the event and returns at once (a malformed event throws a TypeError). */
  record(event: FlowEvent): void;
  /** Resolves when every event queued so far is written or has failed; call it before closing the pool. */
  flush(): Promise<void>;
  stats(): MysqlEventSinkStats;
}
/** The sink for `observe: { sink, level }` (needs `applySchema(sql, prefix, { events: true })`). */
export declare function createMysqlEventSink(sql: Sql, prefix?: string, opts?: MysqlEventSinkOpts): MysqlEventSink;
/** A run's timeline, oldest first (rejects when the event table does not exist). */
export declare function listEvents(sql: Sql, runId: string, prefix?: string): Promise<FlowEvent[]>;
export interface MysqlListenerOpts {
  /** The backend's table prefix. Default none. */
  prefix?: string;
  /**
   * The longest wait between two looks at the tables, ms (1..60000): with the doorbell on one
   * MariaDB server the longest park (default 2000; rings end parks at once, so it bounds only what
   * no ring announces, such as work made by a process without a listener), otherwise the pause between probes (default 50, also on a Galera cluster,
   * where a ring reaches one node). The knob trading latency for idle cost (docs/push.md).
   */
  intervalMs?: number;
  /**
   * The doorbell (default true): parks one statement while somebody waits, rung by `KILL QUERY
   * ID` from processes whose backend has a listener. Off by itself where the server cannot (not
   * MariaDB; `stats().doorbellOff` says why); false: poll only.
   */
  doorbell?: boolean;
  /** Wake only for work of these flows (and jobs without a run row), as a claim with `names`. */
  names?: readonly string[];
  /**
   * Called once when probes start failing (the listener then retries with backoff), and with
   * whatever an `onProgress` callback throws (the listener's state does not change for that).
   */
  onError?: (err: unknown) => void;
  /**
   * Read the timeline for `watch`: undefined (default) looks the event table up while a watch is
   * open (again every 10 s while it is missing); false never; true assumes it exists.
   */
  events?: boolean;
}
/** Dispatch and completion push shared by all the waiters of a process: a doorbell, or one probe per interval. */
export interface MysqlListener {
  /** Completion push: `wait(runId)` also resolves when the run turns terminal in any process. */
  readonly wakeup: Wakeup;
  /** Resolves on claimable work or a due timer (any process), a latched wake, `timeoutMs` or `signal`; never rejects. */
  waitForWork(timeoutMs: number, signal?: AbortSignal): Promise<void>;
  /**
   * The run's status changes as the probe sees them, the first being its status when watched;
   * with the event table, also its timeline from the start, then as it lands. Ends after a
   * terminal status (with the timeline: once the terminal event was yielded too, or 2 s later),
   * `return()` or `close()`. After `close()`: an ended iterator.
   */
  watch(runId: string): AsyncIterableIterator<ProgressEvent>;
  /**
   * Status changes of every watched run (and the timeline of runs a `watch` is open for); returns
   * an unsubscribe function. A throw goes to `onError`.
   */
  onProgress(cb: (ev: ProgressEvent) => void): () => void;
  /** Starts probing (the first waiter also starts a listener that was never started). */
  start(): void;
  /**
   * Stops probing, releases the `waitForWork` waiters, ends the `watch()` streams and drops the
   * `onProgress` subscribers. Waits for a probe in flight at most 1 s (its answer is ignored).
   */
  close(): Promise<void>;
  state(): ListenerState;
  /** How this listener hears of work, and its counters. */
  stats(): MysqlListenerStats;
}
/** `listener.stats()`: the mode the first look at the server chose, and what the watcher did. */
export interface MysqlListenerStats {
  /** 'doorbell-node': a Galera cluster (rings reach the ringer's node; parks as short as probes). */
  mode: 'doorbell' | 'doorbell-node' | 'polling' | undefined;
  /** Why the doorbell is off (polling), or undefined while it rings. */
  doorbellOff: string | undefined;
  intervalMs: number;
  probes: number;
  parks: number;
  /** Parks that found something at once, were ended by a ring, slept out. */
  go: number;
  rung: number;
  slept: number;
  /** Rings asked for (merged while one is in flight), lookups of parked sessions sent, parks interrupted. */
  rings: number;
  lookups: number;
  kills: number;
}
export declare function createMysqlListener(sql: Sql, opts?: MysqlListenerOpts): MysqlListener;

// ---- the 3.0.0 contract ----------------------------------------------------------------------

export interface RunSpecV3 extends RunSpec {
  /** Stored in `run.priority`; an enqueue without a priority inherits it. Default 0. */
  priority?: number;
}
/** A 3.0 step memo: `call` is what 2.0.0-alpha.2 called `shape`. */
export interface StepOutcomeV3 {
  status: StepStatus;
  result?: unknown;
  error?: FlowError;
  attempts: number;
  call?: string;
}
export interface StepCheckpointV3 extends StepOutcomeV3 {
  runId: string;
  cursorKey: string;
}
/** A checkpoint's answer; `committed: false` when `requireVersion` fenced it (nothing written). */
export type CheckpointResult = StepOutcomeV3 | { status: StepStatus; attempts: number; committed: false };
export interface SpawnRequestV3 {
  runId: string;
  spec: RunSpecV3;
  enqueue?: EnqueueOpts;
}
export interface OutboxV3 {
  spawn?: readonly SpawnRequestV3[];
  enqueue?: readonly EnqueueRequest[];
  timers?: readonly TimerRequest[];
  cancelTimers?: readonly string[];
  consumeSignals?: readonly string[];
  joinTarget?: { runId: string; count: number };
  /** Fencing: write only while the run's job still has this version. */
  requireVersion?: number;
}
export interface RunFilterV3 extends RunFilter {
  version?: number;
}
export type TerminalStatus = 'done' | 'failed' | 'canceled';
/** The runs a bulk operation touches: every given predicate must hold; at least one is needed. */
export interface RunSetFilter {
  before?: Date;
  name?: string;
  version?: number;
  status?: RunStatus | readonly RunStatus[];
  tag?: string;
}
export interface ClaimOptsV3 extends ClaimOpts {
  /** Only jobs of runs of these flows (or without a run row); `[]` claims nothing. */
  names?: readonly string[];
}

export interface StoreV3
  extends Omit<
    Store,
    'startRun' | 'startManyRuns' | 'loadRun' | 'checkpointStep' | 'suspendRun' | 'markTerminal' | 'listRuns'
  > {
  startRun(spec: RunSpecV3): Promise<StartResult>;
  startManyRuns(specs: readonly RunSpecV3[]): Promise<StartResult[]>;
  loadRun(
    runId: string,
  ): Promise<
    { run: RunRow; steps: ReadonlyMap<string, StepOutcomeV3>; signals: readonly DeliveredSignal[] } | undefined
  >;
  checkpointStep(c: StepCheckpointV3, fx?: OutboxV3): Promise<CheckpointResult>;
  suspendRun(runId: string, status: SuspendStatus, fx?: OutboxV3): Promise<void>;
  markTerminal(runId: string, outcome: TerminalOutcome, fx?: OutboxV3): Promise<void>;
  listRuns(filter: RunFilterV3, page: Page): Promise<RunPage>;
  deleteRuns(filter: RunSetFilter, limit: number): Promise<number>;
  cancelRuns(filter: RunSetFilter, limit: number): Promise<number>;
  retryRuns(filter: RunSetFilter, limit: number): Promise<number>;
  listCrons(): Promise<CronRow[]>;
  removeCron(name: string): Promise<boolean>;
  dueCronCount(now: Date, names?: readonly string[]): Promise<number>;
}
export interface QueueV3 extends Omit<Queue, 'claim' | 'depth'> {
  enqueueMany(requests: readonly EnqueueRequest[]): Promise<void>;
  claim(opts: ClaimOptsV3): Promise<Lease[]>;
  depth(now: Date, names?: readonly string[]): Promise<QueueDepth>;
}
export interface TimerV3 extends Timer {
  dueCount(now: Date, names?: readonly string[]): Promise<number>;
  nextDueAt(now: Date): Promise<Date | null>;
}
export interface MysqlBackendV3 {
  readonly store: StoreV3;
  readonly queue: QueueV3;
  readonly timer: TimerV3;
  readonly wakeup: Wakeup;
}

/** The four ports over one database. Throws synchronously on a bad prefix or contract. */
export declare function createMysqlBackend(sql: Sql, opts: NativeBackendOpts & { contract: '3.0.0' }): MysqlBackendV3;
export declare function createMysqlBackend(sql: Sql, opts?: NativeBackendOpts): MysqlBackend;

/** What `inTx` takes: our pool, any `Sql`, or a mysql2 pool (a native pool is opened for it once). */
export type TxSource = NativeSql | Sql | Mysql2PoolLike;

/**
 * `fn(backend, tx)` in ONE transaction: the caller's writes on `tx` and every backend call
 * commit together when `fn` resolves, and not at all when it throws.
 */
export declare function inTx<T>(
  source: TxSource,
  fn: (backend: MysqlBackendV3, tx: Sql) => Promise<T>,
  opts: NativeBackendOpts & { contract: '3.0.0' },
): Promise<T>;
export declare function inTx<T>(
  source: TxSource,
  fn: (backend: MysqlBackend, tx: Sql) => Promise<T>,
  opts?: NativeBackendOpts,
): Promise<T>;

// ---- health check --------------------------------------------------------------------------

export type Verdict = 'ok' | 'warn' | 'fail';
export interface DoctorCheck {
  name: string;
  verdict: Verdict;
  detail: string;
  value?: unknown;
}
export interface DoctorResult {
  /** The worst verdict of all checks. */
  verdict: Verdict;
  checks: DoctorCheck[];
}
export interface DoctorOpts {
  /** The layout to expect (default '2.0.0-alpha.2'; the `/v3` entry: '3.0.0'). */
  contract?: Contract;
  /** 3.0: whether the `pending_work` function is expected (default true). */
  pendingWork?: boolean;
  /** Check as for `mysqlPool(x, { setIsolation })`. */
  setIsolation?: boolean;
  /** The pool settings to judge against the server's limits (default: mysqlPool's defaults). */
  pool?: {
    connectionLimit?: number;
    acquireTimeoutMs?: number;
    queryTimeoutMs?: number;
    statementCacheSize?: number;
    setIsolation?: boolean;
  };
  /** Bound on connecting when given a URL or options, ms (default 5000). */
  timeoutMs?: number;
}
/**
 * A read-only health check of one database for this package (also `npx
 * iterativeflow-mysql-native doctor <url>`). Resolves even when the server is unreachable (one
 * failing `connection` check); rejects only on bad arguments.
 */
export declare function checkDatabase(sql: Sql | PoolSource, prefix?: string, opts?: DoctorOpts): Promise<DoctorResult>;

/**
 * A `StepPolicy.classify` preset: `'permanent'` for a MySQL/MariaDB error (of this package's `Sql`
 * or of mysql2, found on `cause` or its `.cause` chain) that fails the same way on every retry —
 * syntax, unknown table/column, privilege, data too long, incorrect value, not-null, check — and
 * for this package's argument errors; `'transient'` for everything else (deadlock, lock wait,
 * lost/timed-out connection, read-only server, unsynced Galera node, duplicate or foreign key,
 * anything unknown). Never throws. See docs/classify.md.
 */
export declare function mysqlClassify(cause: unknown, attempt?: number): 'transient' | 'permanent';
