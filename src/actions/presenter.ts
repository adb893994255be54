import { type TimeFormatter, toIsoWithMillis } from '../core/time.ts';
import type { NotificationAction } from '../store/tables.ts';
import { type ApiVersion, EMAIL, HTTP_CALL, PROPERTIES, SMS, typeNameIn, VERSIONS } from './versions.ts';

/**
 * Which answer an action is presented in: the v2 create and update answers differ (docs/rules.md,
 * "Notification actions").
 */
export type AnswerKind = 'read' | 'create' | 'update';

const parseObject = (text: string | null): Record<string, unknown> => (text ? JSON.parse(text) : {});

/** The map of a property-setting action, wrapped as the version names it. */
export function propertiesBody(row: NotificationAction, version: ApiVersion): string {
  const stored = parseObject(row.body) as { user_defined_properties?: unknown };
  return JSON.stringify({ [VERSIONS[version].propertiesMember]: stored.user_defined_properties ?? {} });
}

/**
 * A notification action as a version shows it; undefined when the version does not know its kind. Each
 * kind carries its own fields (docs/rules.md, "Notification actions").
 */
export function presentAction(
  row: NotificationAction,
  version: ApiVersion,
  time: TimeFormatter,
  publicBaseUrl: string,
  answer: AnswerKind = 'read',
) {
  const type = typeNameIn(version, row.type);
  if (type === undefined) return undefined;
  const common = { notification_action_key: row.notification_action_key, type, rule_key: row.rule_key };
  let fields: Record<string, unknown>;
  switch (row.type) {
    case EMAIL:
      fields = { to: row.recipient ?? '', cc: row.cc ?? '', bcc: row.bcc ?? '', subject: row.subject, body: null };
      break;
    case HTTP_CALL:
      fields = {
        method: row.method,
        url: row.url,
        headers: parseObject(row.headers),
        query: parseObject(row.query),
        body: row.body ?? '',
      };
      break;
    case PROPERTIES:
      fields = {
        method: 'PUT',
        url: `${publicBaseUrl}${VERSIONS[version].propertiesPath}`,
        headers: parseObject(row.headers),
        query: parseObject(row.query),
        body: propertiesBody(row, version),
      };
      break;
    case SMS:
      fields = { name: row.name ?? '', phone_number: row.phone_number ?? '', body: row.body };
      break;
    default:
      fields = {};
  }
  if (version === 'v2' && answer === 'update') return { ...common, ...fields };
  const stamp = version === 'v2' && answer === 'create' ? toIsoWithMillis : time;
  return { ...common, ...fields, created_at: stamp(row.created_at), updated_at: stamp(row.updated_at) };
}
