/**
 * A property over the device topics (docs/devices.md, "MQTT"): a signed-in device publishing junk (the
 * bodies' shapes with junk values, any JSON, raw huge numbers, text that is no JSON, bytes that are no
 * UTF-8 or no LZF), signed as the SDKs sign, signed wrongly or not at all, gets exactly one
 * acknowledgement per message, and none is a server failure: `http_code` under 500, or 500 only for a
 * payload that cannot be read (context PARSE_ERROR, error code `invalid`), as the C and Java SDKs need.
 * The broker keeps serving throughout: a well-formed event afterwards is stored.
 */
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import fc from 'fast-check';
import { DeviceAlertBody } from '../../src/alerts/schemas.ts';
import { EventBody, HeartbeatBody, RegisterBody } from '../../src/devices/schemas.ts';
import { createKeyPair, type KeyPair, sign } from '../support/device.ts';
import { storedEventCount, unique } from '../support/fixtures.ts';
import { hugeNumberText, junkJson, junkNumber, junkText, type Schema, valueFor } from '../support/junk.ts';
import { type Ack, MqttDevice } from '../support/mqtt-device.ts';
import { freePort } from '../support/ports.ts';
import { describeOnStores } from '../support/suites.ts';

const RUNS = Number(process.env.FUZZ_RUNS_PER_OPERATION ?? 60);

const KINDS = {
  register: RegisterBody,
  heartbeat: HeartbeatBody,
  event: EventBody,
  alert: DeviceAlertBody,
} as unknown as Record<string, Schema>;

type Signing = 'sdk' | 'wrong' | 'none';

interface Junk {
  kind: string;
  lzf: boolean;
  payload: string | Uint8Array;
  signing: Signing;
}

describeOnStores(
  'bad input over MQTT: every device topic, sent junk',
  (ctx) => {
    let pair: KeyPair;
    let thingKey: string;

    before(async () => {
      pair = await createKeyPair(ctx.api, await ctx.api.adminToken());
      thingKey = unique('junk');
      const device = await MqttDevice.connect(`mqtt://127.0.0.1:${ctx.api.server.mqttPort}`, pair);
      try {
        assert.equal((await device.send('register', { thing_key: thingKey })).http_code, 200);
        // The thing's first event gives its template these metrics: junk of other types is refused.
        const first = await device.send('event', { thing_key: thingKey, data: { t: 1, s: 'x', nested: { n: 2 } } });
        assert.equal(first.http_code, 200);
      } finally {
        await device.close();
      }
    });

    /** Values for the thing's metrics, of any type. */
    const junkValue = fc.oneof(junkNumber, junkText, junkJson);
    const metrics = fc.record(
      { t: junkValue, s: junkValue, nested: fc.oneof(fc.record({ n: junkValue }), junkValue) },
      { requiredKeys: [] },
    );

    /**
     * The body's shape with junk, often about the suite's own thing with junk for its metrics, so that
     * much of it gets past the checks of shape into ingestion.
     */
    const shaped = (schema: Schema) =>
      fc.tuple(valueFor(schema), fc.nat(3), metrics).map(([value, own, data]) => {
        if (own === 0 || value === null || typeof value !== 'object' || Array.isArray(value)) {
          return JSON.stringify(value) ?? 'null';
        }
        // The suite's thing, with the junk around it, or with junk in its metrics alone.
        const body = own === 1 ? (value as Record<string, unknown>) : { data };
        body.thing_key = thingKey;
        if (own === 3) body.timestamp = (value as Record<string, unknown>).timestamp;
        return JSON.stringify(body);
      });

    const payloadFor = (kind: string): fc.Arbitrary<string | Uint8Array> =>
      fc.oneof(
        { weight: 10, arbitrary: shaped(KINDS[kind] as Schema) },
        junkJson.map((value) => JSON.stringify(value) ?? 'null'),
        fc
          .tuple(fc.constantFrom('timestamp', 'thing_key', 'data'), hugeNumberText)
          .map(([name, n]) => `{"${name}":${n}}`),
        junkText,
        fc.uint8Array({ maxLength: 64 }),
        fc.constantFrom('', '{', '[1,2]', '{"data":{"a":"\\u0000"}}', `{"a":${'['.repeat(200)}`),
      );

    const junk: fc.Arbitrary<Junk> = fc.constantFrom(...Object.keys(KINDS)).chain((kind) =>
      fc.record({
        kind: fc.constant(kind),
        lzf: kind === 'event' ? fc.constantFrom(false, false, false, true) : fc.constant(false),
        payload: payloadFor(kind),
        signing: fc.constantFrom<Signing>('sdk', 'sdk', 'wrong', 'none'),
      }),
    );

    /** The payload as a device sends it: with the SDKs' envelope when it is a JSON object's text. */
    const published = (device: MqttDevice, { payload, signing }: Junk): string | Buffer => {
      if (typeof payload !== 'string') return Buffer.from(payload);
      if (signing === 'none' || !payload.startsWith('{') || !payload.endsWith('}')) return payload;
      const hash = signing === 'sdk' ? sign(pair.secret_key, payload) : sign(`${pair.secret_key}x`, payload);
      const members = `"hash":"${hash}","access_key":"${device.accessKey}","aliot_protocol_version":2.0}`;
      return payload === '{}' ? `{${members}` : `${payload.slice(0, -1)},${members}`;
    };

    /** Junk that every run sends: a metric of the wrong type, numbers past any range, NULs, a huge nesting. */
    const examples = (): Junk[] =>
      [
        { kind: 'event', payload: JSON.stringify({ thing_key: thingKey, data: { t: 'one', nested: { n: [1] } } }) },
        { kind: 'event', payload: `{"thing_key":"${thingKey}","data":{"t":1e309},"timestamp":99999999999999999999}` },
        { kind: 'event', payload: JSON.stringify({ thing_key: thingKey, events: [{ data: { s: 5 } }, null, 'x'] }) },
        { kind: 'heartbeat', payload: JSON.stringify({ thing_key: thingKey, timestamp: 2 ** 53 + 2 }) },
        { kind: 'register', payload: JSON.stringify({ thing_key: 'a\u0000b', name: 'n\u0000' }) },
        {
          kind: 'alert',
          payload: JSON.stringify({ alert: { thing_key: thingKey, message: '\u0000', alert_type: 9 } }),
        },
        { kind: 'event', payload: `{"thing_key":"${thingKey}","data":${'{"a":'.repeat(100)}1${'}'.repeat(100)}}` },
      ].map((junk) => ({ lzf: false, signing: 'sdk' as const, ...junk }));

    const acceptable = (ack: Ack) =>
      ack.http_code < 500 ||
      (ack.http_code === 500 && ack.context === 'PARSE_ERROR' && ack.http_msg.errors?.[0]?.code === 'invalid');

    it('when a device publishes junk on any of its topics then each message gets one acknowledgement, never a server failure, and the broker serves on', async () => {
      const device = await MqttDevice.connect(`mqtt://127.0.0.1:${ctx.api.server.mqttPort}`, pair);
      const codes = new Map<number, number>();
      try {
        await fc.assert(
          fc.asyncProperty(junk, async (message) => {
            const topic = message.lzf
              ? `Altizon/Datonis/lzf/${device.clientId}/event`
              : `Altizon/Datonis/${device.clientId}/${message.kind}`;
            const ack = await device.publishRaw(message.kind, published(device, message), topic);
            codes.set(ack.http_code, (codes.get(ack.http_code) ?? 0) + 1);
            assert.ok(acceptable(ack), JSON.stringify(ack));
          }),
          { numRuns: RUNS * Object.keys(KINDS).length, examples: examples().map((example) => [example]) },
        );
        // Nothing arrived beyond one answer per message.
        await assert.rejects(device.nextAck(300), /no httpAck/);
        const before = await storedEventCount(ctx.api, thingKey);
        const ack = await device.send('event', { thing_key: thingKey, data: { t: 1 } });
        assert.equal(ack.http_code, 200, JSON.stringify(ack));
        assert.equal(await storedEventCount(ctx.api, thingKey), before + 1);
      } finally {
        await device.close();
      }
      console.log('CODES', JSON.stringify([...codes]));
      // The junk reached past the signature check into validation (400) and ingestion (422).
      assert.ok(
        (codes.get(400) ?? 0) > 0 && (codes.get(422) ?? 0) > 0,
        `answers by code: ${JSON.stringify([...codes])}`,
      );
      assert.ok((codes.get(200) ?? 0) > 0, `some junk was taken: ${JSON.stringify([...codes])}`);
    });
  },
  { env: async () => ({ MQTT_PORT: String(await freePort()) }) },
);
