/**
 * What a request read once a stop has begun is answered (docs/deployment.md, "Stopping"): a 503 in the
 * API's error body, with Retry-After and the request's id, so that its client sends it again, to another
 * instance or after the restart.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import { createKeyPair, sign } from '../support/device.ts';
import { createThing } from '../support/fixtures.ts';
import { eventually } from '../support/peers.ts';
import { startServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

const store = STORES.find((s) => s.name === 'sqlite');
if (!store) throw new Error('no SQLite store case');

describe('requests during a stop [sqlite]', () => {
  it('when a request is read behind one under way after the stop began then it is a 503 in the error body with Retry-After', async () => {
    const api = await startServer(store);
    const token = await api.adminToken();
    const pair = await createKeyPair(api, token);
    const thing = await createThing(api, token, { name: 'Stopping pump' });
    const request = (n: number, id: string) => {
      const body = JSON.stringify({ thing_key: thing.thing_key, data: { n } });
      return (
        'POST /api/v3/things/event.json HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n' +
        `Content-Length: ${body.length}\r\nX-Request-Id: ${id}\r\nX-Access-Key: ${pair.access_key}\r\n` +
        `X-Dtn-Signature: ${sign(pair.secret_key, body)}\r\n\r\n${body}`
      );
    };
    const url = new URL(api.url);
    const socket = connect({ port: Number(url.port), host: '127.0.0.1' });
    socket.on('error', () => {});
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    const first = request(1, 'under-way');
    // Under way as the stop begins: its body not all sent yet.
    socket.write(first.slice(0, -5));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const stopped = api.close();
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Its body's end, and another request behind it on the same connection.
    socket.write(first.slice(-5) + request(2, 'after-the-stop'));
    await stopped;
    await eventually(() => (text.match(/HTTP\/1\.1 /g) ?? []).length >= 2, 'both answers');
    assert.match(text, /^HTTP\/1\.1 200/, 'the request under way is answered as usual');
    const second = text.slice(text.lastIndexOf('HTTP/1.1 '));
    const [head = '', answer = ''] = second.split('\r\n\r\n');
    assert.match(head, /^HTTP\/1\.1 503/);
    assert.match(head, /retry-after: 1/i);
    assert.match(head, /x-request-id: after-the-stop/i);
    assert.match(head, /connection: close/i);
    const parsed = JSON.parse(answer);
    assert.equal(parsed.success, false);
    assert.equal(parsed.errors[0].code, 'unavailable');
    socket.destroy();
  });
});
