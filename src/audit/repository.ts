import type { ListQuery } from '../core/list-query.ts';
import { inOrganisations } from '../store/filters.ts';
import { fetchPage } from '../store/paging.ts';
import type { Executor } from '../store/store.ts';
import type { AuditTrailRow } from '../store/tables.ts';

export interface AuditFilter {
  organisationKeys: string[];
  entityType?: string | undefined;
  entityKey?: string | undefined;
}

const AUDIT_SORT = ['timestamp', 'action_taken', 'entity_type', 'entity_key', 'entity_name', 'user_name'];

export function listAuditTrails(db: Executor, filter: AuditFilter, list: ListQuery) {
  return fetchPage<AuditTrailRow>(
    db,
    {
      name: 'audit_trails',
      values: { organisations: filter.organisationKeys, entityType: filter.entityType, entityKey: filter.entityKey },
      build: (d, v) => {
        let query = d
          .selectFrom('audit_trails')
          .selectAll()
          .where(inOrganisations(v.organisations as string[]));
        if (v.entityType !== undefined) query = query.where('entity_type', '=', v.entityType as string);
        if (v.entityKey !== undefined) query = query.where('entity_key', '=', v.entityKey as string);
        return query;
      },
      columns: {
        sort: Object.fromEntries(AUDIT_SORT.map((f) => [f, f])),
        key: 'audit_trail_key',
        search: ['action_taken', 'entity_type', 'entity_name', 'entity_key'],
      },
    },
    list,
  );
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
