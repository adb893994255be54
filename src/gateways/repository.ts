import { type Expression, type ExpressionBuilder, type SqlBool, sql } from 'kysely';
import type { ListQuery } from '../core/http/list.ts';
import { inOrganisations } from '../store/filters.ts';
import { escapeLike, fetchPage } from '../store/paging.ts';
import type { Executor } from '../store/store.ts';
import type { Database, GatewayRow } from '../store/tables.ts';

const contains = (column: Expression<unknown>, text: string) =>
  sql<SqlBool>`lower(${column}) like ${`%${escapeLike(text)}%`} escape '\\'`;

/**
 * The pattern a keyword must be found as in the stored tags (a JSON array of comma-free strings) for
 * it to be a substring of the comma-joined `tags` the API returns: each part JSON-escaped, and each
 * comma the `","` between two elements. Matched against the array text without its brackets, so a
 * keyword never matches the JSON punctuation itself.
 */
export function tagsPattern(keyword: string): string {
  return keyword
    .split(',')
    .map((part) => JSON.stringify(part).slice(1, -1))
    .join('","');
}

const keywordFilter = (keywords: string[], matchAll: boolean) => (eb: ExpressionBuilder<Database, 'gateways'>) => {
  const perKeyword = keywords.map((keyword) => {
    const lower = keyword.toLowerCase();
    return eb.or([
      contains(sql.ref('name'), lower),
      contains(sql`substr(tags, 2, length(tags) - 2)`, tagsPattern(lower)),
    ]);
  });
  return matchAll ? eb.and(perKeyword) : eb.or(perKeyword);
};

export async function listGateways(db: Executor, organisationKeys: string[], list: ListQuery) {
  let query = db.selectFrom('gateways').selectAll().where(inOrganisations(organisationKeys));
  if (list.keywords.length > 0) query = query.where(keywordFilter(list.keywords, list.matchAll));
  return fetchPage(query, list, {
    sort: { created_at: 'created_at', updated_at: 'updated_at', name: 'name', gateway_key: 'gateway_key' },
    key: 'gateway_key',
    // Matched above: tags need their own pattern.
    search: [],
  });
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
