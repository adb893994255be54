import type { Kysely } from 'kysely';

/**
 * Rules, their notification actions and the queue that delivers them, alerts, and instructions
 * (docs/rules.md; docs/devices.md, "Instructions").
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('rules')
    .addColumn('rule_key', 'text', (c) => c.primaryKey())
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('thing_template_key', 'text')
    // JSON array of thing keys.
    .addColumn('thing_keys', 'text', (c) => c.notNull())
    .addColumn('group_key', 'text')
    .addColumn('condition', 'text', (c) => c.notNull())
    .addColumn('alert_type', 'integer')
    .addColumn('alert_message', 'text', (c) => c.notNull())
    .addColumn('trigger', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('rules_organisation_created')
    .on('rules')
    .columns(['organisation_key', 'created_at', 'rule_key'])
    .execute();

  // Whether a rule's condition held for a thing at its last event: an on_enter rule fires on the change
  // to true. Kept in the store, so it survives restarts and is shared by every server instance.
  await db.schema
    .createTable('rule_states')
    .addColumn('rule_key', 'text', (c) => c.notNull())
    .addColumn('thing_key', 'text', (c) => c.notNull())
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    .addColumn('matched', 'integer', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('rule_states_pk', ['rule_key', 'thing_key'])
    .execute();

  await db.schema
    .createTable('notification_actions')
    .addColumn('notification_action_key', 'text', (c) => c.primaryKey())
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    .addColumn('rule_key', 'text', (c) => c.notNull())
    // The v3 type name; v2 names are a mapping at the edge (SensorTraitsAction).
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('recipient', 'text')
    .addColumn('cc', 'text')
    .addColumn('bcc', 'text')
    .addColumn('subject', 'text')
    .addColumn('body', 'text')
    .addColumn('method', 'text')
    .addColumn('url', 'text')
    // JSON objects.
    .addColumn('headers', 'text')
    .addColumn('query', 'text')
    .addColumn('name', 'text')
    .addColumn('phone_number', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('notification_actions_rule_created')
    .on('notification_actions')
    .columns(['rule_key', 'created_at', 'notification_action_key'])
    .execute();

  // The delivery queue: one row per action to carry out, written in the transaction of the event that
  // fired the rule. A worker claims due rows (a lease, so a dead instance's claims come back) and
  // records every attempt.
  await db.schema
    .createTable('deliveries')
    .addColumn('delivery_key', 'text', (c) => c.primaryKey())
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    .addColumn('notification_action_key', 'text', (c) => c.notNull())
    .addColumn('rule_key', 'text', (c) => c.notNull())
    // JSON: everything the delivery needs (action, rule, thing, event, alert, message).
    .addColumn('payload', 'text', (c) => c.notNull())
    // pending | delivered | failed
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('claimed_by', 'text')
    .addColumn('claimed_until', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('deliveries_due').on('deliveries').columns(['status', 'next_attempt_at']).execute();
  await db.schema
    .createTable('delivery_attempts')
    .addColumn('attempt_key', 'text', (c) => c.primaryKey())
    .addColumn('delivery_key', 'text', (c) => c.notNull())
    .addColumn('notification_action_key', 'text', (c) => c.notNull())
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    // delivered | failed
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('delivery_attempts_action_at')
    .on('delivery_attempts')
    .columns(['notification_action_key', 'at', 'attempt_key'])
    .execute();

  await db.schema
    .createTable('alerts')
    .addColumn('alert_key', 'text', (c) => c.primaryKey())
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    .addColumn('thing_key', 'text')
    .addColumn('thing_name', 'text')
    .addColumn('rule_key', 'text')
    .addColumn('instruction_key', 'text')
    .addColumn('instruction_name', 'text')
    .addColumn('alert_type', 'integer', (c) => c.notNull())
    .addColumn('message', 'text', (c) => c.notNull())
    // JSON object: thing (as it was), instruction, alert_type_string, and what the device sent.
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('timestamp', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('alerts_organisation_timestamp')
    .on('alerts')
    .columns(['organisation_key', 'timestamp', 'alert_key'])
    .execute();
  await db.schema.createIndex('alerts_thing_timestamp').on('alerts').columns(['thing_key', 'timestamp']).execute();
  await db.schema.createIndex('alerts_instruction').on('alerts').column('instruction_key').execute();

  await db.schema
    .createTable('instructions')
    .addColumn('instruction_key', 'text', (c) => c.primaryKey())
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    .addColumn('thing_key', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    // JSON object: what the device receives as instruction_wrapper.instruction.
    .addColumn('definition', 'text', (c) => c.notNull())
    .addColumn('alert_key', 'text', (c) => c.notNull())
    // pending | delivered | acknowledged
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('delivered_at', 'bigint')
    .addColumn('acknowledged_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('instructions_thing_created')
    .on('instructions')
    .columns(['thing_key', 'created_at', 'instruction_key'])
    .execute();
  await db.schema.createIndex('instructions_alert').on('instructions').column('alert_key').execute();
}
