/** The command line's account operations (src/users/admin.ts), in process against real stores. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bootstrapFirstAdmin } from '../../src/bootstrap.ts';
import { ConfigError } from '../../src/core/config.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { COMMAND_LINE, checkNewAdmin, createAccountAdmin, resetPassword } from '../../src/users/admin.ts';
import { STORES } from '../support/stores.ts';

describe('new admins', () => {
  it('when the e-mail address is not one or the password too short then the admin is refused', () => {
    assert.equal(checkNewAdmin('  Boss@Example.COM ', undefined), 'boss@example.com');
    assert.throws(() => checkNewAdmin('not an address', undefined), ConfigError);
    assert.throws(() => checkNewAdmin('a@b', 'short'), /password must be/);
  });
});

for (const storeCase of STORES) {
  describe(`admin accounts on a store [${storeCase.name}]`, { skip: storeCase.skip }, () => {
    const settings = storeCase.fresh();
    let store: Store;
    before(async () => {
      store = await openStore({ databaseUrl: settings.databaseUrl, schema: settings.databaseSchema });
    });
    after(async () => {
      await store.close();
      await storeCase.dispose(settings);
    });

    it('when the store has no organisation yet then no admin is made', async () => {
      await assert.rejects(
        createAccountAdmin(store, { email: 'first@example.com', password: 'a long password', passwordHashCost: 1024 }),
        /the database has no organisation yet/,
      );
      await assert.rejects(
        resetPassword(store, { email: 'first@example.com', passwordHashCost: 1024 }),
        /no user has the e-mail address/,
      );
    });

    it('when the command line makes the first admin on an empty store then the organisation and the admin are audited', async () => {
      const first = await bootstrapFirstAdmin(store, {
        adminEmail: 'first@example.com',
        adminPassword: 'a long password',
        orgName: 'First',
        passwordHashCost: 1024,
        actor: COMMAND_LINE,
      });
      assert.ok(first);
      await createAccountAdmin(store, {
        email: 'second@example.com',
        password: 'a long password',
        passwordHashCost: 1024,
      });
      const trail = await store.db
        .selectFrom('audit_trails')
        .select(['organisation_key', 'action_taken', 'entity_type', 'entity_name', 'user_name'])
        .orderBy('timestamp')
        .orderBy('entity_type')
        .execute();
      const made = (entityType: string, entityName: string) => ({
        organisation_key: first.organisationKey,
        action_taken: 'create',
        entity_type: entityType,
        entity_name: entityName,
        user_name: 'thingbase command line',
      });
      assert.deepEqual(
        trail.filter((row) => row.entity_type === 'Organisation' || row.entity_type === 'User'),
        [made('Organisation', 'First'), made('User', 'first@example.com'), made('User', 'second@example.com')],
      );
    });
  });
}
