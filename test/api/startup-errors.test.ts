/** Start-up failures told as the setting to change (src/startup.ts), in process against real stores. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/core/config.ts';
import { openConfiguredStore } from '../../src/startup.ts';
import { POSTGRES_URL, STORES } from '../support/stores.ts';

const postgres = STORES.find((s) => s.name === 'postgres');

describe('start-up errors', () => {
  it('when the PostgreSQL schema cannot be made then the error names DATABASE_SCHEMA', {
    skip: postgres?.skip ?? 'no PostgreSQL case',
  }, async () => {
    // Names beginning with pg_ are the system's own: PostgreSQL refuses to create them.
    const config = loadConfig({ DATABASE_URL: POSTGRES_URL, DATABASE_SCHEMA: 'pg_thingbase_refused' });
    const error = await openConfiguredStore(config).then(
      () => assert.fail('opened'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof ConfigError);
    assert.match(
      error.message,
      /cannot create or use the PostgreSQL schema pg_thingbase_refused \(.+\): set DATABASE_SCHEMA/,
    );
  });

  it('when the database cannot be reached then the error names DATABASE_URL and hides its password', async () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://thingbase:s3cret@127.0.0.1:1/none' });
    const error = await openConfiguredStore(config).then(
      () => assert.fail('opened'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof ConfigError);
    assert.match(error.message, /cannot reach the database at postgres:\/\/thingbase:\*\*\*@127\.0\.0\.1:1\/none/);
    assert.ok(!error.message.includes('s3cret'));
    const bare = await openConfiguredStore(loadConfig({ DATABASE_URL: 'postgres://127.0.0.1:1/none' })).then(
      () => assert.fail('opened'),
      (e: unknown) => e,
    );
    assert.match((bare as Error).message, /check DATABASE_URL/);
  });
});
