/**
 * `npm run bench -- fleet [--store sqlite|postgres] [--devices 5000] [--rate 1000] [--duration 30]
 * [--warmup 10] [--tick 10] [--rounds 1] [--connect 19000] [--connect-rate 2000] [--register existing|new|none]`
 * A fleet of MQTT devices on raw sockets (mqtt-load.ts), two scenarios, each next to a baseline
 * measured in the same run:
 * - steady: `--devices` devices connected, sending `--rate` events a second in all (each device one
 *   signed event every devices/rate seconds, spread evenly, sent in `--tick` millisecond ticks: rate/100
 *   devices together every 10 ms by default, each alone at `--tick 1` and 1,000/s, as independent devices
 *   send) for `--duration` seconds, after `--warmup`
 *   seconds of the same load that are not measured (a server runs for days: the first seconds of a
 *   load are V8 compiling the code it runs, a tenth of the server's CPU and the slowest answers). Reported: the
 *   server's CPU in percent of one core, and per event; publish -> httpAck latency. Baselines: the
 *   same connections idle for as long (CPU), and PINGREQ -> PINGRESP on the same sockets (latency).
 * - `--rounds`: the ping baseline and the steady load alternated that many times (the warm-up after the
 *   first ping baseline); reported: the medians, and each round's steady CPU next to its ping baseline.
 * - connect: `--connect` devices connecting at `--connect-rate` a second, each registering its thing
 *   as soon as it has subscribed, as every SDK does at start (`--register existing`: things registered
 *   before, as a fleet coming back after an outage; `new`: things not there yet; `none`: no register).
 *   Reported: CONNECT -> CONNACK latency, register -> httpAck latency and answers, refusals, and the
 *   server's peak RSS, and its RSS per connection once they are idle; baseline: its RSS before they connect.
 * Each device's events go to a thing of its own, registered beforehand.
 * `--server floor` runs the same load against bench/servers/mqtt-floor.ts instead of Thingbase: the
 * least any server on Node does for the same exchange (a packet reader, the signature, a SQLite
 * transaction per turn, the acknowledgements), what the machine alone makes the load cost; with
 * `--floor-store none` without the store.
 */
import { connect, type Socket } from 'node:net';
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
  cpuTimes,
  describeMachine,
  type KeyPair,
  latency,
  mqttEnvelope,
  option,
  postJson,
  registerThings,
  rssMiB,
  sign,
  startFloor,
  startThingbase,
  table,
  threadCpuSeconds,
} from './support.ts';

const PINGREQ = 0xc0;
const PINGRESP = 0xd0;

/**
 * Devices connect from 127.0.0.2 to 127.0.0.17 (all loopback on Linux), a sixteenth of them from each,
 * as a fleet comes from many addresses. From one address, the kernel's search for a free local port
 * among the 28,000 of its range, most in use or in TIME_WAIT after a run's first connections, made
 * the generator's own connect() calls take seconds: at 19,000 devices the TCP handshake baseline's
 * p99 was 6 to 17 s on an idle server (a bare Node TCP server as well as Thingbase).
 */
let sourceIndex = 0;
const sourceAddress = (): string => `127.0.0.${2 + (sourceIndex++ % 16)}`;

/** A device on a raw socket: connects, subscribes to its acknowledgements, publishes and pings on demand. */
class FleetDevice {
  readonly socket: Socket;
  /** When each of its messages (or pings) still unanswered was sent, oldest first. */
  private readonly sent: number[] = [];
  private readonly pings: number[] = [];
  connackMs = Number.NaN;
  /** Its register's answer: the time from its PUBLISH and the `http_code`. */
  registerMs = Number.NaN;
  registerCode: number | undefined;
  private registeringSince: number | undefined;
  /** TCP handshake: a baseline for the CONNACK. */
  tcpMs = Number.NaN;
  refusedWith: number | undefined;
  private readonly template: Buffer;

  constructor(
    port: number,
    readonly clientId: string,
    pair: KeyPair,
    payload: string,
    private readonly onAck: (ms: number, code: number) => void,
    private readonly onPong: (ms: number) => void,
    ready: (device: FleetDevice, error?: Error) => void,
    /** The payload of a register it sends once subscribed, before it is ready. */
    register?: string,
  ) {
    this.template = packet(
      PUBLISH | 0x02,
      text(`Altizon/Datonis/${clientId}/event`),
      packetId(1),
      Buffer.from(payload, 'utf8'),
    );
    const started = performance.now();
    this.socket = connect({ port, host: '127.0.0.1', localAddress: sourceAddress() });
    this.socket.setNoDelay(true);
    this.socket.once('connect', () => {
      this.tcpMs = performance.now() - started;
    });
    const reader = new PacketReader();
    this.socket.on('data', (chunk: Buffer) => {
      for (const [first, body] of reader.read(chunk)) {
        const type = first & 0xf0;
        if (type === CONNACK) {
          this.connackMs = performance.now() - started;
          if (body[1] !== 0) {
            this.refusedWith = body[1];
            ready(this);
            continue;
          }
          this.socket.write(ackSubscription(clientId));
        } else if (type === SUBACK) {
          if (register === undefined) {
            ready(this);
            continue;
          }
          this.registeringSince = performance.now();
          this.socket.write(
            packet(PUBLISH | 0x02, text(`Altizon/Datonis/${clientId}/register`), packetId(2), Buffer.from(register)),
          );
        } else if (type === PUBLISH) {
          const ack = JSON.parse(acknowledgeAck(this.socket, body).toString()) as { http_code: number };
          if (this.registeringSince !== undefined) {
            this.registerMs = performance.now() - this.registeringSince;
            this.registerCode = ack.http_code;
            this.registeringSince = undefined;
            ready(this);
            continue;
          }
          const at = this.sent.shift();
          if (at !== undefined) this.onAck(performance.now() - at, ack.http_code);
        } else if (type === PINGRESP) {
          const at = this.pings.shift();
          if (at !== undefined) this.onPong(performance.now() - at);
        }
      }
    });
    this.socket.on('error', (error) => ready(this, error));
    this.socket.write(connectPacket(clientId, pair.access_key, sign(pair.secret_key, pair.access_key), 120));
  }

  publish(): void {
    this.sent.push(performance.now());
    this.socket.write(this.template);
  }

  ping(): void {
    this.pings.push(performance.now());
    this.socket.write(Buffer.from([PINGREQ, 0]));
  }

  get outstanding(): number {
    return this.sent.length + this.pings.length;
  }
}

/** The name a device of the benchmark gives its thing in its register. */
const machineName = (thingKey: string) => `Machine ${thingKey}`;

/** Connects devices at `rate` a second; resolves when every one has its CONNACK (and SUBACK) or failed. */
async function connectAll(
  count: number,
  rate: number,
  make: (index: number, ready: (device: FleetDevice, error?: Error) => void) => FleetDevice,
): Promise<{ devices: FleetDevice[]; failed: number }> {
  const devices: FleetDevice[] = [];
  let settled = 0;
  let failed = 0;
  let done!: () => void;
  const all = new Promise<void>((resolve) => {
    done = resolve;
  });
  const seen = new WeakSet<FleetDevice>();
  const ready = (device: FleetDevice, error?: Error) => {
    if (seen.has(device)) return;
    seen.add(device);
    if (error) failed++;
    if (++settled === count) done();
  };
  const tick = 10;
  const perTick = Math.max(1, Math.round((rate * tick) / 1000));
  const started = performance.now();
  for (let i = 0; i < count; ) {
    const due = Math.min(count, Math.floor(((performance.now() - started) / 1000) * rate) + perTick);
    for (; i < due; i++) devices.push(make(i, ready));
    await new Promise((resolve) => setTimeout(resolve, tick));
  }
  await Promise.race([all, new Promise((resolve) => setTimeout(resolve, 60_000))]);
  return { devices, failed: failed + (count - settled) };
}

export async function run(args: string[]): Promise<void> {
  const store = option(args, 'store', 'sqlite');
  const fleet = Number(option(args, 'devices', '5000'));
  const rate = Number(option(args, 'rate', '1000'));
  const duration = Number(option(args, 'duration', '30'));
  const warmup = Number(option(args, 'warmup', '10'));
  const connecting = Number(option(args, 'connect', '19000'));
  const connectRate = Number(option(args, 'connect-rate', '2000'));
  const registering = option(args, 'register', 'existing');
  if (!['existing', 'new', 'none'].includes(registering)) throw new Error('--register is existing, new or none');
  const tick = Number(option(args, 'tick', '10'));
  const rounds = Number(option(args, 'rounds', '1'));
  const serverKind = option(args, 'server', 'thingbase');
  if (serverKind !== 'thingbase' && serverKind !== 'floor') throw new Error('--server is thingbase or floor');
  const floorStore = option(args, 'floor-store', 'sqlite');
  if (!(Number.isInteger(rounds) && rounds >= 1)) throw new Error('--rounds must be a positive integer');
  if (!(Number.isInteger(tick) && tick >= 1 && 1000 % tick === 0)) throw new Error('--tick must divide 1000 ms');
  const bench = benchStore(store);
  const mqttPort = benchMqttPort();
  console.log(
    `fleet benchmark: ${describeMachine()}; store ${store}; steady: ${fleet} devices, ${rate} events/s in ${tick} ms ticks for ${duration}s after ${warmup}s unmeasured${rounds > 1 ? `, ${rounds} rounds alternated with the ping baseline` : ''}; connect: ${connecting} devices at ${connectRate}/s, register ${registering}`,
  );
  const floor = serverKind === 'floor' ? await startFloor(mqttPort, floorStore) : undefined;
  const server = floor?.server ?? (await startThingbase(bench, mqttPort));
  if (serverKind === 'floor') console.log(`server: the floor (bench/servers/mqtt-floor.ts), store ${floorStore}`);
  let open: FleetDevice[] = [];
  const closeAll = async () => {
    for (const device of open) device.socket.destroy();
    open = [];
    await new Promise((resolve) => setTimeout(resolve, 2000));
  };
  try {
    const things = Array.from({ length: Math.max(fleet, connecting) }, (_, i) => `f${i}`);
    let pair: KeyPair;
    if (floor) pair = floor.keyPair;
    else {
      const { auth_token: token } = await postJson(server.url, '/api_sign_in', BENCH_ADMIN);
      ({ key_pair: pair } = await postJson(
        server.url,
        '/api/v3/key_pairs',
        { key_pair: { name: 'fleet' } },
        { 'x-auth-token': token },
      ));
      // Things registered over HTTP, a hundred at a time: the arriving devices' too unless theirs are new.
      // Named as their registers will name them: a fleet coming back registers its things as they are.
      await registerThings(
        server.url,
        pair,
        things.slice(0, registering === 'existing' ? things.length : fleet),
        machineName,
      );
    }
    const signedPayload = (message: object) => mqttEnvelope(pair, JSON.stringify(message));
    const payloadOf = (thingKey: string) =>
      signedPayload({ thing_key: thingKey, data: { temperature: 21.5, pressure: 1.5, rpm: 1200 } });

    // Steady: the fleet connects, idles (baseline), pings (baseline), then sends.
    const acks: number[] = [];
    const pongs: number[] = [];
    const codes = new Map<number, number>();
    const steady = await connectAll(fleet, 1000, (i, ready) => {
      const thingKey = things[i] as string;
      return new FleetDevice(
        mqttPort,
        `fleet${i}`,
        pair,
        payloadOf(thingKey),
        (ms, code) => {
          acks.push(ms);
          codes.set(code, (codes.get(code) ?? 0) + 1);
        },
        (ms) => pongs.push(ms),
        ready,
      );
    });
    open = steady.devices;
    if (steady.failed > 0) throw new Error(`${steady.failed} devices of the fleet could not connect`);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    // Each phase's start goes to stderr, for a profiler to be started on the server at the right time.
    const phase = (name: string) => process.stderr.write(`fleet: ${name}\n`);
    phase('idle baseline');
    const idleCpu = await measureCpu(server.pid, duration, () => {});
    // The ping baseline and the steady load in turn, `rounds` times: the machine's speed drifts between
    // runs and within one, and a round's ratio of the two moves less than either.
    const pingRounds: CpuShare[] = [];
    const sendRounds: CpuShare[] = [];
    for (let round = 1; round <= rounds; round++) {
      phase('ping baseline');
      pingRounds.push(await measureCpu(server.pid, duration, () => spread(open, rate, tick, (d) => d.ping())));
      await drained(open);
      if (round === 1) {
        phase('warm-up');
        await measureCpu(server.pid, warmup, () => spread(open, rate, tick, (d) => d.publish()));
        await drained(open);
        acks.length = 0;
        codes.clear();
      }
      phase('steady');
      sendRounds.push(await measureCpu(server.pid, duration, () => spread(open, rate, tick, (d) => d.publish())));
      await drained(open);
    }
    const pingCpu = median(pingRounds);
    const sendCpu = median(sendRounds);
    const events = acks.length / rounds;
    await closeAll();

    // Connect: a larger fleet arrives at once.
    phase('connect');
    const rssBefore = rssMiB(server.pid);
    let peakRss = rssBefore;
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, rssMiB(server.pid));
    }, 100);
    const generatorBefore = process.cpuUsage();
    const serverBefore = cpuSeconds(server.pid);
    const arrivalStarted = performance.now();
    const arrival = await connectAll(connecting, connectRate, (i, ready) => {
      const thingKey = registering === 'new' ? `new${i}` : (things[i] as string);
      const register =
        registering === 'none' ? undefined : signedPayload({ thing_key: thingKey, name: machineName(thingKey) });
      return new FleetDevice(
        mqttPort,
        `arrive${i}`,
        pair,
        payloadOf(thingKey),
        () => {},
        () => {},
        ready,
        register,
      );
    });
    const arrivalSeconds = (performance.now() - arrivalStarted) / 1000;
    const generatorCpu = process.cpuUsage(generatorBefore);
    const serverSeconds = cpuSeconds(server.pid) - serverBefore;
    const arrivalCpu = {
      server: (serverSeconds / arrivalSeconds) * 100,
      perConnectionUs: (serverSeconds / connecting) * 1e6,
      generator: ((generatorCpu.user + generatorCpu.system) / 1e6 / arrivalSeconds) * 100,
    };
    open = arrival.devices;
    await new Promise((resolve) => setTimeout(resolve, 2000));
    clearInterval(sampler);
    // Their registers answered, the devices are idle: what each holds of the server's memory (an upper
    // bound: garbage of the arrival not yet collected counts too).
    const idleKiBPerConnection = ((rssMiB(server.pid) - rssBefore) * 1024) / (connecting - arrival.failed);
    const connacks = arrival.devices.map((d) => d.connackMs).filter((ms) => Number.isFinite(ms));
    const handshakes = arrival.devices.map((d) => d.tcpMs).filter((ms) => Number.isFinite(ms));
    const refused = arrival.devices.filter((d) => d.refusedWith !== undefined).length;
    const registers = arrival.devices.map((d) => d.registerMs).filter((ms) => Number.isFinite(ms));
    const registerCodes = new Map<number | undefined, number>();
    for (const device of arrival.devices) {
      if (device.refusedWith === undefined) {
        registerCodes.set(device.registerCode, (registerCodes.get(device.registerCode) ?? 0) + 1);
      }
    }
    await closeAll();

    console.log(
      table([
        ['what', 'server CPU % of a core (kernel)', 'CPU us/event', 'latency ms p50 / p99 / max', 'answers'],
        [`baseline: ${fleet} devices connected, idle`, cpuText(idleCpu), '-', '-', '-'],
        [`baseline: PINGREQ -> PINGRESP, ${rate}/s`, cpuText(pingCpu), '-', latency(pongs), '-'],
        [
          `steady: ${rate} events/s from ${fleet} devices, publish -> httpAck`,
          cpuText(sendCpu),
          ((sendCpu.total / 100 / (events / duration)) * 1e6).toFixed(0),
          latency(acks),
          [...codes.entries()].map(([c, n]) => `${c}: ${n}`).join(', '),
        ],
      ]),
    );
    console.log(`steady: the server's threads, % of a core: ${sendCpu.threads} (idle: ${idleCpu.threads})`);
    if (rounds > 1) {
      console.log(
        `steady rounds, % of a core (x the round's ping baseline): ${sendRounds
          .map((cpu, i) => `${cpu.total.toFixed(1)} (${(cpu.total / (pingRounds[i] as CpuShare).total).toFixed(1)}x)`)
          .join(', ')}; medians above`,
      );
    }
    console.log(
      table([
        [
          'what',
          'CONNECT -> CONNACK ms p50 / p99 / max',
          'register -> httpAck ms p50 / p99 / max',
          'register answers',
          'refused',
          'no answer',
          'server RSS MiB',
          'CPU % server / generator',
          'server CPU us/connection',
        ],
        ['baseline: before the devices arrive', '-', '-', '-', '-', '-', rssBefore.toFixed(0), '-', '-'],
        ['baseline: their TCP handshakes', latency(handshakes), '-', '-', '-', '-', '-', '-', '-'],
        [
          `connect: ${connecting} devices at ${connectRate}/s, register ${registering}`,
          latency(connacks),
          registering === 'none' ? '-' : latency(registers),
          registering === 'none'
            ? '-'
            : [...registerCodes.entries()].map(([code, n]) => `${code ?? 'none'}: ${n}`).join(', '),
          refused,
          arrival.failed,
          `${peakRss.toFixed(0)} peak (${(peakRss / rssBefore).toFixed(2)}x); idle ${idleKiBPerConnection.toFixed(1)} KiB/connection`,
          `${arrivalCpu.server.toFixed(0)} / ${arrivalCpu.generator.toFixed(0)}`,
          arrivalCpu.perConnectionUs.toFixed(0),
        ],
      ]),
    );
  } finally {
    for (const device of open) device.socket.destroy();
    await server.stop();
    await bench.dispose();
  }
}

/** Calls `act` on `rate` devices a second, spread over the second, in ticks of `tickMs`. */
function spread(devices: FleetDevice[], rate: number, tickMs: number, act: (device: FleetDevice) => void): void {
  const ticks = 1000 / tickMs;
  const perTick = rate / ticks;
  let carry = 0;
  for (let tick = 0; tick < ticks; tick++) {
    setTimeout(() => {
      carry += perTick;
      while (carry >= 1) {
        carry -= 1;
        act(devices[next++ % devices.length] as FleetDevice);
      }
    }, tick * tickMs);
  }
}
let next = 0;

/** The server's CPU in percent of one core: in all, and the kernel's part of it (system calls, I/O). */
interface CpuShare {
  total: number;
  system: number;
  /** The threads that spent at least half a percent, busiest first. */
  threads: string;
}

/** Runs `each` once a second for `seconds`; answers the server's CPU meanwhile. */
async function measureCpu(pid: number, seconds: number, each: () => void): Promise<CpuShare> {
  const before = cpuTimes(pid);
  const threadsBefore = threadCpuSeconds(pid);
  const started = performance.now();
  for (let second = 0; second < seconds; second++) {
    each();
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  const after = cpuTimes(pid);
  const elapsed = (performance.now() - started) / 1000;
  const percent = (s: number) => (s / elapsed) * 100;
  // Threads are all named "node": the main thread is the one whose id is the process's; the others
  // (the broker's, the garbage collector's and libuv's helpers) are listed by what they spent.
  const spent = [...threadCpuSeconds(pid)].map(([tid, thread]) => ({
    name: tid === String(pid) ? 'main' : `thread ${tid}`,
    seconds: thread.seconds - (threadsBefore.get(tid)?.seconds ?? 0),
  }));
  const threads = spent
    .sort((a, b) => b.seconds - a.seconds)
    .filter(({ seconds }) => percent(seconds) >= 0.5)
    .map(({ name, seconds }) => `${name} ${percent(seconds).toFixed(1)}`)
    .join(', ');
  return {
    total: percent(after.user + after.system - before.user - before.system),
    system: percent(after.system - before.system),
    threads,
  };
}

/** The round of the median total (the higher middle one of an even count). */
const median = (rounds: CpuShare[]): CpuShare =>
  [...rounds].sort((a, b) => a.total - b.total)[Math.floor(rounds.length / 2)] as CpuShare;

const cpuText = (cpu: CpuShare) => `${cpu.total.toFixed(1)} (kernel ${cpu.system.toFixed(1)})`;

async function drained(devices: FleetDevice[]): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (devices.some((d) => d.outstanding > 0) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
