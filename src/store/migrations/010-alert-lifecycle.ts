import { type Kysely, sql } from 'kysely';

/**
 * Alert lifecycle and rule timing (docs/rules.md, "Alert lifecycle" and "How rules are evaluated"):
 * alerts gain a status (open, acknowledged, cleared) with who changed it and when; rules gain
 * `for_seconds` and `auto_clear`; a rule's state per thing gains the run of events its condition has
 * held on, the alert it keeps open, and, for `no_data` rules, when the thing's silence is next due to
 * be checked.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('alerts')
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('open'))
    .execute();
  await db.schema.alterTable('alerts').addColumn('acknowledged_at', 'bigint').execute();
  await db.schema.alterTable('alerts').addColumn('acknowledged_by', 'text').execute();
  await db.schema.alterTable('alerts').addColumn('cleared_at', 'bigint').execute();
  await db.schema.alterTable('alerts').addColumn('cleared_by', 'text').execute();
  await db.schema.alterTable('alerts').addColumn('comment', 'text').execute();
  await db.schema
    .createIndex('alerts_rule_timestamp')
    .on('alerts')
    .columns(['rule_key', 'timestamp', 'alert_key'])
    .execute();

  await db.schema
    .alterTable('rules')
    .addColumn('for_seconds', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('rules')
    .addColumn('auto_clear', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();

  // The event time (ms) of the first event of the run the condition has held on, and whether the rule
  // fired in that run (an on_enter rule without for_seconds fires at the run's first event).
  await db.schema.alterTable('rule_states').addColumn('run_started_at', 'bigint').execute();
  await db.schema
    .alterTable('rule_states')
    .addColumn('fired', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`update rule_states set fired = matched`.execute(db);
  // The alert an auto_clear rule keeps open for the thing (null when none).
  await db.schema.alterTable('rule_states').addColumn('open_alert_key', 'text').execute();
  // no_data: when the silence is next checked (server ms; null: not watched), when the watch began
  // (the silence of a thing that never sent anything counts from then), and the start of the last
  // silence the rule fired for.
  await db.schema.alterTable('rule_states').addColumn('due_at', 'bigint').execute();
  await db.schema.alterTable('rule_states').addColumn('watched_since', 'bigint').execute();
  await db.schema.alterTable('rule_states').addColumn('fired_silence', 'bigint').execute();
  await db.schema.createIndex('rule_states_due').on('rule_states').column('due_at').execute();
}
