/**
 * Starting with MQTT_URL naming a broker that does not answer: the first connection is tried for a
 * while, then the start fails with a message naming MQTT_URL, with the address's password hidden.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import { ConfigError } from '../../src/core/config.ts';
import type { DeviceAuthenticator } from '../../src/devices/authentication.ts';
import type { DeviceService } from '../../src/devices/service.ts';
import { connectExternalBroker } from '../../src/mqtt/external-broker.ts';
import { freePort } from '../support/ports.ts';

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
});
