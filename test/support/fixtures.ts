/** Test data made through the public API, the way a client would make it. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Store } from '../../src/store/store.ts';
import type { TestServer } from './server.ts';

/** The fields of the Thing object, as alerts and audit trails embed it (docs/api.md, "Things"). */
export const THING_FIELDS = [
  'alive',
  'bi_directional',
  'coordinates',
  'created_at',
  'description',
  'last_beat',
  'last_event',
  'name',
  'state',
  'tags',
  'tags_array',
  'thing_key',
  'thing_template_key',
  'thing_template_name',
  'updated_at',
  'user_defined_properties',
];

let counter = 0;
export const unique = (prefix: string): string => `${prefix}-${++counter}-${randomBytes(3).toString('hex')}`;

export async function createRole(api: TestServer, token: string, abilities: number[], extra: object = {}) {
  const response = await api.request('POST', '/api/v3/roles', {
    token,
    body: { role: { name: unique('role'), abilities }, ...extra },
  });
  assert.equal(response.status, 200, response.text);
  return response.body.role as { role_key: string; name: string };
}

/** A user whose role has exactly `abilities`, signed in. */
export async function userWithAbilities(api: TestServer, adminToken: string, abilities: number[]) {
  const role = await createRole(api, adminToken, abilities);
  const email = `${unique('user')}@example.com`;
  const password = 'a long enough password';
  const created = await api.request('POST', '/api/v3/users', {
    token: adminToken,
    body: { user: { email, password, role_key: role.role_key, name: 'Test User' } },
  });
  assert.equal(created.status, 200, created.text);
  return {
    email,
    password,
    role,
    userKey: created.body.user.user_key as string,
    token: await api.signIn(email, password),
  };
}

/** A child organisation of the admin's OEM organisation with its own account admin, signed in. */
export async function childOrganisation(api: TestServer, adminToken: string, options: { isOem?: boolean } = {}) {
  const created = await api.request('POST', '/api/v3/organisations', {
    token: adminToken,
    body: { organisation: { name: unique('child'), is_oem: options.isOem ?? false } },
  });
  assert.equal(created.status, 200, created.text);
  const organisationKey = created.body.organisation.organisation_key as string;
  const childAdminRole = await findChildAdminRole(api, organisationKey);
  const email = `${unique('childadmin')}@example.com`;
  const password = 'child admin password';
  const user = await api.request('POST', '/api/v3/users', {
    token: adminToken,
    body: {
      is_oem: true,
      child_organisation_key: organisationKey,
      user: { email, password, role_key: childAdminRole },
    },
  });
  assert.equal(user.status, 200, user.text);
  return { organisationKey, email, password, token: await api.signIn(email, password) };
}

/** The key of a child organisation's built-in Account Admin role, seen by the OEM admin signed in to the child. */
async function findChildAdminRole(api: TestServer, organisationKey: string): Promise<string> {
  const token = await api.signIn(undefined, undefined, organisationKey);
  const roles = await api.request('GET', '/api/v3/roles', { token, query: { search: 'Account Admin' } });
  assert.equal(roles.body.total_count, 1, roles.text);
  return roles.body.roles[0].role_key as string;
}

/** The organisation's Default thing template key. */
export async function defaultTemplateKey(api: TestServer, token: string): Promise<string> {
  const response = await api.request('GET', '/api/v3/thing_templates', { token, query: { search: 'Default' } });
  const template = response.body.thing_templates.find((t: any) => t.name === 'Default');
  assert.ok(template, response.text);
  return template.thing_template_key as string;
}

export async function createThing(api: TestServer, token: string, thing: Record<string, unknown>, extra: object = {}) {
  const body = {
    thing: { name: unique('thing'), thing_template_key: await defaultTemplateKey(api, token), ...thing },
    ...extra,
  };
  const response = await api.request('POST', '/api/v3/things', { token, body });
  assert.equal(response.status, 200, response.text);
  return response.body.thing as { thing_key: string; name: string; [field: string]: unknown };
}

/** Creates something through the API: POSTs `body` to `path`, asserts 200 and returns the answer's body. */
export async function postCreated(api: TestServer, token: string, path: string, body: object) {
  const response = await api.request('POST', path, { token, body });
  assert.equal(response.status, 200, `${path}: ${response.text}`);
  return response.body;
}

/** Asserts that each endpoint answers 401 `unauthorized` without a token and with a bad one. */
export async function assertTokenRequired(api: TestServer, endpoints: readonly (readonly [string, string])[]) {
  for (const [method, path] of endpoints) {
    const none = await api.request(method, path);
    assert.equal(none.status, 401, `${method} ${path}`);
    assert.equal(none.body.errors[0].code, 'unauthorized');
    const bad = await api.request(method, path, { token: 'not-a-token' });
    assert.equal(bad.status, 401);
  }
}

/** Events stored for a thing (rows and those compacted into blocks), read straight from the server's store. */
export async function storedEventCount(api: TestServer, thingKey: string): Promise<number> {
  const thing = await api.server.store.db
    .selectFrom('things')
    .select('thing_id')
    .where('thing_key', '=', thingKey)
    .executeTakeFirst();
  return thing ? storedEventsOfThing(api.server.store, Number(thing.thing_id)) : 0;
}

/** Events stored for a thing by its id (rows and those compacted into blocks), read straight from a store. */
export async function storedEventsOfThing(store: Store, thingId: number): Promise<number> {
  const row = await store.db
    .selectFrom('events')
    .select((eb) => eb.fn.countAll().as('count'))
    .where('thing_id', '=', thingId)
    .executeTakeFirst();
  const blocks = await store.db
    .selectFrom('event_blocks')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('event_count'), eb.lit(0)).as('count'))
    .where('thing_id', '=', thingId)
    .executeTakeFirst();
  return Number(row?.count ?? 0) + Number(blocks?.count ?? 0);
}
