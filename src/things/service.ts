/**
 * Things (docs/api.md, "Things"): the devices and machines of an organisation, each of a template.
 */
import { type Actor, type Change, recordChange, recordChanges } from '../audit/recorder.ts';
import { ApiError, conflict, notFound, unknownReference } from '../core/errors.ts';
import { newKey } from '../core/keys.ts';
import type { ListQuery } from '../core/list-query.ts';
import { normaliseTags } from '../core/tags.ts';
import { STORED_TIME } from '../core/time.ts';
import { uniqueOr } from '../store/dialect.ts';
import type { Executor, Store, Tx } from '../store/store.ts';
import { findTemplate } from '../templates/service.ts';
import { presentThing } from './presenter.ts';
import type { ThingColumns, ThingTouch, ThingWithTemplate } from './repository.ts';
import * as things from './repository.ts';

export type { ThingColumns, ThingFilter, ThingWithTemplate } from './repository.ts';

/**
 * The columns lists of things are sorted, searched and paged by: groups/membership.ts pages the things
 * of a dynamic group the same way.
 */
export const THING_PAGING = things.THING_PAGING;

type PropertyValue = string | number | boolean | null;

export type { ThingTouch };

/**
 * What the events a transaction stores do to their things: newest event, heard-from time, event
 * count and arrival lag bounds (the event writer, in its transaction; not audited).
 */
export function recordLastEvents(tx: Tx, touched: Map<number, ThingTouch>, now: number) {
  return things.updateLastEvents(tx, touched, now);
}

/** Events of a thing deleted in this transaction (retention, a range delete): it counts as many fewer. */
export async function recordEventsRemoved(tx: Tx, thingId: number, count: number): Promise<void> {
  await things.uncountEvents.execute(tx, thingId, count);
}

/** Events of many things deleted in this transaction (retention's drop of a partition): each counts as many fewer. */
export async function recordEventsRemovedOfThings(tx: Tx, removed: Map<number, number>): Promise<void> {
  if (removed.size === 0) return;
  await things.uncountEventsOfThings.run(tx, [[...removed.keys()], [...removed.values()]]);
}

/** A thing's newest event after some were deleted (a range delete, retention), or null when none is left. */
export async function recordNewestEvent(tx: Tx, thingId: number, newest: { timestamp: number; data: string } | null) {
  await things.setLastEvent(tx, thingId, newest);
}

/** Whether a thing's newest event is older than `before` (ms), so retention deleted it (the sweeper). */
export function lastEventBefore(tx: Tx, thingId: number, before: number): Promise<boolean> {
  return things.lastEventBefore(tx, thingId, before);
}

/** A heartbeat of a thing: heard from at `at` (the event writer, in its transaction). */
export async function recordHeartbeat(tx: Tx, thingId: number, at: number): Promise<void> {
  await things.heartbeat.execute(tx, thingId, at);
}

export interface ThingInput {
  thing_key?: string | undefined;
  name: string;
  thing_template_key: string;
  description?: string | undefined;
  tags?: string[] | string | undefined;
  coordinates?: (number | string)[] | null | undefined;
  bi_directional?: boolean | undefined;
  user_defined_properties?: Record<string, PropertyValue> | undefined;
}

export type ThingChanges = Partial<Omit<ThingInput, 'thing_key'>>;

/** Snapshot of a thing as audit trails (and alerts) keep it. */
export const thingSnapshot = (row: ThingWithTemplate, now = Date.now()) => presentThing(row, STORED_TIME, now);

/** Merges property changes into a map of text values; null removes a property. */
export function mergeProperties(current: Record<string, string>, changes: Record<string, PropertyValue>) {
  const merged = { ...current };
  for (const [name, value] of Object.entries(changes)) {
    if (value === null) delete merged[name];
    else merged[name] = String(value);
  }
  return merged;
}

async function templateOf(db: Executor, organisationKey: string, key: string, param: string) {
  const template = await findTemplate(db, [organisationKey], key);
  if (!template) throw unknownReference(param, key);
  return template;
}

/** Checks that every key names a thing of the organisations: a 400 `not_found` naming `param` otherwise. */
export async function requireKnownThings(
  db: Executor,
  organisationKeys: string[],
  thingKeys: string[],
  param: string,
  /** Hold the things until the transaction ends (things/repository.ts, existingThingKeys). */
  hold = false,
): Promise<string[]> {
  const wanted = [...new Set(thingKeys)];
  const found = await things.existingThingKeys(db, organisationKeys, wanted, hold);
  const missing = wanted.filter((k) => !found.has(k));
  if (missing.length > 0) {
    throw new ApiError(400, [
      { code: 'not_found', param, message: `names no known thing: ${missing.slice(0, 20).join(', ')}` },
    ]);
  }
  return wanted;
}

export function listThings(db: Executor, filter: things.ThingFilter, list: ListQuery) {
  return things.listThings(db, filter, list);
}

/** Every thing of an organisation (realtime push watches whether each is alive). */
export function thingsOfOrganisation(db: Executor, organisationKey: string) {
  return things.thingsOfOrganisation(db, organisationKey);
}

/** An organisation's things and how many are alive (online) at `now`. */
export function countAlive(db: Executor, organisationKey: string, now: number) {
  return things.countAlive(db, organisationKey, now);
}

/** The keys of the things of a template, in these organisations. */
export function thingKeysOfTemplate(db: Executor, organisationKeys: string[], templateKey: string) {
  return things.thingKeysOfTemplate(db, organisationKeys, templateKey);
}

/** How many things each of these templates has, in every organisation (those the caller cannot read included). */
export function thingCountsOfTemplates(db: Executor, templateKeys: string[]) {
  return things.thingCountsOfTemplates(db, templateKeys);
}

/** A thing of these organisations, or undefined. */
export function findThing(db: Executor, organisationKeys: string[], thingKey: string) {
  return things.findThing(db, organisationKeys, thingKey);
}

/** Those of these things of one organisation that exist (for the rule engine, which reads them in chunks). */
export function findThingsOfOrganisation(db: Executor, organisationKey: string, thingKeys: readonly string[]) {
  return things.findThingsOfOrganisation(db, organisationKey, thingKeys);
}

/** Audits a change to a thing made in this transaction (`before` as it was read first); answers it as it is now. */
export async function recordThingUpdated(
  tx: Tx,
  actor: Actor,
  organisationKeys: string[],
  before: Awaited<ReturnType<typeof requireThing>>,
  /** Members the audit trail adds to the thing's new contents (what a change did beyond the thing); the change feed tells the thing alone. */
  note?: object,
) {
  const after = await requireThing(tx, organisationKeys, before.thing_key);
  const thing = thingSnapshot(after);
  await recordChange(tx, actor, {
    organisationKey: before.organisation_key,
    action: 'update',
    entityType: 'Thing',
    entityKey: before.thing_key,
    entityName: after.name,
    before: thingSnapshot(before),
    after: note ? { ...thing, ...note } : thing,
    detail: thing,
  });
  return after;
}

export async function requireThing(db: Executor, organisationKeys: string[], thingKey: string) {
  const row = await things.findThing(db, organisationKeys, thingKey);
  if (!row) throw notFound('thing', 'thing_key');
  return row;
}

/** A key already taken (keys are unique across organisations); `param` names where it was given. */
export const keyTaken = (key: string, param: string) => conflict(param, `a thing with the key ${key} already exists`);

/** The columns of a new thing of an organisation (its template already checked). */
export function newThingColumns(organisationKey: string, input: ThingInput, now: number): ThingColumns {
  return {
    thing_key: input.thing_key ?? newKey(),
    organisation_key: organisationKey,
    thing_template_key: input.thing_template_key,
    name: input.name,
    description: input.description ?? '',
    tags: JSON.stringify(normaliseTags(input.tags)),
    coordinates: input.coordinates ? JSON.stringify(input.coordinates) : null,
    bi_directional: input.bi_directional ? 1 : 0,
    user_defined_properties: JSON.stringify(mergeProperties({}, input.user_defined_properties ?? {})),
    last_event_at: null,
    last_event: null,
    last_event_timestamp: null,
    last_beat_at: null,
    created_at: now,
    updated_at: now,
  };
}

/**
 * The columns an update writes (its template already checked); user_defined_properties replace the
 * map, or merge into it with `mergeProperties`.
 */
export function changedThingColumns(
  before: ThingWithTemplate,
  changes: ThingChanges,
  options: { mergeProperties?: boolean | undefined },
  now: number,
): Partial<ThingColumns> {
  const columns: Partial<ThingColumns> = { updated_at: now };
  if (changes.name !== undefined) columns.name = changes.name;
  if (changes.description !== undefined) columns.description = changes.description;
  if (changes.tags !== undefined) columns.tags = JSON.stringify(normaliseTags(changes.tags));
  if (changes.coordinates !== undefined)
    columns.coordinates = changes.coordinates ? JSON.stringify(changes.coordinates) : null;
  if (changes.bi_directional !== undefined) columns.bi_directional = changes.bi_directional ? 1 : 0;
  if (changes.thing_template_key !== undefined) columns.thing_template_key = changes.thing_template_key;
  if (changes.user_defined_properties !== undefined) {
    const base = options.mergeProperties ? (JSON.parse(before.user_defined_properties) as Record<string, string>) : {};
    columns.user_defined_properties = JSON.stringify(mergeProperties(base, changes.user_defined_properties));
  }
  return columns;
}

/**
 * What another capability does, in the same transaction, when things are created (the rules' no_data
 * watches register theirs: rules/silences.ts, which needs this module to read things).
 */
export type ThingsCreation = (db: Executor, organisationKey: string, thingKeys: string[], now: number) => Promise<void>;

const creations: ThingsCreation[] = [];

export function onThingsCreated(creation: ThingsCreation): void {
  if (!creations.includes(creation)) creations.push(creation);
}

/** Tells those registered that things were created (inside the creating transaction). */
export async function thingsCreated(db: Executor, organisationKey: string, thingKeys: string[], now: number) {
  for (const creation of creations) await creation(db, organisationKey, thingKeys, now);
}

/**
 * What another capability does, in the same transaction, when things are changed (their template or
 * fields: the rules' no_data watches follow their scope, rules/silences.ts).
 */
const changings: ThingsCreation[] = [];

export function onThingsChanged(changing: ThingsCreation): void {
  if (!changings.includes(changing)) changings.push(changing);
}

/** Tells those registered that things were changed (inside the changing transaction). */
export async function thingsChanged(db: Executor, organisationKey: string, thingKeys: string[], now: number) {
  for (const changing of changings) await changing(db, organisationKey, thingKeys, now);
}

export async function createThing(store: Store, actor: Actor, organisationKey: string, input: ThingInput) {
  // Its key chosen here when the client gave none, so that a refusal names the key it was.
  const keyed = { ...input, thing_key: input.thing_key ?? newKey() };
  const [created] = await uniqueOr(
    () => createThings(store, organisationKey, [{ actor, input: keyed }]),
    () => keyTaken(keyed.thing_key, 'thing.thing_key'),
  );
  return created as ThingWithTemplate;
}

/**
 * Creates things of one organisation, each with its actor's audit record, in one transaction (the
 * registers of new things that arrive together, devices/new-things.ts). A key already taken fails the
 * whole transaction with the store's unique violation, and nothing of it is made.
 */
export async function createThings(
  store: Store,
  organisationKey: string,
  items: readonly { actor: Actor; input: ThingInput }[],
): Promise<ThingWithTemplate[]> {
  const now = Date.now();
  const rows = items.map(({ input }) => newThingColumns(organisationKey, input, now));
  return store.transaction(async (tx) => {
    for (const template of new Set(items.map(({ input }) => input.thing_template_key))) {
      await templateOf(tx, organisationKey, template, 'thing.thing_template_key');
    }
    const keys = rows.map((row) => row.thing_key);
    await things.insertThings(tx, rows);
    await thingsCreated(tx, organisationKey, keys, now);
    const made = new Map((await things.thingsWithKeys(tx, keys)).map((thing) => [thing.thing_key, thing]));
    const created = keys.map((key) => made.get(key) as ThingWithTemplate);
    const changes: Change[] = created.map((thing, i) => ({
      actor: items[i]?.actor,
      organisationKey,
      action: 'create',
      entityType: 'Thing',
      entityKey: thing.thing_key,
      entityName: thing.name,
      after: thingSnapshot(thing),
    }));
    // Each change names its own actor: the registers of several key pairs may share the transaction.
    if (items[0]) await recordChanges(tx, items[0].actor, changes);
    return created;
  });
}

export async function updateThing(
  store: Store,
  actor: Actor,
  organisationKeys: string[],
  thingKey: string,
  changes: ThingChanges,
  options: { mergeProperties?: boolean } = {},
) {
  return store.transaction(async (tx) => {
    const before = await requireThing(tx, organisationKeys, thingKey);
    if (changes.thing_template_key !== undefined) {
      await templateOf(tx, before.organisation_key, changes.thing_template_key, 'thing.thing_template_key');
    }
    const now = Date.now();
    const columns = changedThingColumns(before, changes, options, now);
    await things.updateThing(tx, thingKey, columns);
    await thingsChanged(tx, before.organisation_key, [thingKey], now);
    return recordThingUpdated(tx, actor, organisationKeys, before);
  });
}

export async function deleteThing(store: Store, actor: Actor, organisationKeys: string[], thingKey: string) {
  await store.transaction(async (tx) => {
    const before = await requireThing(tx, organisationKeys, thingKey);
    // Leaving a static group changes what the group's rules watch: recording the change raises the
    // group revision the rule engine's cache is checked against (audit/revisions.ts).
    await things.deleteThing(tx, thingKey);
    await recordChange(tx, actor, {
      organisationKey: before.organisation_key,
      action: 'delete',
      entityType: 'Thing',
      entityKey: thingKey,
      entityName: before.name,
      before: thingSnapshot(before),
    });
  });
}
