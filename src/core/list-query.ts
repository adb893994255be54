/**
 * A list request as repositories and paging read it, once the HTTP layer has normalised its
 * parameters (core/http/list.ts; docs/api.md, "Lists"). Apart from the HTTP layer, so the code that
 * reads the store does not depend on it.
 */
export interface ListQuery {
  page: number;
  per: number;
  orderBy: string;
  order: 'asc' | 'desc';
  keywords: string[];
  matchAll: boolean;
}
