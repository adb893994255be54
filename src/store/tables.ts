import type { Generated } from 'kysely';

/**
 * Row types of every table, as Kysely sees them. Booleans are stored as 0/1 integers and JSON as text
 * on both engines, so the same rows come back from SQLite and PostgreSQL; times are epoch milliseconds.
 */
export interface OrganisationRow {
  organisation_key: string;
  name: string;
  is_oem: number;
  parent_organisation_key: string | null;
  license_key: string;
  /** Days events are kept (docs/storage.md); null: for ever. */
  retention_days: number | null;
  /** Days 15-minute rollups are kept, at least as long as the events; null: for ever. */
  rollup_retention_days: number | null;
  /** Events a second it may send (docs/operations.md); null: the server's default; 0: no limit. */
  events_per_second: number | null;
  created_at: number;
  updated_at: number;
}

export interface RoleRow {
  role_key: string;
  organisation_key: string;
  name: string;
  /** JSON array of integers. */
  abilities: string;
  account_admin: number;
  /** `account_admin` or `agent` for the built-in roles, else null. */
  built_in: string | null;
  created_at: number;
  updated_at: number;
}

export interface UserRow {
  user_key: string;
  organisation_key: string;
  /** Stored lower-cased: addresses are unique across the server. */
  email: string;
  name: string;
  password_hash: string;
  role_key: string;
  time_zone: string;
  created_at: number;
  updated_at: number;
}

export interface SessionRow {
  /** SHA-256 of the token; the token itself is never stored. */
  token_hash: string;
  user_key: string;
  /** The organisation the session acts in (a child one after an OEM sign-in into it). */
  organisation_key: string;
  /** Set when the session acts with another role than the user's (an OEM admin in a child organisation). */
  role_key: string | null;
  created_at: number;
  last_used_at: number;
  expires_at: number;
}

export interface AuditTrailRow {
  audit_trail_key: string;
  organisation_key: string;
  action_taken: string;
  entity_type: string;
  entity_key: string;
  entity_name: string | null;
  new_entity_contents: string;
  old_entity_contents: string;
  timestamp: number;
  user_name: string;
  role_name: string;
}

export interface SignInFailureRow {
  email: string;
  client_address: string;
  at: number;
}

export interface ThingTemplateRow {
  thing_template_key: string;
  organisation_key: string;
  name: string;
  description: string;
  /** JSON array of {name, data_type, unit}. */
  metrics: string;
  heartbeat_interval: number;
  idle_timeout: number;
  /** 1 for the organisation's `Default` template, which auto-registered things use. */
  is_default: number;
  /** Days its things' events are kept; null: the organisation's retention_days. */
  retention_days: number | null;
  created_at: number;
  updated_at: number;
}

export interface DashboardRow {
  dashboard_key: string;
  organisation_key: string;
  name: string;
  description: string | null;
  /** JSON: {"last": "1h"} or {"from", "to"} (epoch seconds). */
  time_range: string;
  /** JSON array of {name, thing_template_key}. */
  variables: string;
  /** JSON array of widgets (docs/api.md, "Dashboards"). */
  widgets: string;
  created_at: number;
  updated_at: number;
}

export interface ThingRow {
  thing_id: Generated<number>;
  thing_key: string;
  organisation_key: string;
  thing_template_key: string;
  name: string;
  description: string;
  /** JSON array of strings. */
  tags: string;
  /** JSON [latitude, longitude] or null. */
  coordinates: string | null;
  bi_directional: number;
  /** JSON object of string values. */
  user_defined_properties: string;
  /** When the thing last sent an event (receipt time, ms): with last_beat_at it decides `alive`. */
  last_event_at: number | null;
  /** JSON {timestamp (ms), data} of the newest event, by its own time. */
  last_event: string | null;
  /** That event's time (ms). */
  last_event_timestamp: number | null;
  last_beat_at: number | null;
  /** How many events the thing has stored, kept by the event writer. */
  event_count: Generated<number>;
  /**
   * The smallest and largest receipt time minus event time (ms) of the thing's stored events, kept by
   * the event writer (null before its first event): they bound the event times a receipt-time range
   * can hold (events/repository.ts).
   */
  arrival_lag_min: Generated<number | null>;
  arrival_lag_max: Generated<number | null>;
  created_at: number;
  updated_at: number;
}

export interface GroupRow {
  group_key: string;
  organisation_key: string;
  name: string;
  description: string;
  group_type: number;
  scope: string;
  thing_expression: string | null;
  /** JSON array of strings. */
  tags: string;
  created_at: number;
  updated_at: number;
}

export interface GroupThingRow {
  group_key: string;
  thing_key: string;
  organisation_key: string;
}

export interface GatewayRow {
  gateway_key: string;
  organisation_key: string;
  name: string;
  gateway_type: string | null;
  gateway_version: string | null;
  /** JSON array of strings. */
  tags: string;
  /** JSON array of {type, configuration (JSON text), enabled, adapter_pid}. */
  adapters: string;
  created_at: number;
  updated_at: number;
}

export interface KeyPairRow {
  key_pair_key: string;
  organisation_key: string;
  name: string;
  access_key: string;
  /** The secret key, encrypted with the server's key; never answered after creation. */
  secret_key_sealed: string;
  role_key: string;
  created_at: number;
  updated_at: number;
}

export interface ApiKeyRow {
  api_key_key: string;
  organisation_key: string;
  name: string;
  /** SHA-256 of the token; the token itself is answered once and never stored. */
  token_hash: string;
  role_key: string;
  /** The user who made it: its requests act as that user, with the key's role. */
  created_by: string;
  created_at: number;
  expires_at: number | null;
  last_used_at: number | null;
}

export interface EventRow {
  event_id: Generated<number>;
  thing_id: number;
  /** When it happened (device time), epoch ms. */
  timestamp: number;
  /** When the server received it, epoch ms. */
  created_at: number;
  /** JSON object: metric name to value (numbers, text, booleans, nested objects). */
  data: string;
  /** JSON [latitude, longitude] or null. */
  waypoint: string | null;
}

/** A block of a thing's older events, compacted (events/block-codec.ts, docs/storage.md). */
export interface EventBlockRow {
  block_id: Generated<number>;
  thing_id: number;
  /** The smallest and largest event time (device time) of its events, epoch ms. */
  min_timestamp: number;
  max_timestamp: number;
  /** The smallest and largest receipt time of its events, epoch ms. */
  min_created_at: number;
  max_created_at: number;
  /** How many events it holds. */
  event_count: number;
  /** Its events, encoded (events/block-codec.ts). */
  body: Uint8Array;
}

/** A thing's events of one 15-minute slot, counted per metric (events/rollups.ts). */
export interface EventRollupRow {
  thing_id: number;
  /** The slot's start, epoch ms, a multiple of 15 minutes. */
  slot: number;
  /** JSON object: metric name to [count, sum, min, max]. */
  stats: string;
}

/** The slot rollups of a template's things merged (events/template-rollups.ts). */
export interface TemplateRollupRow {
  thing_template_key: string;
  slot: number;
  /** As EventRollupRow.stats. */
  stats: string;
}

/** A template's slot whose row is to be counted again from its things' rows (events/template-rollups.ts). */
export interface TemplateRollupRepairRow {
  thing_template_key: string;
  slot: number;
}

export interface RuleRow {
  rule_key: string;
  organisation_key: string;
  name: string;
  description: string;
  thing_template_key: string | null;
  /** JSON array of thing keys. */
  thing_keys: string;
  group_key: string | null;
  condition: string;
  /** 0-3, or null: the rule raises no alert. */
  alert_type: number | null;
  alert_message: string;
  /** `on_enter`, `every_event` or `no_data`. */
  trigger: string;
  enabled: number;
  /** on_enter: how long the condition must hold; no_data: how long a silence must last (seconds). */
  for_seconds: number;
  /** 1: the rule keeps one alert open per thing and clears it itself. */
  auto_clear: number;
  created_at: number;
  updated_at: number;
}

export interface RuleStateRow {
  rule_key: string;
  thing_key: string;
  organisation_key: string;
  /** 1 while the condition held at the thing's last event. */
  matched: number;
  updated_at: number;
  /** Event time (ms) of the first event of the run the condition has held on. */
  run_started_at: number | null;
  /** 1 once the rule fired in that run. */
  fired: number;
  /** The alert an auto_clear rule keeps open for the thing. */
  open_alert_key: string | null;
  /** no_data: when the thing's silence is next checked (ms), or null. */
  due_at: number | null;
  /** no_data: when the rule began watching the thing (ms). */
  watched_since: number | null;
  /** no_data: the start (ms) of the last silence the rule fired for. */
  fired_silence: number | null;
}

/** A notification action with its credentials open, as the actions capability hands it out. */
export interface NotificationAction {
  notification_action_key: string;
  organisation_key: string;
  rule_key: string;
  /** v3 type name. */
  type: string;
  /** The e-mail kind's `to`. */
  recipient: string | null;
  cc: string | null;
  bcc: string | null;
  subject: string | null;
  body: string | null;
  method: string | null;
  url: string | null;
  /** JSON object. */
  headers: string | null;
  /** JSON object. */
  query: string | null;
  name: string | null;
  phone_number: string | null;
  created_at: number;
  updated_at: number;
}

export interface NotificationActionRow extends NotificationAction {
  /**
   * `url`, `headers` and `query` sealed together (docs/rules.md, "Notification actions"); when set,
   * those columns are null. Null on kinds without them, and on rows made before sealing until the
   * server's start seals them.
   */
  secrets_sealed: string | null;
}

export interface DeliveryRow {
  delivery_key: string;
  organisation_key: string;
  notification_action_key: string;
  rule_key: string;
  /** JSON: what the delivery needs (action, rule, thing, event, alert, message). */
  payload: string;
  /** pending | delivered | failed */
  status: string;
  attempts: number;
  next_attempt_at: number;
  claimed_by: string | null;
  claimed_until: number | null;
  created_at: number;
  updated_at: number;
}

export interface DeliveryAttemptRow {
  attempt_key: string;
  delivery_key: string;
  notification_action_key: string;
  organisation_key: string;
  attempt: number;
  /** delivered | failed */
  status: string;
  error: string | null;
  at: number;
  duration_ms: number;
}

export interface AlertRow {
  alert_key: string;
  organisation_key: string;
  thing_key: string | null;
  thing_name: string | null;
  rule_key: string | null;
  instruction_key: string | null;
  instruction_name: string | null;
  alert_type: number;
  message: string;
  /** JSON object: thing (as it was), instruction, alert_type_string, and what the device sent. */
  data: string;
  timestamp: number;
  created_at: number;
  updated_at: number;
  /** open | acknowledged | cleared (docs/rules.md, "Alert lifecycle"). */
  status: AlertStatus;
  acknowledged_at: number | null;
  /** The user's e-mail. */
  acknowledged_by: string | null;
  cleared_at: number | null;
  /** The user's e-mail, or `rule` when a rule cleared it. */
  cleared_by: string | null;
  /** The last comment given on acknowledging or clearing. */
  comment: string | null;
}

export type AlertStatus = 'open' | 'acknowledged' | 'cleared';

export interface InstructionRow {
  instruction_key: string;
  organisation_key: string;
  thing_key: string;
  name: string;
  description: string | null;
  /** JSON object. */
  definition: string;
  alert_key: string;
  /** pending | delivered | acknowledged */
  status: string;
  delivered_at: number | null;
  acknowledged_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface ChangeRevisionRow {
  organisation_key: string;
  entity_type: string;
  revision: number;
}

export interface ServerSecretRow {
  name: string;
  value: string;
}

/** User API requests of an organisation in a one-minute window (the rate limit; usage). */
export interface ApiRequestWindowRow {
  organisation_key: string;
  window_start: number;
  requests: number;
}

/** Events stored for an organisation in a UTC day (usage). */
export interface EventDayRow {
  organisation_key: string;
  day_start: number;
  events: number;
}

/** The events stored in one minute by one organisation (by receipt), kept two hours. */
export interface EventMinuteRow {
  organisation_key: string;
  /** Start of the minute, epoch ms. */
  minute_start: number;
  events: number;
}

export interface Database {
  organisations: OrganisationRow;
  roles: RoleRow;
  users: UserRow;
  sessions: SessionRow;
  audit_trails: AuditTrailRow;
  sign_in_failures: SignInFailureRow;
  thing_templates: ThingTemplateRow;
  things: ThingRow;
  groups: GroupRow;
  group_things: GroupThingRow;
  gateways: GatewayRow;
  key_pairs: KeyPairRow;
  api_keys: ApiKeyRow;
  events: EventRow;
  event_blocks: EventBlockRow;
  event_rollups: EventRollupRow;
  template_rollups: TemplateRollupRow;
  template_rollup_repairs: TemplateRollupRepairRow;
  server_secrets: ServerSecretRow;
  change_revisions: ChangeRevisionRow;
  rules: RuleRow;
  rule_states: RuleStateRow;
  notification_actions: NotificationActionRow;
  deliveries: DeliveryRow;
  delivery_attempts: DeliveryAttemptRow;
  alerts: AlertRow;
  instructions: InstructionRow;
  api_request_windows: ApiRequestWindowRow;
  event_days: EventDayRow;
  /** Events refused past a limit, per organisation and UTC day: the same columns as event_days. */
  event_limit_days: EventDayRow;
  event_minutes: EventMinuteRow;
  dashboards: DashboardRow;
}

/**
 * Every table of Database, each after the tables its rows name (by key or id; the schema declares no
 * foreign keys, so this order is the one place those references are written down). `thingbase
 * copy-store` copies the tables in this order (docs/configuration.md, "Moving from SQLite to
 * PostgreSQL"). A table added to Database goes here too: test/unit/store-tables.test.ts does not
 * compile until it is, and compares the list with the tables the migrations make.
 */
export const STORE_TABLES = [
  'server_secrets',
  'organisations',
  'change_revisions',
  'roles',
  'users',
  'sessions',
  'api_keys',
  'sign_in_failures',
  'audit_trails',
  'thing_templates',
  'things',
  'groups',
  'group_things',
  'gateways',
  'key_pairs',
  'dashboards',
  'rules',
  'notification_actions',
  'alerts',
  'rule_states',
  'instructions',
  'deliveries',
  'delivery_attempts',
  'events',
  'event_blocks',
  'event_rollups',
  'template_rollups',
  'template_rollup_repairs',
  'api_request_windows',
  'event_days',
  'event_limit_days',
  'event_minutes',
] as const satisfies readonly (keyof Database)[];

export type StoreTable = (typeof STORE_TABLES)[number];

/** Tables whose rows belong to one organisation (column `organisation_key`): removed with it. */
export const ORGANISATION_SCOPED_TABLES = [
  'dashboards',
  'instructions',
  'alerts',
  'delivery_attempts',
  'deliveries',
  'notification_actions',
  'rule_states',
  'rules',
  'key_pairs',
  'group_things',
  'groups',
  'gateways',
  'things',
  'thing_templates',
  'audit_trails',
  'sessions',
  'users',
  'roles',
  'change_revisions',
] as const satisfies readonly (keyof Database)[];
