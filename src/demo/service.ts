/**
 * The server's own demo (docs/simulator.md, "The demo"): simulated machines of an organisation that send
 * readings through the device routes of this server, started and stopped from the console's empty
 * Overview or the API. Never on by default; one demo per organisation on each instance; stopped with
 * the server.
 */
import { type Actor, SYSTEM_ACTOR } from '../audit/recorder.ts';
import { ApiError, conflict } from '../core/errors.ts';
import { grants } from '../core/permissions.ts';
import type { Principal } from '../core/principal.ts';
import type { SecretBox } from '../core/secret-box.ts';
import { createKeyPair, deleteKeyPair } from '../keypairs/service.ts';
import type { DeviceLink, KeyPair } from '../simulator/device-link.ts';
import { SIMULATED_METRICS } from '../simulator/readings.ts';
import { Simulation } from '../simulator/simulation.ts';
import type { Store } from '../store/store.ts';
import { createTemplate, findTemplateNamed } from '../templates/service.ts';
import { createThing } from '../things/service.ts';

/**
 * The demo's thing keys, `demo-<organisation key>-N`: thing keys are unique across the server, so each
 * organisation's demo has keys of its own (docs/simulator.md).
 */
export const demoPrefix = (organisationKey: string): string => `demo-${organisationKey}`;
const DESCRIPTION = 'Simulated by the demo: not a real device';
/** The demo machines' template: their metrics with units (°C, %), so charts and rules show them. */
const DEMO_TEMPLATE = 'Demo machine';

const isConflict = (error: unknown) => error instanceof ApiError && error.status === 409;

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
  /** Organisations whose demo is starting (its key pair and things being made). */
  private readonly starting = new Set<string>();

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
    // A start under way counts as running: a second start meanwhile would make a second key pair and
    // simulation, and the first would be left running with nothing to stop it.
    if (this.running.has(organisationKey) || this.starting.has(organisationKey))
      throw conflict('demo', 'the demo is already running: stop it first');
    this.starting.add(organisationKey);
    try {
      return await this.startDemo(principal, actor, input);
    } finally {
      this.starting.delete(organisationKey);
    }
  }

  private async startDemo(
    principal: Principal,
    actor: Actor,
    input: { devices: number; rate: number },
  ): Promise<DemoStatus> {
    const organisationKey = principal.organisationKey;
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
    try {
      await this.makeThings(principal, actor, input.devices);
    } catch (error) {
      // Nothing runs yet to stop: the key pair goes here.
      await deleteKeyPair(this.store, actor, [organisationKey], row.key_pair_key).catch(() => undefined);
      throw error;
    }
    const simulation = new Simulation({
      devices: input.devices,
      rate: input.rate,
      transport: 'http',
      httpUrl: '',
      mqttUrl: '',
      keys,
      prefix: demoPrefix(organisationKey),
      description: DESCRIPTION,
      // Over HTTP in process no instruction reaches them: the console must not offer to send one.
      register: { bi_directional: false },
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

  /**
   * The demo's things, made before they register (a register cannot choose a template) in the demo
   * template; a thing made by an earlier demo is kept as it is. Without a template of that name and
   * without the permission to make one, they register into the Default template, as devices do.
   */
  private async makeThings(principal: Principal, actor: Actor, devices: number): Promise<void> {
    const organisationKey = principal.organisationKey;
    const templateKey = await this.demoTemplate(principal, actor);
    if (templateKey === undefined) return;
    for (let index = 1; index <= devices; index++) {
      await createThing(this.store, actor, organisationKey, {
        thing_key: `${demoPrefix(organisationKey)}-${index}`,
        name: `Simulated machine ${index}`,
        description: DESCRIPTION,
        thing_template_key: templateKey,
        bi_directional: false,
      }).catch((error: unknown) => {
        if (!isConflict(error)) throw error;
      });
    }
  }

  /** The key of the organisation's demo template, made when missing and the caller may make templates. */
  private async demoTemplate(principal: Principal, actor: Actor): Promise<string | undefined> {
    const organisationKey = principal.organisationKey;
    const found = await findTemplateNamed(this.store.db, organisationKey, DEMO_TEMPLATE);
    if (found) return found.thing_template_key;
    if (!grants(principal.abilities, 'thing_template', 'create')) return undefined;
    try {
      const made = await createTemplate(this.store, actor, organisationKey, {
        name: DEMO_TEMPLATE,
        description: DESCRIPTION,
        metrics: SIMULATED_METRICS.map((metric) => ({ ...metric })),
      });
      return made.thing_template_key;
    } catch (error) {
      // Made at the same moment by another instance's demo start.
      if (!isConflict(error)) throw error;
      return (await findTemplateNamed(this.store.db, organisationKey, DEMO_TEMPLATE))?.thing_template_key;
    }
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
