import type { ListQuery } from '../core/list-query.ts';
import { inOrganisations } from '../store/filters.ts';
import { fetchPage } from '../store/paging.ts';
import type { Executor } from '../store/store.ts';
import type { GatewayRow } from '../store/tables.ts';

export function listGateways(db: Executor, organisationKeys: string[], list: ListQuery) {
  return fetchPage<GatewayRow>(
    db,
    {
      name: 'gateways',
      values: { organisations: organisationKeys },
      build: (d, v) =>
        d
          .selectFrom('gateways')
          .selectAll()
          .where(inOrganisations(v.organisations as string[])),
      columns: {
        sort: { created_at: 'created_at', updated_at: 'updated_at', name: 'name', gateway_key: 'gateway_key' },
        key: 'gateway_key',
        search: ['name'],
        tags: 'tags',
      },
    },
    list,
  );
}

export function findGateway(
  db: Executor,
  organisationKeys: string[],
  gatewayKey: string,
): Promise<GatewayRow | undefined> {
  return db
    .selectFrom('gateways')
    .selectAll()
    .where('gateway_key', '=', gatewayKey)
    .where(inOrganisations(organisationKeys))
    .executeTakeFirst();
}

export async function insertGateway(db: Executor, row: GatewayRow): Promise<void> {
  await db.insertInto('gateways').values(row).execute();
}

export async function updateGateway(db: Executor, gatewayKey: string, changes: Partial<GatewayRow>): Promise<void> {
  await db.updateTable('gateways').set(changes).where('gateway_key', '=', gatewayKey).execute();
}

export async function deleteGateway(db: Executor, gatewayKey: string): Promise<void> {
  await db.deleteFrom('gateways').where('gateway_key', '=', gatewayKey).execute();
}
