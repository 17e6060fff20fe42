// One HTTP/1.1 exchange on a socket of its own, the answer read byte for byte: fetch() would
// reject or hide a header line the server did not mean to write (response splitting), and it
// folds two fields of one name into one comma-joined value, so a request with a header sent
// twice cannot be made with it. Used by oauth.test.mjs and fleet.test.mjs.
import net from 'node:net';

// Sends `request` (the whole message) to host:port; resolves everything the peer sent until it
// closed, as latin1 text (a byte per character).
export function rawExchange(host, port, request, timeoutMs = 10000) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, host);
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk) => { answer += chunk; });
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`no answer: ${JSON.stringify(answer)}`)));
    socket.write(request);
  });
}

// A POST with `headers` ([name, value] pairs, written in order as given, a repeated name kept)
// after Host, Connection: close and Content-Length; resolves the raw answer.
export function rawPost(host, port, { path = '/mcp', headers = [], body = '{}' } = {}) {
  const fields = headers.map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return rawExchange(host, port, `POST ${path} HTTP/1.1\r\nHost: ${host}:${port}\r\nConnection: close\r\n`
    + `${fields}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
}

// The status code of a raw answer (0 when it is not an HTTP/1.1 status line).
export const rawStatus = (answer) => Number(/^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1] ?? 0);
