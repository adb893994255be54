/**
 * Notification actions' credentials at rest (src/actions/credentials.ts) against a real store, on each
 * engine: an action stored before sealing is sealed by the next start's check of the secret key, read
 * back whole, and a key that does not open it stops the start.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { findAction } from '../../src/actions/service.ts';
import { ConfigError } from '../../src/core/config.ts';
import { openSecretBox, rotateSecretKey } from '../../src/keypairs/secret-key.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { STORES } from '../support/stores.ts';

const NOW = Date.UTC(2026, 10, 1);

for (const storeCase of STORES) {
  describe(`notification action credentials at rest [${storeCase.name}]`, { skip: storeCase.skip }, () => {
    const settings = storeCase.fresh();
    let store: Store;

    before(async () => {
      store = await openStore({ databaseUrl: settings.databaseUrl, schema: settings.databaseSchema });
    });
    after(async () => {
      await store?.close();
      await storeCase.dispose(settings);
    });

    it('when an action was stored before sealing then the start seals it, and only its key opens it', async () => {
      const plain = {
        notification_action_key: 'legacyhook',
        organisation_key: 'org',
        rule_key: 'rule',
        type: 'CallHttpUrlAction',
        recipient: null,
        cc: null,
        bcc: null,
        subject: null,
        body: '',
        method: 'POST',
        url: 'https://hooks:legacy-password@example.com/in?api_key=legacy-query&site=north',
        headers: JSON.stringify({ Authorization: 'Bearer legacy-header', 'X-Site': 'north' }),
        query: JSON.stringify({ token: 'legacy-token' }),
        name: null,
        phone_number: null,
        created_at: NOW,
        updated_at: NOW,
      };
      const email = {
        ...plain,
        notification_action_key: 'legacymail',
        type: 'EmailNotificationAction',
        recipient: 'ops@example.com',
        body: null,
        method: null,
        url: null,
        headers: null,
        query: null,
      };
      await store.db
        .insertInto('notification_actions')
        .values([
          { ...plain, secrets_sealed: null },
          { ...email, secrets_sealed: null },
        ])
        .execute();

      const box = await openSecretBox(store, 'the first key');
      const rows = await store.db
        .selectFrom('notification_actions')
        .selectAll()
        .orderBy('notification_action_key')
        .execute();
      const [sealed, mail] = rows;
      assert.ok(sealed && mail);
      assert.doesNotMatch(JSON.stringify(sealed), /legacy-(password|query|header|token)/);
      assert.equal(sealed.url, 'https://[redacted]@example.com/in?api_key=[redacted]&site=north');
      assert.deepEqual(JSON.parse(String(sealed.headers)), { Authorization: '[redacted]', 'X-Site': '[redacted]' });
      assert.match(String(sealed.secrets_sealed), /^v1:/);
      assert.equal(mail.secrets_sealed, null, 'a kind without credentials has nothing to seal');
      assert.equal(mail.recipient, 'ops@example.com');
      assert.deepEqual(await findAction(store.db, box, ['org'], 'legacyhook'), plain);
      assert.deepEqual(await findAction(store.db, box, ['org'], 'legacymail'), email);

      // Opened at the next start by the same key; another key stops the start until the rotation.
      await openSecretBox(store, 'the first key');
      await assert.rejects(openSecretBox(store, 'another key'), (error: Error) => {
        assert.ok(error instanceof ConfigError);
        assert.match(error.message, /does not open 1 of the 1 secrets sealed in the database/);
        return true;
      });
      const result = await rotateSecretKey(store, { oldKey: 'the first key', newKey: 'another key' });
      assert.deepEqual(result, { resealed: 1, unchanged: 0 });
      const rotated = await openSecretBox(store, 'another key');
      assert.deepEqual(await findAction(store.db, rotated, ['org'], 'legacyhook'), plain);
    });
  });
}
