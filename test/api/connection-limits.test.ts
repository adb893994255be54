/**
 * Connections that hold a file descriptor and do nothing (docs/configuration.md, CONNECT_TIMEOUT,
 * HTTP_MAX_CONNECTIONS, MQTT_MAX_CONNECTIONS): a new connection that sends no request or CONNECT is
 * closed after CONNECT_TIMEOUT; HTTP connections past their limit are closed at once; HTTP and MQTT
 * together stay within the process's open-file limit less those kept for the store.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import mqtt from 'mqtt';
import { eventually } from '../support/peers.ts';
import { freePort } from '../support/ports.ts';
import { serveProcess, stopProcess } from '../support/process.ts';
import { startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';
import { makeAuthority } from '../support/tls.ts';

interface Held {
  socket: Socket;
  /** Resolves when the server closes the connection. */
  closed: Promise<void>;
  isClosed: () => boolean;
}

/** A TCP connection that sends nothing until told to. */
async function hold(port: number): Promise<Held> {
  const socket = connect({ port, host: '127.0.0.1' });
  let closed = false;
  const done = new Promise<void>((resolve) => {
    socket.once('close', () => {
      closed = true;
      resolve();
    });
  });
  socket.on('error', () => {});
  await Promise.race([once(socket, 'connect'), done]);
  return { socket, closed: done, isClosed: () => closed };
}

async function holdMany(port: number, count: number): Promise<Held[]> {
  const held: Held[] = [];
  for (let i = 0; i < count; i++) held.push(await hold(port));
  return held;
}

/** GET /healthz on a connection of its own, kept open: its status, or undefined when the server closed it unanswered. */
async function healthz(port: number, socket?: Socket): Promise<number | undefined> {
  const connection = socket ?? connect({ port, host: '127.0.0.1' });
  connection.on('error', () => {});
  let text = '';
  return new Promise((resolve) => {
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      if (!/\r\n\r\n/.test(text)) return;
      connection.off('data', onData);
      connection.off('close', onClose);
      resolve(Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1]));
    };
    const onClose = () => resolve(undefined);
    connection.on('data', onData);
    connection.once('close', onClose);
    connection.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive\r\n\r\n');
  });
}

/** Whether the broker lets an MQTT client past the connection limits: CONNACK 5 for its wrong password, 3 if refused. */
async function connackCode(port: number): Promise<number | undefined> {
  // mqtt's connectAsync never settles when its connect timeout passes (the client closes without an
  // error), which hung a run on a loaded machine: the client's events are followed instead.
  const client = mqtt.connect(`mqtt://127.0.0.1:${port}`, {
    reconnectPeriod: 0,
    connectTimeout: 5000,
    username: 'nobody',
    password: 'wrong',
  });
  try {
    return await new Promise<number | undefined>((resolve) => {
      client.once('connect', () => resolve(0));
      client.once('error', (error) => resolve((error as { code?: number }).code));
      client.once('close', () => resolve(undefined));
    });
  } finally {
    client.end(true);
  }
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('connection limits', () => {
  const MAX_HTTP = 8;
  let api: TestServer;
  let httpPort: number;
  let mqttPort: number;
  before(async () => {
    mqttPort = await freePort();
    api = await startServer(STORES[0] as (typeof STORES)[number], {
      env: { MQTT_PORT: String(mqttPort), CONNECT_TIMEOUT: '2s', HTTP_MAX_CONNECTIONS: String(MAX_HTTP) },
    });
    httpPort = Number(new URL(api.url).port);
  });
  after(async () => {
    await api?.close();
  });

  it('when a new connection sends nothing then it is closed after CONNECT_TIMEOUT, on the HTTP and the MQTT port', async () => {
    const [web, device] = [await hold(httpPort), await hold(mqttPort)];
    const closedBy = (held: Held) => Promise.race([held.closed.then(() => true), wait(10_000).then(() => false)]);
    assert.deepEqual(await Promise.all([closedBy(web), closedBy(device)]), [true, true]);
  });

  it('when a device sends its CONNECT a byte at a time then it is closed after CONNECT_TIMEOUT all the same', async () => {
    const device = await hold(mqttPort);
    // A CONNECT's first bytes, one every 300 ms: each puts the socket's idle timeout off.
    const bytes = Buffer.from([0x10, 0x40, 0x00, 0x04, 0x4d, 0x51, 0x54, 0x54, 0x04, 0xc2, 0x00, 0x3c, 0x00, 0x20]);
    let sent = 0;
    const timer = setInterval(() => {
      if (sent < bytes.length && !device.isClosed()) device.socket.write(bytes.subarray(sent, ++sent));
    }, 300);
    try {
      const closed = await Promise.race([device.closed.then(() => true), wait(4000).then(() => false)]);
      assert.equal(closed, true, 'closed within CONNECT_TIMEOUT (2 s) and a little');
      assert.ok(sent < bytes.length, 'while its bytes still came');
    } finally {
      clearInterval(timer);
      device.socket.destroy();
    }
  });

  it('when a connection has sent a request then it is kept open past CONNECT_TIMEOUT for the next one', async () => {
    const socket = connect({ port: httpPort, host: '127.0.0.1' });
    await once(socket, 'connect');
    try {
      assert.equal(await healthz(httpPort, socket), 200);
      await wait(3000);
      assert.equal(await healthz(httpPort, socket), 200, 'the same connection answers again');
    } finally {
      socket.destroy();
    }
  });

  it('when HTTP connections are at HTTP_MAX_CONNECTIONS then a new one is closed at once, devices still connect, and it is served once the idle ones are gone', async () => {
    // Those of earlier tests may take a moment to be counted gone.
    await wait(200);
    const idle = await holdMany(httpPort, MAX_HTTP);
    try {
      const refused = await hold(httpPort);
      await Promise.race([refused.closed, wait(10_000)]);
      assert.ok(refused.isClosed(), 'the connection past the limit is closed');
      assert.ok(
        idle.every((held) => !held.isClosed()),
        'it is closed before the idle ones, which wait out their CONNECT_TIMEOUT',
      );
      assert.equal(await healthz(httpPort), undefined, 'a request on a further connection is not answered');
      assert.equal(await connackCode(mqttPort), 5, 'devices connect to the broker all the same');
      await Promise.all(idle.map((held) => held.closed));
      assert.equal(await healthz(httpPort), 200);
    } finally {
      for (const held of idle) held.socket.destroy();
    }
  });
});

describe('the socket budget of a process with few open files', () => {
  it('when MQTT connections take most of the budget then HTTP connections past the rest are closed at once, devices past it get CONNACK 3, and both are served once they leave', async () => {
    // An open-file limit of 640 leaves 128 descriptors for clients' sockets; HTTP's own limit is 32.
    const mqttPort = await freePort();
    const server = await serveProcess(
      { DATABASE_URL: (STORES[0] as (typeof STORES)[number]).fresh().databaseUrl, MQTT_PORT: String(mqttPort) },
      { openFiles: 640 },
    );
    const httpPort = Number(new URL(server.url).port);
    const devices: Held[] = [];
    const web: Held[] = [];
    try {
      devices.push(...(await holdMany(mqttPort, 110)));
      // The server counts its connections as it accepts them: on a busy machine, a moment later.
      let open = 0;
      for (let attempt = 1; attempt <= 5 && open !== 128 - 110; attempt++) {
        for (const held of web.splice(0)) held.socket.destroy();
        await wait(500 * attempt);
        web.push(...(await holdMany(httpPort, 30)));
        await wait(500);
        open = web.filter((held) => !held.isClosed()).length;
      }
      assert.equal(open, 128 - 110, 'HTTP holds what MQTT leaves of the budget, under its own limit of 32');
      assert.equal(await connackCode(mqttPort), 3, 'a device past the budget is refused with CONNACK 3');
      // The server's log lines reach its output a moment later.
      for (const line of [
        /HTTP and MQTT together, at the process's budget of 128 .*closing new HTTP connections/,
        /HTTP and MQTT together, at the process's budget of 128 .*refusing new devices with CONNACK 3/,
      ]) {
        await eventually(() => line.test(server.output()), `the log line ${line}`);
      }
      for (const held of devices) held.socket.destroy();
      await eventually(async () => (await connackCode(mqttPort)) === 5, 'devices admitted once the budget has room');
      assert.equal(await healthz(httpPort), 200);
    } finally {
      for (const held of [...devices, ...web]) held.socket.destroy();
      await stopProcess(server.child);
    }
  });

  it('when idle MQTT connections flood past the budget then those past the room kept for CONNACK 3 are closed at once, and the process keeps its descriptors', async () => {
    // An open-file limit of 640 leaves 128 descriptors for clients' sockets, and 256 more for devices
    // waiting to be refused: 500 connections that never send CONNECT would otherwise hold 500.
    const mqttPort = await freePort();
    const server = await serveProcess(
      {
        DATABASE_URL: (STORES[0] as (typeof STORES)[number]).fresh().databaseUrl,
        MQTT_PORT: String(mqttPort),
        CONNECT_TIMEOUT: '60s',
      },
      { openFiles: 640 },
    );
    const httpPort = Number(new URL(server.url).port);
    const flood: Held[] = [];
    try {
      flood.push(...(await holdMany(mqttPort, 500)));
      await eventually(
        async () => flood.filter((held) => !held.isClosed()).length <= 128 + 256,
        'connections past the room closed',
      );
      const open = flood.filter((held) => !held.isClosed()).length;
      assert.ok(open >= 128 + 256 - 8, `the budget and the room held (${open} open)`);
      await eventually(
        () =>
          /budget of 128 .*256 MQTT connections more wait to be refused with CONNACK 3; closing new ones at once/.test(
            server.output(),
          ),
        'the log line',
      );
      // Room for a few: a device then gets its CONNACK 3.
      for (const held of flood.filter((h) => !h.isClosed()).slice(0, 20)) held.socket.destroy();
      await eventually(
        async () => (await connackCode(mqttPort)) === 3,
        'a device within the room refused with CONNACK 3',
      );
      assert.doesNotMatch(server.output(), /no file descriptor left/);
      for (const held of flood) held.socket.destroy();
      await eventually(async () => (await connackCode(mqttPort)) === 5, 'devices admitted once the flood has gone');
      assert.equal(await healthz(httpPort), 200);
    } finally {
      for (const held of flood) held.socket.destroy();
      await stopProcess(server.child);
    }
  });

  it('when idle connections flood the MQTTS port past the budget then those past the room are closed at once, and a second flood finds the count as before', async () => {
    const authority = makeAuthority();
    const certificate = authority.install(authority.issue('localhost'));
    const mqttPort = await freePort();
    const mqttsPort = await freePort();
    const server = await serveProcess(
      {
        DATABASE_URL: (STORES[0] as (typeof STORES)[number]).fresh().databaseUrl,
        MQTT_PORT: String(mqttPort),
        MQTTS_PORT: String(mqttsPort),
        TLS_CERT_FILE: certificate.certFile,
        TLS_KEY_FILE: certificate.keyFile,
        CONNECT_TIMEOUT: '60s',
      },
      { openFiles: 640 },
    );
    try {
      for (const round of [1, 2]) {
        const flood = await holdMany(mqttsPort, 500);
        try {
          await eventually(
            async () => flood.filter((held) => !held.isClosed()).length <= 128 + 256,
            `round ${round}: connections past the room closed`,
          );
          const open = flood.filter((held) => !held.isClosed()).length;
          assert.ok(open >= 128 + 256 - 8, `round ${round}: the budget and the room held (${open} open)`);
        } finally {
          for (const held of flood) held.socket.destroy();
        }
        await eventually(async () => (await connackCode(mqttPort)) === 5, `round ${round}: devices admitted again`);
      }
    } finally {
      await stopProcess(server.child);
    }
  });
});

/** A request declaring a body of `length` bytes, of which only its first byte is sent. */
async function unfinishedBody(
  port: number,
  path: string,
  length: number,
  token?: string,
  headers = '',
): Promise<Held & { answer: () => string }> {
  const held = await hold(port);
  let answer = '';
  held.socket.on('data', (chunk: Buffer) => {
    answer += chunk.toString();
  });
  held.socket.write(
    `POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${token ? `X-Auth-Token: ${token}\r\n` : ''}${headers}\r\n{`,
  );
  return { ...held, answer: () => answer };
}

/** The status, headers and parsed body of a raw answer. */
function parseAnswer(text: string): { status: number; headers: string; body: any } {
  const [head = '', body = ''] = text.split('\r\n\r\n');
  return { status: Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1]), headers: head.toLowerCase(), body: JSON.parse(body) };
}

/** A server of a suite's own, started with `env` before its tests and closed after them, and its HTTP port. */
function serverForSuite(env: Record<string, string>) {
  const suite = { api: undefined as unknown as TestServer, port: 0 };
  before(async () => {
    suite.api = await startServer(STORES[0] as (typeof STORES)[number], { env });
    suite.port = Number(new URL(suite.api.url).port);
  });
  after(async () => {
    await suite.api?.close();
  });
  return suite;
}

describe('request bodies', () => {
  const suite = serverForSuite({ REQUEST_TIMEOUT: '2s' });

  it('when a request body does not arrive whole within REQUEST_TIMEOUT then it is answered 408 in the error shape and its connection closed', async () => {
    const request = await unfinishedBody(suite.port, '/api_sign_in', 1000);
    await Promise.race([request.closed, wait(15_000)]);
    assert.ok(request.isClosed(), 'the connection is closed');
    const answer = parseAnswer(request.answer());
    assert.equal(answer.status, 408);
    assert.equal(answer.body.success, false);
    assert.equal(typeof answer.body.errors[0].code, 'string');
  });
});

describe('bodies of requests anyone may send', () => {
  const suite = serverForSuite({ CONNECT_TIMEOUT: '2s' });

  it('when a sign-in declares a body over 16 KiB then it is answered 413 in the error shape before the body is read', async () => {
    const request = await unfinishedBody(suite.port, '/api_sign_in', 1024 * 1024);
    await eventually(async () => request.answer().includes('\r\n\r\n'), 'an answer');
    const answer = parseAnswer(request.answer());
    assert.equal(answer.status, 413);
    assert.equal(answer.body.success, false);
    request.socket.destroy();
  });

  it('when a sign-in body does not arrive within CONNECT_TIMEOUT then it is answered 408 and its connection closed, though REQUEST_TIMEOUT is minutes', async () => {
    const started = performance.now();
    const request = await unfinishedBody(suite.port, '/api_sign_in', 1000);
    await Promise.race([request.closed, wait(15_000)]);
    assert.ok(request.isClosed(), 'the connection is closed');
    assert.ok(performance.now() - started < 15_000);
    const answer = parseAnswer(request.answer());
    assert.equal(answer.status, 408);
    assert.equal(answer.body.errors[0].code, 'timeout');
  });

  it('when a sign-in body is late on a connection that answered a request before then it is answered 408 too', async () => {
    const request = await hold(suite.port);
    assert.equal(await healthz(suite.port, request.socket), 200);
    let text = '';
    request.socket.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    request.socket.write(
      'POST /api_sign_in HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{',
    );
    await Promise.race([request.closed, wait(15_000)]);
    assert.ok(request.isClosed(), 'the connection is closed');
    const answer = parseAnswer(text);
    assert.equal(answer.status, 408);
    assert.equal(answer.body.errors[0].code, 'timeout');
  });

  /** A sign-in with a wrong password whose headers and first `sent` bytes of body are sent. */
  async function signInStarted(sent: number) {
    const body = JSON.stringify({ email: 'nobody@example.com', password: 'not the password' });
    const request = await hold(suite.port);
    let text = '';
    request.socket.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    request.socket.write(
      `POST /api_sign_in HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, sent)}`,
    );
    return { request, rest: body.slice(sent), answer: () => text };
  }

  it('when a sign-in body arrives in parts within CONNECT_TIMEOUT then it is answered as usual', async () => {
    const { request, rest, answer } = await signInStarted(10);
    await wait(500);
    request.socket.write(rest);
    await eventually(async () => answer().includes('\r\n\r\n'), 'an answer');
    assert.equal(parseAnswer(answer()).status, 401);
    // Past the deadline the connection is kept for the next request.
    await wait(2500);
    assert.equal(await healthz(suite.port, request.socket), 200);
    request.socket.destroy();
  });

  it('when the server is held up past CONNECT_TIMEOUT while a sign-in body arrives whole then the sign-in is answered, not 408', async () => {
    const { request, rest, answer } = await signInStarted(0);
    await wait(300);
    // The server runs in this process: the body is sent and then the whole process held for longer
    // than the deadline, from a callback after which the next turn of the event loop runs its timers
    // before it reads sockets. The deadline's timer is then due with the whole body waiting unread.
    await new Promise<void>((resolve) =>
      setImmediate(() => {
        request.socket.write(rest);
        const until = Date.now() + 2500;
        while (Date.now() < until) {
          // held up
        }
        resolve();
      }),
    );
    await eventually(async () => answer().includes('\r\n\r\n') || request.isClosed(), 'an answer');
    assert.equal(parseAnswer(answer()).status, 401);
    request.socket.destroy();
  });
});

describe('the budget of request bodies under way', () => {
  const suite = serverForSuite({});

  it('when a request for users has no valid token, or a device request names no key pair, then it is answered 401 before its body is read', async () => {
    const unsigned = 'X-Access-Key: nokey\r\nX-Dtn-Signature: 00\r\n';
    for (const [path, token, headers] of [
      ['/api/v3/things', undefined, ''],
      ['/api/v3/things', 'not-a-token', ''],
      ['/api/v3/things/event.json', undefined, unsigned],
      ['/api/v3/things/register.json', undefined, ''],
    ] as const) {
      const request = await unfinishedBody(suite.port, path, 1024 * 1024, token, headers);
      try {
        await eventually(() => request.answer().includes('\r\n\r\n{'), 'an answer before the body is sent');
        const answer = parseAnswer(request.answer());
        assert.equal(answer.status, 401);
        assert.equal(answer.body.errors[0].code, 'unauthorized');
      } finally {
        request.socket.destroy();
      }
    }
  });

  it('when bodies under way reach 64 MiB then a further request with a body is answered 503 with Retry-After before it is read, one without is served, and bodies are taken again once those end', async () => {
    // Sixty-four requests declaring 1 MiB each, their bodies never finished.
    const token = await suite.api.adminToken();
    const held = [];
    for (let i = 0; i < 64; i++) held.push(await unfinishedBody(suite.port, '/api/v3/things', 1024 * 1024, token));
    try {
      const refused = await unfinishedBody(suite.port, '/api_sign_in', 100);
      await eventually(() => refused.answer().includes('\r\n\r\n{'), 'an answer before the body is sent');
      const answer = parseAnswer(refused.answer());
      assert.equal(answer.status, 503);
      assert.match(answer.headers, /retry-after: 1/);
      assert.equal(answer.body.success, false);
      assert.equal(answer.body.errors[0].code, 'unavailable');
      assert.equal(await healthz(suite.port), 200, 'a request without a body is served');
      assert.ok(
        held.every((request) => request.answer() === ''),
        'the bodies under way are still being read',
      );
      refused.socket.destroy();
    } finally {
      for (const request of held) request.socket.destroy();
    }
    await eventually(async () => {
      const signIn = await suite.api.request('POST', '/api_sign_in', {
        body: { email: 'nobody@example.com', password: 'x' },
      });
      return signIn.status === 401;
    }, 'bodies taken again');
  });
});
