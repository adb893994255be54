/**
 * The server's own demo (docs/simulator.md, "The demo"): simulated machines of an organisation that send
 * readings through the device routes of this server, started and stopped from the console's empty
 * Overview or the API. Never on by default; one demo per organisation on each instance; stopped with
 * the server.
 */
import { type Actor, SYSTEM_ACTOR } from '../audit/recorder.ts';
import { conflict } from '../core/errors.ts';
import type { Principal } from '../core/principal.ts';
import type { SecretBox } from '../core/secret-box.ts';
import { createKeyPair, deleteKeyPair } from '../keypairs/service.ts';
import type { DeviceLink, KeyPair } from '../simulator/device-link.ts';
import { Simulation } from '../simulator/simulation.ts';
import type { Store } from '../store/store.ts';

/**
 * The demo's thing keys, `demo-<organisation key>-N`: thing keys are unique across the server, so each
 * organisation's demo has keys of its own (docs/simulator.md).
 */
export const demoPrefix = (organisationKey: string): string => `demo-${organisationKey}`;
const DESCRIPTION = 'Simulated by the demo: not a real device';

interface RunningDemo {
  simulation: Simulation;
  keyPairKey: string;
  startedAt: number;
  rate: number;
}

export interface DemoStatus {
  running: boolean;
  devices: number;
  rate: number;
  thingKeys: string[];
  startedAt: number | null;
  sent: number;
  stored: number;
  refused: number;
}

export class DemoService {
  private readonly running = new Map<string, RunningDemo>();

  /** `connect` reaches this server's device routes with a key pair's credentials. */
  constructor(
    private readonly store: Store,
    private readonly box: SecretBox,
    private readonly connect: (keys: KeyPair) => DeviceLink,
  ) {}

  status(organisationKey: string): DemoStatus {
    const demo = this.running.get(organisationKey);
    if (!demo)
      return { running: false, devices: 0, rate: 0, thingKeys: [], startedAt: null, sent: 0, stored: 0, refused: 0 };
    const { counts, options } = demo.simulation;
    return {
      running: true,
      devices: options.devices,
      rate: demo.rate,
      thingKeys: Array.from({ length: options.devices }, (_, i) => `${demoPrefix(organisationKey)}-${i + 1}`),
      startedAt: demo.startedAt,
      sent: counts.sent,
      stored: counts.accepted,
      refused: counts.refused,
    };
  }

  async start(principal: Principal, actor: Actor, input: { devices: number; rate: number }): Promise<DemoStatus> {
    const organisationKey = principal.organisationKey;
    if (this.running.has(organisationKey)) throw conflict('demo', 'the demo is already running: stop it first');
    // The machines sign with a key pair of their own (the Agent role), which the caller must be able to grant.
    const { row, secretKey } = await createKeyPair(
      this.store,
      this.box,
      actor,
      organisationKey,
      { name: 'Demo (simulated machines)' },
      principal,
    );
    const keys = { accessKey: row.access_key, secretKey };
    const simulation = new Simulation({
      devices: input.devices,
      rate: input.rate,
      transport: 'http',
      httpUrl: '',
      mqttUrl: '',
      keys,
      prefix: demoPrefix(organisationKey),
      description: DESCRIPTION,
      connect: async () => this.connect(keys),
    });
    const demo = { simulation, keyPairKey: row.key_pair_key, startedAt: Date.now(), rate: input.rate };
    this.running.set(organisationKey, demo);
    try {
      await simulation.start();
    } catch (error) {
      await this.stopDemo(organisationKey, actor);
      throw error;
    }
    return this.status(organisationKey);
  }

  async stop(organisationKey: string, actor: Actor): Promise<DemoStatus> {
    await this.stopDemo(organisationKey, actor);
    return this.status(organisationKey);
  }

  private async stopDemo(organisationKey: string, actor: Actor): Promise<void> {
    const demo = this.running.get(organisationKey);
    if (!demo) return;
    this.running.delete(organisationKey);
    await demo.simulation.stop();
    // The demo's key pair goes with it; its things and their readings stay, for the user to delete.
    await deleteKeyPair(this.store, actor, [organisationKey], demo.keyPairKey).catch(() => undefined);
  }

  /** Stops every demo (the server stops). */
  async close(): Promise<void> {
    await Promise.all([...this.running.keys()].map((key) => this.stopDemo(key, SYSTEM_ACTOR)));
  }
}
