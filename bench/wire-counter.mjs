// A counting TCP proxy for the MySQL client/server protocol.
//
// Every client command starts a new packet sequence (sequence id 0), and - apart from
// COM_STMT_CLOSE and COM_QUIT - each command waits for the server's answer: so the number of
// client packets with sequence id 0 is the number of round trips the client paid for. Server
// status counters cannot tell this (`Questions` counts each statement of a multi-statement
// query, and leaves out prepares and pings), so the bench routes a counting pass through here.
//
// Only plain (non-TLS, uncompressed) connections can be counted; a connection that switches to
// TLS is passed through and flagged in `counts.opaqueConnections`.

import net from 'node:net';

const COMMANDS = {
  0x01: 'quit',
  0x02: 'init_db',
  0x03: 'query',
  0x0e: 'ping',
  0x11: 'change_user',
  0x16: 'stmt_prepare',
  0x17: 'stmt_execute',
  0x18: 'stmt_send_long_data',
  0x19: 'stmt_close',
  0x1a: 'stmt_reset',
  0x1b: 'set_option',
  0x1c: 'stmt_fetch',
  0x1f: 'reset_connection',
};
// Commands the server does not answer: no round trip.
const NO_REPLY = new Set([0x01, 0x18, 0x19]);

const CLIENT_SSL = 0x800;

/**
 * Starts the proxy on 127.0.0.1 (random port) in front of `target` ({ host, port }).
 * Returns `{ port, url(u), counts, reset(), close() }`; `url(u)` rewrites a mysql:// URL to go
 * through the proxy.
 */
export async function startCountingProxy(target) {
  const counts = newCounts();
  const sockets = new Set();

  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    sockets.add(client);
    sockets.add(upstream);
    counts.connections += 1;
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    let buf = Buffer.alloc(0);
    let opaque = false;
    let handshakeSeen = false;
    client.on('data', (chunk) => {
      upstream.write(chunk);
      if (opaque) return;
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      while (buf.length >= 4) {
        const len = buf.readUIntLE(0, 3);
        if (buf.length < 4 + len) break;
        const seq = buf[3];
        if (!handshakeSeen) {
          // The first client packet is the handshake response (or an SSL request).
          handshakeSeen = true;
          if (len >= 4 && buf.readUInt32LE(4) & CLIENT_SSL) {
            opaque = true;
            counts.opaqueConnections += 1;
            buf = Buffer.alloc(0);
            return;
          }
        } else if (seq === 0 && len > 0) {
          const cmd = buf[4];
          const name = COMMANDS[cmd] ?? `0x${cmd.toString(16)}`;
          counts.byCommand[name] = (counts.byCommand[name] ?? 0) + 1;
          counts.commands += 1;
          if (!NO_REPLY.has(cmd)) counts.roundTrips += 1;
        }
        buf = buf.subarray(4 + len);
      }
    });
    upstream.on('data', (chunk) => client.write(chunk));
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', end);
    upstream.on('error', end);
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  server.unref();
  const { port } = server.address();

  return {
    port,
    counts,
    url(u) {
      const x = new URL(u);
      x.hostname = '127.0.0.1';
      x.port = String(port);
      return x.toString();
    },
    /** Returns the counts so far and zeroes them. */
    take() {
      const out = { ...counts, byCommand: { ...counts.byCommand } };
      Object.assign(counts, newCounts(), { connections: 0 });
      return out;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

function newCounts() {
  return { connections: 0, opaqueConnections: 0, commands: 0, roundTrips: 0, byCommand: {} };
}
