import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { openStore } from '../../src/store/store.ts';
import { Device, type KeyPair } from '../support/device.ts';
import { call } from '../support/http.ts';
import { type CliResult, runCli, serveProcess, startPassword, stopProcess } from '../support/process.ts';
import { STORES } from '../support/stores.ts';

const lastLine = (text: string) => text.trimEnd().split('\n').at(-1) ?? '';

function succeeded(result: CliResult): CliResult {
  assert.equal(result.code, 0, `exit code ${result.code}:\n${result.stdout}\n${result.stderr}`);
  return result;
}

async function signIn(url: string, email: string, password: string) {
  return call(url, 'POST', '/api_sign_in', { body: { email, password } });
}

describe('thingbase command line', () => {
  it('when asked --version then it prints the version of package.json', async () => {
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    const result = succeeded(await runCli(['--version']));
    assert.equal(result.stdout.trim(), version);
  });

  it('when given an unknown command then it says so and exits non-zero', async () => {
    const result = await runCli(['bogus']);
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /unknown command 'bogus'/);
  });
});

for (const store of STORES) {
  describe(`thingbase command line on a store [${store.name}]`, { skip: store.skip }, () => {
    const made: { databaseUrl: string; databaseSchema?: string }[] = [];
    const running: ChildProcess[] = [];
    after(async () => {
      for (const child of running) await stopProcess(child);
      for (const settings of made) await store.dispose(settings);
    });
    const freshEnv = (): Record<string, string> => {
      const settings = store.fresh();
      made.push(settings);
      return {
        DATABASE_URL: settings.databaseUrl,
        ...(settings.databaseSchema ? { DATABASE_SCHEMA: settings.databaseSchema } : {}),
      };
    };
    const serve = async (env: Record<string, string>) => {
      const server = await serveProcess(env);
      running.push(server.child);
      return server;
    };

    it('when migrate runs then it brings the schema up to date and exits', async () => {
      const env = freshEnv();
      const first = succeeded(await runCli(['migrate'], env));
      assert.match(first.stdout, /Applied \d+ migration\(s\): 001-core/);
      const second = succeeded(await runCli(['migrate'], env));
      assert.match(second.stdout, /schema is up to date/);
    });

    it('when the schema holds a migration of a newer release then migrate and serve say so, naming it', async () => {
      const env = freshEnv();
      succeeded(await runCli(['migrate'], env));
      // What a newer release leaves: a migration this one does not know.
      const store = await openStore({ databaseUrl: env.DATABASE_URL as string, schema: env.DATABASE_SCHEMA });
      try {
        await store.db
          .insertInto('kysely_migration' as never)
          .values({ name: '999-from-a-newer-release', timestamp: new Date().toISOString() } as never)
          .execute();
      } finally {
        await store.close();
      }
      for (const args of [['migrate'], ['serve']]) {
        const refused = await runCli(args, { ...env, PORT: '0', MQTT_PORT: '0' });
        assert.equal(refused.code, 1, refused.stderr);
        assert.match(
          refused.stderr,
          /migrated by a newer release of Thingbase \(migration 999-from-a-newer-release is unknown to this one\): run that release or a newer one, or restore the backup/,
        );
        assert.doesNotMatch(refused.stderr, /corrupted/);
      }
    });

    it('when admins are created and a password reset then the new passwords sign in and the old one does not', async () => {
      const env = freshEnv();
      // On an empty store, the first admin also makes the first organisation.
      const first = succeeded(await runCli(['admin', 'create', '--email', 'Boss@Example.com'], env));
      const bossPassword = lastLine(first.stdout);
      assert.match(first.stdout, /shown only this once/);
      assert.match(bossPassword, /^\S{16}$/);
      const second = succeeded(
        await runCli(['admin', 'create', '--email', 'deputy@example.com', '--password', 'chosen password'], env),
      );
      assert.doesNotMatch(second.stdout, /chosen password|shown only this once/);
      assert.match(second.stdout, /account admin deputy@example\.com of the organisation Default/);

      const duplicate = await runCli(['admin', 'create', '--email', 'boss@example.com'], env);
      assert.notEqual(duplicate.code, 0);
      assert.match(duplicate.stderr, /a user with the e-mail address boss@example\.com already exists/);
      const short = await runCli(['admin', 'create', '--email', 'third@example.com', '--password', 'short'], env);
      assert.notEqual(short.code, 0);
      assert.match(short.stderr, /password must be 8 to 256 characters/);

      const server = await serve(env);
      assert.doesNotMatch(server.output(), /shown only this once/, 'the store has users: serve makes no admin');
      const boss = await signIn(server.url, 'boss@example.com', bossPassword);
      assert.equal(boss.status, 200, boss.text);
      assert.equal(boss.body.organisation.name, 'Default');
      const users = await call(server.url, 'GET', '/api/v3/users', { token: boss.body.auth_token });
      assert.equal(users.status, 200, 'an account admin');
      const templates = await call(server.url, 'GET', '/api/v3/thing_templates', { token: boss.body.auth_token });
      assert.match(templates.text, /"name":"Default"/, 'the first organisation was provisioned in full');
      const deputy = await signIn(server.url, 'deputy@example.com', 'chosen password');
      assert.equal(deputy.status, 200, deputy.text);
      assert.equal(deputy.body.organisation.organisation_key, boss.body.organisation.organisation_key);

      const reset = succeeded(await runCli(['admin', 'reset-password', '--email', 'boss@example.com'], env));
      const newPassword = lastLine(reset.stdout);
      assert.match(newPassword, /^\S{16}$/);
      assert.notEqual(newPassword, bossPassword);
      assert.equal((await signIn(server.url, 'boss@example.com', newPassword)).status, 200);
      assert.equal((await signIn(server.url, 'boss@example.com', bossPassword)).status, 401);

      const unknown = await runCli(['admin', 'reset-password', '--email', 'nobody@example.com'], env);
      assert.notEqual(unknown.code, 0);
      assert.match(unknown.stderr, /no user has the e-mail address nobody@example\.com/);
      assert.equal(unknown.stdout, '');
      const missing = await runCli(['admin', 'reset-password'], env);
      assert.notEqual(missing.code, 0);
      assert.match(missing.stderr, /--email/);
    });

    it('when THINGBASE_SECRET_KEY changes then the start stops until rotate-secret-key re-seals the key pairs', async () => {
      const env = freshEnv();
      // Key pairs sealed under the key generated on the first start.
      const first = await serve(env);
      const password = startPassword(first.output()) as string;
      const token = (await signIn(first.url, 'admin@localhost', password)).body.auth_token as string;
      const created = await call(first.url, 'POST', '/api/v3/key_pairs', {
        token,
        body: { key_pair: { name: 'boiler gateway' } },
      });
      assert.equal(created.status, 200, created.text);
      const keyPair = created.body.key_pair as KeyPair;
      assert.equal((await new Device(first.url, keyPair).register({ thing_key: 'boiler-1' })).status, 200);
      // A notification action's credentials are sealed under the same key.
      const rule = await call(first.url, 'POST', '/api/v3/rules', {
        token,
        body: { rule: { name: 'hot', condition: 'temperature > 80' } },
      });
      const action = await call(first.url, 'POST', '/api/v3/notification_actions', {
        token,
        body: {
          notification_action: {
            type: 'CallHttpUrlAction',
            rule_key: rule.body.rule.rule_key,
            method: 'POST',
            url: 'https://example.com/hook',
            headers: { Authorization: 'Bearer hook-secret' },
          },
        },
      });
      assert.equal(action.status, 200, action.text);
      const actionKey = action.body.notification_action.notification_action_key as string;
      await stopProcess(first.child);

      const withNewKey = { ...env, THINGBASE_SECRET_KEY: 'a new key for the sealed secrets' };
      const refused = await runCli(['serve'], withNewKey);
      assert.notEqual(refused.code, 0, refused.stdout);
      assert.match(refused.stderr, /THINGBASE_SECRET_KEY does not open 2 of the 2 secrets sealed in the database/);
      assert.match(refused.stderr, /thingbase rotate-secret-key/);

      const wrongOld = await runCli(['rotate-secret-key', '--old-key', 'not the old key'], withNewKey);
      assert.notEqual(wrongOld.code, 0);
      assert.match(wrongOld.stderr, /Nothing was changed/);

      const rotated = succeeded(await runCli(['rotate-secret-key'], withNewKey));
      assert.match(rotated.stdout, /Re-sealed 2 secret\(s\) under THINGBASE_SECRET_KEY/);
      const again = succeeded(await runCli(['rotate-secret-key'], withNewKey));
      assert.match(again.stdout, /Re-sealed 0 secret\(s\) under THINGBASE_SECRET_KEY; 2 already were/);

      const second = await serve(withNewKey);
      const event = await new Device(second.url, keyPair).event({ thing_key: 'boiler-1', data: { temperature: 71.5 } });
      assert.equal(event.status, 200, event.text);
      const secondToken = (await signIn(second.url, 'admin@localhost', password)).body.auth_token as string;
      const reread = await call(second.url, 'GET', `/api/v3/notification_actions/${actionKey}`, { token: secondToken });
      assert.equal(reread.body.notification_action.headers.Authorization, 'Bearer hook-secret');
      await stopProcess(second.child);

      // Without the variable, the generated key no longer opens them.
      const unset = await runCli(['serve'], env);
      assert.notEqual(unset.code, 0);
      assert.match(unset.stderr, /THINGBASE_SECRET_KEY is not set, and the key generated and kept in the database/);

      // The old key may also be given by THINGBASE_OLD_SECRET_KEY.
      const newer = {
        ...env,
        THINGBASE_SECRET_KEY: 'a newer key',
        THINGBASE_OLD_SECRET_KEY: withNewKey.THINGBASE_SECRET_KEY,
      };
      succeeded(await runCli(['rotate-secret-key'], newer));
      const third = await serve({ ...env, THINGBASE_SECRET_KEY: 'a newer key' });
      const heartbeat = await new Device(third.url, keyPair).heartbeat({ thing_key: 'boiler-1' });
      assert.equal(heartbeat.status, 200, heartbeat.text);
      await stopProcess(third.child);
    });
  });
}
