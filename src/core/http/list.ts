/**
 * List conventions shared by every collection endpoint (docs/api.md, "Lists"): page/per bounds,
 * order_by over the fields the resource declares sortable, search keywords with scope, field_list, and
 * the answer shape {total_count, page, <plural>}.
 */
import { type TSchema, Type } from '@sinclair/typebox';
import { ApiError, invalidParam } from '../errors.ts';
import type { ListQuery } from '../list-query.ts';
import { StringEnum } from './schema.ts';

/**
 * Bounds of a search: each keyword is a LIKE over every searchable column, and SQLite refuses an
 * expression nested about 500 keywords deep or a LIKE pattern of 50,000 bytes; far more than anyone
 * types, so past these it is a 400 on both stores (docs/api.md, "Lists").
 */
const MAX_SEARCH_LENGTH = 1000;
const MAX_KEYWORDS = 32;

export const MAX_PER = 1000;

export interface ListSpec<F extends string = string> {
  defaultPer: number;
  maxPer?: number;
  /** Fields a client may sort on; published as the enum of `order_by`. */
  sortable: readonly F[];
  defaultOrderBy?: F;
  defaultOrder?: 'asc' | 'desc';
  /** Whether `search`/`scope` filter (notification actions accept and ignore them). */
  searchDescription?: string;
}

export function listParams(spec: ListSpec) {
  return {
    page: Type.Optional(Type.Integer({ minimum: 1, default: 1, description: 'page number, from 1' })),
    per: Type.Optional(
      Type.Integer({ minimum: 1, maximum: spec.maxPer ?? MAX_PER, default: spec.defaultPer, description: 'page size' }),
    ),
    order_by: Type.Optional(StringEnum([...spec.sortable], { description: 'field to sort on' })),
    order: Type.Optional(StringEnum(['asc', 'desc'])),
    search: Type.Optional(
      Type.String({
        maxLength: MAX_SEARCH_LENGTH,
        description: `${spec.searchDescription ?? 'keywords, space separated'} (at most ${MAX_KEYWORDS} keywords)`,
      }),
    ),
    scope: Type.Optional(
      StringEnum(['all', 'any'], { description: 'all: every keyword must match; any: one is enough' }),
    ),
  };
}

export interface ListParamValues {
  page?: number;
  per?: number;
  order_by?: string;
  order?: 'asc' | 'desc';
  search?: string;
  scope?: 'all' | 'any';
}

export type { ListQuery } from '../list-query.ts';

export function toListQuery(params: ListParamValues, spec: ListSpec): ListQuery {
  const keywords = (params.search ?? '').split(/\s+/).filter((k) => k !== '');
  if (keywords.length > MAX_KEYWORDS) throw invalidParam('search', `may hold at most ${MAX_KEYWORDS} keywords`);
  return {
    page: params.page ?? 1,
    per: params.per ?? spec.defaultPer,
    orderBy: params.order_by ?? spec.defaultOrderBy ?? 'created_at',
    order: params.order ?? spec.defaultOrder ?? 'desc',
    keywords,
    matchAll: params.scope !== 'any',
  };
}

/** `field_list` (and the deprecated comma-separated `fields`) over the given field names. */
export function fieldListParams(fields: readonly string[], options: { deprecatedFields?: boolean } = {}) {
  const fieldEnum = StringEnum([...fields]);
  return {
    field_list: Type.Optional(Type.Array(fieldEnum, { description: 'fields wanted in each object' })),
    ...(options.deprecatedFields
      ? {
          fields: Type.Optional(
            Type.String({ description: 'deprecated: comma-separated field names; use field_list' }),
          ),
        }
      : {}),
  };
}

/** The requested fields, or undefined for all. Unknown names in `fields` are a 400 like in field_list. */
export function requestedFields(
  params: { field_list?: string[]; fields?: string },
  known: readonly string[],
): string[] | undefined {
  if (params.field_list && params.field_list.length > 0) return params.field_list;
  if (params.fields === undefined || params.fields.trim() === '') return undefined;
  const names = params.fields
    .split(',')
    .map((f) => f.trim())
    .filter((f) => f !== '');
  const unknown = names.filter((n) => !known.includes(n));
  if (unknown.length > 0) {
    throw new ApiError(400, [
      { code: 'invalid', param: 'fields', message: `names unknown fields: ${unknown.join(', ')}` },
    ]);
  }
  return names;
}

/** Keeps only `fields` of an object; its key field always stays. */
export function pickFields<T extends Record<string, unknown>>(
  item: T,
  fields: string[] | undefined,
  keyField: string,
): Partial<T> {
  if (!fields) return item;
  const picked: Record<string, unknown> = { [keyField]: item[keyField] };
  for (const field of fields) if (field in item) picked[field] = item[field];
  return picked as Partial<T>;
}

export function listAnswer<T>(plural: string, total: number, pageEcho: number | string, items: T[]) {
  return { total_count: total, page: pageEcho, [plural]: items };
}

/** The documented shape of a list answer. */
export const ListResponse = (plural: string, item: TSchema) =>
  Type.Object({
    total_count: Type.Integer(),
    page: Type.Union([Type.Integer(), Type.String()]),
    [plural]: Type.Array(item),
  });

/** The documented shape of a single-resource answer. */
export const OneResponse = (singular: string, item: TSchema) => Type.Object({ [singular]: item });
