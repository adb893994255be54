/**
 * Starting with MQTT_URL naming a broker that does not answer: the first connection is tried for a
 * while, then the start fails with a message naming MQTT_URL, with the address's password hidden; and
 * with one that answers, the start message names it without its password too.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import { ConfigError } from '../../src/core/config.ts';
import type { DeviceAuthenticator } from '../../src/devices/authentication.ts';
import type { DeviceService } from '../../src/devices/service.ts';
import { connectExternalBroker } from '../../src/mqtt/external-broker.ts';
import { freePort } from '../support/ports.ts';
import { serveProcess, stopProcess } from '../support/process.ts';
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
      assert.match(server.output(), /Serving devices through the MQTT broker at mqtt:\/\/thingbase:\*\*\*@/);
      assert.doesNotMatch(server.output(), /s3cret/);
    } finally {
      await stopProcess(server.child);
    }
  });
});
