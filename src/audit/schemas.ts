import { Type } from '@sinclair/typebox';
import { ListResponse, type ListSpec, listParams, OneResponse } from '../core/http/list.ts';
import { CommonParams, Key, OemParams } from '../core/http/schema.ts';

export const AuditTrail = Type.Object({
  audit_trail_key: Type.String(),
  action_taken: Type.String({ description: 'create, update or delete' }),
  entity_type: Type.String({ description: 'User, Role, Group, Gateway, Thing, ThingTemplate, Rule, ...' }),
  entity_key: Type.String(),
  entity_name: Type.Union([Type.String(), Type.Null()]),
  new_entity_contents: Type.Object({}, { additionalProperties: true, description: 'the entity after the change' }),
  old_entity_contents: Type.Object({}, { additionalProperties: true, description: 'the entity before; {} on create' }),
  timestamp: Type.Union([Type.Integer(), Type.String()]),
  user_name: Type.String(),
  role_name: Type.String(),
});

export const AUDIT_LIST: ListSpec = {
  defaultPer: 10,
  sortable: ['timestamp', 'action_taken', 'entity_type', 'entity_key', 'entity_name', 'user_name'],
  defaultOrderBy: 'timestamp',
  searchDescription: 'keywords matched against action_taken, entity_type, entity_name, entity_key',
};

export const ListAuditTrailsParams = Type.Object({
  ...CommonParams,
  ...OemParams,
  ...listParams(AUDIT_LIST),
  entity_type: Type.Optional(Type.String()),
  entity_key: Type.Optional(Type.String()),
});

export const GetAuditTrailParams = Type.Object({ ...CommonParams, ...OemParams, audit_trail_key: Key() });

export const AuditTrailList = ListResponse('audit_trails', AuditTrail);
export const AuditTrailOne = OneResponse('audit_trail', AuditTrail);
