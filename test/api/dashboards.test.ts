import assert from 'node:assert/strict';
import { it } from 'node:test';
import { childOrganisation, createThing, defaultTemplateKey, unique, userWithAbilities } from '../support/fixtures.ts';
import { describeOnStores } from '../support/suites.ts';

/** What a refused `time_range.last` is told (docs/api.md, "Dashboards"). */
const TIME_RANGE_LAST_RULE = 'must be like 15m, 24h or 7d: 1 to 999999 minutes (m), hours (h) or days (d)';

const layout = (x = 0, y = 0, w = 4, h = 3) => ({ x, y, w, h });

describeOnStores('dashboards', (ctx) => {
  const create = (token: string, dashboard: Record<string, unknown>, extra: object = {}) =>
    ctx.api.request('POST', '/api/v3/dashboards', { token, body: { dashboard, ...extra } });

  /** A group of the admin's organisation holding these things. */
  async function createGroup(token: string, thingKeys: string[]) {
    const response = await ctx.api.request('POST', '/api/v3/groups', {
      token,
      body: { group: { name: unique('group'), group_type: 1, thing_keys: thingKeys } },
    });
    assert.equal(response.status, 200, response.text);
    return response.body.group.group_key as string;
  }

  it('when a dashboard is created with a name alone then the absent fields have their defaults', async () => {
    const token = await ctx.api.adminToken();
    const created = await create(token, { name: 'Line 3' });
    assert.equal(created.status, 200, created.text);
    const dashboard = created.body.dashboard;
    assert.match(dashboard.dashboard_key, /^[0-9a-z]{10}$/);
    assert.equal(dashboard.description, null);
    assert.deepEqual(dashboard.time_range, { last: '1h' });
    assert.deepEqual(dashboard.variables, []);
    assert.deepEqual(dashboard.widgets, []);
    assert.equal(typeof dashboard.created_at, 'number');
    const missing = await create(token, {});
    assert.equal(missing.status, 400);
    assert.deepEqual(missing.body.errors[0], { code: 'required', param: 'dashboard.name', message: 'is required' });
  });

  it('when a dashboard holds every widget type then it is answered as given, with widget keys kept or generated', async () => {
    const token = await ctx.api.adminToken();
    const a = await createThing(ctx.api, token, {});
    const b = await createThing(ctx.api, token, {});
    const templateKey = await defaultTemplateKey(ctx.api, token);
    const groupKey = await createGroup(token, [a.thing_key]);
    const widgets = [
      {
        widget_key: 'mine-1',
        type: 'timeseries',
        title: 'Fleet',
        layout: layout(0, 0, 8, 4),
        source: { thing_template_key: templateKey },
        metrics: ['temperature', 'machine.rpm'],
        aggregate: 'avg',
      },
      {
        type: 'value',
        title: 'Now',
        layout: layout(8, 0, 4, 2),
        thing_key: a.thing_key,
        metric: 'temperature',
        unit: 'C',
        thresholds: [
          { from: 0, color: '#00ff00' },
          { from: 80, color: '#ff0000' },
        ],
      },
      { type: 'gauge', title: 'Dial', layout: layout(8, 2, 4, 2), thing_key: '$boiler', metric: 'p', min: 0, max: 10 },
      { type: 'things', title: 'Table', layout: layout(0, 4, 12, 3), source: { group_key: groupKey }, metrics: [] },
      {
        type: 'alerts',
        title: 'Alerts',
        layout: layout(0, 7, 6, 3),
        source: { thing_keys: [a.thing_key, b.thing_key] },
        status: ['open'],
      },
      { type: 'map', title: 'Map', layout: layout(6, 7, 6, 3), source: { thing_keys: ['$boiler'] } },
      { type: 'text', title: 'Notes', layout: layout(0, 10, 12, 1), text: '# Shift\n<script>alert(1)</script>' },
    ];
    const created = await create(token, {
      name: unique('All widgets'),
      description: 'every type',
      time_range: { from: 1_700_000_000, to: 1_700_086_400 },
      variables: [{ name: 'boiler', thing_template_key: templateKey }],
      widgets,
    });
    assert.equal(created.status, 200, created.text);
    const answered = created.body.dashboard;
    assert.deepEqual(answered.time_range, { from: 1_700_000_000, to: 1_700_086_400 });
    assert.equal(answered.widgets.length, widgets.length);
    assert.equal(answered.widgets[0].widget_key, 'mine-1');
    for (const w of answered.widgets.slice(1)) assert.match(w.widget_key, /^[0-9a-z]{10}$/);
    assert.equal(new Set(answered.widgets.map((w: any) => w.widget_key)).size, widgets.length);
    const withoutKeys = answered.widgets.map(({ widget_key: _k, ...rest }: any) => rest);
    assert.deepEqual(
      withoutKeys,
      widgets.map(({ widget_key: _k, ...rest }: any) => rest),
    );
    const read = await ctx.api.request('GET', `/api/v3/dashboards/${answered.dashboard_key}`, { token });
    assert.deepEqual(read.body.dashboard, answered);
  });

  it('when a widget is not valid then the 400 names its field, widgets counted from 0', async () => {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, {});
    const ok = { type: 'text', title: 'ok', layout: layout(), text: 'hi' };
    const cases: [unknown, string, string][] = [
      [{ title: 't', layout: layout() }, 'required', 'type'],
      [{ type: 'pie', title: 't', layout: layout() }, 'invalid', 'type'],
      [{ type: 'text', layout: layout(), text: 'x' }, 'required', 'title'],
      [{ type: 'text', title: 't', text: 'x' }, 'required', 'layout'],
      [{ type: 'text', title: 't', layout: layout(10, 0, 3, 1), text: 'x' }, 'invalid', 'layout.w'],
      [{ type: 'text', title: 't', layout: { x: -1, y: 0, w: 1, h: 1 }, text: 'x' }, 'invalid', 'layout.x'],
      [{ type: 'text', title: 't', layout: { x: 0, y: 0, w: 1.5, h: 1 }, text: 'x' }, 'invalid', 'layout.w'],
      [{ type: 'text', title: 't', layout: { x: 0, y: 0, w: 1, h: 0 }, text: 'x' }, 'invalid', 'layout.h'],
      [{ type: 'text', title: 't', layout: layout() }, 'required', 'text'],
      [{ type: 'text', title: 't', layout: layout(), text: 'x'.repeat(8193) }, 'invalid', 'text'],
      [{ type: 'text', title: 't', layout: layout(), text: 'x', colour: 1 }, 'unknown_field', 'colour'],
      [{ type: 'timeseries', title: 't', layout: layout(), metrics: ['a'] }, 'required', 'source'],
      [
        { type: 'timeseries', title: 't', layout: layout(), source: { thing_keys: [thing.thing_key] } },
        'required',
        'metrics',
      ],
      [
        { type: 'timeseries', title: 't', layout: layout(), source: { thing_keys: [thing.thing_key] }, metrics: [] },
        'invalid',
        'metrics',
      ],
      [
        {
          type: 'timeseries',
          title: 't',
          layout: layout(),
          source: { thing_keys: [thing.thing_key] },
          metrics: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'],
        },
        'invalid',
        'metrics',
      ],
      [
        {
          type: 'timeseries',
          title: 't',
          layout: layout(),
          source: { thing_keys: [thing.thing_key] },
          metrics: ['a'],
          aggregate: 'median',
        },
        'invalid',
        'aggregate',
      ],
      [{ type: 'value', title: 't', layout: layout(), metric: 'a' }, 'required', 'thing_key'],
      [{ type: 'value', title: 't', layout: layout(), thing_key: thing.thing_key }, 'required', 'metric'],
      [
        {
          type: 'value',
          title: 't',
          layout: layout(),
          thing_key: thing.thing_key,
          metric: 'a',
          thresholds: [
            { from: 5, color: '#000000' },
            { from: 1, color: '#ffffff' },
          ],
        },
        'invalid',
        'thresholds[1].from',
      ],
      [
        {
          type: 'value',
          title: 't',
          layout: layout(),
          thing_key: thing.thing_key,
          metric: 'a',
          thresholds: [{ from: 5, color: 'red' }],
        },
        'invalid',
        'thresholds[0].color',
      ],
      [
        { type: 'gauge', title: 't', layout: layout(), thing_key: thing.thing_key, metric: 'a', min: 0 },
        'required',
        'max',
      ],
      [
        { type: 'gauge', title: 't', layout: layout(), thing_key: thing.thing_key, metric: 'a', min: 5, max: 5 },
        'invalid',
        'max',
      ],
      [{ type: 'things', title: 't', layout: layout() }, 'required', 'source'],
      [{ type: 'things', title: 't', layout: layout(), source: {} }, 'invalid', 'source'],
      [
        { type: 'things', title: 't', layout: layout(), source: { group_key: 'a', thing_template_key: 'b' } },
        'invalid',
        'source',
      ],
      [
        {
          type: 'things',
          title: 't',
          layout: layout(),
          source: { thing_keys: Array.from({ length: 101 }, (_, i) => `k${i}`) },
        },
        'invalid',
        'source.thing_keys',
      ],
      [
        { type: 'map', title: 't', layout: layout(), source: { thing_keys: ['$nobody'] } },
        'invalid',
        'source.thing_keys[0]',
      ],
      [
        { type: 'alerts', title: 't', layout: layout(), source: { thing_keys: [thing.thing_key] }, status: ['gone'] },
        'invalid',
        'status',
      ],
      [
        { type: 'map', title: 't', layout: layout(), source: { group_key: 'nogroup' } },
        'not_found',
        'source.group_key',
      ],
      [
        { type: 'map', title: 't', layout: layout(), source: { thing_template_key: 'notemplate' } },
        'not_found',
        'source.thing_template_key',
      ],
      [
        { type: 'map', title: 't', layout: layout(), source: { thing_keys: [thing.thing_key, 'nothing-here'] } },
        'not_found',
        'source.thing_keys[1]',
      ],
      [
        { type: 'value', title: 't', layout: layout(), thing_key: 'nothing-here', metric: 'a' },
        'not_found',
        'thing_key',
      ],
    ];
    for (const [widget, code, field] of cases) {
      const response = await create(token, { name: 'bad', widgets: [ok, ok, widget] });
      assert.equal(response.status, 400, `${JSON.stringify(widget)}: ${response.text}`);
      assert.equal(response.body.success, false);
      assert.deepEqual(
        [response.body.errors[0].code, response.body.errors[0].param],
        [code, `dashboard.widgets[2].${field}`],
        JSON.stringify(widget),
      );
    }
    const numericText = await create(token, {
      name: unique('numeric text'),
      widgets: [
        {
          type: 'gauge',
          title: 'g',
          layout: { x: '0', y: 1, w: '6', h: 2 },
          thing_key: thing.thing_key,
          metric: 'a',
          min: '0',
          max: '1.5e1',
        },
      ],
    });
    assert.equal(numericText.status, 200, numericText.text);
    assert.deepEqual(
      [numericText.body.dashboard.widgets[0].layout, numericText.body.dashboard.widgets[0].max],
      [{ x: 0, y: 1, w: 6, h: 2 }, 15],
      'numeric text is read as its number, as everywhere',
    );
    const hex = await create(token, { name: 'bad', widgets: [{ ...ok, layout: { x: '0x1', y: 0, w: 1, h: 1 } }] });
    assert.deepEqual([hex.status, hex.body.errors[0].param], [400, 'dashboard.widgets[0].layout.x']);
    const notObject = await create(token, { name: 'bad', widgets: [ok, 'text'] });
    assert.equal(notObject.status, 400);
    const twice = await create(token, {
      name: 'bad',
      widgets: [
        { ...ok, widget_key: 'a' },
        { ...ok, widget_key: 'a' },
      ],
    });
    assert.deepEqual([twice.status, twice.body.errors[0].param], [400, 'dashboard.widgets[1].widget_key']);
    const range = await create(token, { name: 'bad', time_range: { last: '1w' } });
    assert.deepEqual([range.status, range.body.errors[0].param], [400, 'dashboard.time_range.last']);
    const mixed = await create(token, { name: 'bad', time_range: { last: '1h', from: 10 } });
    assert.deepEqual([mixed.status, mixed.body.errors[0].param], [400, 'dashboard.time_range']);
    // A member neither form has is named as unknown.
    const extra = await create(token, { name: 'bad', time_range: { last: '1h', foo: 1 } });
    assert.deepEqual(
      [extra.status, extra.body.errors[0].code, extra.body.errors[0].param],
      [400, 'unknown_field', 'dashboard.time_range.foo'],
    );
    const reversed = await create(token, { name: 'bad', time_range: { from: 20, to: 10 } });
    assert.deepEqual([reversed.status, reversed.body.errors[0].param], [400, 'dashboard.time_range.from']);
    // JSON null is not read as 0 (a range in 1970).
    const nulls = await create(token, { name: 'bad', time_range: { from: null, to: null } });
    assert.equal(nulls.status, 400, nulls.text);
    assert.deepEqual(nulls.body.errors[0], {
      code: 'invalid',
      param: 'dashboard.time_range.from',
      message: 'must be a number, not null',
    });
    // The checks of every request (NUL characters, numbers past a double, nesting) name a widget's
    // fields as the dashboard's own checks do: in brackets.
    const nul = await create(token, { name: 'bad', widgets: [{ ...ok, title: 'a\u0000' }] });
    assert.deepEqual([nul.status, nul.body.errors[0].param], [400, 'dashboard.widgets[0].title']);
    const huge = await ctx.api.request('POST', '/api/v3/dashboards', {
      token,
      rawBody: `{"dashboard":{"name":"bad","widgets":[${JSON.stringify(ok)},{"type":"text","title":"t","text":"x","extra":[[1e999]]}]}}`,
      headers: { 'content-type': 'application/json' },
    });
    assert.deepEqual([huge.status, huge.body.errors[0].param], [400, 'dashboard.widgets[1].extra[0][0]']);
    assert.match(huge.body.message, /dashboard\.widgets\[1\]\.extra\[0\]\[0\]/);
    // Past what the queries read, no widget could be drawn.
    const far = await create(token, { name: 'bad', time_range: { from: 0, to: 9_007_199_254_740_991 } });
    assert.equal(far.status, 400, far.text);
    assert.match(far.body.errors.map((e: { param: string }) => e.param).join(), /dashboard\.time_range/);
    for (const widget of [null, [], 'x']) {
      const notObject = await create(token, { name: 'bad', widgets: [widget] });
      assert.deepEqual([notObject.status, notObject.body.errors[0].param], [400, 'dashboard.widgets[0]']);
    }
    const listed = await ctx.api.request('GET', '/api/v3/dashboards', { token, query: { search: 'bad', per: 1000 } });
    // By name exactly: another test's dashboard may hold "bad" by chance (a random key, say).
    const stored = listed.body.dashboards.filter((d: { name: string }) => d.name === 'bad');
    assert.equal(stored.length, 0, 'no refused dashboard was stored');
  });

  it('when time_range.last is not of its form then the 400 says what the form is', async () => {
    const token = await ctx.api.adminToken();
    for (const last of ['5 minutes', 'abc', '0m', '15', '1234567h', 7]) {
      const refused = await create(token, { name: 'bad', time_range: { last } });
      assert.equal(refused.status, 400, `${last}: ${refused.text}`);
      assert.deepEqual(
        refused.body.errors,
        [{ code: 'invalid', param: 'dashboard.time_range.last', message: TIME_RANGE_LAST_RULE }],
        String(last),
      );
    }
  });

  it('when a dashboard has more than 50 widgets or over 256 KiB of JSON then it is a 400 naming widgets', async () => {
    const token = await ctx.api.adminToken();
    const text = (i: number, size: number) => ({
      type: 'text',
      title: `t${i}`,
      layout: layout(0, i, 12, 1),
      text: 'x'.repeat(size),
    });
    const many = await create(token, { name: 'many', widgets: Array.from({ length: 51 }, (_, i) => text(i, 1)) });
    assert.deepEqual([many.status, many.body.errors[0].param], [400, 'dashboard.widgets']);
    const fifty = await create(token, { name: 'fifty', widgets: Array.from({ length: 50 }, (_, i) => text(i, 1)) });
    assert.equal(fifty.status, 200, fifty.text);
    const large = await create(token, { name: 'large', widgets: Array.from({ length: 33 }, (_, i) => text(i, 8000)) });
    assert.deepEqual(
      [large.status, large.body.errors[0].code, large.body.errors[0].param],
      [400, 'too_large', 'dashboard.widgets'],
    );
  });

  it('when variables are given then widgets may name them, and a variable naming no template is a 400', async () => {
    const token = await ctx.api.adminToken();
    const templateKey = await defaultTemplateKey(ctx.api, token);
    const gauge = { type: 'value', title: 'v', layout: layout(), thing_key: '$line', metric: 'a' };
    const unknownTemplate = await create(token, {
      name: 'v',
      variables: [{ name: 'line', thing_template_key: 'missing-template' }],
    });
    assert.deepEqual(
      [unknownTemplate.status, unknownTemplate.body.errors[0].code, unknownTemplate.body.errors[0].param],
      [400, 'not_found', 'dashboard.variables[0].thing_template_key'],
    );
    const twice = await create(token, {
      name: 'v',
      variables: [
        { name: 'line', thing_template_key: templateKey },
        { name: 'line', thing_template_key: templateKey },
      ],
    });
    assert.deepEqual([twice.status, twice.body.errors[0].param], [400, 'dashboard.variables[1].name']);
    // Every mistake in a variable is named as widgets' are, counted from 0 in brackets.
    for (const [variable, code, param] of [
      [{ name: 'p' }, 'required', 'dashboard.variables[0].thing_template_key'],
      [{ thing_template_key: templateKey }, 'required', 'dashboard.variables[0].name'],
      [5, 'invalid', 'dashboard.variables[0]'],
      [{ name: 'p', thing_template_key: templateKey, x: 1 }, 'unknown_field', 'dashboard.variables[0].x'],
      [{ name: 'p', thing_template_key: 7 }, 'invalid', 'dashboard.variables[0].thing_template_key'],
    ] as const) {
      const refused = await create(token, { name: 'v', variables: [variable] });
      assert.deepEqual(
        [refused.status, refused.body.errors[0].code, refused.body.errors[0].param],
        [400, code, param],
        JSON.stringify(variable),
      );
    }
    const undeclared = await create(token, { name: 'v', widgets: [gauge] });
    assert.deepEqual([undeclared.status, undeclared.body.errors[0].param], [400, 'dashboard.widgets[0].thing_key']);
    const created = await create(token, {
      name: 'v',
      variables: [{ name: 'line', thing_template_key: templateKey }],
      widgets: [gauge],
    });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.body.dashboard.widgets[0].thing_key, '$line');
    const dropped = await ctx.api.request('PUT', `/api/v3/dashboards/${created.body.dashboard.dashboard_key}`, {
      token,
      body: { dashboard: { variables: [] } },
    });
    assert.deepEqual([dropped.status, dropped.body.errors[0].param], [400, 'dashboard.widgets[0].thing_key']);
  });

  it('when a dashboard is updated and deleted then the fields given are replaced, and each change is audited', async () => {
    const token = await ctx.api.adminToken();
    const name = unique('Audited');
    const created = await create(token, {
      name,
      description: 'first',
      widgets: [{ type: 'text', title: 'a', layout: layout(), text: 'a' }],
    });
    const key = created.body.dashboard.dashboard_key;
    const widgetKey = created.body.dashboard.widgets[0].widget_key;
    const updated = await ctx.api.request('PUT', `/api/v3/dashboards/${key}`, {
      token,
      body: { dashboard: { time_range: { last: '7d' } } },
    });
    assert.equal(updated.status, 200, updated.text);
    assert.equal(updated.body.dashboard.description, 'first');
    assert.equal(updated.body.dashboard.widgets[0].widget_key, widgetKey, 'a widget key is kept');
    assert.deepEqual(updated.body.dashboard.time_range, { last: '7d' });
    const cleared = await ctx.api.request('PUT', `/api/v3/dashboards/${key}`, {
      token,
      body: { dashboard: { description: null, widgets: [] } },
    });
    assert.deepEqual([cleared.body.dashboard.description, cleared.body.dashboard.widgets], [null, []]);
    const unknown = await ctx.api.request('PUT', `/api/v3/dashboards/${key}`, {
      token,
      body: { dashboard: { colour: 'red' } },
    });
    assert.deepEqual([unknown.status, unknown.body.errors[0].code], [400, 'unknown_field']);
    assert.equal((await ctx.api.request('DELETE', `/api/v3/dashboards/${key}`, { token })).status, 200);
    assert.equal((await ctx.api.request('GET', `/api/v3/dashboards/${key}`, { token })).status, 404);
    assert.equal((await ctx.api.request('DELETE', `/api/v3/dashboards/${key}`, { token })).status, 404);
    const audit = await ctx.api.request('GET', '/api/v3/audit_trails', { token, query: { entity_key: key } });
    assert.deepEqual(audit.body.audit_trails.map((a: any) => [a.entity_type, a.action_taken]).sort(), [
      ['Dashboard', 'create'],
      ['Dashboard', 'delete'],
      ['Dashboard', 'update'],
      ['Dashboard', 'update'],
    ]);
  });

  it('when a thing a widget names is deleted then the dashboard still reads', async () => {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, {});
    const created = await create(token, {
      name: unique('Gone'),
      widgets: [{ type: 'value', title: 'v', layout: layout(), thing_key: thing.thing_key, metric: 'a' }],
    });
    assert.equal(created.status, 200, created.text);
    const key = created.body.dashboard.dashboard_key;
    assert.equal((await ctx.api.request('DELETE', `/api/v3/things/${thing.thing_key}`, { token })).status, 200);
    const read = await ctx.api.request('GET', `/api/v3/dashboards/${key}`, { token });
    assert.equal(read.status, 200);
    assert.equal(read.body.dashboard.widgets[0].thing_key, thing.thing_key);
    const renamed = await ctx.api.request('PUT', `/api/v3/dashboards/${key}`, {
      token,
      body: { dashboard: { name: 'renamed' } },
    });
    assert.equal(renamed.status, 200, renamed.text);
  });

  it('when dashboards are listed then they are paged, searched and sorted like other lists', async () => {
    const token = await ctx.api.adminToken();
    const tag = unique('findme');
    for (const n of ['b', 'a', 'c']) {
      assert.equal((await create(token, { name: `${tag} ${n}`, description: n === 'c' ? 'other' : null })).status, 200);
    }
    const page = await ctx.api.request('GET', '/api/v3/dashboards', {
      token,
      query: { search: tag, order_by: 'name', order: 'asc', per: 2, page: 2 },
    });
    assert.equal(page.status, 200, page.text);
    assert.equal(page.body.total_count, 3);
    assert.equal(page.body.page, 2);
    assert.deepEqual(
      page.body.dashboards.map((d: any) => d.name),
      [`${tag} c`],
    );
    const both = await ctx.api.request('GET', '/api/v3/dashboards', { token, query: { search: `${tag} other` } });
    assert.equal(both.body.total_count, 1);
    const badOrder = await ctx.api.request('GET', '/api/v3/dashboards', { token, query: { order_by: 'widgets' } });
    assert.equal(badOrder.status, 400);
  });

  it('when a role lacks an ability of class 15 then that operation is a 403, and the others work', async () => {
    const token = await ctx.api.adminToken();
    const created = await create(token, { name: unique('Perm') });
    const key = created.body.dashboard.dashboard_key;
    const none = await userWithAbilities(ctx.api, token, [11]);
    for (const [method, path] of [
      ['GET', '/api/v3/dashboards'],
      ['GET', `/api/v3/dashboards/${key}`],
      ['POST', '/api/v3/dashboards'],
      ['PUT', `/api/v3/dashboards/${key}`],
      ['DELETE', `/api/v3/dashboards/${key}`],
    ] as const) {
      const body = method === 'POST' || method === 'PUT' ? { dashboard: { name: 'x' } } : undefined;
      const response = await ctx.api.request(method, path, { token: none.token, ...(body ? { body } : {}) });
      assert.equal(response.status, 403, `${method} ${path}`);
      assert.equal(response.body.errors[0].code, 'forbidden');
    }
    const reader = await userWithAbilities(ctx.api, token, [151]);
    assert.equal((await ctx.api.request('GET', `/api/v3/dashboards/${key}`, { token: reader.token })).status, 200);
    assert.equal((await create(reader.token, { name: 'x' })).status, 403);
    const editor = await userWithAbilities(ctx.api, token, [155]);
    const made = await create(editor.token, { name: unique('by editor') });
    assert.equal(made.status, 200, made.text);
    const role = await ctx.api.request('GET', `/api/v3/roles/${editor.role.role_key}`, { token });
    assert.deepEqual(role.body.role.permissions, [{ class: 'dashboard', operation: 'all', seqno: 5 }]);
  });

  it('when an OEM parent uses is_oem then it sees and changes its child dashboards, and the child never sees the parent', async () => {
    const token = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, token);
    const childThing = await createThing(ctx.api, child.token, {});
    const own = await create(token, { name: unique('Parent') });
    const inChild = await create(
      token,
      {
        name: unique('For child'),
        widgets: [{ type: 'value', title: 'v', layout: layout(), thing_key: childThing.thing_key, metric: 'a' }],
      },
      { child_organisation_key: child.organisationKey },
    );
    assert.equal(inChild.status, 200, inChild.text);
    const childKey = inChild.body.dashboard.dashboard_key;
    assert.equal((await ctx.api.request('GET', `/api/v3/dashboards/${childKey}`, { token })).status, 404);
    const seen = await ctx.api.request('GET', `/api/v3/dashboards/${childKey}`, { token, query: { is_oem: true } });
    assert.equal(seen.status, 200);
    const listed = await ctx.api.request('GET', '/api/v3/dashboards', { token, query: { is_oem: true, per: 1000 } });
    assert.ok(listed.body.dashboards.some((d: any) => d.dashboard_key === childKey));
    const changed = await ctx.api.request('PUT', `/api/v3/dashboards/${childKey}`, {
      token,
      body: { is_oem: true, dashboard: { name: 'renamed by parent' } },
    });
    assert.equal(changed.status, 200, changed.text);
    const childList = await ctx.api.request('GET', '/api/v3/dashboards', { token: child.token, query: { per: 1000 } });
    assert.deepEqual(
      childList.body.dashboards.map((d: any) => d.dashboard_key),
      [childKey],
    );
    assert.equal(
      (await ctx.api.request('GET', `/api/v3/dashboards/${own.body.dashboard.dashboard_key}`, { token: child.token }))
        .status,
      404,
    );
    const parentThingInChild = await create(child.token, {
      name: 'x',
      widgets: [
        {
          type: 'value',
          title: 'v',
          layout: layout(),
          thing_key: (await createThing(ctx.api, token, {})).thing_key,
          metric: 'a',
        },
      ],
    });
    assert.deepEqual(
      [parentThingInChild.status, parentThingInChild.body.errors[0].code],
      [400, 'not_found'],
      "a child's dashboard cannot name its parent's things",
    );
  });
});
