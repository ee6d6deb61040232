// Loopback endpoints that stand for a server that is not there or does not answer: what the
// connect-error, lifecycle, doctor and push tests point a pool at.
import net from 'node:net';

/** A port on 127.0.0.1 that nothing listens on (bound, then released). */
export async function closedPort() {
  const srv = net.createServer();
  await new Promise((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', resolve);
  });
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

/**
 * A server on 127.0.0.1 that accepts connections and never sends a byte; `accepted()` counts the
 * connections it took, `close()` ends them and stops listening.
 */
export async function blackhole() {
  const sockets = new Set();
  let total = 0;
  const srv = net.createServer((s) => {
    total += 1;
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return {
    port: srv.address().port,
    accepted: () => total,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => srv.close(r));
    },
  };
}
