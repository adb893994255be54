/**
 * Reading audit trails (docs/api.md, "Audit trails"); they are written by recorder.ts, in the
 * transaction of each change.
 */
import { notFound } from '../core/errors.ts';
import type { ListQuery } from '../core/list-query.ts';
import type { Executor } from '../store/store.ts';
import type { AuditTrailRow } from '../store/tables.ts';
import * as audit from './repository.ts';

export function listAuditTrails(db: Executor, filter: audit.AuditFilter, list: ListQuery) {
  return audit.listAuditTrails(db, filter, list);
}

export async function requireAuditTrail(db: Executor, organisationKeys: string[], key: string): Promise<AuditTrailRow> {
  const row = await audit.findAuditTrail(db, organisationKeys, key);
  if (!row) throw notFound('audit trail', 'audit_trail_key');
  return row;
}
