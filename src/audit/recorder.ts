/**
 * The one way a change is recorded (CONTRACT 9): called inside the transaction that makes the change,
 * so the audit row and the change commit together or not at all. Contents are the entity's public
 * representation, which never carries secrets.
 */

import { newKey } from '../core/keys.ts';
import type { Principal } from '../core/principal.ts';
import type { Executor } from '../store/store.ts';
import type { EntityType } from './entity-types.ts';
import { REVISED_ENTITY_TYPES, raiseRevision } from './revisions.ts';

export type AuditAction = 'create' | 'update' | 'delete';

export type { EntityType } from './entity-types.ts';

/** Who made a change, as audit trails name them. */
export interface Actor {
  userName: string;
  roleName: string;
}

export const SYSTEM_ACTOR: Actor = { userName: 'system', roleName: 'system' };

export const actorOf = (principal: Principal): Actor => ({
  userName: principal.userName,
  roleName: principal.roleName,
});

export interface Change {
  organisationKey: string;
  action: AuditAction;
  entityType: EntityType;
  entityKey: string;
  entityName: string | null;
  /** Public representation before the change (omit on create). */
  before?: object;
  /** Public representation after the change (omit on delete). */
  after?: object;
}

type ChangeListener = (change: Change) => void;
const listeners = new Set<ChangeListener>();

/**
 * Calls `listener` with every change to one of `entityTypes` recorded in this process (as it is
 * recorded, before its transaction commits), for caches of what changes. Returns the function that
 * stops it.
 */
export function onChangesTo(entityTypes: readonly EntityType[], listener: ChangeListener): () => void {
  const types = new Set(entityTypes);
  const filtered: ChangeListener = (change) => {
    if (types.has(change.entityType)) listener(change);
  };
  listeners.add(filtered);
  return () => listeners.delete(filtered);
}

export async function recordChange(db: Executor, actor: Actor, change: Change, now = Date.now()): Promise<void> {
  for (const listener of listeners) listener(change);
  if (REVISED_ENTITY_TYPES.has(change.entityType)) await raiseRevision(db, change.organisationKey, change.entityType);
  await db
    .insertInto('audit_trails')
    .values({
      audit_trail_key: newKey(),
      organisation_key: change.organisationKey,
      action_taken: change.action,
      entity_type: change.entityType,
      entity_key: change.entityKey,
      entity_name: change.entityName,
      old_entity_contents: JSON.stringify(change.before ?? {}),
      new_entity_contents: JSON.stringify(change.after ?? {}),
      timestamp: now,
      user_name: actor.userName,
      role_name: actor.roleName,
    })
    .execute();
}
