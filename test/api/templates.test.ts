import assert from 'node:assert/strict';
import { it } from 'node:test';
import { createThing, defaultTemplateKey, unique, userWithAbilities } from '../support/fixtures.ts';
import { describeOnStores } from '../support/suites.ts';

describeOnStores('thing templates', (ctx) => {
  it('when an organisation starts then it has a Default template with the default intervals', async () => {
    const token = await ctx.api.adminToken();
    const key = await defaultTemplateKey(ctx.api, token);
    const response = await ctx.api.request('GET', `/api/v3/thing_templates/${key}`, { token });
    assert.equal(response.status, 200);
    assert.equal(response.body.thing_template.heartbeat_interval, 60);
    assert.equal(response.body.thing_template.idle_timeout, 300);
    assert.deepEqual(response.body.thing_template.metrics, []);
  });

  it('when a template is created, updated and deleted then each answer has its shape and an audit trail', async () => {
    const token = await ctx.api.adminToken();
    const name = unique('Boiler');
    const created = await ctx.api.request('POST', '/api/v3/thing_templates', {
      token,
      body: {
        thing_template: {
          name,
          description: 'hot water',
          metrics: [
            { name: 'temperature', data_type: 'number', unit: 'C' },
            { name: 'machine.status', data_type: 'string' },
          ],
          heartbeat_interval: 30,
        },
      },
    });
    assert.equal(created.status, 200, created.text);
    const template = created.body.thing_template;
    assert.deepEqual(template.metrics, [
      { name: 'temperature', data_type: 'number', unit: 'C' },
      { name: 'machine.status', data_type: 'string', unit: '' },
    ]);
    assert.equal(template.heartbeat_interval, 30);
    assert.equal(template.idle_timeout, 300);
    const updated = await ctx.api.request('PUT', `/api/v3/thing_templates/${template.thing_template_key}`, {
      token,
      body: { thing_template: { idle_timeout: 600, description: 'steam' } },
    });
    assert.equal(updated.body.thing_template.idle_timeout, 600);
    assert.equal(updated.body.thing_template.name, name);
    const list = await ctx.api.request('GET', '/api/v3/thing_templates', { token, query: { search: name } });
    assert.equal(list.body.total_count, 1);
    assert.equal(
      (await ctx.api.request('DELETE', `/api/v3/thing_templates/${template.thing_template_key}`, { token })).status,
      200,
    );
    const audit = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token,
      query: { entity_key: template.thing_template_key },
    });
    assert.deepEqual(audit.body.audit_trails.map((a: any) => [a.entity_type, a.action_taken]).sort(), [
      ['ThingTemplate', 'create'],
      ['ThingTemplate', 'delete'],
      ['ThingTemplate', 'update'],
    ]);
  });

  it('when metrics name one metric twice then it is a 400 naming it, and nothing is made; an update of the name and heartbeat alone keeps the metrics', async () => {
    const token = await ctx.api.adminToken();
    const name = unique('Chiller');
    const twice = await ctx.api.request('POST', '/api/v3/thing_templates', {
      token,
      body: {
        thing_template: {
          name,
          metrics: [
            { name: 'pressure', data_type: 'number', unit: 'bar' },
            { name: 'pressure', data_type: 'string', unit: 'psi' },
          ],
        },
      },
    });
    assert.equal(twice.status, 400, twice.text);
    assert.equal(twice.body.errors[0].param, 'thing_template.metrics');
    assert.match(twice.body.errors[0].message, /"pressure" more than once/);
    // A metric inside another: `m` a number and `m.x` a value of it cannot both be, in either order.
    for (const inside of [
      [
        { name: 'motor', data_type: 'number' },
        { name: 'motor.speed', data_type: 'number' },
      ],
      [
        { name: 'motor.speed.max', data_type: 'number' },
        { name: 'motor', data_type: 'string' },
      ],
    ]) {
      const refused = await ctx.api.request('POST', '/api/v3/thing_templates', {
        token,
        body: { thing_template: { name, metrics: inside } },
      });
      assert.equal(refused.status, 400, refused.text);
      assert.equal(refused.body.errors[0].param, 'thing_template.metrics');
      assert.match(refused.body.errors[0].message, /"motor\.speed(\.max)?" inside the metric "motor"/);
    }
    for (const unaddressable of ['.a', 'a..b', 'a.']) {
      const refused = await ctx.api.request('POST', '/api/v3/thing_templates', {
        token,
        body: { thing_template: { name, metrics: [{ name: unaddressable, data_type: 'number' }] } },
      });
      assert.equal(refused.status, 400, `${unaddressable}: ${refused.text}`);
      assert.match(refused.body.errors[0].message, /empty part between dots/);
    }
    const metrics = [
      { name: 'pressure', data_type: 'number', unit: 'bar' },
      { name: 'mode', data_type: 'string', unit: '' },
    ];
    const created = await ctx.api.request('POST', '/api/v3/thing_templates', {
      token,
      body: { thing_template: { name, metrics } },
    });
    assert.equal(created.status, 200, 'the name is free: the refused create made nothing');
    const template = created.body.thing_template;
    assert.deepEqual(template.metrics, metrics);
    const again = await ctx.api.request('PUT', `/api/v3/thing_templates/${template.thing_template_key}`, {
      token,
      body: { thing_template: { metrics: [...metrics, metrics[1]] } },
    });
    assert.equal(again.status, 400, 'nor on update');
    const renamed = unique('Chiller');
    const updated = await ctx.api.request('PUT', `/api/v3/thing_templates/${template.thing_template_key}`, {
      token,
      body: { thing_template: { name: renamed, heartbeat_interval: 15 } },
    });
    assert.equal(updated.status, 200, updated.text);
    assert.equal(updated.body.thing_template.name, renamed);
    assert.equal(updated.body.thing_template.heartbeat_interval, 15);
    assert.deepEqual(updated.body.thing_template.metrics, metrics);
    assert.equal(updated.body.thing_template.idle_timeout, template.idle_timeout);
  });

  it('when a template is in use or is the Default then deleting it is a 409', async () => {
    const token = await ctx.api.adminToken();
    const defaultKey = await defaultTemplateKey(ctx.api, token);
    assert.equal((await ctx.api.request('DELETE', `/api/v3/thing_templates/${defaultKey}`, { token })).status, 409);
    const created = await ctx.api.request('POST', '/api/v3/thing_templates', {
      token,
      body: { thing_template: { name: unique('t') } },
    });
    const key = created.body.thing_template.thing_template_key;
    await createThing(ctx.api, token, { thing_template_key: key });
    const refused = await ctx.api.request('DELETE', `/api/v3/thing_templates/${key}`, { token });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.errors[0].code, 'conflict');
  });

  it('when a template body is wrong then it is a 400 naming the field', async () => {
    const token = await ctx.api.adminToken();
    for (const [template, code, param] of [
      [{}, 'required', 'thing_template.name'],
      [{ name: 'x', metrics: [{ name: 'm', data_type: 'float' }] }, 'invalid', 'thing_template.metrics.0.data_type'],
      [{ name: 'x', heartbeat_interval: 0 }, 'invalid', 'thing_template.heartbeat_interval'],
      [{ name: 'x', colour: 'blue' }, 'unknown_field', 'thing_template.colour'],
    ] as const) {
      const response = await ctx.api.request('POST', '/api/v3/thing_templates', {
        token,
        body: { thing_template: template },
      });
      assert.equal(response.status, 400, response.text);
      assert.ok(
        response.body.errors.some((e: any) => e.code === code && e.param === param),
        response.text,
      );
    }
  });

  it('when a user lacks the thing_template permission then it is a 403', async () => {
    const token = await ctx.api.adminToken();
    const user = await userWithAbilities(ctx.api, token, [11]);
    assert.equal((await ctx.api.request('GET', '/api/v3/thing_templates', { token: user.token })).status, 403);
  });
});
