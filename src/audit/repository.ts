import type { ListQuery } from '../core/http/list.ts';
import { inOrganisations } from '../store/filters.ts';
import { fetchPage } from '../store/paging.ts';
import type { Executor } from '../store/store.ts';
import type { AuditTrailRow } from '../store/tables.ts';

export interface AuditFilter {
  organisationKeys: string[];
  entityType?: string | undefined;
  entityKey?: string | undefined;
}

export async function listAuditTrails(db: Executor, filter: AuditFilter, list: ListQuery) {
  let query = db.selectFrom('audit_trails').selectAll().where(inOrganisations(filter.organisationKeys));
  if (filter.entityType !== undefined) query = query.where('entity_type', '=', filter.entityType);
  if (filter.entityKey !== undefined) query = query.where('entity_key', '=', filter.entityKey);
  return fetchPage(query, list, {
    sort: Object.fromEntries(
      ['timestamp', 'action_taken', 'entity_type', 'entity_key', 'entity_name', 'user_name'].map((f) => [f, f]),
    ),
    key: 'audit_trail_key',
    search: ['action_taken', 'entity_type', 'entity_name', 'entity_key'],
  });
}

export async function findAuditTrail(
  db: Executor,
  organisationKeys: string[],
  key: string,
): Promise<AuditTrailRow | undefined> {
  return db
    .selectFrom('audit_trails')
    .selectAll()
    .where('audit_trail_key', '=', key)
    .where(inOrganisations(organisationKeys))
    .executeTakeFirst();
}
