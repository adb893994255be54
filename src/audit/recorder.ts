/**
 * The one way a change is recorded (docs/api.md, "Audit trails"): called inside the transaction that
 * makes the change, so the audit row and the change commit together or not at all, and the change is
 * told to the change feed once it commits (core/change-feed.ts). Contents are the entity's public
 * representation, which never carries secrets.
 */

import type { EntityType } from '../core/change-feed.ts';
import { newKey } from '../core/keys.ts';
import type { Principal } from '../core/principal.ts';
import { type Executor, noteChange } from '../store/store.ts';
import { raiseRevision, revisionsRaisedBy } from './revisions.ts';

export type AuditAction = 'create' | 'update' | 'delete';

export type { EntityType };

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
  /** What the change feed tells of it (core/change-feed.ts, `detail`); by default `after`, or `before` on delete. */
  detail?: unknown;
}

export async function recordChange(db: Executor, actor: Actor, change: Change, now = Date.now()): Promise<void> {
  await noteChange(db, {
    entityType: change.entityType,
    organisationKey: change.organisationKey,
    entityKey: change.entityKey,
    action: change.action,
    detail: change.detail ?? change.after ?? change.before,
  });
  for (const type of revisionsRaisedBy(change.entityType)) await raiseRevision(db, change.organisationKey, type);
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
