/**
 * Bad input of every class answers a 4xx in the error shape (docs/api.md, "Errors"), the same on both stores
 * (docs/api.md, "Bad input"): integers out of range, pages beyond any store, NUL characters in text,
 * and what the HTTP framework and the node server refuse before a route runs.
 */
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { createKeyPair, Device } from '../support/device.ts';
import { createThing, unique } from '../support/fixtures.ts';
import { rawRequest } from '../support/http.ts';
import { MqttDevice } from '../support/mqtt-device.ts';
import { freePort } from '../support/ports.ts';
import { describeOnStores } from '../support/suites.ts';

/** Asserts the error body (docs/api.md, "Errors") and answers its first item. */
function assertErrorShape(body: any, context: string): { code: string; message: string; param?: string } {
  assert.equal(body?.success, false, `${context}: ${JSON.stringify(body)}`);
  assert.equal(typeof body.message, 'string', context);
  assert.ok(Array.isArray(body.errors) && body.errors.length > 0, context);
  for (const item of body.errors) {
    assert.equal(typeof item.code, 'string', context);
    assert.equal(typeof item.message, 'string', context);
  }
  return body.errors[0];
}

/** The device interface's error body (docs/devices.md): `errors: [{code, message}]` with string codes. */
function assertDeviceError(body: any, context: string): { code: string; message: string; param?: string } {
  assert.ok(Array.isArray(body?.errors) && body.errors.length > 0, `${context}: ${JSON.stringify(body)}`);
  return body.errors[0];
}

const OUT_OF_RANGE_INTEGERS = [
  '99999999999999999999',
  '1e309',
  '9223372036854775807',
  '9007199254740993',
  '9007199254740992',
  '-9007199254740993',
];

const NUL = '\u0000';

describeOnStores(
  'bad input',
  (ctx) => {
    let token: string;
    let thingKey: string;
    let device: Device;
    let listOperations: { method: string; path: string }[];

    before(async () => {
      token = await ctx.api.adminToken();
      const keyPair = await createKeyPair(ctx.api, token);
      device = new Device(ctx.api.url, keyPair);
      thingKey = unique('bad');
      const registered = await device.post('/api/v3/things/register', { thing_key: thingKey });
      assert.equal(registered.status, 200, registered.text);
      const event = await device.post('/api/v3/things/event', { thing_key: thingKey, data: { temperature: 20 } });
      assert.equal(event.status, 200, event.text);
      // Every operation that pages, as the OpenAPI document lists them.
      const document = (await ctx.api.request('GET', '/openapi.json')).body;
      listOperations = [];
      for (const [path, item] of Object.entries<any>(document.paths)) {
        for (const [method, operation] of Object.entries<any>(item)) {
          const inQuery = (operation.parameters ?? []).some((p: any) => p.name === 'page');
          const inBody = operation.requestBody?.content?.['application/json']?.schema?.properties?.page;
          if (inQuery || inBody) {
            listOperations.push({ method: method.toUpperCase(), path: path.replace(/\{[^}]+\}/g, thingKey) });
          }
        }
      }
      assert.ok(listOperations.length >= 15, `list operations found: ${listOperations.length}`);
    });

    it('when the API documentation shows an integer parameter then it shows the bounds validation applies', async () => {
      const document = (await ctx.api.request('GET', '/openapi.json')).body;
      const operation = document.paths['/api/v3/things'].get;
      const page = operation.parameters.find((p: any) => p.name === 'page');
      assert.equal(page.schema.type, 'integer');
      assert.ok(page.schema.maximum <= Number.MAX_SAFE_INTEGER, JSON.stringify(page.schema));
      assert.ok(page.schema.minimum >= -Number.MAX_SAFE_INTEGER, JSON.stringify(page.schema));
    });

    it('when page or per is an integer beyond 2^53 (or not finite) on any list then it is a 400 naming it', async () => {
      for (const { method, path } of listOperations) {
        for (const name of ['page', 'per']) {
          for (const value of OUT_OF_RANGE_INTEGERS) {
            const context = `${method} ${path} ${name}=${value}`;
            const inQuery = method === 'GET' || method === 'DELETE';
            const response = await ctx.api.request(method, path, {
              token,
              ...(inQuery ? { query: { [name]: value } } : { body: { thing_key: thingKey, [name]: value } }),
            });
            assert.equal(response.status, 400, `${context}: ${response.text}`);
            assertErrorShape(response.body, context);
            // Some lists also require a parameter of their own (rule_key): the item for this one is there.
            const item = response.body.errors.find((e: { param?: string }) => e.param === name);
            assert.equal(item?.code, 'invalid', `${context}: ${response.text}`);
          }
        }
      }
    });

    it('when a search holds more keywords or text than any store can search on any list then it is a 400 naming it', async () => {
      const searchable = listOperations.filter(({ method, path }) => method === 'GET' && !path.includes(thingKey));
      assert.ok(searchable.length >= 10, `searchable lists: ${searchable.length}`);
      for (const search of [Array.from({ length: 500 }, () => 'a').join(' '), 'x'.repeat(50_000)]) {
        for (const { method, path } of searchable) {
          const context = `${method} ${path} search of ${search.length} characters`;
          const response = await ctx.api.request(method, path, { token, body: { search, scope: 'any' } });
          assert.equal(response.status, 400, `${context}: ${response.text.slice(0, 300)}`);
          assertErrorShape(response.body, context);
          // A list that requires a parameter of its own (rule_key) may refuse for that first.
          if (response.body.errors.some((e: { code: string }) => e.code === 'required')) continue;
          const item = response.body.errors.find((e: { param?: string }) => e.param === 'search');
          assert.equal(item?.code, 'invalid', `${context}: ${response.text.slice(0, 300)}`);
        }
      }
      const atLimit = Array.from({ length: 32 }, (_, i) => `k${i}`).join(' ');
      assert.equal((await ctx.api.request('GET', '/api/v3/roles', { token, query: { search: atLimit } })).status, 200);
    });

    it('when a search has letters beyond ASCII in another case then it finds them, as on every store', async () => {
      const suffix = unique('s');
      const created = await ctx.api.request('POST', '/api/v3/roles', {
        token,
        body: { role: { name: `\u00c9lan-\u00d6l-${suffix}`, abilities: [11] } },
      });
      assert.equal(created.status, 200, created.text);
      for (const search of [`\u00e9lan-\u00f6l-${suffix}`, `\u00c9LAN-\u00d6L-${suffix.toUpperCase()}`]) {
        const found = await ctx.api.request('GET', '/api/v3/roles', { token, query: { search } });
        assert.equal(found.body.total_count, 1, `${search}: ${found.text}`);
      }
    });

    it('when a JSON body gives a one-item array where text is declared then it is a 400, not the item', async () => {
      const signIn = await ctx.api.request('POST', '/api_sign_in', {
        body: { email: ['admin@localhost'], password: 'whatever-it-is' },
      });
      assert.equal(signIn.status, 400, signIn.text);
      assert.equal(assertErrorShape(signIn.body, 'sign-in').param, 'email');
      const role = await ctx.api.request('POST', '/api/v3/roles', {
        token,
        body: { role: { name: [unique('arr')], abilities: [11] } },
      });
      assert.equal(role.status, 400, role.text);
      assert.equal(assertErrorShape(role.body, 'role').param, 'role.name');
      // A query string's single value still counts as a list of one.
      const trail = await ctx.api.request('GET', '/api/v3/audit_trails', { token, query: { entity_type: 'Role' } });
      assert.equal(trail.status, 200, trail.text);
    });

    it('when JSON null is given for a boolean, or text that may not be empty, then it is a 400 saying so; true or false for text that may be null is its text', async () => {
      const created = await ctx.api.request('POST', '/api/v3/rules', {
        token,
        body: { rule: { name: unique('null'), condition: 'a > 1', enabled: null } },
      });
      assert.equal(created.status, 400, created.text);
      assert.deepEqual(assertErrorShape(created.body, 'rule'), {
        code: 'invalid',
        param: 'rule.enabled',
        message: 'must be true or false, not null',
      });
      const rule = await ctx.api.request('POST', '/api/v3/rules', {
        token,
        body: { rule: { name: unique('null'), condition: 'a > 1', enabled: true } },
      });
      assert.equal(rule.status, 200, rule.text);
      const ruleKey = rule.body.rule.rule_key as string;
      const update = await ctx.api.request('PUT', `/api/v3/rules/${ruleKey}`, {
        token,
        body: { rule: { enabled: null } },
      });
      assert.equal(update.status, 400, update.text);
      const after = await ctx.api.request('GET', `/api/v3/rules/${ruleKey}`, { token });
      assert.equal(after.body.rule.enabled, true, 'the rule was not disabled');
      // Null for text that may not be empty: said so, not "fewer than 1 characters".
      const unnamed = await ctx.api.request('POST', '/api/v3/dashboards', {
        token,
        body: { dashboard: { name: null } },
      });
      assert.equal(unnamed.status, 400, unnamed.text);
      assert.deepEqual(assertErrorShape(unnamed.body, 'dashboard'), {
        code: 'invalid',
        param: 'dashboard.name',
        message: 'must be text, not null',
      });
      // A comment is text or null: true is its text, as for any text (docs/api.md).
      const thing = await createThing(ctx.api, token, { bi_directional: true });
      const instruction = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/instructions`, {
        token,
        body: { instruction: { name: 'go', definition: {}, description: true } },
      });
      assert.equal(instruction.status, 200, instruction.text);
      assert.equal(instruction.body.instruction.description, 'true');
    });

    it('when a JSON number past 2^53 is given where text is declared then it is a 400, not other digits', async () => {
      const templateKey = (await ctx.api.request('GET', '/api/v3/thing_templates', { token })).body.thing_templates[0]
        .thing_template_key;
      // JSON's reading has made it 12345678901234567000: kept, it would be a key the client never sent.
      const refused = await ctx.api.request('POST', '/api/v3/things', {
        token,
        rawBody: `{"thing":{"name":"n","thing_template_key":"${templateKey}","thing_key":12345678901234567890}}`,
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(refused.status, 400, refused.text);
      assert.equal(assertErrorShape(refused.body, 'thing').param, 'thing.thing_key');
      assert.match(refused.body.errors[0].message, /not held exactly/);
      // A number JSON holds exactly is its text, as before.
      const key = Math.floor(Math.random() * 1e12);
      const taken = await ctx.api.request('POST', '/api/v3/things', {
        token,
        body: { thing: { name: 'n', thing_template_key: templateKey, thing_key: key } },
      });
      assert.equal(taken.status, 200, taken.text);
      assert.equal(taken.body.thing.thing_key, String(key));
    });

    it('when numeric text is not decimal then it is a 400 naming the parameter, wherever text becomes a number', async () => {
      const template = await ctx.api.request('POST', '/api/v3/thing_templates', {
        token,
        body: { thing_template: { name: unique('decimal') } },
      });
      assert.equal(template.status, 200, template.text);
      const templatePath = `/api/v3/thing_templates/${template.body.thing_template.thing_template_key}`;
      const refusedAs = (response: { status: number; text: string; body: any }, param: string, context: string) => {
        assert.equal(response.status, 400, `${context}: ${response.text}`);
        assertErrorShape(response.body, context);
        const item = response.body.errors.find((e: { param?: string }) => e.param === param);
        assert.equal(item?.code, 'invalid', `${context}: ${response.text}`);
      };
      for (const value of ['0x10', '0b1', '0o7', ' 12', '12 ', 'Infinity', '', '1_000', '1e', '.5e']) {
        const context = JSON.stringify(value);
        refusedAs(await ctx.api.request('GET', '/api/v3/roles', { token, query: { per: value } }), 'per', context);
        refusedAs(await ctx.api.request('GET', '/api/v3/roles', { token, body: { page: value } }), 'page', context);
        refusedAs(
          await ctx.api.request('GET', '/api/v3/alerts', { token, query: { alert_type: ['1', value] } }),
          'alert_type.1',
          context,
        );
        refusedAs(
          await ctx.api.request('PUT', templatePath, { token, body: { thing_template: { retention_days: value } } }),
          'thing_template.retention_days',
          context,
        );
        if (value !== '') {
          refusedAs(
            await ctx.api.request('POST', '/api/v3/query/thing_data', {
              token,
              body: { thing_key: thingKey, from: value },
            }),
            'from',
            context,
          );
        }
      }
      // Decimal text is read as the number it writes, exponents included.
      const tenth = await ctx.api.request('GET', '/api/v3/roles', { token, query: { per: '1e0', page: '0002' } });
      assert.equal(tenth.status, 200, tenth.text);
      assert.equal(tenth.body.page, 2);
      assert.equal(tenth.body.roles.length, 1);
      const kept = await ctx.api.request('PUT', templatePath, {
        token,
        body: { thing_template: { retention_days: '3e1' } },
      });
      assert.equal(kept.status, 200, kept.text);
      assert.equal(kept.body.thing_template.retention_days, 30);
      const fraction = await ctx.api.request('PUT', templatePath, {
        token,
        body: { thing_template: { retention_days: '30.5' } },
      });
      refusedAs(fraction, 'thing_template.retention_days', 'a fraction where a whole number is declared');
      const since = await ctx.api.request('POST', '/api/v3/query/thing_data', {
        token,
        body: { thing_key: thingKey, from: '1.7e9', to: '-12.5' },
      });
      refusedAs(since, 'from', 'decimal bounds, read: from after to');
    });

    it('when an out-of-range integer comes as a JSON number then it is a 400 too', async () => {
      for (const rawBody of ['{"page": 1e309}', '{"page": 99999999999999999999}', '{"per": -1e400}']) {
        const response = await ctx.api.request('GET', '/api/v3/roles', { token, rawBody });
        assert.equal(response.status, 400, `${rawBody}: ${response.text}`);
        assert.equal(assertErrorShape(response.body, rawBody).code, 'invalid');
      }
    });

    it('when a point in time lies beyond the dates a clock can name then the data queries answer 400', async () => {
      const queries = [
        ['/api/v3/query/thing_data', {}],
        [
          '/api/v3/query/thing_aggregated_data',
          { aggregation_type: 'avg', metrics: ['temperature'], time_interval: 60 },
        ],
      ] as const;
      for (const [path, extra] of queries) {
        for (const bound of [1e20, '99999999999999999999', -1e20, 9e12]) {
          for (const param of ['from', 'to']) {
            const context = `${path} ${param}=${bound}`;
            const response = await ctx.api.request('POST', path, {
              token,
              body: { thing_key: thingKey, ...extra, [param]: bound },
            });
            assert.equal(response.status, 400, `${context}: ${response.text}`);
            assert.equal(assertErrorShape(response.body, context).param, param, context);
          }
        }
      }
      // The last second a clock can name is still one.
      const latest = await ctx.api.request('POST', '/api/v3/query/thing_data', {
        token,
        body: { thing_key: thingKey, to: 8.64e12 },
      });
      assert.equal(latest.status, 200, latest.text);
    });

    it('when an aggregation in time buckets has from after to, or bounds at the end of the calendar, then it is a 400', async () => {
      const query = (body: object) =>
        ctx.api.request('POST', '/api/v3/query/thing_aggregated_data', {
          token,
          body: { thing_keys: [thingKey], metrics: ['temperature'], ...body },
        });
      for (const body of [
        { from: 1772845200, to: 1772841600, time_grouping: 'hour' },
        { from: 1772845200, to: 1772841600, idle_time_required: true },
        { from: 1772845200, to: 1772841600 },
      ]) {
        const response = await query(body);
        assert.equal(response.status, 400, `${JSON.stringify(body)}: ${response.text}`);
        assert.equal(assertErrorShape(response.body, 'from after to').param, 'from');
      }
      for (const grouping of ['month', 'day', 'hour', 'minute']) {
        for (const [from, to, param] of [
          [8639999999990, 8640000000000, 'from'],
          [-8640000000000, -8639999999990, 'from'],
          [0, 8640000000000, 'to'],
        ] as const) {
          const response = await query({ from, to, time_grouping: grouping, functions: ['count'] });
          const context = `${grouping} ${from}..${to}`;
          assert.equal(response.status, 400, `${context}: ${response.text}`);
          assert.equal(assertErrorShape(response.body, context).param, param, context);
        }
      }
      // Without buckets the same bounds are answered.
      const whole = await query({ from: 8639999999990, to: 8640000000000 });
      assert.equal(whole.status, 200, whole.text);
    });

    it('when the page is the largest safe integer then the page is empty and the total is still right', async () => {
      const first = await ctx.api.request('GET', '/api/v3/roles', { token });
      const last = await ctx.api.request('GET', '/api/v3/roles', {
        token,
        query: { page: String(Number.MAX_SAFE_INTEGER), per: 1000 },
      });
      assert.equal(last.status, 200, last.text);
      assert.deepEqual(last.body, { total_count: first.body.total_count, page: Number.MAX_SAFE_INTEGER, roles: [] });
      const data = await ctx.api.request('POST', '/api/v3/query/thing_data', {
        token,
        body: { thing_key: thingKey, page: Number.MAX_SAFE_INTEGER, per: 10_000 },
      });
      assert.equal(data.status, 200, data.text);
      assert.equal(data.body[thingKey].total_event_count, 1);
      assert.deepEqual(data.body[thingKey].event_data, []);
    });

    const nulCases: { title: string; method: string; path: (key: string) => string; body?: unknown; param: string }[] =
      [
        { title: 'a path key', method: 'GET', path: () => '/api/v3/things/a%00b', param: 'thing_key' },
        { title: 'a path key of an update', method: 'PUT', path: () => '/api/v3/roles/%00', param: 'role_key' },
        { title: 'a path key of a delete', method: 'DELETE', path: () => '/api/v3/groups/x%00', param: 'group_key' },
        { title: 'a search', method: 'GET', path: () => `/api/v3/things?search=a%00b`, param: 'search' },
        { title: 'a time zone', method: 'GET', path: () => '/api/v3/roles?time_zone=UTC%00', param: 'time_zone' },
        {
          title: 'a template name',
          method: 'POST',
          path: () => '/api/v3/thing_templates',
          body: { thing_template: { name: `x${NUL}y` } },
          param: 'thing_template.name',
        },
        {
          title: 'a role name',
          method: 'POST',
          path: () => '/api/v3/roles',
          body: { role: { name: NUL, abilities: [11] } },
          param: 'role.name',
        },
        {
          title: 'an item of an array',
          method: 'PUT',
          path: (key) => `/api/v3/things/${key}`,
          body: { thing: { tags: ['ok', `b${NUL}`] } },
          param: 'thing.tags.1',
        },
        {
          title: 'a value in a nested object',
          method: 'PUT',
          path: (key) => `/api/v3/things/${key}/set_user_defined_properties`,
          body: { user_defined_properties: { colour: `red${NUL}` } },
          param: 'user_defined_properties.colour',
        },
        {
          title: 'a member name in a nested object',
          method: 'PUT',
          path: (key) => `/api/v3/things/${key}/set_user_defined_properties`,
          body: { user_defined_properties: { [`col${NUL}our`]: 'red' } },
          param: 'user_defined_properties',
        },
        {
          title: 'the thing_key of a query',
          method: 'POST',
          path: () => '/api/v3/query/thing_data',
          body: { thing_key: `k${NUL}` },
          param: 'thing_key',
        },
        {
          title: "a user's event data",
          method: 'POST',
          path: (key) => `/api/v3/things/${key}/events`,
          body: { events: [{ data: { status: { text: `a${NUL}` } } }] },
          param: 'events.0.data.status.text',
        },
        {
          title: 'the e-mail address of a sign-in',
          method: 'POST',
          path: () => '/api_sign_in',
          body: { email: `admin${NUL}@example.com`, password: 'whatever it is' },
          param: 'email',
        },
      ];
    for (const nul of nulCases) {
      it(`when ${nul.title} holds a NUL character then it is a 400 naming it`, async () => {
        const response = await ctx.api.request(nul.method, nul.path(thingKey), {
          token,
          ...(nul.body === undefined ? {} : { body: nul.body }),
        });
        assert.equal(response.status, 400, response.text);
        const item = assertErrorShape(response.body, nul.title);
        assert.equal(item.code, 'invalid');
        assert.equal(item.param, nul.param);
      });
    }

    const deviceNulCases: { title: string; path: string; body: (key: string) => unknown; param: string }[] = [
      {
        title: 'the thing_key of a register',
        path: '/api/v3/things/register',
        body: () => ({ thing_key: `a${NUL}b` }),
        param: 'thing_key',
      },
      {
        title: 'the thing_key of a heartbeat',
        path: '/api/v3/things/heartbeat',
        body: () => ({ thing_key: `a${NUL}b` }),
        param: 'thing_key',
      },
      {
        title: 'a value of event data',
        path: '/api/v3/things/event',
        body: (key) => ({ thing_key: key, data: { state: `on${NUL}` } }),
        param: 'data.state',
      },
      {
        title: 'a metric name of an event in a bulk',
        path: '/api/v3/things/event',
        body: (key) => ({
          events: [
            { thing_key: key, data: { ok: 1 } },
            { thing_key: key, data: { [`t${NUL}`]: 1 } },
          ],
        }),
        param: 'events.1.data',
      },
      {
        title: 'the message of an alert',
        path: '/api/v3/alerts',
        body: (key) => ({ alert: { thing_key: key, message: `hot${NUL}`, alert_type: 1 } }),
        param: 'alert.message',
      },
    ];
    for (const nul of deviceNulCases) {
      it(`when a device sends a NUL character in ${nul.title} over HTTP then it is a 400 naming it`, async () => {
        const response = await device.post(nul.path, nul.body(thingKey));
        assert.equal(response.status, 400, response.text);
        const item = assertDeviceError(response.body, nul.title);
        assert.equal(item.code, 'invalid');
        assert.equal(item.param, nul.param);
      });
    }

    it('when parameters nest deeper than 64 levels then it is a 400 naming where, and nothing is stored', async () => {
      const deepArray = (depth: number) => `${'['.repeat(depth)}1${']'.repeat(depth)}`;
      const event = await device.post('/api/v3/things/event', null, {
        raw: `{"thing_key":"${thingKey}","data":{"deep":${deepArray(10_000)}}}`,
      });
      assert.equal(event.status, 400, event.text);
      assert.equal(assertDeviceError(event.body, 'deep event').param?.startsWith('data.deep.0.0'), true);
      const list = await ctx.api.request('GET', '/api/v3/roles', { token, rawBody: `{"extra":${deepArray(5000)}}` });
      assert.equal(list.status, 400, list.text);
      assert.equal(assertErrorShape(list.body, 'deep list').code, 'invalid');
      const shallow = await ctx.api.request('GET', '/api/v3/roles', { token, rawBody: `{"extra":${deepArray(60)}}` });
      assert.equal(shallow.status, 200, shallow.text);
      const data = await ctx.api.request('POST', '/api/v3/query/thing_data', { token, body: { thing_key: thingKey } });
      assert.equal(data.body[thingKey].total_event_count, 1, 'only the event stored before');
    });

    it('when a device sends a NUL character over MQTT then the acknowledgement refuses it with 400 and nothing is stored', async () => {
      const keyPair = await createKeyPair(ctx.api, token);
      const mqttDevice = await MqttDevice.connect(`mqtt://127.0.0.1:${ctx.api.server.mqttPort}`, keyPair);
      try {
        const cases = [
          { kind: 'register', payload: { thing_key: `m${NUL}` } },
          { kind: 'event', payload: { thing_key: thingKey, data: { state: `on${NUL}` } } },
          { kind: 'alert', payload: { alert: { thing_key: thingKey, message: `hot${NUL}`, alert_type: 1 } } },
        ] as const;
        for (const { kind, payload } of cases) {
          const ack = await mqttDevice.send(kind, payload);
          assert.equal(ack.http_code, 400, `${kind}: ${JSON.stringify(ack)}`);
          assert.equal(ack.http_msg.errors?.[0]?.code, 'invalid', kind);
        }
      } finally {
        await mqttDevice.close();
      }
      const data = await ctx.api.request('POST', '/api/v3/query/thing_data', { token, body: { thing_key: thingKey } });
      assert.equal(data.body[thingKey].total_event_count, 1, 'only the event stored before');
    });

    it('when an MQTT login names an access key with a NUL character then it is refused like any unknown key', async () => {
      await assert.rejects(
        MqttDevice.connect(`mqtt://127.0.0.1:${ctx.api.server.mqttPort}`, {
          access_key: `a${NUL}b`,
          secret_key: 'not a secret',
        }),
      );
      assert.equal((await ctx.api.request('GET', '/healthz')).status, 200);
    });

    const frameworkCases: {
      title: string;
      send: () => Promise<{ status: number; body: any }>;
      status: number;
      code: string;
    }[] = [
      {
        title: 'a path with a bad percent-encoding',
        send: () => ctx.api.request('GET', '/api/v3/things/%zz', { token }),
        status: 400,
        code: 'invalid',
      },
      {
        title: 'a path parameter longer than the router accepts',
        send: () => ctx.api.request('GET', `/api/v3/things/${'k'.repeat(300)}`, { token }),
        status: 414,
        code: 'too_large',
      },
      {
        title: 'a path naming no endpoint',
        send: () => ctx.api.request('GET', '/api/v3/../../etc/passwd', { token }),
        status: 404,
        code: 'not_found',
      },
      {
        title: 'a method no endpoint of the path has',
        send: () => ctx.api.request('PATCH', '/api/v3/things', { token }),
        status: 404,
        code: 'not_found',
      },
      {
        title: 'a malformed Content-Type with a body',
        send: () =>
          ctx.api.request('POST', '/api/v3/roles', { token, rawBody: '{}', headers: { 'content-type': ';;;' } }),
        status: 415,
        code: 'unsupported_media_type',
      },
      {
        title: 'a body over the limit',
        send: () => ctx.api.request('POST', '/api/v3/roles', { token, rawBody: `"${'x'.repeat(1024 * 1024)}"` }),
        status: 413,
        code: 'too_large',
      },
      {
        title: 'an invalid request line',
        send: () => rawRequest(ctx.api.url, 'GARBAGE\r\n\r\n'),
        status: 400,
        code: 'invalid',
      },
      {
        title: 'an unknown HTTP version',
        send: () => rawRequest(ctx.api.url, 'GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n'),
        status: 400,
        code: 'invalid',
      },
      {
        title: 'a NUL character in a header',
        send: () => rawRequest(ctx.api.url, `GET /api/v3/roles HTTP/1.1\r\nHost: x\r\nX-Auth-Token: a${NUL}b\r\n\r\n`),
        status: 400,
        code: 'invalid',
      },
      {
        title: 'headers over the size limit',
        send: () => rawRequest(ctx.api.url, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`),
        status: 431,
        code: 'too_large',
      },
    ];
    for (const framework of frameworkCases) {
      it(`when the request has ${framework.title} then it is a ${framework.status} in the error shape`, async () => {
        const response = await framework.send();
        assert.equal(response.status, framework.status, JSON.stringify(response.body));
        assert.equal(assertErrorShape(response.body, framework.title).code, framework.code);
      });
    }

    it('after all of it the server still answers', async () => {
      assert.equal((await ctx.api.request('GET', '/healthz')).status, 200);
    });
  },
  { env: async () => ({ MQTT_PORT: String(await freePort()) }) },
);
