import { answer, api } from '../api/client.ts';
import type { paths } from '../api/schema';
import { useLoad } from '../components/use-load.ts';

export type Role = paths['/api/v3/roles']['get']['responses'][200]['content']['application/json']['roles'][number];

/**
 * The organisation's roles by name (a handful: read whole), for the pages that give one; none are asked
 * for while `wanted` is false (a caller that may not read roles).
 */
export function useRoles(wanted = true) {
  return useLoad(
    async () =>
      wanted
        ? (await answer(api.GET('/api/v3/roles', { params: { query: { per: 1000, order_by: 'name', order: 'asc' } } })))
            .roles
        : [],
    [wanted],
  );
}
