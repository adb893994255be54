/** The command line's account operations (src/users/admin.ts), in process against real stores. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ConfigError } from '../../src/core/config.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { checkNewAdmin, createAccountAdmin, resetPassword } from '../../src/users/admin.ts';
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
  });
}
