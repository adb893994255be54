import type { Kysely } from 'kysely';

/** Organisations, roles, users, sessions, audit trails and sign-in throttling. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('organisations')
    .addColumn('organisation_key', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('is_oem', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('parent_organisation_key', 'text')
    .addColumn('license_key', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('organisations_parent').on('organisations').column('parent_organisation_key').execute();

  await db.schema
    .createTable('roles')
    .addColumn('role_key', 'text', (c) => c.primaryKey())
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('abilities', 'text', (c) => c.notNull())
    .addColumn('account_admin', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('built_in', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('roles_organisation_name', ['organisation_key', 'name'])
    .execute();
  await db.schema
    .createIndex('roles_organisation_created')
    .on('roles')
    // Lists sort by created_at with the key as tie-break: the key in the index spares a sort step.
    .columns(['organisation_key', 'created_at', 'role_key'])
    .execute();

  await db.schema
    .createTable('users')
    .addColumn('user_key', 'text', (c) => c.primaryKey())
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull().unique())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('role_key', 'text', (c) => c.notNull())
    .addColumn('time_zone', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('users_organisation_created')
    .on('users')
    .columns(['organisation_key', 'created_at', 'user_key'])
    .execute();
  await db.schema.createIndex('users_role').on('users').column('role_key').execute();

  await db.schema
    .createTable('sessions')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_key', 'text', (c) => c.notNull())
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    .addColumn('role_key', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sessions_user').on('sessions').column('user_key').execute();

  await db.schema
    .createTable('audit_trails')
    .addColumn('audit_trail_key', 'text', (c) => c.primaryKey())
    .addColumn('organisation_key', 'text', (c) => c.notNull())
    .addColumn('action_taken', 'text', (c) => c.notNull())
    .addColumn('entity_type', 'text', (c) => c.notNull())
    .addColumn('entity_key', 'text', (c) => c.notNull())
    .addColumn('entity_name', 'text')
    .addColumn('new_entity_contents', 'text', (c) => c.notNull())
    .addColumn('old_entity_contents', 'text', (c) => c.notNull())
    .addColumn('timestamp', 'bigint', (c) => c.notNull())
    .addColumn('user_name', 'text', (c) => c.notNull())
    .addColumn('role_name', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('audit_trails_organisation_timestamp')
    .on('audit_trails')
    .columns(['organisation_key', 'timestamp', 'audit_trail_key'])
    .execute();
  await db.schema
    .createIndex('audit_trails_entity')
    .on('audit_trails')
    .columns(['organisation_key', 'entity_type', 'entity_key'])
    .execute();

  await db.schema
    .createTable('sign_in_failures')
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('client_address', 'text', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sign_in_failures_email').on('sign_in_failures').columns(['email', 'at']).execute();
  await db.schema
    .createIndex('sign_in_failures_address')
    .on('sign_in_failures')
    .columns(['client_address', 'at'])
    .execute();
}
