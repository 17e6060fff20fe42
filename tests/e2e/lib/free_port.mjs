// A free TCP port on loopback, for a process that must be told its port before it starts (an
// OpenID issuer whose URL names it, Prometheus, HAProxy, a metrics listener). The port is free
// when this resolves; another process could take it before ours binds, which on a test host's
// loopback does not happen in practice.
import net from 'node:net';

export async function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}
