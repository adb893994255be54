/**
 * A GET whose answer is not read until asked: a raw socket paused before any byte arrives. Node's
 * HTTP client reads the first chunks of an answer before it can be paused, and the kernel then grows
 * the socket's receive buffer (up to tcp_rmem's maximum, 32 MB on some machines), so a test of a
 * server that waits for its slow client would measure the kernel's buffers instead. Unread, the
 * socket keeps its first small buffer.
 */
import { connect, type Socket } from 'node:net';

export interface PausedGet {
  socket: Socket;
  /** Reads the whole answer (the server closes the connection at its end). */
  read(): Promise<{ status: number; body: string }>;
}

export async function pausedGet(url: string, path: string, headers: Record<string, string>): Promise<PausedGet> {
  const { hostname, port } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port) });
  socket.pause();
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const lines = [`GET ${path} HTTP/1.1`, `Host: ${hostname}:${port}`, 'Connection: close'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  const read = async () => {
    const parts: Buffer[] = [];
    for await (const part of socket) parts.push(part as Buffer);
    const raw = Buffer.concat(parts);
    const headEnd = raw.indexOf('\r\n\r\n');
    const head = raw.subarray(0, headEnd).toString('latin1');
    const status = Number(head.split(' ')[1]);
    let rest = raw.subarray(headEnd + 4);
    if (!/^transfer-encoding:\s*chunked/im.test(head)) return { status, body: rest.toString('utf8') };
    const chunks: Buffer[] = [];
    for (;;) {
      const lineEnd = rest.indexOf('\r\n');
      const size = Number.parseInt(rest.subarray(0, lineEnd).toString('latin1'), 16);
      if (!(size > 0)) break;
      chunks.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
      rest = rest.subarray(lineEnd + 2 + size + 2);
    }
    return { status, body: Buffer.concat(chunks).toString('utf8') };
  };
  return { socket, read };
}
