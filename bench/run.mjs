#!/usr/bin/env node
// npm run bench — this package (native) against the seed's JS backend over mysql2 (seed).
//
// One server (a private MariaDB unless MYSQL_URL is set), one database, one table prefix per
// implementation (seed: js_, native: rs_). Every scenario runs INTERLEAVED: repetition r runs both
// implementations back to back, the order alternating per repetition. Medians are reported.
//
// Usage: node bench/run.mjs [--only <substring>]... [--reps N] [--impl seed|native|both]
//                           [--json <file>] [--list] [--no-count]
// Env:   BENCH_SCALE (default 1; 0.1 for a quick smoke run), BENCH_REPS (default 3),
//        BENCH_OPS (micro-op count at scale 1, default 1000), BENCH_DRAIN_RUNS (default 2000),
//        BENCH_CLAIM_JOBS (default 1000), BENCH_CONCURRENCY (default 16),
//        BENCH_COUNT_FRACTION (size of the round-trip counting pass, default 0.25),
//        BENCH_NATIVE_URL_SUFFIX (appended to the native pool URL, e.g. "?connectionLimit=10"),
//        BENCH_NATIVE_MODULE (load the native package from this path instead of ../index.js),
//        MYSQL_URL (use this server instead of starting one), ITERATIVEFLOW_SEED (seed text path).
// Without the seed text (../shared/seeds/ beside the repository, or ITERATIVEFLOW_SEED),
// --impl both measures native alone.

import { randomUUID } from 'node:crypto'
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve as resolvePath } from 'node:path'
import { cpus } from 'node:os'
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'

import mysql from 'mysql2/promise'

import { loadSeed, seedAvailability } from '../__test__/helpers/seed.mjs'
import { drainRuns } from './engine-driver.mjs'
import { startCountingProxy } from './wire-counter.mjs'

const require = createRequire(import.meta.url)

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------

const { values: argv } = parseArgs({
  options: {
    only: { type: 'string', multiple: true },
    reps: { type: 'string' },
    impl: { type: 'string', default: 'both' },
    json: { type: 'string' },
    list: { type: 'boolean', default: false },
    'no-count': { type: 'boolean', default: false },
  },
  allowPositionals: false,
})

const num = (name, dflt) => {
  const v = process.env[name]
  if (v === undefined || v === '') return dflt
  const n = Number(v)
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${v}`)
  return n
}
const SCALE = num('BENCH_SCALE', 1)
const REPS = Math.max(1, Math.round(argv.reps ? Number(argv.reps) : num('BENCH_REPS', 3)))
const OPS = Math.max(16, Math.round(num('BENCH_OPS', 1000) * SCALE))
const DRAIN_RUNS = Math.max(20, Math.round(num('BENCH_DRAIN_RUNS', 2000) * SCALE))
const CLAIM_JOBS = Math.round(num('BENCH_CLAIM_JOBS', 1000))
const CONC = Math.round(num('BENCH_CONCURRENCY', 16))
const COUNT_FRACTION = num('BENCH_COUNT_FRACTION', 0.25)
const CLAIM_OPS = Math.max(16, Math.round(OPS / 4))
const DUE_BATCHES = Math.max(8, Math.round(OPS / 10))
const STEPS = 3

// ---------------------------------------------------------------------------------------------
// Small utilities
// ---------------------------------------------------------------------------------------------

const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b)
  if (s.length === 0) return NaN
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}

/** Deadlocks (1213) and lock-wait timeouts (1205) are transient: the bench retries the operation. */
const isTransient = (e) =>
  e?.errno === 1213 || e?.errno === 1205 || /deadlock|lock wait timeout/i.test(String(e?.message ?? ''))
let transientRetries = 0

async function withRetry(fn, attempts = 10) {
  for (let a = 1; ; a++) {
    try {
      return await fn()
    } catch (e) {
      if (!isTransient(e) || a >= attempts) throw e
      transientRetries += 1
    }
  }
}

/** Runs op(i) for i in [0, n) with `conc` in flight (each op retried on deadlock). */
async function runOps(n, conc, op) {
  let next = 0
  const worker = async () => {
    for (;;) {
      const i = next++
      if (i >= n) return
      await withRetry(() => op(i))
    }
  }
  await Promise.all(Array.from({ length: Math.min(conc, n) }, worker))
}

/** CPU time of the main (JS) thread in µs: /proc schedstat (ns) or stat (ticks), else NaN. */
function mainThreadCpuUs() {
  try {
    const s = readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8')
    return Number(s.split(' ')[0]) / 1000
  } catch {}
  try {
    const s = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8')
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ')
    return ((Number(f[11]) + Number(f[12])) * 1e6) / 100
  } catch {}
  return NaN
}

/** CPU time (user + system) of the private server process in µs, NaN when the server is not ours. */
function serverCpuUs() {
  try {
    if (!server?.pid) return NaN
    const s = readFileSync(`/proc/${server.pid}/stat`, 'utf8')
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ')
    return ((Number(f[11]) + Number(f[12])) * 1e6) / 100
  } catch {}
  return NaN
}

const tableNames = (prefix) =>
  Object.fromEntries(['run', 'step', 'job', 'timer', 'signal', 'cron'].map((t) => [t, `\`${prefix}${t}\``]))

/**
 * Fixture rows, inserted directly. ANALYZE afterwards: right after a bulk insert the optimizer's
 * statistics can be stale enough to pick a full scan + filesort for the claim / dueBatch queries,
 * which locks every row and starves concurrent SKIP LOCKED callers - a set-up artefact, not
 * something either implementation controls.
 */
async function bulkInsert(conn, table, columns, rows, chunk = 1000) {
  for (let i = 0; i < rows.length; i += chunk) {
    await conn.query(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ?`, [rows.slice(i, i + chunk)])
  }
  await conn.query(`ANALYZE TABLE ${table}`)
}

// ---------------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------------
//
// setup(impl, size) runs untimed and returns a context; run(impl, ctx) is timed and returns the
// number of operations it did (runs, for drains).

const spec = (i, extra = {}) => ({ name: 'bench', version: 1, input: { i, note: 'benchmark input' }, tags: ['bench'], ...extra })

function microScenarios() {
  const list = []
  const both = (base, def) => {
    for (const conc of [1, CONC]) {
      list.push({
        name: `${base} ${conc === 1 ? 'seq' : `x${conc}`}`,
        kind: 'micro',
        unit: 'ops/s',
        conc,
        ...def,
      })
    }
  }

  both('startRun no key', {
    size: OPS,
    setup: async () => ({}),
    run: async (impl, ctx, n, conc) => {
      await runOps(n, conc, (i) => impl.backend.store.startRun(spec(i)))
      return n
    },
  })
  both('startRun new key', {
    size: OPS,
    setup: async () => ({ tag: randomUUID().slice(0, 8) }),
    run: async (impl, ctx, n, conc) => {
      await runOps(n, conc, (i) => impl.backend.store.startRun(spec(i, { idempotencyKey: `k-${ctx.tag}-${i}` })))
      return n
    },
  })
  both('startRun key hit', {
    size: OPS,
    setup: async (impl) => {
      const r = await impl.backend.store.startRun(spec(0, { idempotencyKey: 'hit' }))
      return { runId: r.runId }
    },
    run: async (impl, ctx, n, conc) => {
      await runOps(n, conc, async (i) => {
        const r = await impl.backend.store.startRun(spec(i, { idempotencyKey: 'hit' }))
        if (r.created || r.runId !== ctx.runId) throw new Error('startRun key hit: expected the existing run')
      })
      return n
    },
  })
  both('loadRun 5 steps 2 signals', {
    size: OPS,
    setup: async (impl) => {
      const { store } = impl.backend
      const { runId } = await store.startRun(spec(0))
      for (let s = 0; s < 5; s++) {
        await store.checkpointStep({ runId, cursorKey: `s${s}`, status: 'ok', result: { s, value: 'x'.repeat(40) }, attempts: 1, shape: `step:s${s}` })
      }
      await store.postSignal(runId, 'a', { n: 1 })
      await store.postSignal(runId, 'b', { n: 2 }, { idempotencyKey: 'sig-b' })
      return { runId }
    },
    run: async (impl, ctx, n, conc) => {
      await runOps(n, conc, async () => {
        const snap = await impl.backend.store.loadRun(ctx.runId)
        if (snap.steps.size !== 5 || snap.signals.length !== 2) throw new Error('loadRun: unexpected snapshot')
      })
      return n
    },
  })
  const manyRuns = async (impl, k = 64) => {
    const ids = []
    for (let i = 0; i < k; i++) ids.push((await impl.backend.store.startRun(spec(i))).runId)
    return ids
  }
  both('checkpointStep', {
    size: OPS,
    setup: async (impl) => ({ runs: await manyRuns(impl) }),
    run: async (impl, ctx, n, conc) => {
      await runOps(n, conc, (i) =>
        impl.backend.store.checkpointStep({
          runId: ctx.runs[i % ctx.runs.length],
          cursorKey: `s${i}`,
          status: 'ok',
          result: { i, value: 'step result' },
          attempts: 1,
          shape: 'step:bench',
        }),
      )
      return n
    },
  })
  both('checkpointStep +outbox(spawn,enqueue,timer)', {
    size: OPS,
    setup: async (impl) => ({ runs: await manyRuns(impl), tag: randomUUID().slice(0, 8) }),
    run: async (impl, ctx, n, conc) => {
      const fireAt = new Date(Date.now() + 3_600_000)
      await runOps(n, conc, (i) => {
        const parent = ctx.runs[i % ctx.runs.length]
        return impl.backend.store.checkpointStep(
          { runId: parent, cursorKey: `s${i}`, status: 'ok', result: `child-${ctx.tag}-${i}`, attempts: 1, shape: 'invoke:child' },
          {
            spawn: [
              {
                runId: `child-${ctx.tag}-${i}`,
                spec: { name: 'child', version: 1, input: { i }, parentRunId: parent, parentCursorKey: `s${i}`, depth: 1 },
              },
            ],
            enqueue: [{ runId: parent }],
            timers: [{ runId: parent, fireAt }],
          },
        )
      })
      return n
    },
  })
  both(`claim 32 of ${CLAIM_JOBS}`, {
    size: CLAIM_OPS,
    setup: async (impl) => {
      const rows = Array.from({ length: CLAIM_JOBS }, (_, i) => [`job-${i}`, 0, 0, 1])
      await bulkInsert(admin, impl.t.job, ['run_id', 'run_at', 'priority', 'version'], rows)
      return { now: new Date() }
    },
    // Leases of 0 ms at a fixed clock expire as they are taken: every claim sees all the jobs that
    // no concurrent claim holds locked, so the queue stays at its full size.
    run: async (impl, ctx, n, conc) => {
      let short = 0
      await runOps(n, conc, async () => {
        const leases = await impl.backend.queue.claim({ limit: 32, leaseMs: 0, now: ctx.now })
        if (leases.length !== 32) short += 1
      })
      if (short) console.error(`  note: ${short}/${n} claims returned fewer than 32 leases (${impl.name})`)
      ctx.info = { shortClaims: short }
      return n
    },
  })
  both('ack', {
    size: OPS,
    setup: async (impl, n) => {
      const rows = Array.from({ length: n }, (_, i) => [`ack-${i}`, 0, 0, 1])
      await bulkInsert(admin, impl.t.job, ['run_id', 'run_at', 'priority', 'version'], rows)
      const leases = []
      for (;;) {
        const got = await impl.backend.queue.claim({ limit: 500, leaseMs: 3_600_000 })
        if (got.length === 0) break
        leases.push(...got)
      }
      if (leases.length !== n) throw new Error(`ack setup: claimed ${leases.length} of ${n}`)
      return { leases }
    },
    run: async (impl, ctx, n, conc) => {
      await runOps(n, conc, (i) => impl.backend.queue.ack(ctx.leases[i]))
      const [[{ c }]] = await admin.query(`SELECT COUNT(*) AS c FROM ${impl.t.job}`)
      if (Number(c) !== 0) throw new Error(`ack: ${c} jobs left`)
      return n
    },
  })
  both('timer.dueBatch 100', {
    size: DUE_BATCHES,
    setup: async (impl, n) => {
      const rows = Array.from({ length: n * 100 }, (_, i) => [`tm-${i}`, 1_000 + i])
      await bulkInsert(admin, impl.t.timer, ['run_id', 'fire_at'], rows)
      return {}
    },
    run: async (impl, ctx, n, conc) => {
      let short = 0
      await runOps(n, conc, async () => {
        const ids = await impl.backend.timer.dueBatch({ limit: 100, now: new Date() })
        if (ids.length !== 100) short += 1
      })
      if (short) console.error(`  note: ${short}/${n} dueBatch calls returned fewer than 100 ids (${impl.name})`)
      ctx.info = { shortBatches: short }
      return n
    },
  })
  return list
}

function drainScenarios() {
  return [1, 4].map((loops) => ({
    name: `drain ${STEPS}-step runs x${loops} loop${loops > 1 ? 's' : ''}`,
    kind: 'drain',
    unit: 'runs/s',
    conc: loops,
    size: DRAIN_RUNS,
    setup: async (impl, n) => {
      const now = Date.now()
      const ids = Array.from({ length: n }, () => randomUUID())
      await bulkInsert(
        admin,
        impl.t.run,
        ['id', 'name', 'version', 'status', 'input', 'tags', 'created_at'],
        ids.map((id, i) => [id, 'bench', 1, 'pending', JSON.stringify({ i }), '["bench"]', now]),
      )
      await bulkInsert(admin, impl.t.job, ['run_id', 'run_at', 'priority', 'version'], ids.map((id) => [id, 0, 0, 1]))
      return { ids }
    },
    run: async (impl, ctx, n, loops) => {
      const stats = await drainRuns(impl.backend, { steps: STEPS, loops, batch: 20, leaseMs: 30_000, retry: withRetry })
      ctx.info = { claims: stats.claims, emptyClaims: stats.emptyClaims }
      const [[{ c }]] = await admin.query(`SELECT COUNT(*) AS c FROM ${impl.t.run} WHERE status = 'done'`)
      if (stats.completed !== n || Number(c) !== n) {
        throw new Error(`drain (${impl.name}): completed ${stats.completed}, done rows ${c}, expected ${n}`)
      }
      return n
    },
  }))
}

// ---------------------------------------------------------------------------------------------
// Server, database, implementations
// ---------------------------------------------------------------------------------------------

let server
let serverUrl = process.env.MYSQL_URL
const dbName = `ifbench_${process.pid}_${Date.now().toString(36)}`
let dbUrl

let admin // one mysql2 connection for setup, truncation and status probes
let proxy
const impls = []
const cleanups = []

async function cleanup() {
  for (const fn of cleanups.reverse()) {
    try {
      await fn()
    } catch (e) {
      console.error(`cleanup: ${e.message}`)
    }
  }
  cleanups.length = 0
}

/**
 * The seed module, or null when it is not measured: `--impl native`, or `--impl both` without the
 * seed text (a clone without ../shared beside it), which then measures native alone.
 */
async function seedFor(impl) {
  if (!['seed', 'native', 'both'].includes(impl)) throw new Error(`--impl must be seed, native or both`)
  if (impl === 'native') return null
  if (impl === 'both') {
    const status = seedAvailability()
    if (!status.available) {
      console.error(`${status.reason}; benchmarking native alone`)
      return null
    }
  }
  return loadSeed()
}

async function createImpls(seed) {
  const wanted = argv.impl === 'both' ? (seed ? ['seed', 'native'] : ['native']) : [argv.impl]

  if (wanted.includes('seed')) {
    const make = (url) => {
      const pool = mysql.createPool({ uri: url, connectionLimit: 10 })
      cleanups.push(() => pool.end())
      return { sql: seed.mysqlPool(pool) }
    }
    const direct = make(dbUrl)
    const impl = {
      name: 'seed',
      prefix: 'js_',
      module: seed,
      sql: direct.sql,
      backend: seed.createMysqlBackend(direct.sql, { prefix: 'js_' }),
      t: tableNames('js_'),
    }
    if (proxy) {
      const counted = make(proxy.url(dbUrl))
      impl.countedSql = counted.sql
      impl.counted = seed.createMysqlBackend(counted.sql, { prefix: 'js_' })
    }
    impls.push(impl)
  }
  if (wanted.includes('native')) {
    let native
    try {
      native = require(process.env.BENCH_NATIVE_MODULE ? resolvePath(process.env.BENCH_NATIVE_MODULE) : '../index.js')
    } catch (e) {
      if (argv.impl === 'native' || !seed) throw e
      console.error(`native: cannot load ../index.js (${e.message.split('\n')[0]}); benchmarking the seed only`)
    }
    if (native) {
      nativeInfo = describeBinary(process.env.BENCH_NATIVE_MODULE ? resolvePath(process.env.BENCH_NATIVE_MODULE) : require.resolve('../index.js'))
      const suffix = process.env.BENCH_NATIVE_URL_SUFFIX ?? ''
      const make = (url) => {
        const sql = native.mysqlPool(url + suffix)
        cleanups.push(async () => {
          for (const m of ['close', 'end', 'disconnect']) {
            if (typeof sql?.[m] === 'function') return sql[m]()
          }
        })
        return sql
      }
      const sql = make(dbUrl)
      const impl = {
        name: 'native',
        prefix: 'rs_',
        module: native,
        sql,
        backend: native.createMysqlBackend(sql, { prefix: 'rs_' }),
        t: tableNames('rs_'),
      }
      if (proxy) {
        impl.countedSql = make(proxy.url(dbUrl))
        impl.counted = native.createMysqlBackend(impl.countedSql, { prefix: 'rs_' })
      }
      impls.push(impl)
    }
  }
}

let nativeInfo = ''

/** Which addon binary sits beside the native entry point (a debug build is far slower). */
function describeBinary(entry) {
  try {
    let dir = statSync(entry).isDirectory() ? entry : dirname(entry)
    const nodes = readdirSync(dir).filter((f) => f.endsWith('.node'))
    if (nodes.length === 0) return `native entry ${entry}`
    const f = join(dir, nodes[0])
    const st = statSync(f)
    const mb = st.size / 2 ** 20
    const debug = mb > 40 ? ' - LOOKS LIKE A DEBUG BUILD, numbers are not representative (npm run build)' : ''
    return `native binary ${f} (${mb.toFixed(1)} MB, built ${st.mtime.toISOString()})${debug}`
  } catch {
    return `native entry ${entry}`
  }
}

async function statusCounters() {
  const [rows] = await admin.query(
    "SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Com_stmt_prepare', 'Com_commit', 'Com_rollback')",
  )
  return Object.fromEntries(rows.map((r) => [r.Variable_name, Number(r.Value)]))
}

async function truncateAll(impl) {
  for (const t of Object.values(impl.t)) await admin.query(`TRUNCATE TABLE ${t}`)
}

/** Opens the pools' connections before anything is measured. */
async function warm(backend) {
  await Promise.all(Array.from({ length: 32 }, () => backend.store.loadRunRow('warm-up')))
  await Promise.all(Array.from({ length: 16 }, () => backend.queue.claim({ limit: 1, leaseMs: 1, now: new Date(0) })))
}

let probeCost = 1
const failures = []

/** One timed (or counted) execution of a scenario for one implementation. */
async function execute(sc, impl, { counted = false, size = sc.size } = {}) {
  await truncateAll(impl)
  const target = counted ? { ...impl, backend: impl.counted, sql: impl.countedSql } : impl
  // Transactions the implementation re-ran by itself after a deadlock, when it tells (native: sql.stats()).
  const internalRetries = () => {
    const st = typeof target.sql?.stats === 'function' ? target.sql.stats() : undefined
    return Number(st?.deadlockRetries ?? 0)
  }
  const ctx = await sc.setup(target, size)
  if (counted) proxy.take()
  const s0 = await statusCounters()
  const cpu0 = process.cpuUsage()
  const th0 = mainThreadCpuUs()
  const srv0 = serverCpuUs()
  const elu0 = performance.eventLoopUtilization()
  const retries0 = transientRetries
  const internal0 = internalRetries()
  const t0 = performance.now()
  const ops = await sc.run(target, ctx, size, sc.conc)
  const ms = performance.now() - t0
  const elu = performance.eventLoopUtilization(elu0)
  const th = mainThreadCpuUs() - th0
  const srv = serverCpuUs() - srv0
  const cpu = process.cpuUsage(cpu0)
  const s1 = await statusCounters()
  const wire = counted ? proxy.take() : undefined
  return {
    ops,
    ms,
    rate: (ops * 1000) / ms,
    stmtsPerOp: (s1.Questions - s0.Questions - probeCost) / ops,
    preparesPerOp: (s1.Com_stmt_prepare - s0.Com_stmt_prepare) / ops,
    commitsPerOp: (s1.Com_commit - s0.Com_commit) / ops,
    retries: transientRetries - retries0 + (internalRetries() - internal0),
    info: ctx.info,
    rtPerOp: wire ? wire.roundTrips / ops : undefined,
    wire,
    cpuUsPerOp: (cpu.user + cpu.system) / ops,
    mainCpuUsPerOp: th / ops,
    serverCpuUsPerOp: srv / ops,
    elu: elu.utilization,
  }
}

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

const fmt = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a')
const fmtRate = (x) => (Number.isFinite(x) ? (x >= 100 ? x.toFixed(0) : x.toFixed(1)) : 'n/a')

async function main() {
  const all = [...microScenarios(), ...drainScenarios()]
  const scenarios = argv.only?.length ? all.filter((s) => argv.only.some((o) => s.name.includes(o))) : all
  if (argv.list) {
    for (const s of all) console.log(`${s.name}  (${s.size} ${s.kind === 'drain' ? 'runs' : 'ops'})`)
    return
  }
  if (scenarios.length === 0) throw new Error(`--only ${argv.only.join(', ')} matches no scenario (see --list)`)

  const seed = await seedFor(argv.impl)
  if (!serverUrl) {
    const { startPrivateServer } = await import('../__test__/helpers/mariadb.mjs')
    server = await startPrivateServer()
    serverUrl = server.url
  }
  dbUrl = (() => {
    const u = new URL(serverUrl)
    u.pathname = `/${dbName}`
    return u.toString()
  })()
  {
    const root = await mysql.createConnection({ uri: serverUrl })
    await root.query(`CREATE DATABASE \`${dbName}\` CHARACTER SET utf8mb4`)
    await root.end()
  }
  cleanups.push(async () => {
    const root = await mysql.createConnection({ uri: serverUrl })
    await root.query(`DROP DATABASE IF EXISTS \`${dbName}\``)
    await root.end()
  })
  admin = await mysql.createConnection({ uri: dbUrl })
  cleanups.push(() => admin.end())

  if (!argv['no-count']) {
    const u = new URL(serverUrl)
    proxy = await startCountingProxy({ host: u.hostname || '127.0.0.1', port: Number(u.port || 3306) })
    cleanups.push(() => proxy.close())
  }

  await createImpls(seed)
  if (impls.length === 0) throw new Error('no implementation to benchmark')
  for (const impl of impls) {
    await impl.module.applySchema(impl.sql, impl.prefix)
    await warm(impl.backend)
    if (impl.counted) await warm(impl.counted)
  }
  {
    const a = await statusCounters()
    const b = await statusCounters()
    probeCost = b.Questions - a.Questions
  }

  const [{ model }] = cpus()
  console.log(`# iterativeflow MySQL backend: native vs seed (JS over mysql2)\n`)
  console.log(`server ${server ? 'private MariaDB (started for this run)' : serverUrl.replace(/\/\/[^@]*@/, '//…@')}, ` +
    `${cpus().length} CPU (${model.trim()}), node ${process.version}, scale ${SCALE}, reps ${REPS}, ` +
    `implementations: ${impls.map((i) => i.name).join(', ')}`)
  if (nativeInfo) console.log(nativeInfo)
  if (!server) console.log('note: MYSQL_URL server - statement counts assume no other clients are active')
  console.log('')

  const results = []
  for (const sc of scenarios) {
    const res = { name: sc.name, kind: sc.kind, unit: sc.unit, conc: sc.conc, size: sc.size, reps: {}, counted: {} }
    res.errors = {}
    for (const impl of impls) res.reps[impl.name] = []
    // A failing implementation is reported and skipped for the rest of this scenario.
    const guarded = async (impl, fn) => {
      if (res.errors[impl.name]) return undefined
      try {
        return await fn()
      } catch (e) {
        res.errors[impl.name] = e?.message ?? String(e)
        failures.push({ scenario: sc.name, impl: impl.name, error: e })
        console.error(`  ${sc.name}: ${impl.name} FAILED: ${res.errors[impl.name]}`)
        return undefined
      }
    }
    // Counting pass (through the wire counter) doubles as warm-up.
    if (proxy) {
      const size = Math.max(sc.kind === 'drain' ? 20 : 16, Math.round(sc.size * COUNT_FRACTION))
      for (const impl of impls) {
        res.counted[impl.name] = await guarded(impl, () => execute(sc, impl, { counted: true, size }))
      }
    }
    for (let rep = 0; rep < REPS; rep++) {
      const order = rep % 2 === 0 ? impls : [...impls].reverse()
      for (const impl of order) {
        const r = await guarded(impl, () => execute(sc, impl))
        if (r) res.reps[impl.name].push(r)
      }
    }
    const summary = {}
    for (const impl of impls) {
      const reps = res.reps[impl.name]
      const counted = res.counted[impl.name]
      if (res.errors[impl.name]) {
        summary[impl.name] = { error: res.errors[impl.name] }
        continue
      }
      summary[impl.name] = {
        rate: median(reps.map((r) => r.rate)),
        stmtsPerOp: median(reps.map((r) => r.stmtsPerOp)),
        preparesPerOp: median(reps.map((r) => r.preparesPerOp)),
        rtPerOp: counted?.rtPerOp,
        wire: counted?.wire,
        cpuUsPerOp: median(reps.map((r) => r.cpuUsPerOp)),
        mainCpuUsPerOp: median(reps.map((r) => r.mainCpuUsPerOp)),
        serverCpuUsPerOp: median(reps.map((r) => r.serverCpuUsPerOp)),
        elu: median(reps.map((r) => r.elu)),
        retries: reps.reduce((a, r) => a + r.retries, 0),
      }
    }
    res.summary = summary
    results.push(res)
    const line = impls
      .map((i) =>
        summary[i.name].error
          ? `${i.name} FAILED`
          : `${i.name} ${fmtRate(summary[i.name].rate)} ${sc.unit}, ${fmt(summary[i.name].rtPerOp, 2)} RT/op`,
      )
      .join(' | ')
    console.error(`  ${sc.name}: ${line}`)
  }

  // Main table.
  const S = (r, impl, k) => r.summary[impl]?.[k]
  const rateCell = (r, impl) => (r.errors[impl] ? 'FAILED' : fmtRate(S(r, impl, 'rate')))
  console.log('| scenario | seed | native | ratio | seed RT/op | native RT/op |')
  console.log('|---|---:|---:|---:|---:|---:|')
  for (const r of results) {
    const ratio = S(r, 'native', 'rate') / S(r, 'seed', 'rate')
    console.log(
      `| ${r.name} | ${rateCell(r, 'seed')} | ${rateCell(r, 'native')} | ` +
        `${Number.isFinite(ratio) ? `${ratio.toFixed(2)}×` : 'n/a'} | ` +
        `${fmt(S(r, 'seed', 'rtPerOp'), 2)} | ${fmt(S(r, 'native', 'rtPerOp'), 2)} |`,
    )
  }
  console.log(`\nRates are medians over ${REPS} interleaved repetitions (ops/s; runs/s for drains). ` +
    `ratio = native / seed throughput (> 1: native faster). RT/op = client commands awaiting a server reply, ` +
    `counted on the wire in a separate pass (${COUNT_FRACTION} of the size).\n`)

  // Detail table.
  console.log('| scenario | impl | stmts/op | prepares/op | CPU µs/op (process) | CPU µs/op (main thread) | CPU µs/op (server) | ELU | retries |')
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|')
  for (const r of results) {
    for (const impl of impls) {
      const s = r.summary[impl.name]
      if (s.error) {
        console.log(`| ${r.name} | ${impl.name} | FAILED: ${s.error.replace(/\|/g, '/').slice(0, 120)} | | | | | | |`)
        continue
      }
      console.log(
        `| ${r.name} | ${impl.name} | ${fmt(s.stmtsPerOp, 2)} | ${fmt(s.preparesPerOp, 2)} | ${fmt(s.cpuUsPerOp, 0)} | ` +
          `${fmt(s.mainCpuUsPerOp, 0)} | ${fmt(s.serverCpuUsPerOp, 0)} | ${fmt(s.elu, 2)} | ${s.retries} |`,
      )
    }
  }
  console.log('\nstmts/op from the server\'s Questions counter (each statement of a multi-statement query counts; ' +
    'prepares do not). Process CPU includes native worker threads; main-thread CPU is the JS thread alone; server CPU is the private server process (n/a with MYSQL_URL). ' +
    'retries = operations re-run after a deadlock or lock-wait timeout, by the bench or (native, from sql.stats()) ' +
    'inside the implementation; sum over the timed repetitions.')

  if (failures.length) {
    console.log(`\n${failures.length} scenario/implementation pair(s) FAILED:`)
    for (const f of failures) console.log(`- ${f.scenario} (${f.impl}): ${f.error?.message ?? f.error}`)
    process.exitCode = 1
  }

  if (argv.json) {
    writeFileSync(
      argv.json,
      JSON.stringify({ scale: SCALE, reps: REPS, node: process.version, cpus: cpus().length, results }, null, 2),
    )
    console.log(`\nraw results: ${argv.json}`)
  }
}

try {
  await main()
} catch (e) {
  process.exitCode = 1
  console.error(e)
} finally {
  await cleanup()
  if (server) await server.stop()
}
