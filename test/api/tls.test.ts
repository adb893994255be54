import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import {
  connect as connectTcp,
  createServer as createNetServer,
  type Server as NetServer,
  type Socket,
} from 'node:net';
import { after, before, describe, it } from 'node:test';
import { connect, type TLSSocket } from 'node:tls';
import { Agent } from 'undici';
import { createServer } from '../../src/app.ts';
import { loadConfig } from '../../src/core/config.ts';
import { createKeyPair } from '../support/device.ts';
import { storedEventCount, unique } from '../support/fixtures.ts';
import { call } from '../support/http.ts';
import { MqttDevice } from '../support/mqtt-device.ts';
import { BAD_LOGIN } from '../support/mqtt-version.ts';
import { eventually } from '../support/peers.ts';
import { freePort } from '../support/ports.ts';
import { cli, runCli, serveProcess, startField, stopProcess } from '../support/process.ts';
import { SocketClient } from '../support/realtime.ts';
import { STORES } from '../support/stores.ts';
import { describeOnStores } from '../support/suites.ts';
import { makeAuthority } from '../support/tls.ts';

const authority = makeAuthority();
const first = authority.issue('first');
const renewed = authority.issue('renewed');
const trusting = new Agent({ connect: { ca: authority.ca } });

/** Opens a TLS connection to a port of this machine, trusting only the test's authority. */
async function tlsConnect(port: number): Promise<TLSSocket> {
  const socket = connect({ port, host: '127.0.0.1', ca: authority.ca, servername: 'localhost' });
  await once(socket, 'secureConnect');
  return socket;
}

/** The fingerprint of the certificate a new connection to the port is served. */
async function servedFingerprint(port: number): Promise<string> {
  const socket = await tlsConnect(port);
  const fingerprint = socket.getPeerCertificate().fingerprint256;
  socket.destroy();
  return fingerprint;
}

/** Sends a request over a connection already open and reads the status line of its answer. */
async function statusOver(socket: TLSSocket, path: string): Promise<string> {
  const answer = new Promise<string>((resolve) =>
    socket.once('data', (chunk: Buffer) => resolve(chunk.toString().split('\r\n')[0] as string)),
  );
  socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
  return answer;
}

const portOf = (url: string) => Number(new URL(url).port);

/** The settings naming a certificate's files. */
const tlsEnv = (files: { certFile: string; keyFile: string }) => ({
  TLS_CERT_FILE: files.certFile,
  TLS_KEY_FILE: files.keyFile,
});

describeOnStores(
  'TLS: HTTPS and MQTTS',
  (ctx) => {
    const mqttsUrl = () => `mqtts://127.0.0.1:${ctx.api.server.mqttsPort}`;
    const keyPair = async () => createKeyPair(ctx.api, await ctx.api.adminToken());
    const served = () => ctx.api.server.config.tls as { certFile: string; keyFile: string };

    it('when TLS files are set then the HTTP port serves HTTPS to clients trusting the CA only', async () => {
      assert.match(ctx.api.url, /^https:\/\//);
      assert.match(ctx.api.server.config.publicBaseUrl, /^https:\/\//, 'the addresses the server hands out are https');
      const health = await ctx.api.request('GET', '/healthz');
      assert.equal(health.status, 200);
      assert.equal(health.headers['strict-transport-security'], 'max-age=15552000', 'browsers keep to HTTPS');
      assert.equal(await servedFingerprint(portOf(ctx.api.url)), first.fingerprint);
      await assert.rejects(call(ctx.api.url, 'GET', '/healthz'), /self-signed certificate|unable to verify/i);
      await assert.rejects(call(ctx.api.url.replace('https:', 'http:'), 'GET', '/healthz'));
    });

    it('when a device connects over MQTTS trusting the CA then it signs in, and the event it publishes is stored', async () => {
      const pair = await keyPair();
      const device = await MqttDevice.connect(mqttsUrl(), pair, { ca: authority.ca });
      try {
        const key = unique('tls');
        assert.equal((await device.send('register', { thing_key: key })).http_code, 200);
        const ack = await device.send('event', { thing_key: key, data: { temperature: 21.5 } });
        assert.equal(ack.http_code, 200, JSON.stringify(ack));
        assert.equal(await storedEventCount(ctx.api, key), 1);
      } finally {
        await device.close();
      }
      await assert.rejects(
        MqttDevice.connect(mqttsUrl(), pair),
        /self-signed certificate|unable to verify/i,
        'a device that does not trust the CA does not connect',
      );
      await assert.rejects(
        MqttDevice.connect(mqttsUrl(), pair, { ca: authority.ca, password: 'not the signature' }),
        (error: Error & { code?: number }) => error.code === BAD_LOGIN,
        'over TLS, a wrong password is refused as over plain MQTT',
      );
      const plain = await MqttDevice.connect(`mqtt://127.0.0.1:${ctx.api.server.mqttPort}`, pair);
      await plain.close();
    });

    it('when a device speaks MQTT over wss at /mqtt trusting the CA then it is served as over MQTTS', async () => {
      const pair = await keyPair();
      const url = `${ctx.api.url.replace(/^https/, 'wss')}/mqtt`;
      const device = await MqttDevice.connect(url, pair, { ca: authority.ca });
      try {
        const key = unique('wss');
        assert.equal((await device.send('register', { thing_key: key })).http_code, 200);
        assert.equal((await device.send('event', { thing_key: key, data: { v: 1 } })).http_code, 200);
        assert.equal(await storedEventCount(ctx.api, key), 1);
      } finally {
        await device.close();
      }
      await assert.rejects(MqttDevice.connect(url, pair), /self-signed certificate|unable to verify/i);
    });

    it('when a client subscribes over wss then events a device sends over MQTTS reach it', async () => {
      const pair = await keyPair();
      const device = await MqttDevice.connect(mqttsUrl(), pair, { ca: authority.ca });
      const client = await SocketClient.open(ctx.api.url, await ctx.api.adminToken(), authority.ca);
      try {
        const key = unique('tls');
        assert.equal((await device.send('register', { thing_key: key })).http_code, 200);
        assert.equal((await client.subscribe('mine', 'events', { thing_keys: [key] })).type, 'subscribed');
        assert.equal((await device.send('event', { thing_key: key, data: { temperature: 5 } })).http_code, 200);
        const pushed = await client.next((m) => m.type === 'event');
        assert.equal(pushed.thing_key, key);
        assert.deepEqual(pushed.data, { temperature: 5 });
      } finally {
        client.close();
        await device.close();
      }
    });

    it('when the certificate is reloaded then new connections get the new one while open HTTPS and MQTTS connections go on', async () => {
      const pair = await keyPair();
      const device = await MqttDevice.connect(mqttsUrl(), pair, { ca: authority.ca });
      const https = await tlsConnect(portOf(ctx.api.url));
      try {
        const key = unique('tls');
        assert.equal((await device.send('register', { thing_key: key })).http_code, 200);
        assert.equal(https.getPeerCertificate().fingerprint256, first.fingerprint);

        authority.replace(served(), renewed);
        const reloaded = await ctx.api.server.reloadTls();
        assert.equal(reloaded?.fingerprint, renewed.fingerprint);
        assert.equal(await servedFingerprint(portOf(ctx.api.url)), renewed.fingerprint, 'HTTPS');
        assert.equal(await servedFingerprint(ctx.api.server.mqttsPort as number), renewed.fingerprint, 'MQTTS');

        assert.equal(await statusOver(https, '/healthz'), 'HTTP/1.1 200 OK', 'the open HTTPS connection still serves');
        const ack = await device.send('event', { thing_key: key, data: { temperature: 1 } });
        assert.equal(ack.http_code, 200, 'the open MQTTS connection still serves');
        const again = await MqttDevice.connect(mqttsUrl(), pair, { ca: authority.ca });
        assert.equal((await again.send('event', { thing_key: key, data: { temperature: 2 } })).http_code, 200);
        await again.close();
        assert.equal(await storedEventCount(ctx.api, key), 2);
      } finally {
        https.destroy();
        await device.close();
        authority.replace(served(), first);
        await ctx.api.server.reloadTls();
      }
    });

    it('when a connection over TLS sends no request, or no handshake, then it is closed after CONNECT_TIMEOUT, and one that sent a request is kept for the next', async () => {
      const closed = (socket: Socket) =>
        new Promise<boolean>((resolve) => {
          socket.on('error', () => {});
          socket.once('close', () => resolve(true));
          setTimeout(() => resolve(false), 10_000);
        });
      const port = portOf(ctx.api.url);
      const noHandshake = connectTcp({ port, host: '127.0.0.1' });
      const noMqttHandshake = connectTcp({ port: ctx.api.server.mqttsPort as number, host: '127.0.0.1' });
      const [noRequest, noConnect, busy] = [
        await tlsConnect(port),
        await tlsConnect(ctx.api.server.mqttsPort as number),
        await tlsConnect(port),
      ];
      try {
        assert.equal(await statusOver(busy, '/healthz'), 'HTTP/1.1 200 OK');
        assert.deepEqual(await Promise.all([closed(noHandshake), closed(noRequest), closed(noConnect)]), [
          true,
          true,
          true,
        ]);
        assert.equal(
          await statusOver(busy, '/healthz'),
          'HTTP/1.1 200 OK',
          'the connection that sent a request answers again',
        );
      } finally {
        for (const socket of [noHandshake, noMqttHandshake, noRequest, noConnect, busy]) socket.destroy();
      }
    });

    it('when the files are wrong at a reload then the certificate loaded before stays', async () => {
      authority.replace(served(), renewed);
      try {
        writeFileSync(served().keyFile, 'not a key');
        const kept = await ctx.api.server.reloadTls();
        assert.equal(kept?.fingerprint, first.fingerprint);
        assert.equal(await servedFingerprint(portOf(ctx.api.url)), first.fingerprint);
        assert.equal(await servedFingerprint(ctx.api.server.mqttsPort as number), first.fingerprint);
        assert.equal((await ctx.api.request('GET', '/healthz')).status, 200);
      } finally {
        authority.replace(served(), first);
      }
    });
  },
  {
    env: async () => ({
      ...tlsEnv(authority.install(first)),
      MQTT_PORT: String(await freePort()),
      MQTTS_PORT: String(await freePort()),
      CONNECT_TIMEOUT: '2s',
    }),
    dispatcher: trusting,
  },
);

/** Holds a loopback port, as another program would. */
async function holdPort(): Promise<NetServer> {
  const holder = createNetServer();
  holder.listen(0, '127.0.0.1');
  await once(holder, 'listening');
  return holder;
}

describe('TLS listeners of the embedded MQTT broker', () => {
  const held: NetServer[] = [];
  let taken: number;
  before(async () => {
    const holder = await holdPort();
    held.push(holder);
    taken = (holder.address() as { port: number }).port;
  });
  after(() => {
    for (const holder of held) holder.close();
  });

  const config = (env: Record<string, string>) =>
    loadConfig({
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'error',
      DATABASE_URL: sqlite(),
      ...tlsEnv(first),
      ...env,
    });

  it('when MQTTS_PORT is set and taken then the start fails naming MQTTS_PORT', async () => {
    await assert.rejects(
      createServer(config({ MQTT_PORT: '0', MQTTS_PORT: String(taken) })),
      new RegExp(`MQTTS_PORT ${taken} is taken: set MQTTS_PORT to a free port, or to 0`),
    );
  });

  it('when a default port is taken then the broker runs without that listener, and over WebSocket only when both are', async () => {
    const plainOnly = await createServer({
      ...config({ MQTT_PORT: String(await freePort()) }),
      mqttsPort: taken,
    });
    try {
      assert.equal(plainOnly.mqttsPort, undefined);
      assert.equal(typeof plainOnly.mqttPort, 'number');
    } finally {
      await plainOnly.close();
    }
    const secureOnly = await createServer({ ...config({ MQTTS_PORT: String(await freePort()) }), mqttPort: taken });
    try {
      assert.equal(secureOnly.mqttPort, undefined);
      assert.equal(typeof secureOnly.mqttsPort, 'number');
      assert.equal(await servedFingerprint(secureOnly.mqttsPort as number), first.fingerprint);
    } finally {
      await secureOnly.close();
    }
    const neither = await createServer({ ...config({}), mqttPort: taken, mqttsPort: taken });
    try {
      assert.equal(neither.mqttPort, undefined);
      assert.equal(neither.mqttsPort, undefined);
      assert.ok(neither.deviceEndpoint, 'the endpoint serves MQTT over WebSocket');
    } finally {
      await neither.close();
    }
  });

  it('when MQTTS_PORT is 0 then there is no MQTTS listener, and a reload still renews HTTPS', async () => {
    const server = await createServer(config({ MQTT_PORT: String(await freePort()), MQTTS_PORT: '0' }));
    try {
      assert.equal(server.mqttsPort, undefined);
      assert.ok(server.deviceEndpoint, 'the plain listener runs');
      const address = await server.listen({ port: 0, host: '127.0.0.1' });
      assert.equal((await server.reloadTls())?.fingerprint, first.fingerprint);
      assert.equal(await servedFingerprint(portOf(address)), first.fingerprint);
    } finally {
      await server.close();
    }
  });

  it('when a listener cannot be opened for another reason then the start fails naming it', async () => {
    await assert.rejects(
      createServer(config({ HOST: '192.0.2.1', MQTT_PORT: '0', MQTTS_PORT: String(await freePort()) })),
      /cannot start the MQTT broker on MQTTS_PORT \d+: listen EADDRNOTAVAIL/,
    );
  });

  it('without TLS files there is no MQTTS listener and a reload does nothing', async () => {
    const server = await createServer({ ...config({ MQTT_PORT: String(await freePort()) }), tls: undefined });
    try {
      assert.equal(server.mqttsPort, undefined);
      assert.equal(await server.reloadTls(), undefined);
    } finally {
      await server.close();
    }
  });
});

describe('TLS in a server process', () => {
  it('when it gets SIGHUP then new connections get the renewed certificate, and wrong files keep the old one with a line naming the variable', async () => {
    const files = authority.install(first);
    const mqttsPort = await freePort();
    const server = await serveProcess({
      DATABASE_URL: sqlite(),
      ...tlsEnv(files),
      MQTT_PORT: '0',
      MQTTS_PORT: String(mqttsPort),
      LOG_LEVEL: 'info',
    });
    try {
      assert.match(server.url, /^https:\/\//);
      const mqtt = startField(server.output(), 'mqtt') ?? '';
      assert.match(mqtt, /^MQTTS \(TLS\) on port \d+, for devices$/, 'MQTTS, and no plain listener with MQTT_PORT=0');
      assert.match(startField(server.output(), 'api_docs') ?? '', /^https:\/\//);
      const open = await tlsConnect(portOf(server.url));

      authority.replace(files, renewed);
      server.child.kill('SIGHUP');
      await eventually(
        async () => (await servedFingerprint(portOf(server.url))) === renewed.fingerprint,
        'HTTPS serves the renewed certificate',
      );
      assert.equal(await servedFingerprint(mqttsPort), renewed.fingerprint);
      // The line is written once both listeners have the certificate, and reaches the pipe a moment later.
      await eventually(() => /TLS certificate reloaded: SHA-256 fingerprint/.test(server.output()), 'the reload line');
      assert.equal(await statusOver(open, '/healthz'), 'HTTP/1.1 200 OK');
      open.destroy();

      writeFileSync(files.certFile, '-----BEGIN CERTIFICATE-----\nbroken\n-----END CERTIFICATE-----\n');
      server.child.kill('SIGHUP');
      await eventually(() => /not reloaded.*TLS_CERT_FILE/.test(server.output()), 'a line naming TLS_CERT_FILE');
      assert.equal(await servedFingerprint(portOf(server.url)), renewed.fingerprint);
      const health = await call(server.url, 'GET', '/healthz', { dispatcher: trusting });
      assert.equal(health.status, 200, 'the process still serves');
    } finally {
      await stopProcess(server.child);
    }
  });

  it('without TLS files a SIGHUP (a reload by systemd, say) leaves the server serving and says there is nothing to reload', async () => {
    const server = await serveProcess({ DATABASE_URL: sqlite(), MQTT_PORT: '0', LOG_LEVEL: 'info' });
    try {
      server.child.kill('SIGHUP');
      await eventually(() => /SIGHUP: nothing to reload/.test(server.output()), 'a line about the SIGHUP');
      assert.equal((await call(server.url, 'GET', '/healthz')).status, 200, 'the process still serves');
      assert.equal(server.child.exitCode, null);
    } finally {
      await stopProcess(server.child);
    }
  });

  it('when a SIGHUP comes while the server starts then it goes on starting', async () => {
    // A broker that does not answer keeps the start waiting (it tries every second).
    const child = spawn(process.execPath, cli(['serve']), {
      env: {
        ...process.env,
        PORT: '0',
        DATABASE_URL: sqlite(),
        MQTT_URL: `mqtt://127.0.0.1:${await freePort()}`,
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    for (const stream of [child.stdout, child.stderr]) stream?.on('data', (chunk: Buffer) => (output += chunk));
    try {
      // A server started from source takes seconds to reach the broker in a loaded full run.
      await eventually(() => /not reachable yet/.test(output), 'the start waiting for the broker', 30_000);
      child.kill('SIGHUP');
      await eventually(() => /SIGHUP while starting/.test(output), 'a line about the SIGHUP');
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(child.exitCode, null, output);
      assert.equal(child.signalCode, null, output);
    } finally {
      await stopProcess(child, 'SIGKILL');
    }
  });

  it('when a TLS file is missing or only one is set then the start fails naming the variable', async () => {
    const missing = await runCli(['serve'], {
      DATABASE_URL: sqlite(),
      TLS_CERT_FILE: '/nonexistent/cert.pem',
      TLS_KEY_FILE: first.keyFile,
    });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /cannot read TLS_CERT_FILE \/nonexistent\/cert\.pem \(ENOENT/);
    const alone = await runCli(['serve'], { DATABASE_URL: sqlite(), TLS_KEY_FILE: first.keyFile });
    assert.equal(alone.code, 1);
    assert.match(alone.stderr, /TLS_KEY_FILE is set without TLS_CERT_FILE/);
  });
});

function sqlite(): string {
  return (STORES[0] as (typeof STORES)[number]).fresh().databaseUrl;
}
