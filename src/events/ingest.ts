/**
 * Turning what devices (and users) send into stored events (docs/devices.md, "HTTP"): one event or a
 * bulk, timestamps in milliseconds (or seconds when under 10^11), data checked against the thing's
 * template, new metric names added to the Default template. A bulk with one bad event is refused whole;
 * nothing is stored before every event of it has been checked.
 */
import { readDecimal } from '../core/decimal.ts';
import { ApiError, invalidParam, notFound, requiredParam, sendAgainLater } from '../core/errors.ts';
import type { Principal } from '../core/principal.ts';
import { readPath } from '../expressions/index.ts';
import { compiledQuery } from '../store/prepared.ts';
import type { Executor, Store } from '../store/store.ts';
import { holdersOf } from '../templates/metric-names.ts';
import type { MetricDefinition } from '../templates/presenter.ts';
import { growTemplateMetrics } from '../templates/service.ts';
import type { EventLimits } from './event-limits.ts';
import { type EventWriter, type IngestBatch, type NewEvent, StaleSubjectError } from './writer.ts';

/** Events more than this far ahead of the server's clock are refused. */
export const MAX_FUTURE_MS = 24 * 60 * 60 * 1000;
export const MAX_BULK_EVENTS = 10_000;

export interface IngestThing {
  thing_id: number;
  thing_key: string;
  thing_template_key: string;
  metrics: string;
  is_default: number;
}

/** A thing as one request uses it: its template's metrics read once, not per event. */
interface ResolvedThing extends IngestThing {
  metricList: MetricDefinition[];
}

const thingOfOrganisation = compiledQuery((db: Executor, organisationKey: string, thingKey: string) =>
  db
    .selectFrom('things as t')
    .innerJoin('thing_templates as tt', 'tt.thing_template_key', 't.thing_template_key')
    .select(['t.thing_id', 't.thing_key', 'tt.thing_template_key', 'tt.metrics', 'tt.is_default'])
    .where('t.organisation_key', '=', organisationKey)
    .where('t.thing_key', '=', thingKey),
);

export function findIngestThing(db: Executor, organisationKey: string, thingKey: string) {
  return thingOfOrganisation.executeTakeFirst(db, organisationKey, thingKey) as Promise<IngestThing | undefined>;
}

/** Tries of one request whose things or templates changed under it, before it is refused with a 503. */
const STALE_ATTEMPTS = 3;
const CACHE_SIZE = 100_000;

type CachedTemplate = Pick<ResolvedThing, 'metrics' | 'is_default' | 'metricList'>;

/**
 * Things and their templates' metrics as ingestion last read them, so a message costs no lookup. The
 * writer confirms, in each transaction, that the things and templates a batch was checked against are
 * still so (writer.ts, `subject`); a stale batch is refused and its request forgets what it used and
 * checks again. That holds whoever changed them, this process or another instance.
 */
class IngestThingCache {
  /** By organisation, then thing key; each with the template entry it was made from. */
  private readonly things = new Map<string, Map<string, { thing: ResolvedThing; template: CachedTemplate }>>();
  private readonly templates = new Map<string, CachedTemplate>();
  private size = 0;

  get(organisationKey: string, thingKey: string): ResolvedThing | undefined {
    const entry = this.things.get(organisationKey)?.get(thingKey);
    // A forgotten template makes every thing made from it a miss.
    return entry && this.templates.get(entry.thing.thing_template_key) === entry.template ? entry.thing : undefined;
  }

  set(organisationKey: string, thing: ResolvedThing): void {
    if (this.size >= CACHE_SIZE) {
      this.things.clear();
      this.templates.clear();
      this.size = 0;
    }
    let template = this.templates.get(thing.thing_template_key);
    if (template?.metrics !== thing.metrics) {
      template = { metrics: thing.metrics, is_default: thing.is_default, metricList: thing.metricList };
      this.templates.set(thing.thing_template_key, template);
    }
    let ofOrganisation = this.things.get(organisationKey);
    if (!ofOrganisation) {
      ofOrganisation = new Map();
      this.things.set(organisationKey, ofOrganisation);
    }
    if (!ofOrganisation.has(thing.thing_key)) this.size += 1;
    ofOrganisation.set(thing.thing_key, { thing, template });
  }

  forget(organisationKey: string, thing: ResolvedThing): void {
    if (this.things.get(organisationKey)?.delete(thing.thing_key)) this.size -= 1;
    this.templates.delete(thing.thing_template_key);
  }

  forgetTemplate(templateKey: string): void {
    this.templates.delete(templateKey);
  }

  /** Forgets a thing by its key. */
  forgetThing(organisationKey: string, thingKey: string): void {
    if (this.things.get(organisationKey)?.delete(thingKey)) this.size -= 1;
  }

  clear(): void {
    this.things.clear();
    this.templates.clear();
    this.size = 0;
  }
}

const unprocessable = (param: string, message: string) => new ApiError(422, [{ code: 'invalid', param, message }]);

/** A device time: epoch milliseconds, or seconds when under 10^11; absent means now. */
export function readTimestamp(value: unknown, now: number, param: string): number {
  if (value === undefined || value === null || value === '') return now;
  const number = typeof value === 'string' ? readDecimal(value) : value;
  if (typeof number !== 'number' || !Number.isFinite(number) || number < 0) {
    throw invalidParam(param, 'must be epoch milliseconds (or seconds)');
  }
  const ms = Math.round(number < 1e11 ? number * 1000 : number);
  if (ms > now + MAX_FUTURE_MS) throw unprocessable(param, 'is more than a day in the future');
  return ms;
}

/** `[latitude, longitude]`, or null for anything else (SDKs sometimes put other values there). */
export function readWaypoint(value: unknown): [number, number] | null {
  if (!Array.isArray(value) || value.length !== 2) return null;
  const [lat, lng] = value.map((v) => (typeof v === 'string' ? readDecimal(v) : v));
  if (typeof lat !== 'number' || typeof lng !== 'number' || !Number.isFinite(lat) || !Number.isFinite(lng)) return null;
  if (Math.abs(lat) > 90 || Math.abs(lng) > 180) return null;
  return [lat, lng];
}

function typeOf(value: unknown): MetricDefinition['data_type'] | undefined {
  if (typeof value === 'number') return 'number';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'boolean') return 'boolean';
  return undefined;
}

/** A template's metrics as the check of every event uses them, worked out once per metric list. */
interface MetricCheck {
  metrics: { definition: MetricDefinition; path: string[] }[];
  known: Set<string>;
  /** The names that hold known metrics (`m` for `m.x`): a value there is not a metric to learn. */
  holders: Set<string>;
}

const metricChecks = new WeakMap<MetricDefinition[], MetricCheck>();

function metricCheckOf(metrics: MetricDefinition[]): MetricCheck {
  let check = metricChecks.get(metrics);
  if (!check) {
    check = {
      metrics: metrics.map((definition) => ({ definition, path: definition.name.split('.') })),
      known: new Set(metrics.map((m) => m.name)),
      holders: holdersOf(metrics.map((m) => m.name)),
    };
    metricChecks.set(metrics, check);
  }
  return check;
}

/** The longest metric name a template may declare (templates/schemas.ts). */
const MAX_METRIC_NAME = 200;

/**
 * Adds to `discovered` every leaf of nested data (by dotted name) the template does not know yet and
 * could declare: a member whose own name is empty or holds a dot cannot be addressed by a dotted name
 * (`{"a.b": 1}` is not the `b` of `a`), and a name past MAX_METRIC_NAME is one the template's own update
 * would refuse; nor is a value where the template has metrics inside it (a number at `m` when `m.x` is
 * a metric). Such values are stored with their event, and no metric is made of them.
 */
function discover(
  data: Record<string, unknown>,
  check: MetricCheck,
  discovered: MetricDefinition[],
  prefix: string,
): MetricDefinition[] {
  for (const name in data) {
    if (!Object.hasOwn(data, name)) continue;
    if (name === '' || name.includes('.')) continue;
    const value = data[name];
    const path = prefix === '' ? name : `${prefix}.${name}`;
    if (path.length > MAX_METRIC_NAME) continue;
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      discover(value as Record<string, unknown>, check, discovered, path);
      continue;
    }
    const dataType = typeOf(value);
    if (dataType && !check.known.has(path) && !check.holders.has(path)) {
      discovered.push({ name: path, data_type: dataType, unit: '' });
    }
  }
  return discovered;
}

/** Checks metric values against the template; answers metrics the template does not know yet. */
function checkData(
  data: Record<string, unknown>,
  metrics: MetricDefinition[],
  param: () => string,
): MetricDefinition[] {
  const check = metricCheckOf(metrics);
  for (const { definition, path } of check.metrics) {
    const value = readPath(data, path);
    if (value === undefined || value === null) continue;
    if (typeOf(value) !== definition.data_type) {
      throw unprocessable(
        `${param()}.${definition.name}`,
        `must be a ${definition.data_type}, as the thing template says`,
      );
    }
  }
  return discover(data, check, [], '');
}

export interface IncomingEvent {
  thingKey: string;
  timestamp?: unknown;
  data?: unknown;
  waypoint?: unknown;
}

/** How events came: a device over HTTP or MQTT, or a user through the REST API. */
export type EventTransport = 'http' | 'mqtt' | 'api';

export class EventIngest {
  private readonly cache = new IngestThingCache();
  private readonly stopFollowing: () => void;

  constructor(
    private readonly store: Store,
    private readonly writer: EventWriter,
    /** Told how many events of a request were stored (not those arriving expired) and how they came, for metrics. */
    private readonly onStored?: (transport: EventTransport, count: number) => void,
    /** Events-a-second limits, checked before anything of a request is read against its things. */
    private readonly limits?: EventLimits,
  ) {
    // What changes is forgotten once it commits, so the next message reads it again instead of being
    // refused by the writer as stale first (which still guards against a change the feed has not told
    // yet: one of another instance, on its way).
    this.stopFollowing = store.changes.follow(['Thing', 'ThingTemplate'], (change) => {
      if (change.organisationKey === null || change.entityKey === null) this.cache.clear();
      else if (change.entityType === 'Thing') this.cache.forgetThing(change.organisationKey, change.entityKey);
      else this.cache.forgetTemplate(change.entityKey);
    });
  }

  close(): void {
    this.stopFollowing();
    this.cache.clear();
  }

  async resolveThing(
    principal: Principal,
    thingKey: string,
    cache?: Map<string, ResolvedThing>,
  ): Promise<ResolvedThing> {
    const resolved = cache?.get(thingKey) ?? this.cache.get(principal.organisationKey, thingKey);
    if (resolved) {
      cache?.set(thingKey, resolved);
      return resolved;
    }
    const thing = await findIngestThing(this.store.db, principal.organisationKey, thingKey);
    if (!thing) throw notFound('thing', 'thing_key');
    const read = { ...thing, metricList: JSON.parse(thing.metrics) as MetricDefinition[] };
    this.cache.set(principal.organisationKey, read);
    cache?.set(thingKey, read);
    return read;
  }

  /** The thing when this request or the cache already has it: no promise to wait for. */
  private cachedThing(principal: Principal, thingKey: string, things: Map<string, ResolvedThing>) {
    const thing = things.get(thingKey) ?? this.cache.get(principal.organisationKey, thingKey);
    if (thing) things.set(thingKey, thing);
    return thing;
  }

  /**
   * Runs `attempt` with a fresh map of the things it resolves; when the writer finds one of them (or
   * its template) changed since it was cached, forgets them and tries again.
   */
  private withFreshThings<T>(
    principal: Principal,
    attempt: (things: Map<string, ResolvedThing>) => Promise<T>,
    tries = 1,
  ): Promise<T> {
    const things = new Map<string, ResolvedThing>();
    return attempt(things).catch((error: unknown) => {
      if (!(error instanceof StaleSubjectError)) throw error;
      for (const thing of things.values()) this.cache.forget(principal.organisationKey, thing);
      if (tries >= STALE_ATTEMPTS) throw sendAgainLater('the things changed meanwhile; send again');
      return this.withFreshThings(principal, attempt, tries + 1);
    });
  }

  /**
   * Stores events (one request's worth) and resolves once they are committed. Each message of a
   * device comes this way, so the usual one (its things cached, within its limits) is done without
   * waiting for a promise before the writer's, and without the objects an async function keeps while
   * it waits: at saturation they were a fifth of what a message allocated (docs/benchmarks-history.md).
   */
  ingest(
    principal: Principal,
    incoming: IncomingEvent[],
    defaultTimestamp: unknown,
    /** Whether the events came as a list (`events`), whose items' parameters are named `events.N.`, even for one. */
    listed: boolean,
    transport: EventTransport,
    /** Who sent them, for fair shares of a busy writer (writer.ts, `source`). */
    source?: string,
  ): Promise<void> {
    try {
      if (incoming.length > MAX_BULK_EVENTS) throw invalidParam('events', `may hold at most ${MAX_BULK_EVENTS} events`);
      const limited = this.limits?.take(principal, incoming.length);
      const request: IngestRequest = { principal, incoming, defaultTimestamp, listed, transport, source };
      return limited === undefined ? this.ingestAdmitted(request) : limited.then(() => this.ingestAdmitted(request));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private ingestAdmitted(request: IngestRequest): Promise<void> {
    this.writer.admit(request.principal.organisationKey, request.source, request.incoming.length);
    return this.withFreshThings(request.principal, (things) => this.ingestOnce(request, things)).then((stored) => {
      this.onStored?.(request.transport, stored);
    });
  }

  /** Checks the request's events against its things and hands them to the writer; resolves with the rows stored. */
  private ingestOnce(request: IngestRequest, things: Map<string, ResolvedThing>): Promise<number> {
    try {
      const { principal, incoming } = request;
      for (let index = 0; index < incoming.length; index++) {
        const thingKey = (incoming[index] as IncomingEvent).thingKey;
        if (this.cachedThing(principal, thingKey, things) === undefined) return this.ingestResolving(request, things);
      }
      const checked = new CheckedEvents(request);
      for (let index = 0; index < incoming.length; index++) {
        checked.add(index, things.get((incoming[index] as IncomingEvent).thingKey) as ResolvedThing);
      }
      return this.writer.write(checked.batch(things));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * ingestOnce when a thing is not in the cache: each event's thing is read in turn, so that the
   * first event at fault (a thing unknown, data not as its template says) is the one refused.
   */
  private async ingestResolving(request: IngestRequest, things: Map<string, ResolvedThing>): Promise<number> {
    const checked = new CheckedEvents(request);
    for (let index = 0; index < request.incoming.length; index++) {
      const thingKey = (request.incoming[index] as IncomingEvent).thingKey;
      checked.add(index, await this.resolveThing(request.principal, thingKey, things));
    }
    return this.writer.write(checked.batch(things));
  }

  /** Records heartbeats (receipt time) and resolves once they are committed. */
  async heartbeats(principal: Principal, thingKeys: string[]): Promise<void> {
    await this.withFreshThings(principal, async (things) => {
      const heartbeats = new Map<number, number>();
      const now = Date.now();
      for (const key of thingKeys) heartbeats.set((await this.resolveThing(principal, key, things)).thing_id, now);
      await this.writer.write({ events: [], heartbeats, subject: subjectOf(principal, things) });
    });
  }
}

/** A request to store events, as EventIngest.ingest was given it. */
interface IngestRequest {
  principal: Principal;
  incoming: IncomingEvent[];
  defaultTimestamp: unknown;
  listed: boolean;
  transport: EventTransport;
  source: string | undefined;
}

/** A request's events, each checked against its thing as it is added, and the metrics they bring new. */
class CheckedEvents {
  private readonly events: NewEvent[] = [];
  /** Metrics new to Default templates, by template: made only when an event brings one. */
  private discovered: Map<string, Map<string, MetricDefinition>> | undefined;
  private readonly now = Date.now();

  constructor(private readonly request: IngestRequest) {}

  /** A parameter's name in an answer: only when something is wrong (building it for each event of a bulk costs). */
  private paramOf(index: number, name: string): string {
    return this.request.listed ? `events.${index}.${name}` : name;
  }

  add(index: number, thing: ResolvedThing): void {
    const item = this.request.incoming[index] as IncomingEvent;
    const waypoint = readWaypoint(item.waypoint);
    if (item.data === undefined && waypoint === null) throw requiredParam(this.paramOf(index, 'data'));
    if (item.data !== undefined && (item.data === null || typeof item.data !== 'object' || Array.isArray(item.data))) {
      throw invalidParam(this.paramOf(index, 'data'), 'must be an object of metric values');
    }
    const data = (item.data ?? {}) as Record<string, unknown>;
    const fresh = checkData(data, thing.metricList, () => this.paramOf(index, 'data'));
    if (thing.is_default && fresh.length > 0) {
      this.discovered ??= new Map();
      const forTemplate = this.discovered.get(thing.thing_template_key) ?? new Map<string, MetricDefinition>();
      for (const metric of fresh) if (!forTemplate.has(metric.name)) forTemplate.set(metric.name, metric);
      this.discovered.set(thing.thing_template_key, forTemplate);
    }
    const timestamp = item.timestamp ?? this.request.defaultTimestamp;
    this.events.push({
      thingId: thing.thing_id,
      timestamp:
        timestamp === undefined || timestamp === null
          ? this.now
          : readTimestamp(timestamp, this.now, this.paramOf(index, 'timestamp')),
      data,
      waypoint,
    });
  }

  /** The writer's batch of the events added, with the things they were checked against. */
  batch(things: Map<string, ResolvedThing>): IngestBatch {
    const { principal, source } = this.request;
    const discovered = this.discovered;
    const organisationKey = principal.organisationKey;
    return {
      events: this.events,
      subject: subjectOf(principal, things),
      source,
      after: discovered && ((tx) => growTemplateMetrics(tx, organisationKey, discovered)),
    };
  }
}

function subjectOf(principal: Principal, things: Map<string, ResolvedThing>) {
  const byId = new Map<number, ResolvedThing>();
  for (const thing of things.values()) byId.set(thing.thing_id, thing);
  return { organisationKey: principal.organisationKey, things: byId };
}
