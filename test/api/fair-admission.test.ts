import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { it } from 'node:test';
import { createKeyPair, Device, type KeyPair } from '../support/device.ts';
import { childOrganisation, createThing, storedEventCount, unique } from '../support/fixtures.ts';
import { type Ack, MqttDevice } from '../support/mqtt-device.ts';
import { freePort } from '../support/ports.ts';
import { describeOnStores } from '../support/suites.ts';

/** A small queue, and transactions at most every 150 ms: a few clients take the writer past capacity. */
const MAX_PENDING = 400;
const SPACING_MS = 150;
const BULK = 50;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * HTTP clients posting bulks back to back until `until` resolves (a short pause after a refusal, to
 * spare the shared machine a busy loop); answers their answers' status counts and refusal messages.
 */
async function floodOverHttp(device: Device, thingKey: string, clients: number, until: Promise<unknown>) {
  let done = false;
  void until.then(() => {
    done = true;
  });
  const statuses: Record<number, number> = {};
  const messages = new Set<string>();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (!done) {
        const answer = await device.event({
          events: Array.from({ length: BULK }, (_, i) => ({ thing_key: thingKey, data: { seq: i } })),
        });
        statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
        if (answer.status !== 200) {
          messages.add(answer.body.errors?.[0]?.message);
          assert.equal(answer.status, 503, answer.text);
          assert.equal(answer.headers['retry-after'], '1');
          await pause(10);
        }
      }
    }),
  );
  return { statuses, messages };
}

/** Devices each sending one event every `everyMs`, waiting for its acknowledgement; answers every acknowledgement. */
async function modestDevices(devices: { device: MqttDevice; thingKey: string }[], events: number, everyMs: number) {
  const acks: Ack[] = [];
  await Promise.all(
    devices.map(async ({ device, thingKey }, index) => {
      await pause((index * everyMs) / devices.length);
      for (let seq = 0; seq < events; seq++) {
        const sent = Date.now();
        acks.push(await device.send('event', { thing_key: thingKey, data: { seq } }));
        await pause(Math.max(0, everyMs - (Date.now() - sent)));
      }
    }),
  );
  return acks;
}

/**
 * One connection publishing QoS 1 events without waiting for their acknowledgements, `perTick` every
 * 10 ms, until stopped; counts the acknowledgements by http_code.
 */
function greedyConnection(device: MqttDevice, thingKey: string, perTick: number) {
  const codes: Record<number, number> = {};
  device.client.on('message', (topic, payload) => {
    if (!topic.endsWith('/httpAck')) return;
    const ack = JSON.parse(payload.toString()) as Ack;
    codes[ack.http_code] = (codes[ack.http_code] ?? 0) + 1;
  });
  let seq = 0;
  const timer = setInterval(() => {
    for (let i = 0; i < perTick; i++) {
      device.client.publish(
        `Altizon/Datonis/${device.clientId}/event`,
        device.envelope({ thing_key: thingKey, data: { seq: seq++ } }),
        { qos: 1 },
      );
    }
  }, 10);
  return { codes, stop: () => clearInterval(timer) };
}

/**
 * A device's event request whose headers are sent and whose body never is: answers what the server
 * said without it (status line and body), or undefined when it said nothing within `waitMs`.
 */
function answerWithoutBody(url: string, pair: KeyPair, waitMs: number): Promise<string | undefined> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let answer = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(undefined);
    }, waitMs);
    socket.on('data', (chunk) => {
      answer += chunk.toString();
      if (/\r\n\r\n[\s\S]*\}/.test(answer)) {
        clearTimeout(timer);
        socket.destroy();
        resolve(answer);
      }
    });
    socket.on('error', () => undefined);
    socket.write(
      [
        'POST /api/v3/things/event HTTP/1.1',
        `Host: ${hostname}`,
        'Content-Type: application/json',
        'Content-Length: 100000',
        `X-Access-Key: ${pair.access_key}`,
        'X-Dtn-Signature: 0000',
        '',
        '',
      ].join('\r\n'),
    );
  });
}

describeOnStores(
  'fair admission of events under overload',
  (ctx) => {
    const brokerUrl = () => `mqtt://127.0.0.1:${ctx.api.server.mqttPort}`;

    /** Things registered over MQTT, one a device, each device connected with the key pair. */
    async function fleet(pair: KeyPair, count: number) {
      return Promise.all(
        Array.from({ length: count }, async () => {
          const device = await MqttDevice.connect(brokerUrl(), pair);
          const thingKey = unique('modest');
          assert.equal((await device.send('register', { thing_key: thingKey })).http_code, 200);
          return { device, thingKey };
        }),
      );
    }

    it('when one organisation floods with HTTP bulks far past capacity then every event of another organisation’s devices sending at a modest rate is accepted', async () => {
      const admin = await ctx.api.adminToken();
      const flooding = await childOrganisation(ctx.api, admin);
      const modest = await childOrganisation(ctx.api, admin);
      const floodPair = await createKeyPair(ctx.api, flooding.token);
      const floodThing = await createThing(ctx.api, flooding.token, {});
      const devices = await fleet(await createKeyPair(ctx.api, modest.token), 10);
      try {
        const acks = modestDevices(devices, 20, 100);
        const flood = await floodOverHttp(new Device(ctx.api.url, floodPair), floodThing.thing_key, 16, acks);
        const answered = await acks;
        assert.ok((flood.statuses[503] ?? 0) > 0, `the flood was past capacity: ${JSON.stringify(flood.statuses)}`);
        assert.ok((flood.statuses[200] ?? 0) > 0, 'the flooding organisation still had its share');
        assert.ok(
          [...flood.messages].some((m) => m.startsWith('server busy')),
          `refused as server busy: ${[...flood.messages].join(' | ')}`,
        );
        const refused = answered.filter((a) => a.http_code !== 200);
        assert.deepEqual(refused, [], 'every modest event accepted');
        assert.equal(answered.length, 200);
        for (const { thingKey } of devices) assert.equal(await storedEventCount(ctx.api, thingKey), 20);
      } finally {
        await Promise.all(devices.map(({ device }) => device.close()));
      }
    });

    it('when an HTTP client holds its share then its next request is refused before its body is read', async () => {
      const admin = await ctx.api.adminToken();
      const flooding = await childOrganisation(ctx.api, admin);
      const floodPair = await createKeyPair(ctx.api, flooding.token);
      const floodThing = await createThing(ctx.api, flooding.token, {});
      let stop: () => void = () => undefined;
      const stopped = new Promise<void>((resolve) => {
        stop = resolve;
      });
      const flood = floodOverHttp(new Device(ctx.api.url, floodPair), floodThing.thing_key, 16, stopped);
      const answers: (string | undefined)[] = [];
      try {
        // The client's share is taken while the flood's bulks wait in the writer; between them it may
        // not be, so a few requests are tried.
        for (let attempt = 0; attempt < 40; attempt++) {
          const answer = await answerWithoutBody(ctx.api.url, floodPair, 3000);
          answers.push(answer);
          if (answer?.includes('server busy')) break;
        }
      } finally {
        stop();
        await flood;
      }
      const refused = answers.find((a) => a?.includes('server busy'));
      assert.ok(refused, `a request was refused without its body: ${JSON.stringify(answers.slice(-3))}`);
      assert.match(refused, /^HTTP\/1\.1 503/);
      assert.match(refused, /retry-after: 1/i);
    });

    it('when one connection of an organisation floods then the organisation’s other devices sending at a modest rate are accepted', async () => {
      const admin = await ctx.api.adminToken();
      const organisation = await childOrganisation(ctx.api, admin);
      const pair = await createKeyPair(ctx.api, organisation.token);
      const devices = await fleet(pair, 10);
      const [greedyDevice] = await fleet(pair, 1);
      const greedy = greedyConnection(greedyDevice!.device, greedyDevice!.thingKey, 100);
      try {
        await pause(300);
        const answered = await modestDevices(devices, 20, 100);
        greedy.stop();
        await pause(500);
        assert.ok(
          (greedy.codes[503] ?? 0) > 0,
          `the greedy connection was past its share: ${JSON.stringify(greedy.codes)}`,
        );
        assert.ok((greedy.codes[200] ?? 0) > 0, 'the greedy connection still had its share');
        const refused = answered.filter((a) => a.http_code !== 200);
        assert.deepEqual(refused, [], 'every modest event accepted');
        for (const { thingKey } of devices) assert.equal(await storedEventCount(ctx.api, thingKey), 20);
      } finally {
        greedy.stop();
        await Promise.all([...devices, greedyDevice!].map(({ device }) => device.close()));
      }
    });
  },
  {
    env: async () => ({
      EVENT_FAIR_SHARE: 'true',
      EVENT_MAX_PENDING: String(MAX_PENDING),
      EVENT_WRITE_SPACING_MS: String(SPACING_MS),
      MQTT_PORT: String(await freePort()),
    }),
  },
);
