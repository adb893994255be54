/**
 * A fleet of simulated machines (docs/simulator.md): each registers its thing, then sends a reading
 * `rate` times a second through the real device interface, and acknowledges the instructions it is
 * sent (over MQTT, where instructions reach devices), until stopped.
 */
import {
  type DeviceAnswer,
  type DeviceLink,
  HttpDeviceLink,
  type Instruction,
  type KeyPair,
  MqttDeviceLink,
  requestOverHttp,
} from './device-link.ts';
import { MachineReadings } from './readings.ts';

export interface SimulationOptions {
  devices: number;
  /** Readings a second, per device. */
  rate: number;
  transport: 'mqtt' | 'http';
  /** The HTTP address of the server (`http://127.0.0.1:3000`). */
  httpUrl: string;
  /** The MQTT address of the server (`mqtt://127.0.0.1:1883`), for the MQTT transport. */
  mqttUrl: string;
  keys: KeyPair;
  /** Thing keys are `<prefix>-1` ... `<prefix>-N`. */
  prefix: string;
  /** Extra members of each register (a template, say). */
  register?: Record<string, unknown>;
  /** How a device reaches the server, in place of `transport` (the server's own demo). */
  connect?: (thingKey: string, onInstruction: (instruction: Instruction) => void) => Promise<DeviceLink>;
  /** Each register's description: what a person reading the thing learns of it. */
  description?: string;
}

export interface SimulationCounts {
  devices: number;
  sent: number;
  accepted: number;
  refused: number;
  instructions: number;
  /** The last refusal's status and message, to show. */
  lastRefusal: string | undefined;
}

interface SimulatedDevice {
  thingKey: string;
  link: DeviceLink;
  readings: MachineReadings;
}

export class Simulation {
  readonly counts: SimulationCounts = {
    devices: 0,
    sent: 0,
    accepted: 0,
    refused: 0,
    instructions: 0,
    lastRefusal: undefined,
  };
  private readonly devices: SimulatedDevice[] = [];
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly underWay = new Set<Promise<unknown>>();
  private stopped = false;

  constructor(readonly options: SimulationOptions) {
    if (!Number.isInteger(options.devices) || options.devices < 1 || options.devices > 10_000)
      throw new RangeError('devices must be a whole number from 1 to 10000');
    if (!(options.rate > 0 && options.rate <= 100)) throw new RangeError('rate must be above 0 and at most 100');
  }

  /** Connects and registers every device; rejects with the server's message when it refuses. */
  async start(): Promise<void> {
    for (let index = 1; index <= this.options.devices; index++) {
      const thingKey = `${this.options.prefix}-${index}`;
      const link = await this.linkFor(thingKey);
      this.devices.push({ thingKey, link, readings: new MachineReadings(index) });
      const answer = await link.register({
        thing_key: thingKey,
        name: `Simulated machine ${index}`,
        description: this.options.description ?? 'Simulated by thingbase simulate: not a real device',
        bi_directional: true,
        ...this.options.register,
      });
      if (answer.status !== 200) throw new Error(`registering ${thingKey} was refused: ${describe(answer)}`);
      this.counts.devices = this.devices.length;
    }
    const period = 1000 / this.options.rate;
    this.timer = setInterval(() => this.sendReadings(), period);
    this.sendReadings();
  }

  private linkFor(thingKey: string): Promise<DeviceLink> {
    if (this.options.connect)
      return this.options.connect(thingKey, (instruction) => this.acknowledge(thingKey, instruction));
    if (this.options.transport === 'http')
      return Promise.resolve(new HttpDeviceLink(requestOverHttp(this.options.httpUrl), this.options.keys));
    return MqttDeviceLink.connect(this.options.mqttUrl, thingKey, this.options.keys, (instruction) =>
      this.acknowledge(thingKey, instruction),
    );
  }

  private sendReadings(): void {
    const at = Date.now();
    for (const device of this.devices) {
      const reading = device.readings.next(at);
      this.track(device.link.event({ thing_key: device.thingKey, timestamp: at, ...reading }));
    }
  }

  private track(sent: Promise<DeviceAnswer>): void {
    this.counts.sent++;
    const counted = sent.then(
      (answer) => {
        if (answer.status === 200) this.counts.accepted++;
        else this.refused(describe(answer));
      },
      (error: Error) => this.refused(error.message),
    );
    this.underWay.add(counted);
    void counted.finally(() => this.underWay.delete(counted));
  }

  private refused(reason: string): void {
    this.counts.refused++;
    this.counts.lastRefusal = reason;
  }

  /** An instruction is acknowledged by an alert that carries its `alert_key` (docs/devices.md). */
  private acknowledge(deviceKey: string, instruction: Instruction): void {
    if (this.stopped) return;
    // Every connection of the key pair hears every instruction of its things: the thing's own answers.
    if (instruction.thingKey !== deviceKey) return;
    const device = this.devices.find((d) => d.thingKey === deviceKey);
    if (!device) return;
    this.counts.instructions++;
    void device.link
      .alert({
        alert: {
          thing_key: instruction.thingKey,
          alert_key: instruction.alertKey,
          message: 'Instruction carried out by the simulator',
          alert_type: 0,
          data: { execution_status: 'success', instruction: instruction.instruction ?? null },
        },
      })
      .catch(() => undefined);
  }

  /** Stops sending, waits (up to 3 s) for the answers under way, and disconnects. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await Promise.race([Promise.all(this.underWay), new Promise((resolve) => setTimeout(resolve, 3000).unref())]);
    await Promise.all(this.devices.map((d) => d.link.close().catch(() => undefined)));
  }
}

const describe = (answer: DeviceAnswer) => `${answer.status} ${answer.message ?? ''}`.trim();
