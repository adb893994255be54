/**
 * Realtime push (docs/realtime.md): subscriptions of connected clients, fed from the change feed once
 * changes commit. Transports (routes.ts: WebSocket and Server-Sent Events) own connections; the hub
 * checks what a subscription asks, keeps it, and turns each committed change into the messages of
 * the subscriptions it matches, in the order the feed tells them.
 *
 * Events go only to subscriptions of their thing: those naming things are found by the thing's key,
 * the others (every thing, a group, a template) are checked one by one. A thing's `alive` flips
 * without any change being written (time passes), so it is watched: every second the things of the
 * organisations with `things` subscriptions are read and compared with what was seen before. What was
 * seen first is read before a `things` subscription is answered, so no flip after the answer is lost.
 */

import { presentAlert } from '../alerts/presenter.ts';
import { findAlert } from '../alerts/service.ts';
import type { ChangeFeed, EntityChange } from '../core/change-feed.ts';
import { ApiError, forbidden, invalidParam, notFound } from '../core/errors.ts';
import { type CommonParamValues, requestTimeFormatter } from '../core/http/route.ts';
import { compileParams } from '../core/http/validation.ts';
import { grants } from '../core/permissions.ts';
import type { Principal } from '../core/principal.ts';
import type { TimeFormatter } from '../core/time.ts';
import { eventDataAt } from '../events/service.ts';
import type { EventNotice } from '../events/writer.ts';
import { findGroup, memberKeysOfGroup } from '../groups/service.ts';
import { presentInstruction } from '../instructions/presenter.ts';
import { findInstructionByKey } from '../instructions/service.ts';
import { pickMetrics } from '../queries/metrics.ts';
import type { Store } from '../store/store.ts';
import type { AlertRow, InstructionRow } from '../store/tables.ts';
import { requireTemplate } from '../templates/service.ts';
import { isAlive } from '../things/presenter.ts';
import {
  findThing,
  requireKnownThings,
  thingKeysOfTemplate,
  thingSnapshot,
  thingsOfOrganisation,
} from '../things/service.ts';
import {
  MAX_SUBSCRIPTIONS,
  message,
  reply,
  SubscribeParams,
  type SubscribeValues,
  type ThingChange,
  type ThingSnapshot,
  TOPIC_SOURCES,
  type Topic,
  thingBody,
} from './messages.ts';
import type { Outbox } from './outbox.ts';

/** How often the things of watched organisations are read to see `alive` flip. */
const PRESENCE_EVERY_MS = 1000;
/** How often every connection's token is checked again (expiry; revocation is also told at once). */
const RECHECK_EVERY_MS = 5000;
/** How long after a change of things or groups the members of group and template filters are read again. */
const MEMBERS_AFTER_MS = 100;

/** A connected client, as the hub sees it: its transport implements the rest. */
export interface Connection {
  readonly outbox: Outbox;
  principal: Principal;
  readonly token: string;
  readonly subscriptions: Map<string, Subscription>;
  /** Ends the connection because its token no longer holds. */
  revoke(): void;
  /** Ends the connection because the server stops (the client connects again, to another instance). */
  shutdown(): void;
  /**
   * A connection of one subscription (an SSE stream) that ends with it: told the subscription's `error`
   * (its role may no longer read the topic), it writes it and ends, rather than stay open with nothing
   * to carry (and hold one of its user's connections).
   */
  ended?(error: string): void;
}

export interface Subscription {
  readonly id: string;
  readonly topic: Topic;
  readonly connection: Connection;
  readonly organisations: ReadonlySet<string>;
  /** Subscribed with `is_oem`: its organisations include the children, while its own is an OEM one. */
  readonly oem: boolean;
  /** Only these things (`thing_keys`). */
  readonly thingKeys: ReadonlySet<string> | undefined;
  /** Only the members of this group, as last read. */
  readonly group: { key: string; organisationKey: string; members: Set<string> } | undefined;
  /** Only the things of this template; `members` as last read, for topics whose messages do not name it. */
  readonly template: { key: string; members: Set<string> } | undefined;
  readonly metrics: readonly string[] | undefined;
  readonly alertTypes: ReadonlySet<number> | undefined;
  readonly time: TimeFormatter;
  /** The same time format and zone give the same text: messages are built once per format. */
  readonly timeKey: string;
  readonly release: () => void;
}

/** The members of a group or template, shared by the subscriptions that watch it. */
interface MemberSet {
  key: string;
  members: Set<string>;
  read: () => Promise<string[]>;
  /** The organisations whose changes of things or groups may change it. */
  organisations: string[];
  /** Subscriptions holding it. */
  users: number;
}

export interface HubServices {
  authenticate(token: string): Promise<Principal | undefined>;
  childOrganisations(organisationKey: string): Promise<string[]>;
}

const validateSubscribe = compileParams(SubscribeParams);
const RESOLVED: Promise<void> = Promise.resolve();

export class RealtimeHub {
  /** Subscriptions naming things, by topic, then by `organisation\0thing`. */
  private readonly named = new Map<Topic, Map<string, Set<Subscription>>>();
  /** The others, by topic, then by organisation. */
  private readonly broad = new Map<Topic, Map<string, Set<Subscription>>>();
  private readonly connections = new Set<Connection>();
  private readonly stopFollowing: (() => void)[] = [];
  /** Changes whose messages need a read of the store first, in the order told. */
  private reading: Promise<void> = RESOLVED;
  /** `alive` of each thing of the watched organisations, as last seen. */
  private readonly presence = new Map<string, Map<string, boolean>>();
  private readonly timers: NodeJS.Timeout[] = [];
  private recheckSoon: NodeJS.Timeout | undefined;
  private rechecking = false;
  private recheckAgain = false;
  private membersSoon: NodeJS.Timeout | undefined;
  /** Organisations whose members are to be read before their next changes are told (readMembersFirst). */
  private readonly membersFirstOf = new Set<string>();
  private membersFirstWaiting = false;
  /**
   * The members of each group and template some subscription watches, one set for all the
   * subscriptions that watch it (however many connections ask for the same template), read once at
   * each change of things or groups.
   */
  private readonly memberSets = new Map<string, MemberSet>();
  private readonly memberSetOf = new WeakMap<Set<string>, MemberSet>();
  private readonly membersStale = new Set<string>();
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly services: HubServices,
  ) {
    const feed: ChangeFeed = store.changes;
    this.stopFollowing.push(
      feed.follow(['Event'], (change) => this.onEvents(change)),
      feed.follow(['Thing'], (change) => {
        // A thing created or changed may join a group (a dynamic one by its expression): its members are
        // read before this change and the next are told, in the feed's order, so that the group's
        // subscribers get a new member's `created` and its first events. A thing deleted is told to
        // those it was a member for, and leaves after.
        if (change.action !== 'delete') this.readMembersFirst(change.organisationKey);
        this.onThing(change);
        this.membersChanged(change.organisationKey);
      }),
      feed.follow(['Group'], (change) => this.membersChanged(change.organisationKey)),
      feed.follow(['Alert'], (change) => this.onAlert(change)),
      feed.follow(['Instruction'], (change) => this.onInstruction(change)),
      feed.follow(['User', 'Role', 'Organisation', 'ApiKey'], () => this.recheckAll(50)),
    );
    this.timers.push(
      setInterval(() => void this.watchPresence(), PRESENCE_EVERY_MS).unref(),
      setInterval(() => this.recheckAll(0), RECHECK_EVERY_MS).unref(),
    );
  }

  /** Subscriptions held now, over every connection. */
  get subscriptionCount(): number {
    let count = 0;
    for (const connection of this.connections) count += connection.subscriptions.size;
    return count;
  }

  connect(connection: Connection): void {
    this.connections.add(connection);
  }

  disconnect(connection: Connection): void {
    this.connections.delete(connection);
    for (const subscription of connection.subscriptions.values()) this.remove(subscription);
    connection.subscriptions.clear();
  }

  /**
   * Checks a subscription's parameters, permission and filters and makes it; throws ApiError (400
   * invalid, 403 forbidden, 404 not_found) otherwise. `announce` runs once it is checked, before any
   * of its messages can be sent (the WebSocket's `subscribed`).
   */
  async subscribe(
    connection: Connection,
    id: string,
    raw: Record<string, unknown>,
    announce: () => void = () => {},
  ): Promise<Subscription> {
    if (connection.subscriptions.has(id)) throw invalidParam('id', `is already the id of a subscription (${id})`);
    if (connection.subscriptions.size >= MAX_SUBSCRIPTIONS) {
      throw invalidParam('id', `is one subscription too many: a connection holds at most ${MAX_SUBSCRIPTIONS}`);
    }
    const params = validateSubscribe(raw) as unknown as SubscribeValues;
    const { topic } = params;
    if (params.metrics !== undefined && topic !== 'events') throw invalidParam('metrics', 'applies to events only');
    if (params.alert_type !== undefined && topic !== 'alerts')
      throw invalidParam('alert_type', 'applies to alerts only');
    const principal = connection.principal;
    const source = TOPIC_SOURCES[topic];
    if (!grants(principal.abilities, source.permission, 'read')) {
      throw forbidden(`your role lacks the permission to read ${source.permission}`);
    }
    const time = requestTimeFormatter(params as CommonParamValues, principal);
    let organisations = [principal.organisationKey];
    if (params.is_oem) {
      if (!principal.organisationIsOem) throw forbidden('is_oem is only for OEM organisations');
      organisations = [...organisations, ...(await this.services.childOrganisations(principal.organisationKey))];
    }
    const db = this.store.db;
    let thingKeys: Set<string> | undefined;
    // An empty list names no thing: every thing, as for a rule's thing_keys (docs/realtime.md).
    if (params.thing_keys !== undefined && params.thing_keys.length > 0) {
      try {
        thingKeys = new Set(await requireKnownThings(db, organisations, params.thing_keys, 'thing_keys'));
      } catch (error) {
        // A thing of another organisation is as unknown as one that does not exist.
        if (error instanceof ApiError && error.errors[0]?.code === 'not_found') {
          throw new ApiError(
            404,
            error.errors.map((e) => ({ ...e })),
          );
        }
        throw error;
      }
    }
    let group: Subscription['group'];
    let template: Subscription['template'];
    let presence: Map<string, Map<string, boolean>> | undefined;
    try {
      if (params.group_key !== undefined) {
        const row = await findGroup(db, organisations, params.group_key);
        if (!row) throw notFound('group', 'group_key');
        const readMembers = async () => {
          const current = await findGroup(db, [row.organisation_key], row.group_key);
          return current ? memberKeysOfGroup(db, current) : [];
        };
        group = {
          key: row.group_key,
          organisationKey: row.organisation_key,
          members: await this.members(`group\u0000${row.organisation_key}\u0000${row.group_key}`, readMembers, [
            row.organisation_key,
          ]),
        };
      }
      if (params.thing_template_key !== undefined) {
        const row = await requireTemplate(db, organisations, params.thing_template_key);
        template = {
          key: row.thing_template_key,
          members: await this.members(
            `template\u0000${[...organisations].sort().join(',')}\u0000${row.thing_template_key}`,
            () => thingKeysOfTemplate(db, organisations, row.thing_template_key),
            organisations,
          ),
        };
      }
      // Read last, with no wait between it and the subscription's start: each organisation watched has
      // then either a look at its things taken before the answer, or one just read here.
      presence = topic === 'things' ? await this.unwatchedPresence(organisations) : undefined;
      // Checked again: the same id may have been subscribed, or the connection gone, during the reads.
      if (connection.subscriptions.has(id)) throw invalidParam('id', `is already the id of a subscription (${id})`);
      if (!this.connections.has(connection)) throw new ApiError(400, [{ code: 'invalid', message: 'disconnected' }]);
    } catch (error) {
      for (const members of [group?.members, template?.members]) if (members) this.releaseMembers(members);
      throw error;
    }
    const subscription: Subscription = {
      id,
      topic,
      connection,
      organisations: new Set(organisations),
      oem: params.is_oem === true,
      thingKeys,
      group,
      template,
      metrics: params.metrics,
      alertTypes: params.alert_type ? new Set(params.alert_type) : undefined,
      time,
      timeKey: `${time.format}|${time.zone}`,
      release: this.store.changes.want([source.entityType]),
    };
    announce();
    connection.subscriptions.set(id, subscription);
    this.add(subscription, presence);
    return subscription;
  }

  /**
   * `alive` of each thing of the organisations not watched yet, read now. Without it the first look
   * after a subscription could only note what it saw, and a flip before that look would never be told.
   * Read until none is missing: an organisation watched when asked may have stopped being watched
   * during the reads.
   */
  private async unwatchedPresence(organisations: readonly string[]): Promise<Map<string, Map<string, boolean>>> {
    const read = new Map<string, Map<string, boolean>>();
    for (;;) {
      const missing = organisations.filter((o) => !this.presence.has(o) && !read.has(o));
      if (missing.length === 0) return read;
      for (const organisation of missing) {
        const rows = await thingsOfOrganisation(this.store.db, organisation);
        const now = Date.now();
        read.set(organisation, new Map(rows.map((row) => [row.thing_key, isAlive(row, now)])));
      }
    }
  }

  unsubscribe(connection: Connection, id: string): boolean {
    const subscription = connection.subscriptions.get(id);
    if (!subscription) return false;
    connection.subscriptions.delete(id);
    this.remove(subscription);
    return true;
  }

  /** Indexes a subscription; `presence`: what its organisations not watched yet look like (see unwatchedPresence). */
  private add(subscription: Subscription, presence?: ReadonlyMap<string, Map<string, boolean>>): void {
    const index = subscription.thingKeys ? this.named : this.broad;
    let byTopic = index.get(subscription.topic);
    if (!byTopic) {
      byTopic = new Map();
      index.set(subscription.topic, byTopic);
    }
    for (const key of this.indexKeys(subscription)) {
      let set = byTopic.get(key);
      if (!set) {
        set = new Set();
        byTopic.set(key, set);
      }
      set.add(subscription);
    }
    if (subscription.topic === 'things') {
      for (const organisation of subscription.organisations) {
        // An organisation watched already keeps what it was last seen as: that look came before this answer too.
        if (!this.presence.has(organisation)) this.presence.set(organisation, presence?.get(organisation) ?? new Map());
      }
    }
  }

  private remove(subscription: Subscription): void {
    subscription.release();
    for (const members of [subscription.group?.members, subscription.template?.members]) {
      if (members) this.releaseMembers(members);
    }
    const byTopic = (subscription.thingKeys ? this.named : this.broad).get(subscription.topic);
    for (const key of this.indexKeys(subscription)) {
      const set = byTopic?.get(key);
      set?.delete(subscription);
      if (set?.size === 0) byTopic?.delete(key);
    }
    if (byTopic?.size === 0) (subscription.thingKeys ? this.named : this.broad).delete(subscription.topic);
    if (subscription.topic === 'things') {
      for (const organisation of subscription.organisations) {
        if (!this.thingsWatchedIn(organisation)) this.presence.delete(organisation);
      }
    }
  }

  private indexKeys(subscription: Subscription): string[] {
    const organisations = [...subscription.organisations];
    if (!subscription.thingKeys) return organisations;
    const keys: string[] = [];
    for (const organisation of organisations) {
      for (const thing of subscription.thingKeys) keys.push(`${organisation}\u0000${thing}`);
    }
    return keys;
  }

  private thingsWatchedIn(organisation: string): boolean {
    if (this.broad.get('things')?.has(organisation)) return true;
    const named = this.named.get('things');
    if (!named) return false;
    for (const key of named.keys()) if (key.startsWith(`${organisation}\u0000`)) return true;
    return false;
  }

  /** Whether any subscription of the topic is held. */
  private watched(topic: Topic): boolean {
    return this.named.has(topic) || this.broad.has(topic);
  }

  /** The subscriptions of a topic that a change of a thing of an organisation concerns. */
  private targets(topic: Topic, organisation: string, thingKey: string, templateKey?: string): Subscription[] {
    const found: Subscription[] = [];
    const named = this.named.get(topic)?.get(`${organisation}\u0000${thingKey}`);
    if (named) for (const s of named) if (matches(s, organisation, thingKey, templateKey)) found.push(s);
    const broad = this.broad.get(topic)?.get(organisation);
    if (broad) for (const s of broad) if (matches(s, organisation, thingKey, templateKey)) found.push(s);
    return found;
  }

  private onEvents(change: EntityChange): void {
    const organisation = change.organisationKey;
    if (organisation === null || !Array.isArray(change.detail)) return;
    if (!this.watched('events')) return;
    const events = change.detail as (EventNotice & { partial?: boolean })[];
    if (events.some((e) => e.partial)) {
      // Another instance's event too large to be told whole: read from the store, in order.
      this.afterReads(async () => {
        for (const e of events) {
          if (!e.partial) continue;
          const data = await eventDataAt(this.store.db, organisation, e.thing_key, e.timestamp, Date.now());
          if (data === undefined) continue;
          e.data = JSON.parse(data) as Record<string, unknown>;
          e.partial = false;
        }
        this.sendEvents(
          organisation,
          events.filter((e) => !e.partial),
        );
      });
      return;
    }
    if (this.reading !== RESOLVED) {
      this.afterReads(() => this.sendEvents(organisation, events));
      return;
    }
    this.sendEvents(organisation, events);
  }

  private sendEvents(organisation: string, events: readonly EventNotice[]): void {
    for (const event of events) {
      const subscriptions = this.targets('events', organisation, event.thing_key, event.thing_template_key);
      fanOut(
        'event',
        subscriptions.filter((s) => !s.metrics),
        (time) => eventBody(event, event.data, time),
      );
      for (const s of subscriptions) {
        if (!s.metrics) continue;
        const data = metricsOf(event.data, s.metrics);
        if (data) deliver(s, 'event', eventBody(event, data, s.time));
      }
    }
  }

  private onThing(change: EntityChange): void {
    const organisation = change.organisationKey;
    const key = change.entityKey;
    if (organisation === null || key === null) return;
    if (change.action === 'delete') this.presence.get(organisation)?.delete(key);
    if (!this.watched('things')) return;
    const changeName: ThingChange =
      change.action === 'create' ? 'created' : change.action === 'delete' ? 'deleted' : 'updated';
    this.sendOrRead(
      isRow(change.detail, 'thing_key') ? (change.detail as unknown as ThingSnapshot) : undefined,
      (thing) => this.sendThing(organisation, thing, changeName),
      async () => {
        const row = change.action === 'delete' ? undefined : await findThing(this.store.db, [organisation], key);
        return row
          ? thingSnapshot(row)
          : { thing_key: key, thing_template_key: '', alive: false, last_event: null, last_beat: null };
      },
    );
  }

  private sendThing(organisation: string, thing: ThingSnapshot, change: ThingChange): void {
    const templateKey = thing.thing_template_key === '' ? undefined : thing.thing_template_key;
    // A new thing is seen as it was created. An update leaves `alive` as the watch last told it: an
    // update showing a flip the watch has not told yet is followed by its `alive` message.
    if (change === 'created' || change === 'alive') this.presence.get(organisation)?.set(thing.thing_key, thing.alive);
    fanOut('thing', this.targets('things', organisation, thing.thing_key, templateKey), (time) =>
      thingBody(thing, change, time),
    );
  }

  private onAlert(change: EntityChange): void {
    const organisation = change.organisationKey;
    const key = change.entityKey;
    if (organisation === null || key === null || !this.watched('alerts')) return;
    const changeName = change.action === 'create' ? 'created' : 'updated';
    this.sendOrRead(
      isRow(change.detail, 'alert_key') ? (change.detail as unknown as AlertRow) : undefined,
      (row) => {
        const subscriptions = this.targets('alerts', organisation, row.thing_key ?? '').filter(
          (s) => !s.alertTypes || s.alertTypes.has(row.alert_type),
        );
        fanOut('alert', subscriptions, (time) =>
          JSON.stringify({ change: changeName, alert: presentAlert(row, time) }).slice(1),
        );
      },
      () => findAlert(this.store.db, [organisation], key),
    );
  }

  private onInstruction(change: EntityChange): void {
    const organisation = change.organisationKey;
    const key = change.entityKey;
    if (organisation === null || key === null || !this.watched('instructions')) return;
    this.sendOrRead(
      // A row (instructions/service.ts), not the snapshot an audit trail keeps (its definition parsed).
      isRow(change.detail, 'instruction_key') && typeof change.detail.definition === 'string'
        ? (change.detail as unknown as InstructionRow)
        : undefined,
      (row) =>
        fanOut('instruction', this.targets('instructions', organisation, row.thing_key), (time) =>
          JSON.stringify({ instruction: presentInstruction(row, time) }).slice(1),
        ),
      () => findInstructionByKey(this.store.db, organisation, key),
    );
  }

  /**
   * Sends what a change told (`detail`) in the feed's order, or, told without it (another instance's
   * change, too large for a notice), what `read` finds in the store.
   */
  private sendOrRead<T>(detail: T | undefined, send: (value: T) => void, read: () => Promise<T | undefined>): void {
    if (detail !== undefined) {
      this.inOrder(() => send(detail));
      return;
    }
    this.afterReads(async () => {
      const value = await read();
      if (value !== undefined) send(value);
    });
  }

  /** Runs `send` now, or after the reads under way when there are some, so messages keep the feed's order. */
  private inOrder(send: () => void): void {
    if (this.reading === RESOLVED) send();
    else this.afterReads(send);
  }

  /** Runs `work` after every read before it; a failed read is reported and the next goes on. */
  private afterReads(work: () => void | Promise<void>): void {
    const next = this.reading.then(work).catch((error: unknown) => {
      if (!this.closed) process.emitWarning(`realtime push could not read a change: ${(error as Error).message}`);
    });
    this.reading = next;
    void next.then(() => {
      if (this.reading === next) this.reading = RESOLVED;
    });
  }

  /** Reads the watched organisations' things and tells the flips of `alive` since the last look. */
  private async watchPresence(): Promise<void> {
    if (this.presence.size === 0 || this.closed) return;
    for (const [organisation, known] of [...this.presence]) {
      let rows: Awaited<ReturnType<typeof thingsOfOrganisation>>;
      try {
        rows = await thingsOfOrganisation(this.store.db, organisation);
      } catch {
        return;
      }
      if (this.presence.get(organisation) !== known) continue;
      const now = Date.now();
      for (const row of rows) {
        const alive = isAlive(row, now);
        const before = known.get(row.thing_key);
        known.set(row.thing_key, alive);
        if (before === undefined || before === alive) continue;
        const thing = thingSnapshot(row, now);
        this.inOrder(() => this.sendThing(organisation, thing, 'alive'));
      }
    }
  }

  /** Group and template members of an organisation may have changed: read them again shortly. */
  private membersChanged(organisation: string | null): void {
    this.membersStale.add(organisation ?? '');
    if (this.membersSoon) return;
    this.membersSoon = setTimeout(() => {
      this.membersSoon = undefined;
      void this.refreshMembers();
    }, MEMBERS_AFTER_MS);
    this.membersSoon.unref();
  }

  /**
   * Reads the member sets an organisation's changes may change, before the changes that come next are
   * told. One read waits at a time: it runs after every change before it has committed, so the changes
   * of things that come while it waits (an import's rows) are all in it.
   */
  private readMembersFirst(organisation: string | null): void {
    if (organisation === null) return;
    if (![...this.memberSets.values()].some((set) => set.organisations.includes(organisation))) return;
    this.membersFirstOf.add(organisation);
    if (this.membersFirstWaiting) return;
    this.membersFirstWaiting = true;
    this.afterReads(async () => {
      this.membersFirstWaiting = false;
      const organisations = new Set(this.membersFirstOf);
      this.membersFirstOf.clear();
      await this.readMemberSets(organisations);
    });
  }

  private async refreshMembers(): Promise<void> {
    const stale = new Set(this.membersStale);
    this.membersStale.clear();
    await this.readMemberSets(stale);
  }

  /**
   * Reads again the member sets of these organisations (`''` among them: every set). A set that cannot
   * be read keeps its members and is read again at the next change.
   */
  private async readMemberSets(organisations: ReadonlySet<string>): Promise<void> {
    const everywhere = organisations.has('');
    for (const set of [...this.memberSets.values()]) {
      if (!everywhere && !set.organisations.some((o) => organisations.has(o))) continue;
      try {
        replaceAll(set.members, await set.read());
      } catch {
        // Read again at the next change.
      }
    }
  }

  /** The shared members under `key`, read with `read` when no subscription watches them yet. */
  private async members(key: string, read: () => Promise<string[]>, organisations: readonly string[]) {
    const known = this.memberSets.get(key);
    if (known) {
      known.users++;
      return known.members;
    }
    const members = new Set(await read());
    // Another subscription may have read the same meanwhile: one set for both.
    const raced = this.memberSets.get(key);
    if (raced) {
      raced.users++;
      return raced.members;
    }
    const set: MemberSet = { key, members, read, organisations: [...organisations], users: 1 };
    this.memberSets.set(key, set);
    this.memberSetOf.set(members, set);
    return members;
  }

  private releaseMembers(members: Set<string>): void {
    const set = this.memberSetOf.get(members);
    if (set && --set.users === 0) this.memberSets.delete(set.key);
  }

  /**
   * Checks every connection's token again after `delayMs`: revoked or expired ones are closed. Each
   * token is read once, however many connections share it, and one token at a time: a pass over
   * thousands of connections must not queue thousands of reads ahead of the event writer's.
   */
  private recheckAll(delayMs: number): void {
    if (this.rechecking) {
      // A change during a pass may concern a token the pass has read already: another pass follows.
      this.recheckAgain = true;
      return;
    }
    if (this.recheckSoon || this.connections.size === 0) return;
    this.recheckSoon = setTimeout(() => {
      this.recheckSoon = undefined;
      this.rechecking = true;
      void this.recheckTokens().finally(() => {
        this.rechecking = false;
        if (!this.recheckAgain) return;
        this.recheckAgain = false;
        this.recheckAll(0);
      });
    }, delayMs);
    this.recheckSoon.unref();
  }

  private async recheckTokens(): Promise<void> {
    const byToken = new Map<string, Connection[]>();
    for (const connection of this.connections) {
      const sharing = byToken.get(connection.token);
      if (sharing) sharing.push(connection);
      else byToken.set(connection.token, [connection]);
    }
    for (const [token, connections] of byToken) {
      if (this.closed) return;
      let principal: Principal | undefined;
      try {
        principal = await this.services.authenticate(token);
      } catch {
        continue;
      }
      for (const connection of connections) this.recheck(connection, principal);
    }
  }

  private recheck(connection: Connection, principal: Principal | undefined): void {
    if (!this.connections.has(connection)) return;
    if (!principal) {
      this.disconnect(connection);
      connection.revoke();
      return;
    }
    connection.principal = principal;
    // A role that lost a permission ends the subscriptions that needed it, and an organisation that is
    // no longer an OEM one ends those that watch its children.
    for (const s of [...connection.subscriptions.values()]) {
      const needed = TOPIC_SOURCES[s.topic].permission;
      const refusal = !grants(principal.abilities, needed, 'read')
        ? `your role lacks the permission to read ${needed}`
        : s.oem && !principal.organisationIsOem
          ? 'is_oem is only for OEM organisations'
          : undefined;
      if (refusal === undefined) continue;
      this.unsubscribe(connection, s.id);
      const text = reply('error', s.id, { code: 'forbidden', message: refusal });
      if (connection.ended) connection.ended(text);
      else connection.outbox.push({ id: s.id, type: 'error', text, reply: true });
    }
  }

  close(): void {
    this.closed = true;
    for (const stop of this.stopFollowing) stop();
    for (const timer of this.timers) clearInterval(timer);
    if (this.recheckSoon) clearTimeout(this.recheckSoon);
    if (this.membersSoon) clearTimeout(this.membersSoon);
    for (const connection of [...this.connections]) {
      connection.shutdown();
      this.disconnect(connection);
    }
  }
}

function matches(s: Subscription, organisation: string, thingKey: string, templateKey: string | undefined): boolean {
  if (!s.organisations.has(organisation)) return false;
  if (s.thingKeys && !s.thingKeys.has(thingKey)) return false;
  if (s.group && (s.group.organisationKey !== organisation || !s.group.members.has(thingKey))) return false;
  if (s.template) {
    if (templateKey !== undefined) return templateKey === s.template.key;
    return s.template.members.has(thingKey);
  }
  return true;
}

/** Sends a message of `type` to each subscription, its members made once per time format and zone. */
function fanOut(type: string, subscriptions: readonly Subscription[], bodyOf: (time: TimeFormatter) => string): void {
  const bodies = new Map<string, string>();
  for (const s of subscriptions) {
    let body = bodies.get(s.timeKey);
    if (body === undefined) {
      body = bodyOf(s.time);
      bodies.set(s.timeKey, body);
    }
    deliver(s, type, body);
  }
}

function deliver(s: Subscription, type: string, body: string): void {
  s.connection.outbox.push({ id: s.id, type, text: message(type, s.id, body) });
}

/**
 * The event's data of these metrics only, read as queries read them (a dotted name is a path into
 * nested data, and the nesting is kept); undefined when it has none of them.
 */
function metricsOf(data: Record<string, unknown>, metrics: readonly string[]): Record<string, unknown> | undefined {
  const picked = pickMetrics(data, metrics);
  return Object.keys(picked).length > 0 ? picked : undefined;
}

function eventBody(event: EventNotice, data: Record<string, unknown>, time: TimeFormatter): string {
  return `"thing_key":${JSON.stringify(event.thing_key)},"timestamp":${JSON.stringify(time(event.timestamp))},"data":${JSON.stringify(data)}}`;
}

function isRow<K extends string>(detail: unknown, key: K): detail is Record<K, unknown> & Record<string, unknown> {
  return typeof detail === 'object' && detail !== null && key in detail;
}

function replaceAll(set: Set<string>, keys: readonly string[]): void {
  set.clear();
  for (const key of keys) set.add(key);
}
