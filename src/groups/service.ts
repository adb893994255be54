/**
 * Groups (docs/api.md, "Groups"): a static group (type 1) names its things; a dynamic group (type 2)
 * holds what its expression matches.
 */
import { type Actor, recordChange } from '../audit/recorder.ts';
import { invalidParam, notFound, requiredParam } from '../core/errors.ts';
import { newKey } from '../core/keys.ts';
import type { ListQuery } from '../core/list-query.ts';
import { normaliseTags } from '../core/tags.ts';
import { STORED_TIME } from '../core/time.ts';
import { ExpressionError, parseThingExpression } from '../expressions/index.ts';
import type { Executor, Store } from '../store/store.ts';
import type { GroupRow } from '../store/tables.ts';
import { requireKnownThings } from '../things/service.ts';
import { GROUP_TYPE_DYNAMIC, GROUP_TYPE_STATIC, listGroupMembers, type MemberFilter } from './membership.ts';
import { presentGroup } from './presenter.ts';
import * as groups from './repository.ts';

export interface GroupInput {
  name: string;
  description?: string | undefined;
  group_type: number;
  tags?: string[] | string | undefined;
  scope?: 'all' | 'any' | undefined;
  thing_keys?: string[] | undefined;
  thing_expression?: string | null | undefined;
}

/** Snapshot for audit trails: the group plus, for a static group, its members. */
async function snapshot(db: Executor, row: GroupRow) {
  const presented = presentGroup(row, STORED_TIME);
  return row.group_type === GROUP_TYPE_STATIC
    ? { ...presented, thing_keys: await groups.staticMembers(db, row.group_key) }
    : presented;
}

function checkExpression(expression: string): string {
  try {
    parseThingExpression(expression);
  } catch (error) {
    if (error instanceof ExpressionError) throw invalidParam('group.thing_expression', error.message);
    throw error;
  }
  return expression;
}

/** A static group's members, held against their deletion until the group is written. */
const checkMembers = (db: Executor, organisationKey: string, thingKeys: string[]) =>
  requireKnownThings(db, [organisationKey], thingKeys, 'group.thing_keys', true);

/** Checks that type, members and expression agree; answers the expression to store. */
function expressionFor(groupType: number, input: Partial<GroupInput>, current: string | null): string | null {
  if (groupType === GROUP_TYPE_STATIC) {
    if (input.thing_expression) throw invalidParam('group.thing_expression', 'is only for group_type 2 (dynamic)');
    return null;
  }
  if (input.thing_keys !== undefined) throw invalidParam('group.thing_keys', 'is only for group_type 1 (static)');
  const expression = input.thing_expression === undefined ? current : input.thing_expression;
  if (!expression) throw requiredParam('group.thing_expression');
  return checkExpression(expression);
}

/**
 * What another capability does, in the same transaction, when a group's members or expression may
 * have changed, or it is deleted (the rules' no_data watches follow their scope, rules/silences.ts).
 */
export type GroupChanging = (db: Executor, organisationKey: string, groupKey: string, now: number) => Promise<void>;

const changings: GroupChanging[] = [];

export function onGroupChanged(changing: GroupChanging): void {
  if (!changings.includes(changing)) changings.push(changing);
}

async function groupChanged(db: Executor, organisationKey: string, groupKey: string, now: number) {
  for (const changing of changings) await changing(db, organisationKey, groupKey, now);
}

export async function createGroup(store: Store, actor: Actor, organisationKey: string, input: GroupInput) {
  const now = Date.now();
  const row: GroupRow = {
    group_key: newKey(),
    organisation_key: organisationKey,
    name: input.name,
    description: input.description ?? '',
    group_type: input.group_type,
    scope: input.scope ?? 'all',
    thing_expression: expressionFor(input.group_type, input, null),
    tags: JSON.stringify(normaliseTags(input.tags)),
    created_at: now,
    updated_at: now,
  };
  return store.transaction(async (tx) => {
    await groups.insertGroup(tx, row);
    if (row.group_type === GROUP_TYPE_STATIC) {
      await groups.setStaticMembers(tx, row, await checkMembers(tx, organisationKey, input.thing_keys ?? []));
    }
    await recordChange(tx, actor, {
      organisationKey,
      action: 'create',
      entityType: 'Group',
      entityKey: row.group_key,
      entityName: row.name,
      after: await snapshot(tx, row),
    });
    return row;
  });
}

export function listGroups(db: Executor, organisationKeys: string[], list: ListQuery) {
  return groups.listGroups(db, organisationKeys, list);
}

/** A group of these organisations, or undefined. */
export function findGroup(db: Executor, organisationKeys: string[], groupKey: string): Promise<GroupRow | undefined> {
  return groups.findGroup(db, organisationKeys, groupKey);
}

/** The expressions of an organisation's groups among `groupKeys` (null for a static group), for the rule engine. */
export function groupExpressions(db: Executor, organisationKey: string, groupKeys: readonly string[]) {
  return groups.groupExpressions(db, organisationKey, groupKeys);
}

/** The static members of these groups, as (group, thing) pairs, for the rule engine. */
export function staticMembersOf(db: Executor, groupKeys: readonly string[]) {
  return groups.staticMembersOf(db, groupKeys);
}

export async function requireGroup(db: Executor, organisationKeys: string[], groupKey: string): Promise<GroupRow> {
  const row = await groups.findGroup(db, organisationKeys, groupKey);
  if (!row) throw notFound('group', 'group_key');
  return row;
}

/** A page of the things of a group the caller can see; a dynamic group's expression is evaluated now. */
export async function listThingsOfGroup(
  db: Executor,
  organisationKeys: string[],
  groupKey: string,
  filter: MemberFilter,
  list: ListQuery,
) {
  return listGroupMembers(db, await requireGroup(db, organisationKeys, groupKey), filter, list);
}

/**
 * How many things each group holds now (a dynamic group's expression evaluated now), in one request:
 * the count of `GET /api/v3/groups/:group_key/things` for each, without a request per group.
 */
export async function countMembersOfGroups(
  db: Executor,
  organisationKeys: string[],
  groupKeys: string[],
): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  const first = { page: 1, per: 1, orderBy: 'thing_key', order: 'asc' as const, keywords: [], matchAll: false };
  for (const groupKey of groupKeys) {
    counts[groupKey] = (await listThingsOfGroup(db, organisationKeys, groupKey, {}, first)).total;
  }
  return counts;
}

export async function updateGroup(
  store: Store,
  actor: Actor,
  organisationKeys: string[],
  groupKey: string,
  changes: Partial<GroupInput>,
) {
  return store.transaction(async (tx) => {
    const before = await requireGroup(tx, organisationKeys, groupKey);
    const beforeSnapshot = await snapshot(tx, before);
    const groupType = changes.group_type ?? before.group_type;
    const after: GroupRow = {
      ...before,
      ...(changes.name !== undefined ? { name: changes.name } : {}),
      ...(changes.description !== undefined ? { description: changes.description } : {}),
      ...(changes.scope !== undefined ? { scope: changes.scope } : {}),
      ...(changes.tags !== undefined ? { tags: JSON.stringify(normaliseTags(changes.tags)) } : {}),
      group_type: groupType,
      thing_expression: expressionFor(
        groupType,
        changes,
        before.group_type === GROUP_TYPE_DYNAMIC ? before.thing_expression : null,
      ),
      updated_at: Date.now(),
    };
    const { group_key: _k, organisation_key: _o, created_at: _c, ...columns } = after;
    await groups.updateGroup(tx, groupKey, columns);
    if (groupType === GROUP_TYPE_STATIC && changes.thing_keys !== undefined) {
      await groups.setStaticMembers(tx, after, await checkMembers(tx, before.organisation_key, changes.thing_keys));
    } else if (groupType === GROUP_TYPE_DYNAMIC && before.group_type === GROUP_TYPE_STATIC) {
      await groups.setStaticMembers(tx, after, []);
    }
    await groupChanged(tx, before.organisation_key, groupKey, after.updated_at);
    await recordChange(tx, actor, {
      organisationKey: before.organisation_key,
      action: 'update',
      entityType: 'Group',
      entityKey: groupKey,
      entityName: after.name,
      before: beforeSnapshot,
      after: await snapshot(tx, after),
    });
    return after;
  });
}

export async function deleteGroup(store: Store, actor: Actor, organisationKeys: string[], groupKey: string) {
  await store.transaction(async (tx) => {
    const before = await requireGroup(tx, organisationKeys, groupKey);
    const beforeSnapshot = await snapshot(tx, before);
    await groups.deleteGroup(tx, groupKey);
    await groupChanged(tx, before.organisation_key, groupKey, Date.now());
    await recordChange(tx, actor, {
      organisationKey: before.organisation_key,
      action: 'delete',
      entityType: 'Group',
      entityKey: groupKey,
      entityName: before.name,
      before: beforeSnapshot,
    });
  });
}

/** The keys of every thing in a group now, a dynamic group's expression evaluated now (realtime push). */
export async function memberKeysOfGroup(db: Executor, group: GroupRow): Promise<string[]> {
  const keys: string[] = [];
  const per = 1000;
  for (let page = 1; ; page++) {
    const list = { page, per, orderBy: 'thing_key', order: 'asc' as const, keywords: [], matchAll: false };
    const { rows } = await listGroupMembers(db, group, {}, list);
    for (const row of rows) keys.push(row.thing_key);
    if (rows.length < per) return keys;
  }
}
