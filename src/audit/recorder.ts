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
  /**
   * Who made it, when not the actor the changes are recorded for (recordChanges): registers of new
   * things by several key pairs, made in one transaction.
   */
  actor?: Actor;
}

export async function recordChange(db: Executor, actor: Actor, change: Change, now = Date.now()): Promise<void> {
  await recordChanges(db, actor, [change], now);
}

/** Audit rows written by one statement: 11 values each, well within both engines' parameter limits. */
const AUDIT_ROWS_PER_STATEMENT = 500;

/**
 * Records many changes in one transaction (bulk provisioning): each revision they raise is raised once,
 * and the audit rows are written a few hundred per statement.
 */
export async function recordChanges(
  db: Executor,
  actor: Actor,
  changes: readonly Change[],
  now = Date.now(),
): Promise<void> {
  const raised = new Set<string>();
  for (const change of changes) {
    await noteChange(db, {
      entityType: change.entityType,
      organisationKey: change.organisationKey,
      entityKey: change.entityKey,
      action: change.action,
      detail: change.detail ?? change.after ?? change.before,
    });
    for (const type of revisionsRaisedBy(change.entityType)) {
      const id = JSON.stringify([change.organisationKey, type]);
      if (raised.has(id)) continue;
      raised.add(id);
      await raiseRevision(db, change.organisationKey, type);
    }
  }
  for (let start = 0; start < changes.length; start += AUDIT_ROWS_PER_STATEMENT) {
    await db
      .insertInto('audit_trails')
      .values(
        changes.slice(start, start + AUDIT_ROWS_PER_STATEMENT).map((change) => ({
          audit_trail_key: newKey(),
          organisation_key: change.organisationKey,
          action_taken: change.action,
          entity_type: change.entityType,
          entity_key: change.entityKey,
          entity_name: change.entityName,
          old_entity_contents: JSON.stringify(change.before ?? {}),
          new_entity_contents: JSON.stringify(change.after ?? {}),
          timestamp: now,
          user_name: (change.actor ?? actor).userName,
          role_name: (change.actor ?? actor).roleName,
        })),
      )
      .execute();
  }
}
