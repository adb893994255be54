import { type Expression, type ExpressionBuilder, type SqlBool, sql } from 'kysely';
import type { ListQuery } from '../core/list-query.ts';
import { inOrganisations } from '../store/filters.ts';
import { escapeLike, fetchPage } from '../store/paging.ts';
import type { Executor } from '../store/store.ts';
import type { Database, GatewayRow } from '../store/tables.ts';

const matches = (column: Expression<unknown>, pattern: string) =>
  sql<SqlBool>`lower(${column}) like ${pattern} escape '\\'`;

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

const keywordFilter =
  (namePatterns: string[], tagPatterns: string[], matchAll: boolean) =>
  (eb: ExpressionBuilder<Database, 'gateways'>) => {
    const perKeyword = namePatterns.map((namePattern, i) =>
      eb.or([
        matches(sql.ref('name'), namePattern),
        matches(sql`substr(tags, 2, length(tags) - 2)`, tagPatterns[i] as string),
      ]),
    );
    return matchAll ? eb.and(perKeyword) : eb.or(perKeyword);
  };

export function listGateways(db: Executor, organisationKeys: string[], list: ListQuery) {
  const lower = list.keywords.map((k) => k.toLowerCase());
  return fetchPage<GatewayRow>(
    db,
    {
      name: 'gateways',
      values: {
        organisations: organisationKeys,
        // Tags need their own pattern, so the keywords are matched here rather than by fetchPage.
        namePatterns: lower.length > 0 ? lower.map((k) => `%${escapeLike(k)}%`) : undefined,
        tagPatterns: lower.length > 0 ? lower.map((k) => `%${escapeLike(tagsPattern(k))}%`) : undefined,
      },
      build: (d, v) => {
        const query = d
          .selectFrom('gateways')
          .selectAll()
          .where(inOrganisations(v.organisations as string[]));
        return v.namePatterns
          ? query.where(keywordFilter(v.namePatterns as string[], v.tagPatterns as string[], list.matchAll))
          : query;
      },
      columns: {
        sort: { created_at: 'created_at', updated_at: 'updated_at', name: 'name', gateway_key: 'gateway_key' },
        key: 'gateway_key',
        search: [],
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
