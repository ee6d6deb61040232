#!/usr/bin/env node
// What push by the binary log would cost on MySQL, against the doorbell (docs/push.md, "On MySQL:
// the doorbell or the binary log"). A listener holding a replication stream sees every committed
// change of the server; each such listener is a dump thread on the server that reads and sends
// every event of every database. Stand-ins for N listeners: N `mysqlbinlog --read-from-remote-server
// --stop-never` processes (the server does the same work for them as for any replica). Measured
// on a private MySQL (binary log on, ROW format, as a stock server):
//
// - the server's CPU per commit of a steady write load (one-row upserts and deletes, the queue's
//   shape) with 0, 1 and 10 streams open;
// - the server's CPU per second with the streams open and nothing written;
// - how long after its COMMIT a marker row shows in a stream (p50, p99).
//
//   node bench/push-binlog.mjs            # writes bench/push-binlog.json
//
// BENCH_BINLOG_COMMITS (default 3000), BENCH_BINLOG_IDLE_MS (default 6000), BENCH_BINLOG_SAMPLES (40).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

import mysql from 'mysql2/promise';
import { mysqlPrefix } from '../__test__/helpers/mysql.mjs';
import { startPrivateServer } from '../__test__/helpers/server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const COMMITS = Number(process.env.BENCH_BINLOG_COMMITS || 6000);
const IDLE_MS = Number(process.env.BENCH_BINLOG_IDLE_MS || 6000);
const SAMPLES = Number(process.env.BENCH_BINLOG_SAMPLES || 40);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** CPU (user + system) of process `pid` in µs. */
function cpuUs(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1e6) / 100; // clock ticks of 10 ms
}

let nextId = 1000;
/** A replication-stream reader from the private prefix (each with its own server id, as replicas have); `onLine` sees its decoded output. */
function streamReader(port, onLine) {
  const p = mysqlPrefix();
  const bin = path.join(p.prefix, 'usr', 'bin', 'mysqlbinlog');
  const args = [
    '--library-path',
    p.libs,
    bin,
    '--no-defaults',
    '--read-from-remote-server',
    '--stop-never',
    '--host=127.0.0.1',
    `--port=${port}`,
    '--user=root',
    `--connection-server-id=${nextId++}`,
    '--verbose',
    '--base64-output=DECODE-ROWS',
    '--to-last-log',
    'binlog.000001',
  ];
  const child = spawn(p.loader, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  if (onLine) readline.createInterface({ input: child.stdout }).on('line', onLine);
  else child.stdout.resume();
  return child;
}

const percentile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

async function main() {
  const server = await startPrivateServer({ kind: 'mysql' });
  const root = await mysql.createConnection({ uri: server.url, multipleStatements: true });
  const [{ model }] = os.cpus();
  const out = {
    date: new Date().toISOString(),
    host: `${os.cpus().length} CPU (${model.trim()})`,
    server: server.version,
    commits: COMMITS,
    variants: [],
  };
  try {
    await root.query(
      'CREATE DATABASE b; CREATE TABLE b.job (run_id VARCHAR(191) PRIMARY KEY, run_at BIGINT NOT NULL, n INT NOT NULL)',
    );
    const writer = await mysql.createConnection({ uri: `${server.url}b` });
    const load = async () => {
      for (let i = 0; i < COMMITS; i++) {
        const id = `r${i % 200}`;
        if (i % 2 === 0)
          await writer.query('INSERT INTO job VALUES (?, ?, 1) ON DUPLICATE KEY UPDATE n = n + 1', [id, i]);
        else await writer.query('DELETE FROM job WHERE run_id = ?', [id]);
      }
    };
    for (const readers of [0, 1, 10]) {
      const streams = Array.from({ length: readers }, () => streamReader(server.port));
      await sleep(1500); // caught up with what is already logged
      let c0 = cpuUs(server.pid);
      const t0 = Date.now();
      await sleep(IDLE_MS);
      const idle = (cpuUs(server.pid) - c0) / ((Date.now() - t0) / 1000);
      c0 = cpuUs(server.pid);
      const r0 = streams.map((s) => cpuUs(s.pid));
      await load();
      await sleep(500); // the dump threads finish sending
      const perCommit = (cpuUs(server.pid) - c0) / COMMITS;
      // What each listener would spend receiving and decoding every event of the server.
      const readerPerCommit = readers
        ? streams.reduce((n, s, i) => n + cpuUs(s.pid) - r0[i], 0) / readers / COMMITS
        : 0;
      for (const s of streams) s.kill('SIGKILL');
      out.variants.push({
        readers,
        idleServerUsPerS: Math.round(idle),
        serverUsPerCommit: Math.round(perCommit),
        readerUsPerCommit: Math.round(readerPerCommit),
      });
      console.log(
        `${readers} streams: idle ${Math.round(idle)} µs/s of server CPU, ${perCommit.toFixed(0)} µs per commit on the server, ${readerPerCommit.toFixed(0)} µs per commit in each reader`,
      );
    }
    // Latency: a marker row's COMMIT → its row in a stream.
    const waiting = new Map();
    const reader = streamReader(server.port, (line) => {
      const m = /'(mark-\d+)'/.exec(line);
      if (m && waiting.has(m[1])) {
        waiting.get(m[1])(performance.now());
        waiting.delete(m[1]);
      }
    });
    await sleep(1500);
    const lat = [];
    for (let i = 0; i < SAMPLES; i++) {
      const id = `mark-${i}`;
      const seen = new Promise((resolve) => waiting.set(id, resolve));
      await writer.query('INSERT INTO job VALUES (?, 0, 0)', [id]);
      const committed = performance.now();
      lat.push((await Promise.race([seen, sleep(5000).then(() => NaN)])) - committed);
      await sleep(50);
    }
    reader.kill('SIGKILL');
    out.latencyMs = { p50: +percentile(lat, 0.5).toFixed(2), p99: +percentile(lat, 0.99).toFixed(2), samples: SAMPLES };
    console.log(`commit → row in the stream: p50 ${out.latencyMs.p50} ms, p99 ${out.latencyMs.p99} ms`);
    await writer.end();
  } finally {
    await root.end();
    await server.stop();
  }
  fs.writeFileSync(path.join(here, 'push-binlog.json'), JSON.stringify(out, null, 2) + '\n');
}

await main();
