import assert from 'node:assert/strict';
import { it } from 'node:test';
import { childOrganisation, createRole, createThing, unique, userWithAbilities } from '../support/fixtures.ts';
import { describeOnStores } from '../support/suites.ts';

describeOnStores('organisations, OEM access and tenant isolation', (ctx) => {
  it('when the OEM admin creates a child organisation then it has its own built-in roles and a license', async () => {
    const token = await ctx.api.adminToken();
    const created = await ctx.api.request('POST', '/api/v3/organisations', {
      token,
      body: { organisation: { name: 'Child Co' } },
    });
    assert.equal(created.status, 200, created.text);
    const organisation = created.body.organisation;
    assert.equal(organisation.name, 'Child Co');
    assert.equal(organisation.is_oem, false);
    assert.match(organisation.license.license_key, /^[0-9a-z]+$/);
    const session = await ctx.api.request('POST', '/api_sign_in', {
      body: {
        email: 'admin@example.com',
        password: 'correct horse battery',
        organisation_key: organisation.organisation_key,
      },
    });
    assert.equal(session.status, 200, session.text);
    assert.equal(session.body.organisation.organisation_key, organisation.organisation_key);
    assert.equal(session.body.role, 'Account Admin');
    const roles = await ctx.api.request('GET', '/api/v3/roles', { token: session.body.auth_token });
    assert.deepEqual(roles.body.roles.map((r: any) => r.name).sort(), ['Account Admin', 'Agent']);
    const list = await ctx.api.request('GET', '/api/v3/organisations', { token });
    assert.ok(list.body.organisations.some((o: any) => o.organisation_key === organisation.organisation_key));
    const audit = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token,
      query: { entity_type: 'Organisation', entity_key: organisation.organisation_key },
    });
    assert.equal(audit.body.total_count, 1);
  });

  it('when a second organisation looks then it sees none of the first one roles, users or audit trails', async () => {
    const adminToken = await ctx.api.adminToken();
    const secret = await createRole(ctx.api, adminToken, [11]);
    const outsider = await childOrganisation(ctx.api, adminToken);
    const roles = await ctx.api.request('GET', '/api/v3/roles', { token: outsider.token, query: { per: 1000 } });
    assert.ok(!roles.body.roles.some((r: any) => r.role_key === secret.role_key));
    assert.equal(
      (await ctx.api.request('GET', `/api/v3/roles/${secret.role_key}`, { token: outsider.token })).status,
      404,
    );
    assert.equal(
      (
        await ctx.api.request('PUT', `/api/v3/roles/${secret.role_key}`, {
          token: outsider.token,
          body: { role: { name: 'x' } },
        })
      ).status,
      404,
    );
    assert.equal(
      (await ctx.api.request('DELETE', `/api/v3/roles/${secret.role_key}`, { token: outsider.token })).status,
      404,
    );
    const users = await ctx.api.request('GET', '/api/v3/users', { token: outsider.token, query: { per: 1000 } });
    assert.deepEqual(
      users.body.users.map((u: any) => u.email),
      [outsider.email],
    );
    const audit = await ctx.api.request('GET', '/api/v3/audit_trails', { token: outsider.token, query: { per: 1000 } });
    assert.ok(audit.body.audit_trails.every((a: any) => a.entity_key !== secret.role_key));
    const parentAudit = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token: adminToken,
      query: { entity_key: secret.role_key },
    });
    const trailKey = parentAudit.body.audit_trails[0].audit_trail_key;
    assert.equal(
      (await ctx.api.request('GET', `/api/v3/audit_trails/${trailKey}`, { token: outsider.token })).status,
      404,
    );
    // A user of a child organisation referring to a role of another organisation gets "not found".
    const foreignRoleUser = await ctx.api.request('POST', '/api/v3/users', {
      token: outsider.token,
      body: { user: { email: `${unique('x')}@example.com`, password: 'password one', role_key: secret.role_key } },
    });
    assert.equal(foreignRoleUser.status, 400);
    assert.equal(foreignRoleUser.body.errors[0].code, 'not_found');
  });

  it('when the OEM admin passes is_oem then lists include the children and a child resource can be read and changed', async () => {
    const adminToken = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, adminToken);
    const childRole = await createRole(ctx.api, child.token, [11]);
    const without = await ctx.api.request('GET', '/api/v3/roles', { token: adminToken, query: { per: 1000 } });
    assert.ok(!without.body.roles.some((r: any) => r.role_key === childRole.role_key));
    assert.equal(
      (await ctx.api.request('GET', `/api/v3/roles/${childRole.role_key}`, { token: adminToken })).status,
      404,
    );
    const withOem = await ctx.api.request('GET', '/api/v3/roles', {
      token: adminToken,
      query: { per: 1000, is_oem: true },
    });
    assert.ok(withOem.body.roles.some((r: any) => r.role_key === childRole.role_key));
    const one = await ctx.api.request('GET', `/api/v3/roles/${childRole.role_key}`, {
      token: adminToken,
      query: { is_oem: true },
    });
    assert.equal(one.status, 200);
    const changed = await ctx.api.request('PUT', `/api/v3/roles/${childRole.role_key}`, {
      token: adminToken,
      body: { is_oem: true, role: { name: 'renamed by OEM' } },
    });
    assert.equal(changed.status, 200, changed.text);
    const childAudit = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token: child.token,
      query: { entity_key: childRole.role_key, order_by: 'timestamp', order: 'asc' },
    });
    assert.deepEqual(
      childAudit.body.audit_trails.map((a: any) => [a.action_taken, a.user_name]),
      [
        ['create', child.email],
        ['update', 'admin@example.com'],
      ],
    );
  });

  it('when the OEM admin creates a role in a child with child_organisation_key then the child sees it', async () => {
    const adminToken = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, adminToken);
    const role = await createRole(ctx.api, adminToken, [11], {
      is_oem: true,
      child_organisation_key: child.organisationKey,
    });
    const seen = await ctx.api.request('GET', `/api/v3/roles/${role.role_key}`, { token: child.token });
    assert.equal(seen.status, 200);
    const otherChild = await childOrganisation(ctx.api, adminToken);
    const foreign = await ctx.api.request('POST', '/api/v3/roles', {
      token: otherChild.token,
      body: { is_oem: true, child_organisation_key: child.organisationKey, role: { name: 'x', abilities: [] } },
    });
    assert.equal(foreign.status, 403, 'a non-OEM organisation cannot use is_oem');
  });

  it('when a role is created with is_oem, true or false, and no child_organisation_key then it is a 400 naming it', async () => {
    const adminToken = await ctx.api.adminToken();
    for (const isOem of [true, false]) {
      const answer = await ctx.api.request('POST', '/api/v3/roles', {
        token: adminToken,
        body: { is_oem: isOem, role: { name: unique('role'), abilities: [11] } },
      });
      assert.equal(answer.status, 400, answer.text);
      assert.deepEqual(answer.body.errors[0], {
        code: 'required',
        param: 'child_organisation_key',
        message: 'is required when is_oem is given',
      });
    }
  });

  it('when the OEM admin posts events to a child thing with is_oem then they are stored in the child; without it the thing is not found', async () => {
    const adminToken = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, adminToken);
    const thing = await createThing(ctx.api, child.token, { name: 'Child pump' });
    const path = `/api/v3/things/${thing.thing_key}/events`;
    const body = { events: [{ timestamp: 1_700_000_000_000, data: { v: 4 } }] };
    assert.equal((await ctx.api.request('POST', path, { token: adminToken, body })).status, 404);
    const sent = await ctx.api.request('POST', path, { token: adminToken, query: { is_oem: true }, body });
    assert.equal(sent.status, 200, sent.text);
    const data = await ctx.api.request('POST', '/api/v3/query/thing_data', {
      token: child.token,
      body: { thing_key: thing.thing_key },
    });
    assert.equal(data.status, 200, data.text);
    assert.deepEqual(
      data.body[thing.thing_key].event_data.map((e: { data: unknown }) => e.data),
      [{ v: 4 }],
    );
  });

  it('when a non-OEM organisation uses is_oem or the organisations endpoints then it is a 403', async () => {
    const adminToken = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, adminToken);
    const list = await ctx.api.request('GET', '/api/v3/roles', { token: child.token, query: { is_oem: true } });
    assert.equal(list.status, 403);
    assert.equal(list.body.errors[0].code, 'forbidden');
    assert.equal((await ctx.api.request('GET', '/api/v3/organisations', { token: child.token })).status, 403);
    assert.equal(
      (
        await ctx.api.request('POST', '/api/v3/organisations', {
          token: child.token,
          body: { organisation: { name: 'x' } },
        })
      ).status,
      403,
    );
  });

  it('when someone other than the OEM account admin signs in with organisation_key then it is a 403', async () => {
    const adminToken = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, adminToken);
    const other = await childOrganisation(ctx.api, adminToken);
    const plain = await userWithAbilities(ctx.api, adminToken, [995]);
    const notAdmin = await ctx.api.request('POST', '/api_sign_in', {
      body: { email: plain.email, password: plain.password, organisation_key: child.organisationKey },
    });
    assert.equal(notAdmin.status, 403);
    const sibling = await ctx.api.request('POST', '/api_sign_in', {
      body: { email: other.email, password: other.password, organisation_key: child.organisationKey },
    });
    assert.equal(sibling.status, 403);
    const unknown = await ctx.api.request('POST', '/api_sign_in', {
      body: { email: 'admin@example.com', password: 'correct horse battery', organisation_key: 'nosuchorgs' },
    });
    assert.equal(unknown.status, 403);
    // The OEM admin is told what went wrong: a key none of its children has (a name, say).
    assert.match(unknown.body.message, /none of your child organisations has the key "nosuchorgs"/);
    assert.match(notAdmin.body.message, /only sign in to a child organisation of your OEM organisation/);
    const own = await ctx.api.request('POST', '/api_sign_in', {
      body: { email: 'admin@example.com', password: 'correct horse battery', organisation_key: other.organisationKey },
    });
    assert.equal(own.status, 200, 'a child of its own is still entered');
    // Nor is it a way to sign in to one's own organisation.
    const itself = await ctx.api.request('POST', '/api_sign_in', {
      body: { email: other.email, password: other.password, organisation_key: other.organisationKey },
    });
    assert.equal(itself.status, 403, itself.text);
    assert.match(itself.body.message, /leave it out to sign in to your own/);
  });

  it('when a user who is no account admin reads or changes an organisation then it is a 403, whatever the input', async () => {
    const adminToken = await ctx.api.adminToken();
    const plain = await userWithAbilities(ctx.api, adminToken, [995]);
    const own = (await ctx.api.request('GET', '/api/v3/caller', { token: plain.token })).body.caller
      .organisation_key as string;
    for (const body of [{ organisation: { retention_days: 30 } }, { organisation: { retention_days: 'many' } }, {}]) {
      const put = await ctx.api.request('PUT', `/api/v3/organisations/${own}`, { token: plain.token, body });
      assert.equal(put.status, 403, `${JSON.stringify(body)}: ${put.text}`);
      assert.equal(put.body.errors[0].code, 'forbidden');
    }
    const get = await ctx.api.request('GET', `/api/v3/organisations/${own}`, {
      token: plain.token,
      query: { time_zone: 'Nowhere/Else' },
    });
    assert.equal(get.status, 403, get.text);
  });

  it('when is_oem is no boolean then it is a 400 naming it, also where the endpoint does not use it', async () => {
    const token = await ctx.api.adminToken();
    for (const [method, path] of [
      ['GET', '/api/v3/organisations'],
      ['POST', '/api/v3/organisations'],
      ['GET', '/api/v3/roles'],
    ] as const) {
      const refused = await ctx.api.request(method, path, {
        token,
        query: { is_oem: 'maybe' },
        ...(method === 'POST' ? { body: { organisation: { name: unique('maybe') } } } : {}),
      });
      assert.deepEqual(
        [refused.status, refused.body.errors?.[0]?.param],
        [400, 'is_oem'],
        `${method} ${path}: ${refused.text}`,
      );
    }
    const listed = await ctx.api.request('GET', '/api/v3/organisations', { token, query: { is_oem: 'false' } });
    assert.equal(listed.status, 200, listed.text);
  });

  it('when the OEM admin signed in to a child is no longer an account admin then that session ends', async () => {
    const adminToken = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, adminToken);
    const roles = (await ctx.api.request('GET', '/api/v3/roles', { token: adminToken, query: { per: 100 } })).body
      .roles;
    const adminRole = roles.find((r: { name: string }) => r.name === 'Account Admin').role_key;
    const second = await userWithAbilities(ctx.api, adminToken, [11]);
    const promoted = await ctx.api.request('PUT', `/api/v3/users/${second.userKey}`, {
      token: adminToken,
      body: { user: { role_key: adminRole } },
    });
    assert.equal(promoted.status, 200, promoted.text);
    const signedIn = await ctx.api.request('POST', '/api_sign_in', {
      body: { email: second.email, password: second.password, organisation_key: child.organisationKey },
    });
    assert.equal(signedIn.status, 200, signedIn.text);
    const childToken = signedIn.body.auth_token as string;
    assert.equal((await ctx.api.request('GET', '/api/v3/users', { token: childToken })).status, 200);
    const demoted = await ctx.api.request('PUT', `/api/v3/users/${second.userKey}`, {
      token: adminToken,
      body: { user: { role_key: second.role.role_key } },
    });
    assert.equal(demoted.status, 200, demoted.text);
    assert.equal((await ctx.api.request('GET', '/api/v3/users', { token: childToken })).status, 401);
    const made = await ctx.api.request('POST', '/api/v3/users', {
      token: childToken,
      body: { user: { email: `${unique('backdoor')}@example.com`, password: 'a long password', role_key: adminRole } },
    });
    assert.equal(made.status, 401, made.text);
  });

  it('when a child organisation is updated and deleted then its data goes with it', async () => {
    const adminToken = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, adminToken, { isOem: false });
    const renamed = await ctx.api.request('PUT', `/api/v3/organisations/${child.organisationKey}`, {
      token: adminToken,
      body: { organisation: { name: 'Renamed', is_oem: true } },
    });
    assert.equal(renamed.status, 200, renamed.text);
    assert.equal(renamed.body.organisation.name, 'Renamed');
    assert.equal(renamed.body.organisation.is_oem, true);
    const removed = await ctx.api.request('DELETE', `/api/v3/organisations/${child.organisationKey}`, {
      token: adminToken,
    });
    assert.deepEqual(removed.body, {});
    assert.equal((await ctx.api.request('GET', '/api/v3/roles', { token: child.token })).status, 401);
    assert.equal(
      (await ctx.api.request('POST', '/api_sign_in', { body: { email: child.email, password: child.password } }))
        .status,
      401,
    );
    assert.equal(
      (await ctx.api.request('GET', `/api/v3/organisations/${child.organisationKey}`, { token: adminToken })).status,
      404,
    );
  });

  it('when organisations are read, changed in part and deleted then only the own and child ones are reached, and a child with children of its own stays', async () => {
    const adminToken = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, adminToken, { isOem: true });
    const grandchild = await ctx.api.request('POST', '/api/v3/organisations', {
      token: child.token,
      body: { organisation: { name: unique('grandchild') } },
    });
    assert.equal(grandchild.status, 200, grandchild.text);
    assert.equal(grandchild.body.organisation.is_oem, false, 'not OEM unless asked');
    const grandchildKey = grandchild.body.organisation.organisation_key as string;

    const read = await ctx.api.request('GET', `/api/v3/organisations/${child.organisationKey}`, { token: adminToken });
    assert.equal(read.status, 200, read.text);
    assert.equal(read.body.organisation.is_oem, true);
    const byChild = await ctx.api.request('GET', `/api/v3/organisations/${grandchildKey}`, { token: child.token });
    assert.equal(byChild.status, 200, byChild.text);
    const byGrandparent = await ctx.api.request('GET', `/api/v3/organisations/${grandchildKey}`, { token: adminToken });
    assert.equal(byGrandparent.status, 404, 'a child of a child is not reached');

    const renamed = await ctx.api.request('PUT', `/api/v3/organisations/${child.organisationKey}`, {
      token: adminToken,
      body: { organisation: { name: 'Only the name' } },
    });
    assert.equal(renamed.status, 200, renamed.text);
    assert.equal(renamed.body.organisation.name, 'Only the name');
    assert.equal(renamed.body.organisation.is_oem, true);
    const notOem = await ctx.api.request('PUT', `/api/v3/organisations/${child.organisationKey}`, {
      token: adminToken,
      body: { organisation: { is_oem: false } },
    });
    assert.equal(notOem.status, 200, notOem.text);
    assert.equal(notOem.body.organisation.name, 'Only the name');
    assert.equal(notOem.body.organisation.is_oem, false);

    const ownKey = read.body.organisation.parent_organisation_key as string;
    assert.equal((await ctx.api.request('GET', `/api/v3/organisations/${ownKey}`, { token: adminToken })).status, 200);
    const self = await ctx.api.request('PUT', `/api/v3/organisations/${ownKey}`, {
      token: adminToken,
      body: { organisation: { name: 'Not a child' } },
    });
    assert.equal(self.status, 403, "the own organisation's name is its parent's to change");
    assert.equal(self.body.errors[0].code, 'forbidden');

    const refused = await ctx.api.request('DELETE', `/api/v3/organisations/${child.organisationKey}`, {
      token: adminToken,
    });
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.body.errors[0].param, 'organisation_key');
    assert.equal((await ctx.api.request('GET', '/api/v3/roles', { token: child.token })).status, 200, 'still there');
    const notNow = await ctx.api.request('DELETE', `/api/v3/organisations/${grandchildKey}`, { token: child.token });
    assert.equal(notNow.status, 403, 'no longer OEM, the child reaches no organisation of its own');
    const oemAgain = await ctx.api.request('PUT', `/api/v3/organisations/${child.organisationKey}`, {
      token: adminToken,
      body: { organisation: { is_oem: true } },
    });
    assert.equal(oemAgain.body.organisation.is_oem, true);
    const gone = await ctx.api.request('DELETE', `/api/v3/organisations/${grandchildKey}`, { token: child.token });
    assert.equal(gone.status, 200, gone.text);
    const deleted = await ctx.api.request('DELETE', `/api/v3/organisations/${child.organisationKey}`, {
      token: adminToken,
    });
    assert.equal(deleted.status, 200, deleted.text);
  });
});
