import { storedTags } from '../core/tags.ts';
import type { GatewayRow } from '../store/tables.ts';

export interface StoredAdapter {
  type: string | null;
  /** JSON text, kept as the client wrote it. */
  configuration: string;
  enabled: boolean;
  adapter_pid: string;
}

export const adaptersOf = (row: Pick<GatewayRow, 'adapters'>): StoredAdapter[] =>
  JSON.parse(row.adapters) as StoredAdapter[];

/** A gateway as answered (docs/gateways.md, "The gateway object"). Timestamps are kept for sorting only. */
export function presentGateway(row: GatewayRow) {
  return {
    gateway_key: row.gateway_key,
    gateway_type: row.gateway_type,
    name: row.name,
    gateway_version: row.gateway_version,
    tags: storedTags(row).join(','),
    adapters: adaptersOf(row).map((a) => ({
      type: a.type,
      configuration: a.configuration,
      enabled: a.enabled,
      adapter_pid: a.adapter_pid,
    })),
  };
}

export type PresentedGateway = ReturnType<typeof presentGateway>;
