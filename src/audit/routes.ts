import { listAnswer, toListQuery } from '../core/http/list.ts';
import { type AnyRoute, defineRoute, permission } from '../core/http/route.ts';
import type { Store } from '../store/store.ts';
import { presentAuditTrail } from './presenter.ts';
import { AUDIT_LIST, AuditTrailList, AuditTrailOne, GetAuditTrailParams, ListAuditTrailsParams } from './schemas.ts';
import { listAuditTrails, requireAuditTrail } from './service.ts';

export function auditRoutes(store: Store): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/api/v3/audit_trails',
      tags: ['Audit trails'],
      summary: 'List audit trails',
      access: permission('audit_trail', 'read'),
      params: ListAuditTrailsParams,
      response: AuditTrailList,
      handler: async (call) => {
        const { total, rows } = await listAuditTrails(
          store.db,
          {
            organisationKeys: await call.visibleOrganisations(),
            entityType: call.params.entity_type,
            entityKey: call.params.entity_key,
          },
          toListQuery(call.params, AUDIT_LIST),
        );
        return listAnswer(
          'audit_trails',
          total,
          call.pageEcho,
          rows.map((r) => presentAuditTrail(r, call.time)),
        );
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v3/audit_trails/:audit_trail_key',
      tags: ['Audit trails'],
      summary: 'Get an audit trail',
      access: permission('audit_trail', 'read'),
      params: GetAuditTrailParams,
      response: AuditTrailOne,
      handler: async (call) => {
        const row = await requireAuditTrail(store.db, await call.visibleOrganisations(), call.params.audit_trail_key);
        return { audit_trail: presentAuditTrail(row, call.time) };
      },
    }),
  ];
}
