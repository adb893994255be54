/**
 * What a device's register, heartbeat and event requests do, whether they come over HTTP or MQTT.
 */
import { type DeviceAlert, receiveDeviceAlert } from '../alerts/service.ts';
import { actorOf } from '../audit/recorder.ts';
import { ApiError, invalidParam, requiredParam } from '../core/errors.ts';
import { CLIENT_KEY_PATTERN, CLIENT_KEY_RULE } from '../core/keys.ts';
import { requirePermission } from '../core/permissions.ts';
import type { Principal } from '../core/principal.ts';
import type { EventIngest, IncomingEvent } from '../events/ingest.ts';
import { withStoreDeadline } from '../store/faults.ts';
import type { Store } from '../store/store.ts';
import { findDefaultTemplate } from '../templates/service.ts';
import { findThing, type ThingChanges, type ThingWithTemplate, updateThing } from '../things/service.ts';
import { NewThings } from './new-things.ts';
import type { EventInput, HeartbeatInput, RegisterInput } from './schemas.ts';

/** `thing_key`, or `device_key` instead; an empty string counts as absent. */
export function thingKeyOf(item: { thing_key?: string | null; device_key?: string | null }, param = ''): string {
  const key = item.thing_key || item.device_key;
  if (!key) throw requiredParam(`${param}thing_key`);
  return key;
}

const CLIENT_KEY = new RegExp(CLIENT_KEY_PATTERN);

function readBoolean(value: unknown): boolean | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (value === true || value === 1 || value === '1' || value === 'true') return true;
  if (value === false || value === 0 || value === '0' || value === 'false') return false;
  throw invalidParam('bi_directional', 'must be true, false, 1 or 0');
}

/** Only the members ingestion reads: devices send more (envelope, type, ...). */
const incomingEvent = (
  e: { timestamp?: unknown; data?: unknown; waypoint?: unknown },
  thingKey: string,
): IncomingEvent => ({
  thingKey,
  timestamp: e.timestamp,
  data: e.data,
  waypoint: e.waypoint,
});

export class DeviceService {
  /** Registers of new things, made together per organisation (new-things.ts). */
  private readonly newThings: NewThings;

  constructor(
    private readonly store: Store,
    private readonly ingest: EventIngest,
    /**
     * How long a device's request may wait for the store (ms; store/faults.ts), over HTTP and MQTT
     * alike: a database that hangs turns into 503s within it. Unbounded if not given.
     */
    private readonly deadlineMs?: number,
  ) {
    this.newThings = new NewThings(store);
  }

  private bounded<T>(work: () => Promise<T>): Promise<T> {
    return this.deadlineMs === undefined ? work() : withStoreDeadline(this.deadlineMs, work);
  }

  /** Creates the thing in the Default template when it is new, else updates what the device says of it. */
  register(principal: Principal, input: RegisterInput): Promise<void> {
    return this.bounded(() => this.registerNow(principal, input));
  }

  private async registerNow(principal: Principal, input: RegisterInput): Promise<void> {
    const key = thingKeyOf(input);
    const biDirectional = readBoolean(input.bi_directional);
    const existing = await findThing(this.store.db, [principal.organisationKey], key);
    const changes = {
      ...(input.name ? { name: input.name } : {}),
      ...(typeof input.description === 'string' ? { description: input.description } : {}),
      ...(biDirectional !== undefined ? { bi_directional: biDirectional } : {}),
    };
    if (existing) return this.updateRegistered(principal, key, changes, existing);
    // The keys a client may choose through the REST API: a thing's key is part of its instruction topic,
    // where `/`, `+` or `#` would change what the topic means.
    if (!CLIENT_KEY.test(key)) throw invalidParam('thing_key', CLIENT_KEY_RULE);
    requirePermission(principal, 'thing', 'create');
    const template = await findDefaultTemplate(this.store.db, principal.organisationKey);
    if (!template) throw new ApiError(500, [{ code: 'internal', message: 'the organisation has no Default template' }]);
    let failure: unknown;
    const made = await this.newThings
      .create(actorOf(principal), principal.organisationKey, {
        thing_key: key,
        name: input.name || key,
        thing_template_key: template.thing_template_key,
        ...changes,
      })
      .catch((error: unknown) => {
        failure = error;
        return false;
      });
    if (made) return;
    // Another register of the same new thing made it first (a device sending its register again
    // before the answer, two of its connections at once, another instance): this one is a register
    // of it as it is. Failed and not made: the failure is the answer.
    const thing = await findThing(this.store.db, [principal.organisationKey], key);
    if (!thing)
      throw failure ?? new ApiError(409, [{ code: 'conflict', message: 'the thing was deleted as it was registered' }]);
    await this.updateRegistered(principal, key, changes, thing);
  }

  /**
   * A register of a thing that exists: its changes written, when it has any. A register that says
   * what the thing already is (every device's at each start: a fleet back after an outage sends
   * thousands at once) writes nothing, and leaves no audit record.
   */
  private async updateRegistered(
    principal: Principal,
    key: string,
    changes: ThingChanges,
    thing: ThingWithTemplate,
  ): Promise<void> {
    requirePermission(principal, 'thing', 'update');
    const unchanged =
      (changes.name === undefined || changes.name === thing.name) &&
      (changes.description === undefined || changes.description === thing.description) &&
      (changes.bi_directional === undefined || changes.bi_directional === (thing.bi_directional === 1));
    if (!unchanged) await updateThing(this.store, actorOf(principal), [principal.organisationKey], key, changes);
  }

  async heartbeat(principal: Principal, input: HeartbeatInput): Promise<void> {
    requirePermission(principal, 'thing', 'update');
    const keys = input.events ? input.events.map((e, i) => thingKeyOf(e, `events.${i}.`)) : [thingKeyOf(input)];
    await this.bounded(() => this.ingest.heartbeats(principal, keys));
  }

  /** Stores one event or a bulk; resolves once committed (not an async function: each device message comes this way). */
  event(principal: Principal, input: EventInput, transport: 'http' | 'mqtt', source?: string): Promise<void> {
    try {
      requirePermission(principal, 'data', 'create');
      const incoming: IncomingEvent[] = input.events
        ? input.events.map((e, i) => incomingEvent(e, thingKeyOf(e, `events.${i}.`)))
        : [incomingEvent(input, thingKeyOf(input))];
      return this.bounded(() =>
        this.ingest.ingest(
          principal,
          incoming,
          input.events ? input.timestamp : undefined,
          input.events !== undefined,
          transport,
          source,
        ),
      );
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Raises an alert, or acknowledges an instruction when it names that instruction's alert_key. */
  async alert(principal: Principal, input: DeviceAlert): Promise<void> {
    requirePermission(principal, 'alert', 'create');
    await this.bounded(() => receiveDeviceAlert(this.store, principal, input));
  }
}
