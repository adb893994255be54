/**
 * `npm run bench -- overload [--store sqlite|postgres] [--duration 60] [--normal 20] [--mqtt 60] [--http 8]`
 * The server under far more events than it can store, next to the same server under a load it keeps
 * up with, measured in the same run:
 * - normal: each MQTT device sends its next bulk when the last is acknowledged, one HTTP client posts
 *   bulks one after another.
 * - overload: every MQTT device (QoS 1 bulks of 50 events) writes as fast as its socket takes them,
 *   never waiting for an acknowledgement, while `--http` clients post signed bulks of 1,000 events
 *   back to back; meanwhile a prober calls /healthz, signs in and lists things four times a second.
 * Reported: the server's peak RSS in each phase, how fast refusals (503) and acknowledgements came,
 * the prober's latencies, and whether every acknowledged event was stored exactly once (every event
 * carries its sender and sequence number; the store is read after the server has stopped).
 *
 * `npm run bench -- overload --organisations [--store ...] [--duration 60] [--mqtt 60] [--http 8] [--modest 100]`
 * Two organisations on one server: one floods (`--mqtt` devices and `--http` clients, each HTTP
 * client with a key pair of its own, as above), the other has `--modest` MQTT devices sending one
 * event a second each and waiting for its acknowledgement. Run twice in the same invocation, with
 * fair shares (EVENT_FAIR_SHARE=true, the default) and with EVENT_FAIR_SHARE=false (first come, first served) as the
 * baseline; reported for each: the modest organisation's events accepted and their acknowledgement
 * latencies, the events a second each flooding connection had accepted (spread: max / min), the
 * server's peak RSS, and whether every acknowledged event was stored exactly once.
 */
import type { Socket } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import pg from 'pg';
import { request } from 'undici';
import { connectDevice, publishPacket } from './mqtt-load.ts';
import {
  BENCH_ADMIN,
  type BenchStore,
  benchMqttPort,
  benchStore,
  cpuSeconds,
  describeMachine,
  type KeyPair,
  latency,
  mqttEnvelope,
  option,
  postJson,
  registerThings,
  rssMiB,
  sign,
  startThingbase,
  table,
} from './support.ts';

/** Latencies in milliseconds, summarised. */
class Latencies {
  readonly values: number[] = [];
  add(ms: number): void {
    this.values.push(ms);
  }
  addAll(values: number[]): void {
    for (const value of values) this.values.push(value);
  }
  get count(): number {
    return this.values.length;
  }
  quantile(q: number): number {
    if (this.values.length === 0) return Number.NaN;
    const sorted = [...this.values].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
  }
  summary(): string {
    if (this.values.length === 0) return '-';
    return `${this.quantile(0.5).toFixed(0)} / ${this.quantile(0.99).toFixed(0)} / ${this.quantile(1).toFixed(0)}`;
  }
}

/** What one phase saw. */
interface Phase {
  peakRss: number;
  /** Answers by HTTP code (MQTT acknowledgements and HTTP answers together). */
  codes: Map<number, number>;
  events: number;
  /** Time to each answer, by transport and whether it took the events. */
  latencies: Record<'mqtt' | 'http', { accepted: Latencies; refused: Latencies }>;
  probes: Latencies;
  probeFailures: number;
  seconds: number;
  /** CPU in percent of one core: the server's, and this load generator's. */
  cpu: { server: number; generator: number };
}

const newPhase = (): Phase => ({
  peakRss: 0,
  codes: new Map(),
  events: 0,
  latencies: {
    mqtt: { accepted: new Latencies(), refused: new Latencies() },
    http: { accepted: new Latencies(), refused: new Latencies() },
  },
  probes: new Latencies(),
  probeFailures: 0,
  seconds: 0,
  cpu: { server: 0, generator: 0 },
});

/** Starts counting CPU; the function it answers stores the percentages of one core into the phase. */
function countCpu(pid: number, phase: Phase): () => void {
  const server = cpuSeconds(pid);
  const generator = process.cpuUsage();
  const started = performance.now();
  return () => {
    const seconds = (performance.now() - started) / 1000;
    const used = process.cpuUsage(generator);
    phase.cpu = {
      server: ((cpuSeconds(pid) - server) / seconds) * 100,
      generator: ((used.user + used.system) / 1e6 / seconds) * 100,
    };
  };
}

/** Events acknowledged as stored, by thing. */
const acknowledged = new Map<string, number>();

function answered(
  phase: Phase,
  transport: 'mqtt' | 'http',
  thingKey: string,
  code: number,
  events: number,
  ms: number,
): void {
  phase.codes.set(code, (phase.codes.get(code) ?? 0) + 1);
  if (code === 200) {
    acknowledged.set(thingKey, (acknowledged.get(thingKey) ?? 0) + events);
    phase.events += events;
    phase.latencies[transport].accepted.add(ms);
  } else {
    phase.latencies[transport].refused.add(ms);
  }
}

const MQTT_BULK = 50;
const HTTP_BULK = 1000;

/** A bulk of a thing's events, each with its sequence number. */
const bulkOf = (thingKey: string, first: number, count: number) => {
  let events = '';
  for (let i = 0; i < count; i++) {
    if (i > 0) events += ',';
    events += `{"thing_key":"${thingKey}","data":{"s":${first + i},"temperature":${20 + ((first + i) % 50)},"pressure":1.5,"rpm":1200}}`;
  }
  return `{"events":[${events}]}`;
};

/** A device on a raw socket: sends bulks either one at a time or as fast as the socket takes them. */
class FloodDevice {
  private readonly socket: Socket;
  private readonly sentAt = new Map<string, number>();
  private next = 0;
  private nextId = 0;
  private stopped = false;
  phase: Phase = newPhase();
  mode: 'paced' | 'flood' = 'paced';

  private constructor(
    private readonly pair: KeyPair,
    readonly thingKey: string,
    socket: Socket,
  ) {
    this.socket = socket;
  }

  static async connect(port: number, pair: KeyPair, thingKey: string): Promise<FloodDevice> {
    let device: FloodDevice | undefined;
    const socket = await connectDevice(
      port,
      `ovl${thingKey}`,
      pair.access_key,
      sign(pair.secret_key, pair.access_key),
      (payload) => device?.onAck(JSON.parse(payload.toString())),
    );
    device = new FloodDevice(pair, thingKey, socket);
    const connected = device;
    socket.on('drain', () => connected.fill());
    return device;
  }

  get outstanding(): number {
    return this.sentAt.size;
  }

  start(mode: 'paced' | 'flood', phase: Phase): void {
    this.mode = mode;
    this.phase = phase;
    this.stopped = false;
    this.fill();
  }

  stop(): void {
    this.stopped = true;
  }

  close(): void {
    this.socket.destroy();
  }

  private onAck(ack: { context: string; http_code: number }): void {
    const at = this.sentAt.get(ack.context);
    this.sentAt.delete(ack.context);
    answered(
      this.phase,
      'mqtt',
      this.thingKey,
      ack.http_code,
      MQTT_BULK,
      at === undefined ? 0 : performance.now() - at,
    );
    if (this.mode === 'paced') this.fill();
  }

  /**
   * Sends while the mode allows: paced, one outstanding; flood, until the socket's buffer is full, a
   * few messages per turn of the event loop so that acknowledgements are read as they come.
   */
  fill(): void {
    let turn = 0;
    while (!this.stopped && (this.mode === 'flood' || this.sentAt.size === 0)) {
      if (++turn > 8) {
        setImmediate(() => this.fill());
        return;
      }
      const signed = bulkOf(this.thingKey, this.next, MQTT_BULK);
      this.next += MQTT_BULK;
      const hash = sign(this.pair.secret_key, signed);
      const payload = mqttEnvelope(this.pair, signed, hash);
      this.nextId = (this.nextId % 65535) + 1;
      this.sentAt.set(hash, performance.now());
      const written = this.socket.write(
        publishPacket(`Altizon/Datonis/ovl${this.thingKey}/event`, this.nextId, payload),
      );
      if (!written) return;
    }
  }
}

/** The next sequence number of each HTTP client's thing, across phases. */
const httpSequence = new Map<string, number>();

/** An HTTP client posting signed bulks one after another until stopped. */
async function postBulks(url: string, pair: KeyPair, thingKey: string, phase: () => Phase, stopped: () => boolean) {
  while (!stopped()) {
    const next = httpSequence.get(thingKey) ?? 0;
    httpSequence.set(thingKey, next + HTTP_BULK);
    const body = bulkOf(thingKey, next, HTTP_BULK);
    const started = performance.now();
    const current = phase();
    try {
      const response = await request(`${url}/api/v3/things/event.json`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-access-key': pair.access_key,
          'x-dtn-signature': sign(pair.secret_key, body),
        },
        body,
        headersTimeout: 120_000,
        bodyTimeout: 120_000,
      });
      await response.body.text();
      answered(current, 'http', thingKey, response.statusCode, HTTP_BULK, performance.now() - started);
      if (response.statusCode === 503) await new Promise((resolve) => setTimeout(resolve, 50));
    } catch {
      answered(current, 'http', thingKey, 0, HTTP_BULK, performance.now() - started);
    }
  }
}

/** Health, sign-in and a REST read, four times a second, each timed. */
async function probe(url: string, token: string, phase: () => Phase, stopped: () => boolean) {
  const calls: [string, string, string | undefined][] = [
    ['GET', '/healthz', undefined],
    ['POST', '/api_sign_in', JSON.stringify(BENCH_ADMIN)],
    ['GET', '/api/v3/things?per=10', undefined],
  ];
  while (!stopped()) {
    for (const [method, path, body] of calls) {
      const current = phase();
      const started = performance.now();
      try {
        const response = await request(`${url}${path}`, {
          method: method as 'GET',
          headers: { 'content-type': 'application/json', 'x-auth-token': token },
          body,
          headersTimeout: 30_000,
          bodyTimeout: 30_000,
        });
        await response.body.text();
        if (response.statusCode !== 200) current.probeFailures++;
      } catch {
        current.probeFailures++;
      }
      current.probes.add(performance.now() - started);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Stored events and distinct stored events by thing, read from the store after the server stopped. */
async function storedByThing(store: BenchStore): Promise<Map<string, { stored: number; distinct: number }>> {
  const sql = `select t.thing_key as thing_key, count(*) as stored, count(distinct e.data) as distinct_events
    from events e join things t on t.thing_id = e.thing_id group by t.thing_key`;
  let rows: { thing_key: string; stored: number | string; distinct_events: number | string }[];
  if (store.engine === 'postgres') {
    const client = new pg.Client({ connectionString: store.databaseUrl });
    await client.connect();
    await client.query(`set search_path to "${store.schema}"`);
    rows = (await client.query(sql)).rows;
    await client.end();
  } else {
    const db = new Database(store.databaseUrl.slice('sqlite:'.length), { readonly: true });
    rows = db.prepare(sql).all() as typeof rows;
    db.close();
  }
  return new Map(rows.map((r) => [r.thing_key, { stored: Number(r.stored), distinct: Number(r.distinct_events) }]));
}

export async function run(args: string[]): Promise<void> {
  if (args.includes('--organisations')) return runOrganisations(args);
  const store = option(args, 'store', 'sqlite');
  const duration = Number(option(args, 'duration', '60'));
  const normalSeconds = Number(option(args, 'normal', '20'));
  const mqttDevices = Number(option(args, 'mqtt', '60'));
  const httpClients = Number(option(args, 'http', '8'));
  const bench = benchStore(store);
  const mqttPort = benchMqttPort();
  console.log(
    `overload benchmark: ${describeMachine()}; store ${store}; normal load ${normalSeconds}s, then overload ${duration}s: ${mqttDevices} MQTT devices flooding QoS 1 bulks of ${MQTT_BULK}, ${httpClients} HTTP clients posting bulks of ${HTTP_BULK}`,
  );

  const server = await startThingbase(bench, mqttPort);
  let exited: number | null | undefined;
  const serverExit = new Promise<void>((resolve) => {
    const check = setInterval(() => {
      try {
        process.kill(server.pid, 0);
      } catch {
        exited = null;
        clearInterval(check);
        resolve();
      }
    }, 500);
  });
  let serverStopped: Promise<void> | undefined;
  const stopServer = () => {
    serverStopped ??= exited === undefined ? server.stop() : Promise.resolve();
    return serverStopped;
  };
  let phase = newPhase();
  const sampler = setInterval(() => {
    const rss = rssMiB(server.pid);
    if (rss > phase.peakRss) phase.peakRss = rss;
  }, 100);
  let flood: FloodThread | undefined;
  let stopped = false;
  let stopHttp = false;
  try {
    const { auth_token: token } = await postJson(server.url, '/api_sign_in', BENCH_ADMIN);
    const { key_pair: pair } = await postJson(
      server.url,
      '/api/v3/key_pairs',
      { key_pair: { name: 'overload' } },
      { 'x-auth-token': token },
    );
    const mqttThings = Array.from({ length: mqttDevices }, (_, i) => `m${i}`);
    const httpThings = Array.from({ length: httpClients }, (_, i) => `h${i}`);
    await registerThings(server.url, pair, [...mqttThings, ...httpThings]);
    flood = new FloodThread({ port: mqttPort, pair, things: mqttThings });
    await flood.ready;
    const prober = probe(
      server.url,
      token,
      () => phase,
      () => stopped,
    );

    const normal = phase;
    let started = performance.now();
    let stopCounting = countCpu(server.pid, normal);
    await flood.start('paced');
    const normalHttp = postBulks(
      server.url,
      pair,
      httpThings[0] as string,
      () => normal,
      () => stopHttp,
    );
    await new Promise((resolve) => setTimeout(resolve, normalSeconds * 1000));
    stopHttp = true;
    await flood.stop();
    await normalHttp;
    await flood.settle(30);
    addReport(normal, await flood.report());
    normal.seconds = (performance.now() - started) / 1000;
    stopCounting();

    const overload = newPhase();
    phase = overload;
    stopHttp = false;
    started = performance.now();
    stopCounting = countCpu(server.pid, overload);
    await flood.start('flood');
    const posting = httpThings.map((thingKey) =>
      postBulks(
        server.url,
        pair,
        thingKey,
        () => overload,
        () => stopHttp,
      ),
    );
    const progress = setInterval(() => {
      const seconds = (performance.now() - started) / 1000;
      console.log(
        `  ${seconds.toFixed(0)}s: RSS ${rssMiB(server.pid).toFixed(0)} MiB (peak ${overload.peakRss.toFixed(0)}), HTTP answers ${JSON.stringify(Object.fromEntries(overload.codes))}`,
      );
    }, 10_000);
    await Promise.race([new Promise((resolve) => setTimeout(resolve, duration * 1000)), serverExit]);
    clearInterval(progress);
    stopHttp = true;
    await flood.stop();
    await Promise.all(posting);
    const unanswered = await flood.settle(60);
    overload.seconds = (performance.now() - started) / 1000;
    const waitOnceRead = exited === undefined ? await answerWait(server.url) : undefined;
    addReport(overload, await flood.report());
    stopCounting();
    stopped = true;
    await prober;

    const crashed = exited !== undefined;
    clearInterval(sampler);
    await flood.close();
    flood = undefined;
    if (!crashed) await stopServer();
    const stored = await storedByThing(bench);
    let missing = 0;
    let duplicates = 0;
    let unacknowledged = 0;
    for (const thingKey of [...mqttThings, ...httpThings]) {
      const acked = acknowledged.get(thingKey) ?? 0;
      const found = stored.get(thingKey) ?? { stored: 0, distinct: 0 };
      duplicates += found.stored - found.distinct;
      if (found.distinct < acked) missing += acked - found.distinct;
      else unacknowledged += found.distinct - acked;
    }
    const codes = (p: Phase) =>
      [...p.codes.entries()]
        .sort()
        .map(([code, n]) => `${code}: ${n}`)
        .join(', ');
    console.log(
      table([
        [
          'phase',
          'seconds',
          'events/s stored',
          'peak RSS MiB',
          'answers by code',
          'MQTT accepted',
          'MQTT refused',
          'HTTP accepted',
          'HTTP refused',
          'probes (health, sign-in, list)',
          'CPU % server / generator',
        ],
        ...(
          [
            ['normal load', normal],
            ['overload', overload],
          ] as const
        ).map(([label, p]) => [
          label,
          p.seconds.toFixed(0),
          Math.round(p.events / p.seconds),
          p.peakRss.toFixed(0),
          codes(p),
          p.latencies.mqtt.accepted.summary(),
          p.latencies.mqtt.refused.summary(),
          p.latencies.http.accepted.summary(),
          p.latencies.http.refused.summary(),
          `${p.probes.summary()}${p.probeFailures > 0 ? `, ${p.probeFailures} failed` : ''}`,
          `${p.cpu.server.toFixed(0)} / ${p.cpu.generator.toFixed(0)}`,
        ]),
      ]),
    );
    const acknowledgedEvents = [...acknowledged.values()].reduce((a, b) => a + b, 0);
    console.log('latencies in ms: p50 / p99 / max, from the request or message written to its answer');
    console.log(
      `server ${crashed ? 'CRASHED' : 'ran to the end'}; peak RSS under overload ${(overload.peakRss / normal.peakRss).toFixed(2)}x the normal load's; ` +
        `${acknowledgedEvents} events acknowledged: ${missing} of them missing, ${duplicates} stored twice; ` +
        `${unacknowledged} stored without an acknowledgement; ${unanswered} MQTT messages never answered`,
    );
    if (waitOnceRead) {
      console.log(
        `MQTT messages taken, from the server's reading to its answer (thingbase_mqtt_message_answer_seconds, both phases): ` +
          `p50 within ${waitOnceRead.p50} s, p99 within ${waitOnceRead.p99} s, of ${waitOnceRead.count}`,
      );
    }
  } finally {
    clearInterval(sampler);
    stopped = true;
    stopHttp = true;
    await flood?.close();
    await stopServer();
    await bench.dispose();
  }
}

/** Waits up to `seconds` for every outstanding MQTT message to be answered; answers how many were not. */
async function settle(devices: FloodDevice[], seconds: number): Promise<number> {
  const deadline = Date.now() + seconds * 1000;
  const outstanding = () => devices.reduce((n, d) => n + d.outstanding, 0);
  while (outstanding() > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  return outstanding();
}

/** What the flood thread reports of a phase. */
interface FloodReport {
  codes: [number, number][];
  events: number;
  accepted: number[];
  refused: number[];
  acknowledged: [string, number][];
}

type FloodCommand =
  | { t: 'start'; id: number; mode: 'paced' | 'flood' }
  | { t: 'stop'; id: number }
  | { t: 'settle'; id: number; seconds: number }
  | { t: 'report'; id: number }
  | { t: 'close'; id: number };

/** A command as the main thread asks it (the id is added when sent). */
type FloodRequest = FloodCommand extends infer C ? (C extends { id: number } ? Omit<C, 'id'> : never) : never;

/**
 * The MQTT devices run on a thread of their own: flooding sixty sockets keeps an event loop busy,
 * and the HTTP clients and the prober on this thread must not wait for it (their latencies would be
 * the generator's, not the server's).
 */
class FloodThread {
  private readonly worker: Worker;
  private lastId = 0;
  private exited = false;
  private readonly answers = new Map<number, (value: any) => void>();
  readonly ready: Promise<void>;

  constructor(data: { port: number; pair: KeyPair; things: string[] }) {
    // This module again, on a thread of its own, through the TypeScript loader the benchmarks run with.
    const loader = JSON.stringify(import.meta.resolve('tsx/esm/api'));
    const code = `import(${loader}).then(({ register }) => { register(); return import(${JSON.stringify(import.meta.url)}); })`;
    this.worker = new Worker(code, { eval: true, workerData: { overloadFlood: data } });
    this.worker.once('exit', () => {
      this.exited = true;
      for (const answer of this.answers.values()) answer(undefined);
      this.answers.clear();
    });
    this.ready = new Promise((resolve, reject) => {
      this.worker.on('message', (message: { id: number; value?: unknown }) => {
        if (message.id === 0) return resolve();
        this.answers.get(message.id)?.(message.value);
        this.answers.delete(message.id);
      });
      this.worker.on('error', reject);
    });
  }

  private ask<T>(command: FloodRequest): Promise<T> {
    const id = ++this.lastId;
    if (this.exited) return Promise.resolve(undefined as T);
    return new Promise((resolve) => {
      this.answers.set(id, resolve as (value: unknown) => void);
      this.worker.postMessage({ ...command, id });
    });
  }

  start(mode: 'paced' | 'flood') {
    return this.ask<void>({ t: 'start', mode });
  }
  stop() {
    return this.ask<void>({ t: 'stop' });
  }
  /** Waits up to `seconds` for the messages still unanswered; answers how many stay so. */
  settle(seconds: number) {
    return this.ask<number>({ t: 'settle', seconds });
  }
  report() {
    return this.ask<FloodReport>({ t: 'report' });
  }
  async close() {
    await this.ask<void>({ t: 'close' });
    await this.worker.terminate();
  }
}

/** Adds what the flood thread saw in a phase to the phase. */
function addReport(phase: Phase, report: FloodReport): void {
  for (const [code, n] of report.codes) phase.codes.set(code, (phase.codes.get(code) ?? 0) + n);
  phase.events += report.events;
  phase.latencies.mqtt.accepted.addAll(report.accepted);
  phase.latencies.mqtt.refused.addAll(report.refused);
  for (const [thing, n] of report.acknowledged) acknowledged.set(thing, (acknowledged.get(thing) ?? 0) + n);
}

async function floodThread(data: { port: number; pair: KeyPair; things: string[] }): Promise<void> {
  const port = parentPort as NonNullable<typeof parentPort>;
  const devices: FloodDevice[] = [];
  for (const thingKey of data.things) devices.push(await FloodDevice.connect(data.port, data.pair, thingKey));
  let phase = newPhase();
  port.on('message', async (command: FloodCommand) => {
    let value: unknown;
    switch (command.t) {
      case 'start':
        phase = newPhase();
        acknowledged.clear();
        for (const device of devices) device.start(command.mode, phase);
        break;
      case 'stop':
        for (const device of devices) device.stop();
        break;
      case 'settle':
        value = await settle(devices, command.seconds);
        break;
      case 'report':
        value = {
          codes: [...phase.codes],
          events: phase.events,
          accepted: phase.latencies.mqtt.accepted.values,
          refused: phase.latencies.mqtt.refused.values,
          acknowledged: [...acknowledged],
        } satisfies FloodReport;
        break;
      case 'close':
        for (const device of devices) device.close();
        break;
    }
    port.postMessage({ id: command.id, value });
  });
  port.postMessage({ id: 0 });
}

if (!isMainThread && workerData?.overloadFlood) await floodThread(workerData.overloadFlood);

/** A device of the modest organisation: one single-event message every `everyMs`, QoS 1, each answer timed. */
class SteadyDevice {
  private next = 0;
  private nextId = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly sentAt = new Map<string, number>();
  sent = 0;
  accepted = 0;
  readonly latencies: number[] = [];
  /** Answers by status, refusals with their message. */
  readonly codes = new Map<string, number>();

  private constructor(
    private readonly pair: KeyPair,
    readonly thingKey: string,
    private readonly socket: Socket,
  ) {}

  static async connect(port: number, pair: KeyPair, thingKey: string): Promise<SteadyDevice> {
    let device: SteadyDevice | undefined;
    const socket = await connectDevice(
      port,
      `std${thingKey}`,
      pair.access_key,
      sign(pair.secret_key, pair.access_key),
      (payload) => device?.onAck(JSON.parse(payload.toString())),
    );
    device = new SteadyDevice(pair, thingKey, socket);
    return device;
  }

  get outstanding(): number {
    return this.sentAt.size;
  }

  start(everyMs: number): void {
    this.timer = setInterval(() => this.send(), everyMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  close(): void {
    this.stop();
    this.socket.destroy();
  }

  private send(): void {
    const signed = `{"thing_key":"${this.thingKey}","data":{"s":${this.next++},"temperature":21}}`;
    const hash = sign(this.pair.secret_key, signed);
    const payload = mqttEnvelope(this.pair, signed, hash);
    this.nextId = (this.nextId % 65535) + 1;
    this.sentAt.set(hash, performance.now());
    this.sent++;
    this.socket.write(publishPacket(`Altizon/Datonis/std${this.thingKey}/event`, this.nextId, payload));
  }

  private onAck(ack: { context: string; http_code: number; http_msg?: { errors?: { message: string }[] } }): void {
    const at = this.sentAt.get(ack.context);
    this.sentAt.delete(ack.context);
    // A refusal by its status and message: who refused it, and why.
    const answer = ack.http_code === 200 ? '200' : `${ack.http_code} (${ack.http_msg?.errors?.[0]?.message ?? ''})`;
    this.codes.set(answer, (this.codes.get(answer) ?? 0) + 1);
    if (at !== undefined) this.latencies.push(performance.now() - at);
    if (ack.http_code === 200) {
      this.accepted++;
      acknowledged.set(this.thingKey, (acknowledged.get(this.thingKey) ?? 0) + 1);
    }
  }
}

/** What one run of the two organisations saw. */
interface SharedRun {
  label: string;
  seconds: number;
  modestSent: number;
  modestAccepted: number;
  /** The modest organisation's answers by status, refusals with their message. */
  modestCodes: Map<string, number>;
  modestLatencies: number[];
  /** Events a second accepted, per flooding connection. */
  mqttRates: number[];
  httpRates: number[];
  floodRefused: number;
  peakRss: number;
  /** The server's event loop lag over the run, ms: the largest p99 and max of its 5 s windows. */
  lagP99: number;
  lagMax: number;
  /** The benchmark's own event loop lag p99, ms (the modest devices' latencies are measured on it). */
  benchLagP99: number;
  missing: number;
  duplicates: number;
  unanswered: number;
}

/**
 * How long the MQTT messages the server took waited from its reading to their answer: the upper
 * bounds of the histogram's buckets that hold half and 99% of them, and how many there were.
 */
async function answerWait(url: string): Promise<{ p50: string; p99: string; count: number }> {
  const text = await (await request(`${url}/metrics`)).body.text();
  const buckets = [...text.matchAll(/^thingbase_mqtt_message_answer_seconds_bucket\{le="([^"]+)"\} (\d+)$/gm)].map(
    ([, le, n]) => ({ le: le as string, n: Number(n) }),
  );
  const count = buckets.at(-1)?.n ?? 0;
  const within = (share: number) => buckets.find((bucket) => bucket.n >= share * count)?.le ?? '?';
  return { p50: within(0.5), p99: within(0.99), count };
}

/** The server's event loop lag since its last scrape (prom-client resets it at each), ms. */
async function eventLoopLag(url: string): Promise<{ p99: number; max: number }> {
  const text = await (await request(`${url}/metrics`)).body.text();
  const value = (name: string) => 1000 * Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? Number.NaN);
  return { p99: value('nodejs_eventloop_lag_p99_seconds'), max: value('nodejs_eventloop_lag_max_seconds') };
}

/** A child organisation of the bench admin's, signed in to by the admin: its token. */
async function childToken(url: string, adminToken: string, name: string): Promise<string> {
  const { organisation } = await postJson(
    url,
    '/api/v3/organisations',
    { organisation: { name } },
    { 'x-auth-token': adminToken },
  );
  const { auth_token } = await postJson(url, '/api_sign_in', {
    ...BENCH_ADMIN,
    organisation_key: organisation.organisation_key,
  });
  return auth_token as string;
}

async function keyPairOf(url: string, token: string, name: string): Promise<KeyPair> {
  return (await postJson(url, '/api/v3/key_pairs', { key_pair: { name } }, { 'x-auth-token': token })).key_pair;
}

async function runShared(
  label: string,
  engine: string,
  env: Record<string, string>,
  options: { duration: number; mqtt: number; http: number; modest: number },
): Promise<SharedRun> {
  const bench = benchStore(engine);
  const mqttPort = benchMqttPort();
  const server = await startThingbase(bench, mqttPort, env);
  let serverStopped: Promise<void> | undefined;
  const stopServer = () => {
    serverStopped ??= server.stop();
    return serverStopped;
  };
  acknowledged.clear();
  httpSequence.clear();
  let peakRss = 0;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, rssMiB(server.pid));
  }, 100);
  let flood: FloodThread | undefined;
  const steady: SteadyDevice[] = [];
  let stopHttp = false;
  try {
    const { auth_token: admin } = await postJson(server.url, '/api_sign_in', BENCH_ADMIN);
    const floodToken = await childToken(server.url, admin, 'flooding');
    const modestToken = await childToken(server.url, admin, 'modest');
    const floodPair = await keyPairOf(server.url, floodToken, 'flood');
    const modestPair = await keyPairOf(server.url, modestToken, 'modest');
    const httpPairs = await Promise.all(
      Array.from({ length: options.http }, (_, i) => keyPairOf(server.url, floodToken, `http${i}`)),
    );
    const mqttThings = Array.from({ length: options.mqtt }, (_, i) => `m${i}`);
    const httpThings = Array.from({ length: options.http }, (_, i) => `h${i}`);
    const modestThings = Array.from({ length: options.modest }, (_, i) => `s${i}`);
    await registerThings(server.url, floodPair, [...mqttThings, ...httpThings]);
    await registerThings(server.url, modestPair, modestThings);
    for (const thingKey of modestThings) steady.push(await SteadyDevice.connect(mqttPort, modestPair, thingKey));
    flood = new FloodThread({ port: mqttPort, pair: floodPair, things: mqttThings });
    await flood.ready;
    const phase = newPhase();
    const started = performance.now();
    await flood.start('flood');
    const posting = httpThings.map((thingKey, i) =>
      postBulks(
        server.url,
        httpPairs[i] as KeyPair,
        thingKey,
        () => phase,
        () => stopHttp,
      ),
    );
    // The modest devices begin once the flood has filled the writer, spread over their second.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    steady.forEach((device, i) => {
      setTimeout(() => device.start(1000), (i * 1000) / steady.length);
    });
    let lagP99 = 0;
    let lagMax = 0;
    const benchLag = monitorEventLoopDelay({ resolution: 10 });
    benchLag.enable();
    await eventLoopLag(server.url);
    for (let left = options.duration * 1000; left > 0; left -= 5000) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(left, 5000)));
      const lag = await eventLoopLag(server.url).catch(() => ({ p99: Number.NaN, max: Number.NaN }));
      lagP99 = Math.max(lagP99, lag.p99);
      lagMax = Math.max(lagMax, lag.max);
    }
    benchLag.disable();
    for (const device of steady) device.stop();
    stopHttp = true;
    await flood.stop();
    const seconds = (performance.now() - started) / 1000;
    await Promise.all(posting);
    const unansweredFlood = await flood.settle(60);
    const deadline = Date.now() + 30_000;
    while (steady.some((d) => d.outstanding > 0) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const unanswered = unansweredFlood + steady.reduce((n, d) => n + d.outstanding, 0);
    addReport(phase, await flood.report());
    clearInterval(sampler);
    await flood.close();
    flood = undefined;
    for (const device of steady) device.close();
    await stopServer();
    const stored = await storedByThing(bench);
    let missing = 0;
    let duplicates = 0;
    for (const thingKey of [...mqttThings, ...httpThings, ...modestThings]) {
      const acked = acknowledged.get(thingKey) ?? 0;
      const found = stored.get(thingKey) ?? { stored: 0, distinct: 0 };
      duplicates += found.stored - found.distinct;
      if (found.distinct < acked) missing += acked - found.distinct;
    }
    const modestCodes = new Map<string, number>();
    for (const device of steady) {
      for (const [code, n] of device.codes) modestCodes.set(code, (modestCodes.get(code) ?? 0) + n);
    }
    const rate = (thingKey: string) => (acknowledged.get(thingKey) ?? 0) / seconds;
    return {
      label,
      seconds,
      modestSent: steady.reduce((n, d) => n + d.sent, 0),
      modestAccepted: steady.reduce((n, d) => n + d.accepted, 0),
      modestCodes,
      modestLatencies: steady.flatMap((d) => d.latencies),
      mqttRates: mqttThings.map(rate),
      httpRates: httpThings.map(rate),
      floodRefused: [...phase.codes].filter(([code]) => code !== 200).reduce((n, [, count]) => n + count, 0),
      peakRss,
      lagP99,
      lagMax,
      benchLagP99: benchLag.percentile(99) / 1e6,
      missing,
      duplicates,
      unanswered,
    };
  } finally {
    clearInterval(sampler);
    stopHttp = true;
    await flood?.close();
    for (const device of steady) device.close();
    await stopServer();
    await bench.dispose();
  }
}

/** max / min of rates, as text (infinite when a connection had nothing accepted). */
function spread(rates: number[]): string {
  if (rates.length === 0) return '-';
  const max = Math.max(...rates);
  const min = Math.min(...rates);
  return `${(min === 0 ? Number.POSITIVE_INFINITY : max / min).toFixed(2)} (${min.toFixed(0)}-${max.toFixed(0)}/s)`;
}

async function runOrganisations(args: string[]): Promise<void> {
  const engine = option(args, 'store', 'sqlite');
  const options = {
    duration: Number(option(args, 'duration', '60')),
    mqtt: Number(option(args, 'mqtt', '60')),
    http: Number(option(args, 'http', '8')),
    modest: Number(option(args, 'modest', '100')),
  };
  const only = option(args, 'only', 'fair,first').split(',');
  console.log(
    `overload benchmark, two organisations: ${describeMachine()}; store ${engine}; ${options.duration}s each run; flooding: ${options.mqtt} MQTT devices (QoS 1 bulks of ${MQTT_BULK}, never waiting) and ${options.http} HTTP clients (bulks of ${HTTP_BULK}, a key pair each); modest: ${options.modest} MQTT devices, one event a second each`,
  );
  const runs: SharedRun[] = [];
  if (only.includes('fair')) {
    runs.push(await runShared('fair shares (the default)', engine, { EVENT_FAIR_SHARE: 'true' }, options));
  }
  if (only.includes('first')) {
    runs.push(await runShared('first come (EVENT_FAIR_SHARE=false)', engine, { EVENT_FAIR_SHARE: 'false' }, options));
  }
  console.log(
    table([
      [
        'run',
        'modest accepted',
        'modest answers by code',
        'modest ack p50 / p99 / max ms',
        'flood events/s accepted',
        'flood answers refused',
        'spread MQTT conns max/min',
        'spread HTTP clients max/min',
        'peak RSS MiB',
        'server loop lag p99 / max ms',
        'bench loop lag p99 ms',
        'exactly once',
      ],
      ...runs.map((r) => [
        r.label,
        `${((100 * r.modestAccepted) / Math.max(1, r.modestSent)).toFixed(2)}% of ${r.modestSent}`,
        [...r.modestCodes].map(([code, n]) => `${code}: ${n}`).join(', '),
        latency(r.modestLatencies),
        Math.round([...r.mqttRates, ...r.httpRates].reduce((a, b) => a + b, 0)),
        r.floodRefused,
        spread(r.mqttRates),
        spread(r.httpRates),
        r.peakRss.toFixed(0),
        `${r.lagP99.toFixed(0)} / ${r.lagMax.toFixed(0)}`,
        r.benchLagP99.toFixed(0),
        `${r.missing} missing, ${r.duplicates} twice, ${r.unanswered} unanswered`,
      ]),
    ]),
  );
  const [fair, firstCome] = runs as [SharedRun, SharedRun];
  if (!fair || !firstCome) return;
  const accepted = (r: SharedRun) => r.modestAccepted / Math.max(1, r.modestSent);
  console.log(
    `modest organisation's events accepted: ${(accepted(fair) * 100).toFixed(2)}% with fair shares, ${(accepted(firstCome) * 100).toFixed(2)}% first come (ratio ${(accepted(fair) / Math.max(accepted(firstCome), 1e-9)).toFixed(2)}x)`,
  );
}
