/**
 * `npm run bench -- realtime [--store sqlite|postgres] [--subscribers 1000] [--rate 10000] [--bulk 10]
 * [--devices 100] [--duration 20] [--broad 100]`
 * Realtime push under load (docs/realtime.md). MQTT devices on raw sockets send `--rate` events a
 * second in all, as bulks of `--bulk` events of one thing, spread over `--subscribers` things. Three
 * runs of `--duration` seconds each, the first being the baseline:
 * - baseline: nobody subscribes. Ingestion throughput (events acknowledged a second), publish ->
 *   httpAck latency, server CPU.
 * - named: `--subscribers` WebSockets, each subscribed to its own thing. The same figures, and the
 *   events delivered (each must arrive), publish -> subscriber latency, and how much later than the
 *   device's httpAck a subscriber has its event (commit -> subscriber, both being sent after commit),
 *   server peak RSS.
 * - broad: `--broad` WebSockets subscribed to every thing. Messages delivered a second (the fan-out),
 *   messages dropped to slow subscribers, and server CPU per delivered message.
 */
import { connect, type Socket } from 'node:net';
import WebSocket from 'ws';
import {
  acknowledgeAck,
  ackSubscription,
  CONNACK,
  connectPacket,
  PacketReader,
  PUBLISH,
  packet,
  packetId,
  SUBACK,
  text,
} from './mqtt-load.ts';
import {
  BENCH_ADMIN,
  benchMqttPort,
  benchStore,
  cpuSeconds,
  describeMachine,
  type KeyPair,
  latency,
  option,
  postJson,
  registerThings,
  rssMiB,
  sign,
  startThingbase,
  table,
} from './support.ts';

const now = () => performance.timeOrigin + performance.now();

/** A device on a raw socket sending signed bulks and timing their httpAcks. */
class BulkDevice {
  readonly socket: Socket;
  private readonly sent: { at: number; seq: number }[] = [];
  private readonly topic: Buffer;

  constructor(
    port: number,
    clientId: string,
    private readonly pair: KeyPair,
    private readonly onAck: (seq: number, ms: number, code: number, at: number) => void,
    ready: (error?: Error) => void,
  ) {
    this.topic = text(`Altizon/Datonis/${clientId}/event`);
    this.socket = connect(port, '127.0.0.1');
    this.socket.setNoDelay(true);
    const reader = new PacketReader();
    this.socket.on('data', (chunk: Buffer) => {
      for (const [first, body] of reader.read(chunk)) {
        const type = first & 0xf0;
        if (type === CONNACK) {
          if (body[1] !== 0) ready(new Error(`CONNACK ${body[1]}`));
          else this.socket.write(ackSubscription(clientId));
        } else if (type === SUBACK) {
          ready();
        } else if (type === PUBLISH) {
          const ack = JSON.parse(acknowledgeAck(this.socket, body).toString()) as { http_code: number };
          const sent = this.sent.shift();
          const at = now();
          if (sent) this.onAck(sent.seq, at - sent.at, ack.http_code, at);
        }
      }
    });
    this.socket.on('error', (error) => ready(error));
    this.socket.write(connectPacket(clientId, pair.access_key, sign(pair.secret_key, pair.access_key), 120));
  }

  /** Sends `count` events of a thing as one bulk; `seq` numbers the bulk. */
  publish(thingKey: string, count: number, seq: number): void {
    const at = now();
    const events = Array.from({ length: count }, (_, i) => ({ thing_key: thingKey, data: { seq, i, t: at } }));
    const signed = JSON.stringify({ events });
    const payload = `${signed.slice(0, -1)},"hash":"${sign(this.pair.secret_key, signed)}","access_key":"${this.pair.access_key}"}`;
    this.sent.push({ at, seq });
    this.socket.write(packet(PUBLISH | 0x02, this.topic, packetId(1), Buffer.from(payload, 'utf8')));
  }

  get outstanding(): number {
    return this.sent.length;
  }
}

interface Phase {
  acked: number;
  refused: number;
  ackMs: number[];
  cpu: number;
  seconds: number;
  peakRss: number;
}

export async function run(args: string[]): Promise<void> {
  const store = option(args, 'store', 'sqlite');
  const subscribers = Number(option(args, 'subscribers', '1000'));
  const rate = Number(option(args, 'rate', '10000'));
  const bulk = Number(option(args, 'bulk', '10'));
  const deviceCount = Number(option(args, 'devices', '100'));
  const duration = Number(option(args, 'duration', '20'));
  const broad = Number(option(args, 'broad', '100'));
  const bench = benchStore(store);
  const mqttPort = benchMqttPort();
  console.log(
    `realtime benchmark: ${describeMachine()}; store ${store}; ${rate} events/s as bulks of ${bulk} from ${deviceCount} MQTT devices over ${subscribers} things, ${duration}s a run; ${subscribers} subscribers of one thing each, then ${broad} of every thing`,
  );
  // One user opens every subscriber's WebSocket: its bounds (docs/realtime.md, "Connections per user and organisation") are set above them.
  const connections = String(subscribers + broad);
  const server = await startThingbase(bench, mqttPort, {
    REALTIME_MAX_CONNECTIONS_PER_USER: connections,
    REALTIME_MAX_CONNECTIONS_PER_ORGANISATION: connections,
  });
  const sockets: WebSocket[] = [];
  const devices: BulkDevice[] = [];
  try {
    const { auth_token: token } = await postJson(server.url, '/api_sign_in', BENCH_ADMIN);
    const { key_pair: pair } = await postJson(
      server.url,
      '/api/v3/key_pairs',
      { key_pair: { name: 'realtime' } },
      { 'x-auth-token': token },
    );
    const things = Array.from({ length: subscribers }, (_, i) => `rt${i}`);
    await registerThings(server.url, pair, things);

    // Acknowledgements of the current phase; when each bulk was acknowledged, for the push's lag behind it.
    let phase: Phase = newPhase();
    const ackedAt = new Map<number, number>();
    await Promise.all(
      Array.from(
        { length: deviceCount },
        (_, d) =>
          new Promise<void>((resolve, reject) => {
            devices.push(
              new BulkDevice(
                mqttPort,
                `rtdev${d}`,
                pair,
                (seq, ms, code, at) => {
                  if (code === 200) {
                    phase.acked += bulk;
                    phase.ackMs.push(ms);
                    ackedAt.set(seq, at);
                  } else phase.refused += bulk;
                },
                (error) => (error ? reject(error) : resolve()),
              ),
            );
          }),
      ),
    );

    let seq = 0;
    /** Sends at `rate` for `duration` seconds, in 10 ms ticks; measures the server meanwhile. */
    const drive = async (): Promise<Phase> => {
      phase = newPhase();
      ackedAt.clear();
      const cpuBefore = cpuSeconds(server.pid);
      const started = performance.now();
      const bulksPerTick = rate / bulk / 100;
      let carry = 0;
      let next = 0;
      while (performance.now() - started < duration * 1000) {
        carry += bulksPerTick;
        for (; carry >= 1; carry--) {
          const s = seq++;
          const device = devices[s % devices.length] as BulkDevice;
          device.publish(things[next++ % things.length] as string, bulk, s);
        }
        phase.peakRss = Math.max(phase.peakRss, rssMiB(server.pid));
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const deadline = performance.now() + 30_000;
      while (devices.some((d) => d.outstanding > 0) && performance.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      phase.seconds = (performance.now() - started) / 1000;
      phase.cpu = cpuSeconds(server.pid) - cpuBefore;
      return phase;
    };

    const baseline = await drive();

    // Named: one subscriber per thing.
    let delivered = 0;
    let dropped = 0;
    const pushMs: number[] = [];
    const seenAt = new Map<number, number>();
    const onMessage = (data: WebSocket.RawData) => {
      const message = JSON.parse(data.toString()) as {
        type: string;
        dropped?: number;
        data?: { t: number; seq: number };
      };
      if (message.type === 'overflow') dropped += message.dropped ?? 0;
      if (message.type !== 'event' || !message.data) return;
      delivered++;
      const at = now();
      pushMs.push(at - message.data.t);
      if (!seenAt.has(message.data.seq)) seenAt.set(message.data.seq, at);
    };
    /** How much later than its httpAck each bulk's first event reached a subscriber (negative: sooner). */
    const lags = () => {
      const lags: number[] = [];
      for (const [s, seen] of seenAt) {
        const acked = ackedAt.get(s);
        if (acked !== undefined) lags.push(seen - acked);
      }
      return lags;
    };
    const open = (count: number, filters: (i: number) => Record<string, unknown>) =>
      Promise.all(
        Array.from(
          { length: count },
          (_, i) =>
            new Promise<void>((resolve, reject) => {
              const socket = new WebSocket(`${server.url.replace(/^http/, 'ws')}/api/v3/ws`, {
                headers: { 'x-auth-token': token },
              });
              sockets.push(socket);
              socket.on('error', reject);
              socket.on('open', () =>
                socket.send(JSON.stringify({ type: 'subscribe', id: `s${i}`, topic: 'events', ...filters(i) })),
              );
              socket.on('message', function first(data) {
                const reply = JSON.parse(data.toString()) as { type: string };
                if (reply.type !== 'subscribed') return reject(new Error(data.toString()));
                socket.off('message', first);
                socket.on('message', onMessage);
                resolve();
              });
            }),
        ),
      );
    await open(subscribers, (i) => ({ thing_keys: [things[i]] }));
    const rssBefore = rssMiB(server.pid);
    const named = await drive();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const namedDelivered = delivered;
    const namedDropped = dropped;
    const namedPush = [...pushMs];
    const namedLag = lags();
    seenAt.clear();
    for (const socket of sockets.splice(0)) socket.terminate();
    await new Promise((resolve) => setTimeout(resolve, 1000));

    // Broad: every subscriber gets every event.
    delivered = 0;
    dropped = 0;
    pushMs.length = 0;
    await open(broad, () => ({}));
    const wide = await drive();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const wideDelivered = delivered;

    const throughput = (p: Phase) => p.acked / p.seconds;
    const cpuPercent = (p: Phase) => (p.cpu / p.seconds) * 100;
    console.log(
      table([
        [
          'run',
          'events acked/s',
          'ratio',
          'refused',
          'publish -> httpAck ms p50/p99/max',
          'server CPU %',
          'peak RSS MiB',
        ],
        [
          'baseline: no subscribers',
          throughput(baseline).toFixed(0),
          '1.00',
          baseline.refused,
          latency(baseline.ackMs),
          cpuPercent(baseline).toFixed(0),
          baseline.peakRss.toFixed(0),
        ],
        [
          `named: ${subscribers} subscribers, one thing each`,
          throughput(named).toFixed(0),
          (throughput(named) / throughput(baseline)).toFixed(2),
          named.refused,
          latency(named.ackMs),
          cpuPercent(named).toFixed(0),
          `${named.peakRss.toFixed(0)} (${rssBefore.toFixed(0)} before the run)`,
        ],
        [
          `broad: ${broad} subscribers, every thing`,
          throughput(wide).toFixed(0),
          (throughput(wide) / throughput(baseline)).toFixed(2),
          wide.refused,
          latency(wide.ackMs),
          cpuPercent(wide).toFixed(0),
          wide.peakRss.toFixed(0),
        ],
      ]),
    );
    console.log(
      table([
        [
          'run',
          'delivered',
          'of acked',
          'dropped',
          'publish -> subscriber ms p50/p99/max',
          'httpAck -> subscriber ms p50/p99/max (negative: sooner)',
        ],
        [
          'named',
          namedDelivered,
          `${((namedDelivered / Math.max(1, named.acked)) * 100).toFixed(2)}%`,
          namedDropped,
          latency(namedPush),
          latency(namedLag),
        ],
        [
          'broad',
          `${wideDelivered} (${(wideDelivered / wide.seconds).toFixed(0)}/s)`,
          `${((wideDelivered / Math.max(1, wide.acked * broad)) * 100).toFixed(2)}%`,
          dropped,
          latency(pushMs),
          latency(lags()),
        ],
      ]),
    );
    console.log(
      `broad: server CPU per delivered message ${(((wide.cpu - (baseline.cpu * wide.seconds) / baseline.seconds) / Math.max(1, wideDelivered)) * 1e6).toFixed(1)} us beyond the baseline's CPU`,
    );
  } finally {
    for (const socket of sockets) socket.terminate();
    for (const device of devices) device.socket.destroy();
    await server.stop();
    await bench.dispose();
  }
}

function newPhase(): Phase {
  return { acked: 0, refused: 0, ackMs: [], cpu: 0, seconds: 0, peakRss: 0 };
}
