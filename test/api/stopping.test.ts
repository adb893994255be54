/**
 * A stop does not wait on connections that hold nothing under way (docs/deployment.md, "Stopping"): a
 * realtime stream is ended and a connection that has sent no request is closed at once, while a request
 * under way is let finish. Before, both held the stop until its 10-second grace cut every connection,
 * the request under way included.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { StreamClient } from '../support/realtime.ts';
import { startServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

const closed = (socket: Socket) => new Promise<void>((resolve) => socket.once('close', () => resolve()));

async function open(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port) });
  socket.on('error', () => {});
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return socket;
}

for (const store of STORES) {
  describe(`stopping the server [${store.name}]`, { skip: store.skip }, () => {
    it('when the server stops then idle connections and realtime streams end at once and a request under way finishes', async () => {
      const api = await startServer(store);
      let stopping: Promise<void> | undefined;
      try {
        const token = await api.adminToken();
        const stream = await StreamClient.open(api.url, { topic: 'things' }, token);
        assert.equal(stream.status, 200);
        const silent = await open(api.url);
        // A request whose body is still on its way: under way until the body ends.
        const body = JSON.stringify({ thing: { name: 'made while stopping' } });
        const pending = await open(api.url);
        const { host } = new URL(api.url);
        pending.write(
          `POST /api/v3/things HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
            `X-Auth-Token: ${token}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body.slice(0, 5)}`,
        );
        let answer = '';
        pending.on('data', (chunk: Buffer) => {
          answer += chunk.toString();
        });
        const pendingClosed = closed(pending);
        // The server has the request's head before the stop begins.
        await new Promise((resolve) => setTimeout(resolve, 200));
        stopping = api.close();
        await Promise.all([closed(silent), stream.ended]);
        assert.equal(pending.destroyed, false, 'the request under way is not cut');
        pending.write(body.slice(5));
        await pendingClosed;
        assert.match(answer, /^HTTP\/1\.1 \d{3} /, answer);
        await stopping;
      } finally {
        if (!stopping) await api.close();
      }
    });
  });
}
