import assert from 'node:assert/strict';
import { it } from 'node:test';
import { childOrganisation, createThing, unique } from '../support/fixtures.ts';
import { describeOnStores } from '../support/suites.ts';

/**
 * Dashboard names need not be unique (a create may repeat one), but an imported copy is told apart from
 * the dashboard it was exported from: it takes the first free `Name (n)` (docs/api.md, "Dashboards").
 */
describeOnStores('importing dashboards', (ctx) => {
  const create = async (token: string, dashboard: Record<string, unknown>) => {
    const response = await ctx.api.request('POST', '/api/v3/dashboards', { token, body: { dashboard } });
    assert.equal(response.status, 200, response.text);
    return response.body.dashboard;
  };
  const importing = (token: string, dashboard: Record<string, unknown>, extra: object = {}) =>
    ctx.api.request('POST', '/api/v3/dashboards/import', { token, body: { dashboard, ...extra } });
  const imported = async (token: string, dashboard: Record<string, unknown>) => {
    const response = await importing(token, dashboard);
    assert.equal(response.status, 200, response.text);
    return response.body.dashboard;
  };
  const namesOf = async (token: string, search: string) => {
    const list = await ctx.api.request('GET', '/api/v3/dashboards', {
      token,
      query: { search, order_by: 'name', order: 'asc', per: 100 },
    });
    assert.equal(list.status, 200, list.text);
    return (list.body.dashboards as { name: string }[]).map((d) => d.name);
  };

  it('when a dashboard is imported into the organisation it was exported from then the copy gets the next free "Name (n)" and new keys', async () => {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, {});
    const name = unique('Plant');
    const original = await create(token, {
      name,
      description: 'the hall',
      time_range: { last: '7d' },
      widgets: [
        {
          widget_key: 'temp',
          type: 'value',
          title: 'Temperature',
          layout: { x: 0, y: 0, w: 4, h: 2 },
          thing_key: thing.thing_key,
          metric: 'temperature',
        },
      ],
    });
    const exported = (await ctx.api.request('GET', `/api/v3/dashboards/${original.dashboard_key}`, { token })).body
      .dashboard;

    const copy = await imported(token, exported);
    assert.equal(copy.name, `${name} (2)`);
    assert.notEqual(copy.dashboard_key, original.dashboard_key);
    assert.notEqual(copy.widgets[0].widget_key, 'temp');
    assert.equal(copy.description, 'the hall');
    assert.deepEqual(copy.time_range, { last: '7d' });
    const { widget_key: _a, ...widget } = copy.widgets[0];
    const { widget_key: _b, ...exportedWidget } = exported.widgets[0];
    assert.deepEqual(widget, exportedWidget);

    assert.equal((await imported(token, exported)).name, `${name} (3)`);
    // A copy imported again counts on from its stem, not "Plant (2) (2)".
    assert.equal((await imported(token, copy)).name, `${name} (4)`);
    assert.deepEqual(await namesOf(token, name), [name, `${name} (2)`, `${name} (3)`, `${name} (4)`]);

    const audit = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token,
      query: { entity_type: 'Dashboard', entity_key: copy.dashboard_key },
    });
    assert.deepEqual(
      audit.body.audit_trails.map((t: any) => [t.action_taken, t.entity_name]),
      [['create', `${name} (2)`]],
    );
  });

  it('when the same dashboard is imported several times at once then every copy gets a name of its own', async () => {
    const token = await ctx.api.adminToken();
    const name = unique('Hall');
    await create(token, { name });
    const copies = await Promise.all(Array.from({ length: 6 }, () => importing(token, { name })));
    for (const copy of copies) assert.equal(copy.status, 200, copy.text);
    assert.deepEqual(
      copies.map((c) => c.body.dashboard.name).sort(),
      [2, 3, 4, 5, 6, 7].map((n) => `${name} (${n})`),
    );
  });

  it('when no dashboard of the organisation has the imported name then it is kept, whatever other organisations hold', async () => {
    const admin = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, admin);
    const name = unique('Line');
    await create(admin, { name });
    const copy = await imported(child.token, { name, dashboard_key: 'abcdefghij', created_at: 1, updated_at: 'x' });
    assert.equal(copy.name, name);
    assert.equal((await imported(child.token, { name })).name, `${name} (2)`);
    assert.deepEqual(await namesOf(admin, name), [name]);
  });

  it('when a created dashboard repeats a name then it is kept: names need not be unique, only imports are told apart', async () => {
    const token = await ctx.api.adminToken();
    const name = unique('Same');
    await create(token, { name });
    assert.equal((await create(token, { name })).name, name);
    assert.equal((await imported(token, { name })).name, `${name} (2)`);
  });

  it('when an imported name is 200 characters long and taken then the copy’s name is shortened to fit its number', async () => {
    const token = await ctx.api.adminToken();
    const name = `${unique('Long')}${'é'.repeat(200)}`.slice(0, 200);
    await create(token, { name });
    const copy = await imported(token, { name });
    assert.equal([...copy.name].length, 200 - 12 + 4);
    assert.ok(copy.name.endsWith('é (2)'), copy.name);
    assert.ok(name.startsWith(copy.name.slice(0, -4)));
    assert.equal((await imported(token, { name })).name, `${copy.name.slice(0, -4)} (3)`);
  });

  it('when an import holds an unknown field or a bad widget then it is refused as create refuses it, and nothing is made', async () => {
    const token = await ctx.api.adminToken();
    const name = unique('Bad');
    const unknown = await importing(token, { name, owner: 'me' });
    assert.equal(unknown.status, 400, unknown.text);
    assert.equal(unknown.body.errors[0].code, 'unknown_field');
    const badWidget = await importing(token, {
      name,
      widgets: [{ type: 'value', title: 'x', layout: { x: 0, y: 0, w: 4, h: 2 }, thing_key: 'nope', metric: 'm' }],
    });
    assert.equal(badWidget.status, 400, badWidget.text);
    assert.deepEqual(badWidget.body.errors[0].param, 'dashboard.widgets[0].thing_key');
    assert.deepEqual(await namesOf(token, name), []);
  });
});
