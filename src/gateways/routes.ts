import type { AnyRoute } from '../core/http/route.ts';
import type { Store } from '../store/store.ts';

export function gatewayRoutes(_store: Store): AnyRoute[] {
  return [];
}
