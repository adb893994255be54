/**
 * Starting with MQTT_URL naming a broker that does not answer: the first connection is tried for a
 * while, then the start fails with a message naming MQTT_URL, with the address's password hidden; and
 * with one that answers, the start message names it without its password too.
 */
import assert from 'node:assert/strict';
import { connect as connectTcp, createServer, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import { ConfigError } from '../../src/core/config.ts';
import type { DeviceAuthenticator } from '../../src/devices/authentication.ts';
import type { DeviceService } from '../../src/devices/service.ts';
import { connectExternalBroker } from '../../src/mqtt/external-broker.ts';
import { freePort } from '../support/ports.ts';
import { serveProcess, startField, stopProcess } from '../support/process.ts';
import { STORES } from '../support/stores.ts';

const MOSQUITTO = new URL(process.env.TEST_MQTT_URL ?? 'mqtt://127.0.0.1:1883');

describe('external MQTT broker at start', () => {
  it('when MQTT_URL names a broker that does not answer then the start fails after the wait, naming MQTT_URL', async () => {
    const port = await freePort();
    const warnings: string[] = [];
    const log = { warn: (line: string) => warnings.push(line) } as unknown as FastifyBaseLogger;
    const started = Date.now();
    const error = await connectExternalBroker({
      url: `mqtt://thingbase:s3cret@127.0.0.1:${port}`,
      shareGroup: 'thingbase',
      // Neither is used before a connection exists.
      authenticator: {} as DeviceAuthenticator,
      devices: {} as DeviceService,
      log,
      firstConnectMs: 2500,
      intake: { messages: 100, bytes: 1024 * 1024 },
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    const waited = Date.now() - started;
    assert.ok(error instanceof ConfigError, String(error));
    assert.match(error.message, /cannot reach the MQTT broker at mqtt:\/\/thingbase:\*\*\*@127\.0\.0\.1/);
    assert.match(error.message, /check MQTT_URL/);
    assert.doesNotMatch(error.message, /s3cret/);
    assert.ok(waited >= 1000, `it tried again before giving up (${waited} ms)`);
    assert.ok(warnings.length >= 1, 'each failed try is logged');
    assert.ok(
      warnings.every((w) => !w.includes('s3cret')),
      'the password stays out of the log',
    );
  });

  it('when MQTT_URL carries a password then the start message names the broker without it', async (t) => {
    const url = new URL(MOSQUITTO);
    url.username = 'thingbase';
    url.password = 's3cret';
    let server: Awaited<ReturnType<typeof serveProcess>>;
    try {
      server = await serveProcess({
        DATABASE_URL: (STORES[0] as (typeof STORES)[number]).fresh().databaseUrl,
        MQTT_URL: url.href,
      });
    } catch (error) {
      if (process.env.CI || !/cannot reach the MQTT broker/.test(String(error))) throw error;
      return t.skip(`no MQTT broker at ${MOSQUITTO.host}`);
    }
    try {
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.match(
        startField(server.output(), 'mqtt') ?? '',
        /^devices through the broker at mqtt:\/\/thingbase:\*\*\*@/,
      );
      assert.doesNotMatch(server.output(), /s3cret/);
    } finally {
      await stopProcess(server.child);
    }
  });

  it('when the broker goes away after the start then the warnings name it without its password', async (t) => {
    // A proxy in front of the broker, closed once the server is connected: its client tries again and fails.
    const sockets = new Set<Socket>();
    const proxy = createServer((socket) => {
      const upstream = connectTcp(Number(MOSQUITTO.port || 1883), MOSQUITTO.hostname);
      for (const s of [socket, upstream]) {
        sockets.add(s);
        s.on('error', () => {});
      }
      socket.pipe(upstream).pipe(socket);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const port = (proxy.address() as { port: number }).port;
    const warnings: string[] = [];
    const log = {
      warn: (line: string) => warnings.push(line),
      error: () => {},
    } as unknown as FastifyBaseLogger;
    let broker: Awaited<ReturnType<typeof connectExternalBroker>>;
    try {
      broker = await connectExternalBroker({
        url: `mqtt://thingbase:s3cret@127.0.0.1:${port}`,
        shareGroup: `pwtest${Date.now()}`,
        authenticator: { credentials: async () => undefined } as unknown as DeviceAuthenticator,
        devices: {} as DeviceService,
        log,
        firstConnectMs: 2000,
        intake: { messages: 100, bytes: 1024 * 1024 },
      });
    } catch (error) {
      proxy.close();
      if (process.env.CI || !/cannot reach the MQTT broker/.test(String(error))) throw error;
      return t.skip(`no MQTT broker at ${MOSQUITTO.host}`);
    }
    try {
      proxy.close();
      for (const socket of sockets) socket.destroy();
      const deadline = Date.now() + 10_000;
      while (!warnings.some((w) => w.startsWith('MQTT broker')) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.ok(
        warnings.some((w) => w.startsWith(`MQTT broker mqtt://thingbase:***@127.0.0.1:${port}`)),
        warnings.join('\n'),
      );
      assert.ok(
        warnings.every((w) => !w.includes('s3cret')),
        warnings.join('\n'),
      );
    } finally {
      await broker.close();
    }
  });
});
