// A MySQL-protocol-aware TCP proxy for fault injection, between the package and a MariaDB server.
//
//   const p = await startFaultProxy({ port: serverPort });  // listens on 127.0.0.1:p.port
//   const h = p.arm({ match: /^COMMIT/i, kind: 'reset-on-answer' });
//   await call().catch(() => {});
//   h.cancel();            // disarm if the call sent no matching command
//   h.hit                  // null, or { kind, connId, threadId, upstreamPort, text } once it fired
//   p.blackhole(); …; p.heal();
//   p.connections()        // live sessions: { id, threadId, upstreamPort, clientPort, faulted }
//   p.upstreamPorts()      // the proxy's outbound ports (PROCESSLIST HOST 127.0.0.1:<port>)
//   p.dropAll()            // reset every current connection (cleanup)
//   await p.close();
//
// The proxy only ever listens on loopback. It reads the client → server direction as MySQL
// packets (3-byte little-endian payload length, 1-byte sequence id; a payload of 0xFFFFFF bytes
// continues in the next packet) and treats a packet with sequence id 0 as the start of a command
// — the handshake response and auth exchange carry ids ≥ 1, so they pass untouched. A COM_QUERY
// (command byte 0x03) is matched against the armed faults by its text; a COM_STMT_EXECUTE (0x17,
// the execution of a prepared statement, which carries only a statement id) is matched as the
// text `EXECUTE`, so a test with one call in flight can target that call's execution; everything
// else is forwarded as is.
// The server → client direction is forwarded raw (only the greeting is peeked at, for the
// server's connection id). TLS is not supported: a client asking for it is passed through raw and
// never faulted.
//
// Fault kinds, applied to the NEXT matching command (once), on whichever connection sends it:
//   reset-after-send  forward the complete command, then RST both sides (nothing of the answer
//                     reaches the client)
//   reset-on-answer   forward the command, wait for the server's first answer bytes, then RST
//                     both sides without forwarding them
//   cut-mid-request   forward only part of the command — `cutBytes` bytes, or the fraction
//                     `cutAt` of it (default 0.5), at least 1 byte and never all — then RST both
//                     sides
//   delay             forward the command, hold the answer for `delayMs`, then forward it all
//   blackhole         swallow this command and everything after it, both ways, on that
//                     connection (sockets stay open; heal() resets such a connection)
//
// blackhole() swallows all traffic, both ways, on every current and new connection; closes from
// the server are withheld from the client too (it hears nothing at all), while a client's close
// is still passed on so that the server session ends. heal() lets traffic through again and
// resets every connection that lost bytes meanwhile (its stream cannot be resynchronised).
import net from 'node:net';

const MAX_PAYLOAD = 0xffffff;
const COM_QUERY = 0x03;
const COM_STMT_EXECUTE = 0x17;
const CLIENT_SSL = 0x800;
const KINDS = new Set(['reset-after-send', 'reset-on-answer', 'cut-mid-request', 'delay', 'blackhole']);

/**
 * @param {{ port: number, host?: string }} opts  the server to proxy (host defaults to 127.0.0.1)
 */
export async function startFaultProxy({ port, host = '127.0.0.1' } = {}) {
  if (!Number.isInteger(port) || port <= 0) throw new TypeError('startFaultProxy: port must be the server port');
  const conns = new Set();
  const arms = [];
  let holed = false;
  let nextId = 1;
  const stats = { connections: 0, commands: 0, faults: 0 };

  const server = net.createServer({ allowHalfOpen: false }, (client) => {
    stats.connections++;
    const upstream = net.connect({ host, port });
    const c = {
      id: nextId++,
      client,
      upstream,
      threadId: null,
      upstreamPort: null,
      clientPort: client.remotePort,
      raw: false, // TLS requested: stop parsing
      dead: false, // a fault fired: nothing more is forwarded either way
      swallowed: false, // bytes were dropped (blackhole)
      holeOwn: false, // per-connection blackhole
      peerClosedWhileHoled: false,
      answerFault: null, // 'reset' | { until, queue } (delay)
      inbuf: Buffer.alloc(0),
      cmd: null, // packets of a command still being assembled (multi-packet payloads)
      greetBuf: Buffer.alloc(0),
      greeted: false,
      sawResponse: false,
    };
    conns.add(c);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    upstream.once('connect', () => {
      c.upstreamPort = upstream.localPort;
    });
    client.on('error', () => {});
    upstream.on('error', () => {});

    client.on('data', (chunk) => fromClient(c, chunk));
    upstream.on('data', (chunk) => fromServer(c, chunk));

    // A close on one side is passed on to the other — reset for reset, end for end — except
    // that a silenced client hears nothing of the server's side.
    client.on('close', (hadError) => {
      conns.delete(c);
      if (hadError) reset(upstream);
      else upstream.destroy();
    });
    upstream.on('close', (hadError) => {
      if (holed || c.holeOwn) {
        c.peerClosedWhileHoled = true;
        return;
      }
      if (hadError) reset(client);
      else client.end();
    });
  });

  function silenced(c) {
    return holed || c.holeOwn;
  }

  function fromServer(c, chunk) {
    if (!c.greeted) peekGreeting(c, chunk);
    if (c.dead) return;
    if (silenced(c)) {
      c.swallowed = true;
      return;
    }
    const f = c.answerFault;
    if (f === 'reset') {
      // The answer has started: the server has begun running the command. Drop and reset.
      c.answerFault = null;
      killBoth(c);
      return;
    }
    if (f && f.queue) {
      f.queue.push(chunk);
      return;
    }
    c.client.write(chunk);
  }

  // The greeting (protocol 10): version byte, NUL-terminated version string, 4-byte thread id.
  function peekGreeting(c, chunk) {
    c.greetBuf = Buffer.concat([c.greetBuf, chunk]);
    if (c.greetBuf.length < 4) return;
    const len = c.greetBuf.readUIntLE(0, 3);
    if (c.greetBuf.length < 4 + len) return;
    c.greeted = true;
    const payload = c.greetBuf.subarray(4, 4 + len);
    c.greetBuf = null;
    if (payload[0] !== 0x0a) return; // an ERR packet (too many connections…)
    const nul = payload.indexOf(0, 1);
    if (nul > 0 && nul + 5 <= payload.length) c.threadId = payload.readUInt32LE(nul + 1);
  }

  function fromClient(c, chunk) {
    if (c.dead) return;
    if (silenced(c)) {
      c.swallowed = true;
      return;
    }
    if (c.raw) {
      c.upstream.write(chunk);
      return;
    }
    c.inbuf = c.inbuf.length ? Buffer.concat([c.inbuf, chunk]) : chunk;
    while (c.inbuf.length >= 4 && !c.dead && !silenced(c)) {
      const len = c.inbuf.readUIntLE(0, 3);
      if (c.inbuf.length < 4 + len) break;
      const packet = c.inbuf.subarray(0, 4 + len);
      c.inbuf = c.inbuf.subarray(4 + len);
      const seq = packet[3];
      if (c.cmd) {
        c.cmd.push(packet);
      } else if (seq === 0) {
        c.cmd = [packet];
      } else {
        // Handshake response / auth exchange: pass untouched; an SSL request switches to raw.
        if (seq === 1 && len === 32 && packet.readUInt32LE(4) & CLIENT_SSL) {
          c.upstream.write(packet);
          c.raw = true;
          if (c.inbuf.length) c.upstream.write(c.inbuf);
          c.inbuf = Buffer.alloc(0);
          return;
        }
        c.upstream.write(packet);
        continue;
      }
      if (len === MAX_PAYLOAD) continue; // the payload goes on in the next packet
      const parts = c.cmd;
      c.cmd = null;
      command(c, parts.length === 1 ? parts[0] : Buffer.concat(parts), parts);
    }
    if (silenced(c) && c.inbuf.length) {
      c.swallowed = true;
      c.inbuf = Buffer.alloc(0);
    }
  }

  function command(c, bytes, parts) {
    stats.commands++;
    let arm;
    const cmd = parts[0][4];
    if (arms.length && (cmd === COM_QUERY || cmd === COM_STMT_EXECUTE)) {
      const text =
        cmd === COM_QUERY
          ? Buffer.concat(parts.map((p, i) => p.subarray(i === 0 ? 5 : 4))).toString('utf8')
          : 'EXECUTE';
      const at = arms.findIndex((a) => (typeof a.match === 'function' ? a.match(text) : a.match.test(text)));
      if (at >= 0) {
        arm = arms.splice(at, 1)[0];
        arm.fire({
          kind: arm.kind,
          connId: c.id,
          threadId: c.threadId,
          upstreamPort: c.upstreamPort,
          text: text.slice(0, 200),
          bytes: bytes.length,
        });
      }
    }
    if (!arm) {
      c.upstream.write(bytes);
      return;
    }
    stats.faults++;
    switch (arm.kind) {
      case 'reset-after-send':
        c.dead = true;
        // The write callback runs once the kernel has the bytes; only then reset, so the whole
        // command is delivered before the RST.
        c.upstream.write(bytes, () => killBoth(c));
        break;
      case 'reset-on-answer':
        c.answerFault = 'reset';
        c.upstream.write(bytes);
        break;
      case 'cut-mid-request': {
        c.dead = true;
        const want = arm.cutBytes ?? Math.floor(bytes.length * arm.cutAt);
        const n = Math.min(bytes.length - 1, Math.max(1, want));
        c.upstream.write(bytes.subarray(0, n), () => killBoth(c));
        break;
      }
      case 'delay': {
        const hold = { queue: [] };
        c.answerFault = hold;
        c.upstream.write(bytes);
        setTimeout(() => {
          if (c.answerFault === hold) c.answerFault = null;
          if (c.dead || c.client.destroyed) return;
          for (const b of hold.queue) c.client.write(b);
        }, arm.delayMs);
        break;
      }
      case 'blackhole':
        c.holeOwn = true;
        c.swallowed = true;
        break;
    }
  }

  function reset(sock) {
    if (sock.destroyed) return;
    // resetAndDestroy() closes with SO_LINGER 0: the peer gets an RST, not a FIN. Not once
    // end() was called: libuv then refuses the reset (a shutdown is pending) and Node 20 leaves
    // that handle open forever, so the process spins at exit. A FIN is all that is left to send.
    if (sock.writableEnded) sock.destroy();
    else sock.resetAndDestroy();
  }

  function killBoth(c) {
    c.dead = true;
    reset(c.upstream);
    reset(c.client);
  }

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });

  return {
    port: server.address().port,
    stats,

    /**
     * Arms a fault for the next client COM_QUERY whose text matches (a prepared execution's
     * text is `EXECUTE`). Returns
     * `{ hit, fired, cancel() }`: `hit` is null until it fires, then the connection's info;
     * `fired` resolves with that info.
     */
    arm({ match, kind, delayMs = 100, cutBytes, cutAt = 0.5 } = {}) {
      if (!(match instanceof RegExp) && typeof match !== 'function')
        throw new TypeError('arm: match must be a RegExp or a function');
      if (!KINDS.has(kind)) throw new TypeError(`arm: unknown kind ${JSON.stringify(kind)}`);
      let resolveFired;
      const handle = {
        hit: null,
        fired: new Promise((r) => {
          resolveFired = r;
        }),
        cancel() {
          const i = arms.indexOf(entry);
          if (i >= 0) arms.splice(i, 1);
        },
      };
      // A /g or /y regex keeps state between test() calls; match on a stateless copy.
      const re = match instanceof RegExp ? new RegExp(match.source, match.flags.replace(/[gy]/g, '')) : match;
      const entry = {
        match: re,
        kind,
        delayMs,
        cutBytes,
        cutAt,
        fire(info) {
          handle.hit = info;
          resolveFired(info);
        },
      };
      arms.push(entry);
      return handle;
    },

    /** Swallow all traffic, both ways, on every current and new connection. */
    blackhole() {
      holed = true;
    },

    /** Let traffic through again; connections that lost bytes meanwhile are reset. */
    heal() {
      holed = false;
      for (const c of [...conns]) {
        if (c.swallowed || c.peerClosedWhileHoled) {
          c.holeOwn = false;
          killBoth(c);
        }
      }
    },

    /** Live proxied sessions: `{ id, threadId, upstreamPort, clientPort, faulted }`. */
    connections() {
      return [...conns].map((c) => ({
        id: c.id,
        threadId: c.threadId,
        upstreamPort: c.upstreamPort,
        clientPort: c.clientPort,
        faulted: c.dead || c.swallowed,
      }));
    },

    /** The proxy's outbound local ports (the server's PROCESSLIST shows HOST = 127.0.0.1:<port>). */
    upstreamPorts() {
      return [...conns].map((c) => c.upstreamPort).filter((p) => p !== null);
    },

    /** Resets every current connection (frees calls stuck on a faulted one, e.g. in cleanup). */
    dropAll() {
      for (const c of [...conns]) killBoth(c);
    },

    /** Stops listening and resets every connection. */
    async close() {
      arms.length = 0;
      holed = false;
      for (const c of [...conns]) killBoth(c);
      await new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
