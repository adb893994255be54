/**
 * Deleting a role while it is being given to a user, a key pair or an API key: the delete answers 409 (the role is
 * held) or the assignment answers 400 (the role is gone), never both 200. PostgreSQL runs the two
 * transactions side by side, so without row locks both succeeded; SQLite has one writer at a time.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createRole, unique } from '../support/fixtures.ts';
import type { ApiResponse } from '../support/http.ts';
import type { TestServer } from '../support/server.ts';
import { describeOnStores } from '../support/suites.ts';

const ROUNDS = 20;

/** Roles of users and key pairs that name no role (there must be none). */
async function dangling(api: TestServer): Promise<string[]> {
  const db = api.server.store.db;
  const roles = new Set((await db.selectFrom('roles').select('role_key').execute()).map((r) => r.role_key));
  const held = [
    ...(await db.selectFrom('users').select(['user_key as key', 'role_key']).execute()),
    ...(await db.selectFrom('key_pairs').select(['key_pair_key as key', 'role_key']).execute()),
    ...(await db.selectFrom('api_keys').select(['api_key_key as key', 'role_key']).execute()),
  ];
  return held.filter((h) => !roles.has(h.role_key)).map((h) => `${h.key} holds ${h.role_key}`);
}

/**
 * Runs ROUNDS races of DELETE /roles/:key against `assign` on a fresh role each, and checks each
 * outcome: exactly one of them wins, the loser answers as documented, and nothing holds a deleted role.
 */
async function race(
  api: TestServer,
  token: string,
  param: string,
  assign: (roleKey: string, round: number) => Promise<ApiResponse>,
): Promise<void> {
  const outcomes = { deleted: 0, assigned: 0 };
  for (let round = 0; round < ROUNDS; round++) {
    const role = await createRole(api, token, [11]);
    const [deleted, assigned] = await Promise.all([
      api.request('DELETE', `/api/v3/roles/${role.role_key}`, { token }),
      assign(role.role_key, round),
    ]);
    const both = `round ${round}: DELETE ${deleted.status} ${deleted.text}; assign ${assigned.status} ${assigned.text}`;
    assert.ok(!(deleted.status === 200 && assigned.status === 200), `both succeeded: ${both}`);
    if (deleted.status === 200) {
      outcomes.deleted++;
      assert.equal(assigned.status, 400, both);
      assert.equal(assigned.body.errors[0].code, 'not_found', both);
      assert.equal(assigned.body.errors[0].param, param, both);
    } else {
      outcomes.assigned++;
      assert.equal(deleted.status, 409, both);
      assert.equal(deleted.body.errors[0].param, 'role_key', both);
      assert.equal(assigned.status, 200, both);
      const fetched = await api.request('GET', `/api/v3/roles/${role.role_key}`, { token });
      assert.equal(fetched.status, 200, `the role a holder was given is still there: ${both}`);
    }
  }
  assert.equal(outcomes.deleted + outcomes.assigned, ROUNDS);
  assert.deepEqual(await dangling(api), [], 'no user or key pair holds a role that does not exist');
}

describeOnStores('role races', (ctx) => {
  it('when a role is deleted while a user is created with it then only one of the two succeeds', async () => {
    const token = await ctx.api.adminToken();
    await race(ctx.api, token, 'user.role_key', (roleKey) =>
      ctx.api.request('POST', '/api/v3/users', {
        token,
        body: {
          user: { email: `${unique('race')}@example.com`, password: 'a long enough password', role_key: roleKey },
        },
      }),
    );
  });

  it('when a role is deleted while a user is given it then only one of the two succeeds', async () => {
    const token = await ctx.api.adminToken();
    const keep = await createRole(ctx.api, token, [11]);
    const userKeys: string[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const created = await ctx.api.request('POST', '/api/v3/users', {
        token,
        body: {
          user: {
            email: `${unique('racer')}@example.com`,
            password: 'a long enough password',
            role_key: keep.role_key,
          },
        },
      });
      assert.equal(created.status, 200, created.text);
      userKeys.push(created.body.user.user_key);
    }
    await race(ctx.api, token, 'user.role_key', (roleKey, round) =>
      ctx.api.request('PUT', `/api/v3/users/${userKeys[round]}`, { token, body: { user: { role_key: roleKey } } }),
    );
  });

  it('when a role is deleted while a key pair is created with it then only one of the two succeeds', async () => {
    const token = await ctx.api.adminToken();
    await race(ctx.api, token, 'key_pair.role_key', (roleKey) =>
      ctx.api.request('POST', '/api/v3/key_pairs', {
        token,
        body: { key_pair: { name: unique('racer'), role_key: roleKey } },
      }),
    );
  });

  it('when a role is deleted while an API key is created with it then only one of the two succeeds', async () => {
    const token = await ctx.api.adminToken();
    await race(ctx.api, token, 'api_key.role_key', (roleKey) =>
      ctx.api.request('POST', '/api/v3/api_keys', {
        token,
        body: { api_key: { name: unique('racer'), role_key: roleKey } },
      }),
    );
  });

  it('when a role is changed while it is deleted then the change is a 404 or comes before the delete', async () => {
    const token = await ctx.api.adminToken();
    let changedFirst = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const role = await createRole(ctx.api, token, [11]);
      const [changed, deleted] = await Promise.all([
        ctx.api.request('PUT', `/api/v3/roles/${role.role_key}`, { token, body: { role: { abilities: [11, 21] } } }),
        ctx.api.request('DELETE', `/api/v3/roles/${role.role_key}`, { token }),
      ]);
      const both = `round ${round}: PUT ${changed.status} ${changed.text}; DELETE ${deleted.status} ${deleted.text}`;
      assert.equal(deleted.status, 200, both);
      assert.ok(changed.status === 200 || changed.status === 404, both);
      // The audit trail tells the same story: an update recorded only before the delete.
      const trail = await ctx.api.request('GET', '/api/v3/audit_trails', {
        token,
        query: { entity_key: role.role_key, order: 'asc' },
      });
      const actions = trail.body.audit_trails.map((t: { action_taken: string }) => t.action_taken);
      if (changed.status === 200) {
        changedFirst++;
        assert.deepEqual(actions, ['create', 'update', 'delete'], both);
      } else assert.deepEqual(actions, ['create', 'delete'], both);
    }
    assert.ok(changedFirst <= ROUNDS);
  });
});
