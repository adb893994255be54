import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { userWithAbilities } from '../support/fixtures.ts';
import { startIdentityProvider } from '../support/identity-provider.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startServer } from '../support/server.ts';
import { describeOnStores } from '../support/suites.ts';

const provider = await startIdentityProvider({ [ADMIN_EMAIL]: 'idp password', 'stranger@example.com': 'idp password' });
after(() => provider.close());
const idpConfig = join(mkdtempSync(join(tmpdir(), 'thingbase-idp-')), 'idp.json');
const providerEntry = {
  token_url: `${provider.baseUrl}/token`,
  jwks_url: `${provider.baseUrl}/jwks`,
  issuer: provider.issuer,
  audience: provider.audience,
};
writeFileSync(
  idpConfig,
  JSON.stringify({
    azure: providerEntry,
    // Expects tokens for another audience: every token it gets fails verification.
    strict: { ...providerEntry, audience: 'another-application' },
  }),
);

describeOnStores(
  'sessions',
  (ctx) => {
    it('when the admin signs in then the answer is the documented Session object', async () => {
      const response = await ctx.api.request('POST', '/api_sign_in', {
        body: { email: ADMIN_EMAIL.toUpperCase(), password: ADMIN_PASSWORD },
      });
      assert.equal(response.status, 200, response.text);
      const session = response.body;
      assert.equal(session.success, true);
      assert.ok(session.auth_token.length >= 22, 'at least 128 bits of token');
      assert.equal(session.email, ADMIN_EMAIL);
      assert.equal(session.role, 'Account Admin');
      assert.equal(session.time_zone, 'UTC');
      assert.equal(session.organisation.name, 'Acme');
      assert.match(session.organisation.organisation_key, /^[0-9a-z]{10}$/);
      assert.equal(typeof session.organisation.license.license_key, 'string');
    });

    it('when the caller asks what it may do then the answer spells out its role with all expanded', async () => {
      const admin = await ctx.api.signIn();
      const asAdmin = await ctx.api.request('GET', '/api/v3/caller', { token: admin });
      assert.equal(asAdmin.status, 200, asAdmin.text);
      assert.equal(asAdmin.body.caller.email, ADMIN_EMAIL);
      assert.equal(asAdmin.body.caller.account_admin, true);
      assert.deepEqual(asAdmin.body.caller.abilities, [995]);
      assert.deepEqual(asAdmin.body.caller.allowed.api_key, ['read', 'create', 'update', 'delete']);
      assert.ok(Object.keys(asAdmin.body.caller.allowed).length >= 14, 'every class');
      assert.equal(asAdmin.body.caller.allowed.all, undefined, 'all is spelled out, not a class');

      // 15 = everything on things, 91 = read alerts, 992 = create anything.
      const reader = await userWithAbilities(ctx.api, admin, [91, 15, 992]);
      const asReader = await ctx.api.request('GET', '/api/v3/caller', { token: reader.token });
      assert.equal(asReader.status, 200, asReader.text);
      const caller = asReader.body.caller;
      assert.equal(caller.email, reader.email);
      assert.equal(caller.user_key, reader.userKey);
      assert.equal(caller.role_key, reader.role.role_key);
      assert.equal(caller.account_admin, false);
      assert.deepEqual(caller.abilities, [15, 91, 992]);
      assert.deepEqual(caller.allowed.thing, ['read', 'create', 'update', 'delete']);
      assert.deepEqual(caller.allowed.alert, ['read', 'create']);
      assert.deepEqual(caller.allowed.rule, ['create']);
      assert.equal(caller.organisation_key, asAdmin.body.caller.organisation_key);

      assert.equal((await ctx.api.request('GET', '/api/v3/caller', {})).status, 401);
    });

    it('when a token is issued then the store holds only its hash', async () => {
      const token = await ctx.api.signIn();
      const rows = await ctx.api.server.store.db.selectFrom('sessions').select('token_hash').execute();
      const hashes = rows.map((r) => r.token_hash);
      assert.ok(hashes.includes(createHash('sha256').update(token).digest('hex')));
      assert.ok(!hashes.includes(token));
    });

    it('when the password or the address is wrong then sign-in is a 401 with success false', async () => {
      for (const body of [
        { email: ADMIN_EMAIL, password: 'wrong password' },
        { email: 'nobody@example.com', password: ADMIN_PASSWORD },
      ]) {
        const response = await ctx.api.request('POST', '/api_sign_in', { body });
        assert.equal(response.status, 401);
        assert.equal(response.body.success, false);
        assert.equal(response.body.errors[0].code, 'unauthorized');
        assert.equal(response.body.auth_token, undefined);
      }
    });

    it('when sign-in misses the e-mail address then it is a 400 naming it', async () => {
      const response = await ctx.api.request('POST', '/api_sign_in', { body: { password: 'x' } });
      assert.equal(response.status, 400);
      assert.deepEqual(response.body.errors[0], { code: 'required', param: 'email', message: 'is required' });
    });

    it('when a user signs out then the token answers 401 from then on', async () => {
      const token = await ctx.api.signIn();
      assert.equal((await ctx.api.request('GET', '/api/v3/roles', { token })).status, 200);
      const out = await ctx.api.request('DELETE', '/api_sign_out', { token });
      assert.equal(out.status, 200);
      assert.deepEqual(out.body, { success: true, message: 'Signed out successfully' });
      const after = await ctx.api.request('GET', '/api/v3/roles', { token });
      assert.equal(after.status, 401);
      assert.equal((await ctx.api.request('DELETE', '/api_sign_out', { token })).status, 401);
    });

    it('when a signed-in user loses an ability, its role or the user itself then the next request knows at once', async () => {
      const admin = await ctx.api.adminToken();
      const user = await userWithAbilities(ctx.api, admin, [61, 11]);
      // Past the moment of the last change, so the server keeps this caller in its cache.
      await sleep(1100);
      const roles = () => ctx.api.request('GET', '/api/v3/roles', { token: user.token });
      assert.equal((await roles()).status, 200);
      assert.equal((await roles()).status, 200);
      const narrowed = await ctx.api.request('PUT', `/api/v3/roles/${user.role.role_key}`, {
        token: admin,
        body: { role: { abilities: [11] } },
      });
      assert.equal(narrowed.status, 200, narrowed.text);
      assert.equal((await roles()).status, 403);
      const things = () => ctx.api.request('GET', '/api/v3/things', { token: user.token });
      assert.equal((await things()).status, 200);
      const removed = await ctx.api.request('DELETE', `/api/v3/users/${user.userKey}`, { token: admin });
      assert.equal(removed.status, 200, removed.text);
      assert.equal((await things()).status, 401);
    });

    it('when two servers share a PostgreSQL store then a sign-out on one is refused by the other within seconds', {
      skip: ctx.store.name === 'postgres' ? false : 'one server per SQLite store',
    }, async () => {
      const other = await startServer(ctx.store, { storeSettings: ctx.api.storeSettings });
      try {
        const token = await ctx.api.signIn();
        await sleep(1100);
        const roles = () => other.request('GET', '/api/v3/roles', { token });
        assert.equal((await roles()).status, 200);
        assert.equal((await roles()).status, 200);
        assert.equal((await ctx.api.request('DELETE', '/api_sign_out', { token })).status, 200);
        const deadline = Date.now() + 5000;
        let status = (await roles()).status;
        while (status === 200 && Date.now() < deadline) {
          await sleep(100);
          status = (await roles()).status;
        }
        assert.equal(status, 401);
      } finally {
        await other.close();
      }
    });

    it('when one address fails more than 10 times then sign-in is a 429 with Retry-After, even with the right password', async () => {
      const admin = await ctx.api.adminToken();
      const user = await userWithAbilities(ctx.api, admin, [11]);
      for (let i = 0; i < 10; i++) {
        const failed = await ctx.api.request('POST', '/api_sign_in', {
          body: { email: user.email, password: `guess ${i}` },
        });
        assert.equal(failed.status, 401, `attempt ${i + 1}`);
      }
      const limited = await ctx.api.request('POST', '/api_sign_in', {
        body: { email: user.email, password: user.password },
      });
      assert.equal(limited.status, 429);
      assert.equal(limited.body.errors[0].code, 'rate_limited');
      const retryAfter = Number(limited.headers['retry-after']);
      assert.ok(retryAfter > 0 && retryAfter <= 900, `Retry-After ${retryAfter}`);
      // Another address is not affected.
      assert.equal(
        (await ctx.api.request('POST', '/api_sign_in', { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } }))
          .status,
        200,
      );
    });

    it('when signing in through the identity provider then its ID token is verified and a session opens', async () => {
      const response = await ctx.api.request('POST', '/azure_api_sign_in', {
        body: { client_id: ADMIN_EMAIL, code: 'idp password', mode: 'azure' },
      });
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.success, true);
      assert.equal(response.body.email, ADMIN_EMAIL);
      const grant = provider.grants.at(-1);
      assert.equal(grant?.get('grant_type'), 'password');
      assert.equal(grant?.get('username'), ADMIN_EMAIL);
      assert.equal(grant?.get('client_id'), provider.audience);
      const roles = await ctx.api.request('GET', '/api/v3/roles', { token: response.body.auth_token });
      assert.equal(roles.status, 200);
      const defaultMode = await ctx.api.request('POST', '/azure_api_sign_in', {
        body: { client_id: ADMIN_EMAIL, code: 'idp password' },
      });
      assert.equal(defaultMode.status, 200, 'mode defaults to azure');
    });

    it('when the identity provider refuses, its token does not verify, or its user is unknown here then it is a 401', async () => {
      const refused = await ctx.api.request('POST', '/azure_api_sign_in', {
        body: { client_id: ADMIN_EMAIL, code: 'wrong', mode: 'azure' },
      });
      assert.equal(refused.status, 401);
      assert.equal(refused.body.success, false);
      const unverifiable = await ctx.api.request('POST', '/azure_api_sign_in', {
        body: { client_id: ADMIN_EMAIL, code: 'idp password', mode: 'strict' },
      });
      assert.equal(unverifiable.status, 401);
      const stranger = await ctx.api.request('POST', '/azure_api_sign_in', {
        body: { client_id: 'stranger@example.com', code: 'idp password' },
      });
      assert.equal(stranger.status, 401);
    });

    it('when no identity provider is configured under the mode then it is a 400', async () => {
      const response = await ctx.api.request('POST', '/azure_api_sign_in', {
        body: { client_id: ADMIN_EMAIL, code: 'x', mode: 'okta' },
      });
      assert.equal(response.status, 400);
      assert.equal(response.body.errors[0].param, 'mode');
      const missing = await ctx.api.request('POST', '/azure_api_sign_in', { body: { code: 'x' } });
      assert.equal(missing.status, 400);
      assert.equal(missing.body.errors[0].param, 'client_id');
    });
  },
  { env: { IDP_CONFIG: idpConfig } },
);

describeOnStores(
  'session expiry',
  (ctx) => {
    it('when a token goes unused longer than TOKEN_IDLE_TTL then it answers 401', async () => {
      const token = await ctx.api.signIn();
      await sleep(1300);
      assert.equal((await ctx.api.request('GET', '/api/v3/roles', { token })).status, 401);
    });

    it('when a token is kept in use then it lives until TOKEN_MAX_TTL and no longer', async () => {
      const token = await ctx.api.signIn();
      const started = Date.now();
      while (Date.now() - started < 1700) {
        assert.equal((await ctx.api.request('GET', '/api/v3/roles', { token })).status, 200);
        await sleep(300);
      }
      await sleep(Math.max(0, 2300 - (Date.now() - started)));
      assert.equal((await ctx.api.request('GET', '/api/v3/roles', { token })).status, 401);
    });
  },
  { env: { TOKEN_IDLE_TTL: '1', TOKEN_MAX_TTL: '2' } },
);

describeOnStores(
  'sessions while the store refuses writes',
  (ctx) => {
    it('when recording a token use fails then the request is still answered, for sessions and API keys', async () => {
      const token = await ctx.api.signIn();
      const key = await ctx.api.request('POST', '/api/v3/api_keys', { token, body: { api_key: { name: 'reader' } } });
      assert.equal(key.status, 200, key.text);
      const db = ctx.api.server.store.db;
      // What a full disk does to SQLite, or a read-only PostgreSQL: every change of these rows fails.
      if (ctx.api.server.store.engine === 'sqlite') {
        for (const table of ['sessions', 'api_keys']) {
          await sql
            .raw(`CREATE TRIGGER refuse_${table} BEFORE UPDATE ON ${table} BEGIN SELECT RAISE(ABORT, 'disk full'); END`)
            .execute(db);
        }
      } else {
        await sql
          .raw(
            `CREATE FUNCTION refuse_touch() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'disk full'; END $$ LANGUAGE plpgsql`,
          )
          .execute(db);
        for (const table of ['sessions', 'api_keys']) {
          await sql
            .raw(
              `CREATE TRIGGER refuse_${table} BEFORE UPDATE ON ${table} FOR EACH ROW EXECUTE FUNCTION refuse_touch()`,
            )
            .execute(db);
        }
      }
      // Past the touch interval (a tenth of TOKEN_IDLE_TTL): this use is recorded, or tried.
      await sleep(2100);
      for (const used of [token, key.body.api_key.token as string]) {
        const answer = await ctx.api.request('GET', '/api/v3/roles', { token: used });
        assert.equal(answer.status, 200, answer.text);
      }
    });
  },
  { env: { TOKEN_IDLE_TTL: '20' } },
);
