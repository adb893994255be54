/** The kinds of notification action, and how the console names an action (docs/rules.md). */
import type { paths } from '../api/schema';

export type Action =
  paths['/api/v3/notification_actions']['get']['responses'][200]['content']['application/json']['notification_actions'][number];

export type ActionInput =
  paths['/api/v3/notification_actions']['post']['requestBody']['content']['application/json']['notification_action'];
export type ActionType = ActionInput['type'];
export type FieldName =
  | 'to'
  | 'cc'
  | 'bcc'
  | 'subject'
  | 'url'
  | 'method'
  | 'headers'
  | 'query'
  | 'body'
  | 'name'
  | 'phone_number';

/**
 * Every kind the API has (typed against its schema, so a new kind does not compile until it is here),
 * with its fields (docs/rules.md, "Notification actions").
 */
export const KINDS: Record<ActionType, { label: string; fields: FieldName[] }> = {
  EmailNotificationAction: { label: 'E-mail', fields: ['to', 'cc', 'bcc', 'subject'] },
  CallHttpUrlAction: { label: 'HTTP call', fields: ['url', 'method', 'headers', 'query', 'body'] },
  ThingUserDefinedPropertiesAction: { label: "Set the thing's properties", fields: ['body'] },
  SMSNotificationAction: { label: 'SMS', fields: ['name', 'phone_number', 'body'] },
};

/** Where an action goes: its address, URL or phone number. */
export const destination = (action: Action): string => action.to ?? action.url ?? action.phone_number ?? '';

/** An action in words: its kind's label and where it goes, as the list shows it (`HTTP call https://...`). */
export const nameAction = (action: Action): string =>
  `${KINDS[action.type as ActionType]?.label ?? action.type} ${destination(action)}`.trim();
