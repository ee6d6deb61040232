// Server time per statement shape: performance_schema's statement digests (reset before and read
// after each timed repetition, merged per run), the statement texts sampled from
// events_statements_history_long during the counting passes, and the prepared-statement
// executions (prepared_statements_instances), which have no digest. All read on `probe`.
import { bench } from './context.mjs';

/** performance_schema statement digests: available (and which optional columns exist)? */
export let digestInfo = { enabled: false, cpu: false, reason: 'not checked' };

export async function checkDigests() {
  try {
    const [[{ ps }]] = await bench.probe.query('SELECT @@performance_schema AS ps');
    if (!Number(ps)) return (digestInfo = { enabled: false, reason: 'performance_schema is OFF on this server' });
    const [c] = await bench.probe.query(
      "SELECT ENABLED FROM performance_schema.setup_consumers WHERE NAME = 'statements_digest'",
    );
    if (c[0]?.ENABLED !== 'YES')
      return (digestInfo = { enabled: false, reason: 'the statements_digest consumer is off' });
    const [cols] = await bench.probe.query('SHOW COLUMNS FROM performance_schema.events_statements_summary_by_digest');
    const names = new Set(cols.map((x) => x.Field));
    await bench.probe.query('TRUNCATE TABLE performance_schema.events_statements_summary_by_digest');
    const [h] = await bench.probe.query(
      "SELECT COUNT(*) AS c FROM performance_schema.setup_consumers WHERE NAME IN ('events_statements_current', 'events_statements_history_long')",
    );
    digestInfo = { enabled: true, cpu: names.has('SUM_CPU_TIME'), samples: Number(h[0].c) === 2 };
  } catch (e) {
    digestInfo = { enabled: false, reason: e.message };
  }
  return digestInfo;
}

// Statement texts by digest. MariaDB (10.11) gives every statement after the first of a
// multi-statement packet the first one's DIGEST_TEXT (with a digest of its own), so the table
// would show e.g. the three reads of native's loadRun under one text. The real text is taken from
// events_statements_history_long - enabled only during the untimed counting passes, where its
// cost does not matter - whose SQL_TEXT for such a statement starts with that statement.
const digestSamples = new Map();
const SAMPLE_CONSUMERS = "('events_statements_current', 'events_statements_history_long')";

export async function startSampling() {
  await bench.probe.query(
    `UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' WHERE NAME IN ${SAMPLE_CONSUMERS}`,
  );
  await bench.probe.query('TRUNCATE TABLE performance_schema.events_statements_history_long');
  // Prepared executions have no digest; their own table counts them only while the
  // events_statements_current consumer is on, i.e. in this untimed pass.
  // A server without the table (or without the right to truncate it) just has no such table.
  preparedSampled = await bench.probe
    .query('TRUNCATE TABLE performance_schema.prepared_statements_instances')
    .then(() => true)
    .catch(() => false);
}

let preparedSampled = false;

/**
 * Executions of prepared statements since `startSampling`, by statement text, on sessions whose
 * default schema is the bench database: `[{ text, n, timerPs, examined, affected }]`.
 */
async function readPrepared() {
  const [rows] = await bench.probe.query(
    `SELECT p.SQL_TEXT AS text, SUM(p.COUNT_EXECUTE) AS n, SUM(p.SUM_TIMER_EXECUTE) AS timer,
            SUM(p.SUM_ROWS_EXAMINED) AS examined, SUM(p.SUM_ROWS_AFFECTED) AS affected
       FROM performance_schema.prepared_statements_instances p
       JOIN performance_schema.threads t ON t.THREAD_ID = p.OWNER_THREAD_ID
      WHERE t.PROCESSLIST_DB = ? AND p.COUNT_EXECUTE > 0
      GROUP BY p.SQL_TEXT`,
    [bench.dbName],
  );
  return rows.map((r) => ({
    text: normalizeSql(String(r.text)),
    n: Number(r.n),
    timerPs: Number(r.timer),
    examined: Number(r.examined),
    affected: Number(r.affected),
  }));
}

/** Reads the sampled statement texts (and returns the prepared executions), then stops sampling. */
export async function collectSamples() {
  try {
    const prepared = preparedSampled ? await readPrepared().catch(() => undefined) : undefined;
    const [rows] = await bench.probe.query(
      `SELECT DIGEST AS digest, SQL_TEXT AS text FROM performance_schema.events_statements_history_long
        WHERE CURRENT_SCHEMA = ? AND DIGEST IS NOT NULL AND SQL_TEXT IS NOT NULL`,
      [bench.dbName],
    );
    for (const r of rows) {
      if (digestSamples.has(r.digest)) continue;
      const first = firstStatement(r.text);
      digestSamples.set(r.digest, { text: normalizeSql(first), rest: r.text.trim().length > first.length + 1 });
    }
    return prepared;
  } finally {
    await bench.probe.query(
      `UPDATE performance_schema.setup_consumers SET ENABLED = 'NO' WHERE NAME IN ${SAMPLE_CONSUMERS}`,
    );
  }
}

/** The first statement of a (multi-statement) SQL text: up to the first `;` outside quotes. */
function firstStatement(sql) {
  let q = null;
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i];
    if (q) {
      if (c === '\\' && q !== '`') i++;
      else if (c === q) q = null;
    } else if (c === "'" || c === '"' || c === '`') q = c;
    else if (c === ';') return sql.slice(0, i).trim();
  }
  return sql.trim();
}

/** Literals → `?`, value lists → `(...)`, back-quotes and runs of white space dropped. */
function normalizeSql(stmt) {
  return stmt
    .replace(/'(?:[^'\\]|\\.|'')*'/g, '?')
    .replace(/"(?:[^"\\]|\\.|"")*"/g, '?')
    .replace(/\b0x[0-9a-f]+\b/gi, '?')
    .replace(/(?<![\w`.])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\w`])/gi, '?')
    .replace(/\bNULL\b/g, '?')
    .replace(/\(\s*\?(?:\s*,\s*\?)+\s*\)/g, '(...)')
    .replace(/(\((?:\.\.\.|\?)\))(?:\s*,\s*\((?:\.\.\.|\?)\))+/g, '$1, ...')
    .replace(/'[^']*$/, '? …') // SQL_TEXT is cut at performance_schema_max_sql_text_length
    .replace(/`/g, '')
    .replace(/\s+/g, ' ')
    .replace(/(WHEN \? THEN \? )(?:WHEN \? THEN \? )+/g, '$1… ')
    .trim();
}

/** Prepared executions per run (`runs` of the counting pass), largest server time per run first. */
export function perRunPrepared(rows, runs) {
  if (!runs) return undefined;
  const out = rows.map((d) => ({
    text: d.text,
    perRun: d.n / runs,
    usPerExec: d.n ? d.timerPs / d.n / 1e6 : NaN,
    usPerRun: d.timerPs / runs / 1e6,
    rowsExaminedPerExec: d.n ? d.examined / d.n : NaN,
  }));
  const n = rows.reduce((a, d) => a + d.n, 0);
  const timerPs = rows.reduce((a, d) => a + d.timerPs, 0);
  return {
    runs,
    total: {
      text: `all ${rows.length} prepared statements`,
      perRun: n / runs,
      usPerExec: n ? timerPs / n / 1e6 : NaN,
      usPerRun: timerPs / runs / 1e6,
    },
    rows: out.sort((a, b) => b.usPerRun - a.usPerRun),
  };
}

export const resetDigests = () =>
  bench.probe.query('TRUNCATE TABLE performance_schema.events_statements_summary_by_digest');

/** The digests of statements run with the bench database as default schema (the implementations' pools). */
export async function readDigests() {
  const [rows] = await bench.probe.query(
    `SELECT DIGEST AS digest, DIGEST_TEXT AS text, COUNT_STAR AS n, SUM_TIMER_WAIT AS timer, SUM_LOCK_TIME AS lockTime,
            SUM_ROWS_EXAMINED AS examined, SUM_ROWS_AFFECTED AS affected, SUM_ROWS_SENT AS sent, SUM_ERRORS AS errors
            ${digestInfo.cpu ? ', SUM_CPU_TIME AS cpu' : ''}
       FROM performance_schema.events_statements_summary_by_digest WHERE SCHEMA_NAME = ?`,
    [bench.dbName],
  );
  const key = (t) =>
    String(t)
      .toLowerCase()
      .replace(/[^a-z0-9]/g, '')
      .slice(0, 40);
  return rows.map((r) => {
    const sample = digestSamples.get(r.digest);
    // Where the statement sat: a DIGEST_TEXT that is not its own text means "after the first
    // statement of a packet"; a sample with text after the statement means "not last".
    const own = sample && key(sample.text) === key(r.text);
    const position = !sample
      ? undefined
      : sample.rest
        ? own
          ? 'packet-first'
          : 'packet-inner'
        : own
          ? 'alone'
          : 'packet-last';
    return {
      digest: r.digest,
      text: sample?.text ?? r.text,
      textSource: sample ? 'sample' : 'digest_text',
      position,
      n: Number(r.n),
      timerPs: Number(r.timer),
      lockPs: Number(r.lockTime),
      cpuPs: r.cpu === undefined ? undefined : Number(r.cpu),
      examined: Number(r.examined),
      affected: Number(r.affected),
      sent: Number(r.sent),
      errors: Number(r.errors),
    };
  });
}

/**
 * Digests summed over repetitions, per run: `{ runs, total: {…}, rows: [{ text, perRun, usPerStmt,
 * usPerRun, cpuUsPerRun?, … }] }`, sorted by server time per run, largest first.
 */
export function mergeDigests(reps) {
  const by = new Map();
  let runs = 0;
  for (const r of reps) {
    if (!r.digests) continue;
    runs += r.ops;
    for (const d of r.digests) {
      const key = d.digest ?? d.text;
      const acc = by.get(key) ?? {
        digest: d.digest,
        text: d.text,
        textSource: d.textSource,
        position: d.position,
        n: 0,
        timerPs: 0,
        lockPs: 0,
        cpuPs: d.cpuPs === undefined ? undefined : 0,
        examined: 0,
        affected: 0,
        sent: 0,
        errors: 0,
      };
      for (const k of ['n', 'timerPs', 'lockPs', 'examined', 'affected', 'sent', 'errors']) acc[k] += d[k];
      if (acc.cpuPs !== undefined) acc.cpuPs += d.cpuPs ?? 0;
      by.set(key, acc);
    }
  }
  if (runs === 0) return undefined;
  const shape = (d) => ({
    digest: d.digest,
    text: d.text,
    textSource: d.textSource,
    position: d.position,
    perRun: d.n / runs,
    usPerStmt: d.n ? d.timerPs / d.n / 1e6 : NaN,
    usPerRun: d.timerPs / runs / 1e6,
    cpuUsPerRun: d.cpuPs === undefined ? undefined : d.cpuPs / runs / 1e6,
    lockUsPerRun: d.lockPs / runs / 1e6,
    rowsExaminedPerStmt: d.n ? d.examined / d.n : NaN,
    rowsAffectedPerStmt: d.n ? d.affected / d.n : NaN,
    errors: d.errors,
  });
  const all = [...by.values()];
  const total = all.reduce(
    (a, d) => {
      for (const k of ['n', 'timerPs', 'lockPs', 'examined', 'affected', 'sent', 'errors']) a[k] += d[k];
      if (a.cpuPs !== undefined) a.cpuPs += d.cpuPs ?? 0;
      return a;
    },
    {
      text: `all ${all.length} statement shapes`,
      n: 0,
      timerPs: 0,
      lockPs: 0,
      cpuPs: digestInfo.cpu ? 0 : undefined,
      examined: 0,
      affected: 0,
      sent: 0,
      errors: 0,
    },
  );
  return {
    runs,
    shapes: all.length,
    total: shape(total),
    rows: all.map(shape).sort((a, b) => b.usPerRun - a.usPerRun),
  };
}
