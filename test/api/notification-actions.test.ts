import assert from 'node:assert/strict';
import { it } from 'node:test';
import { assertTokenRequired, childOrganisation, unique, userWithAbilities } from '../support/fixtures.ts';
import { describeOnStores } from '../support/suites.ts';

const ISO_MILLIS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describeOnStores('notification actions (v2 and v3)', (ctx) => {
  async function rule(token?: string, extra: object = {}) {
    const response = await ctx.api.request('POST', '/api/v3/rules', {
      token: token ?? (await ctx.api.adminToken()),
      body: { rule: { name: unique('rule'), condition: 'temperature > 80' }, ...extra },
    });
    assert.equal(response.status, 200, response.text);
    return response.body.rule.rule_key as string;
  }

  const create = async (version: 'v2' | 'v3', action: Record<string, unknown>, token?: string) =>
    ctx.api.request('POST', `/api/${version}/notification_actions`, {
      token: token ?? (await ctx.api.adminToken()),
      body: { notification_action: action },
    });

  it('when each kind is created through v3 then it answers exactly its fields with their documented defaults', async () => {
    const ruleKey = await rule();
    const email = await create('v3', { type: 'EmailNotificationAction', rule_key: ruleKey, to: 'ops@example.com' });
    assert.equal(email.status, 200, email.text);
    const e = email.body.notification_action;
    assert.deepEqual(Object.keys(e).sort(), [
      'bcc',
      'body',
      'cc',
      'created_at',
      'notification_action_key',
      'rule_key',
      'subject',
      'to',
      'type',
      'updated_at',
    ]);
    assert.equal(e.cc, '');
    assert.equal(e.bcc, '');
    assert.equal(e.subject, null);
    assert.equal(e.body, null);
    assert.equal(typeof e.created_at, 'number');

    const http = (
      await create('v3', {
        type: 'CallHttpUrlAction',
        rule_key: ruleKey,
        url: 'https://example.com/hook',
        method: 'post',
      })
    ).body.notification_action;
    assert.equal(http.method, 'POST');
    assert.equal(http.body, '');
    assert.deepEqual(http.headers, {});
    assert.deepEqual(http.query, {});

    const udp = await create('v3', {
      type: 'ThingUserDefinedPropertiesAction',
      rule_key: ruleKey,
      body: { user_defined_properties: { state: 'hot' } },
    });
    assert.equal(udp.status, 200, udp.text);
    const u = udp.body.notification_action;
    assert.equal(u.method, 'PUT');
    assert.match(u.url, /^http:\/\/.+\/api\/v3\/things\/\$THING\$\/set_user_defined_properties$/);
    assert.equal(u.body, '{"user_defined_properties":{"state":"hot"}}');
    assert.deepEqual(u.headers, {});
    assert.deepEqual(u.query, {});

    const sms = await create('v3', {
      type: 'SMSNotificationAction',
      rule_key: ruleKey,
      name: 'Night shift',
      phone_number: '+15550100',
    });
    assert.equal(sms.status, 200, sms.text);
    assert.equal(sms.body.notification_action.name, 'Night shift');
    assert.equal(sms.body.notification_action.phone_number, '+15550100');
    assert.equal(sms.body.notification_action.body, null);
  });

  it('when actions are created and updated through v2 then timestamps are ISO in create answers and absent in updates', async () => {
    const ruleKey = await rule();
    const created = await create('v2', {
      type: 'SensorTraitsAction',
      rule_key: ruleKey,
      body: { traits: { mode: 'safe' } },
    });
    assert.equal(created.status, 200, created.text);
    const a = created.body.notification_action;
    assert.equal(a.type, 'SensorTraitsAction');
    assert.match(a.url, /\/api\/v1\/sensors\/\$SENSOR\$\/set_traits$/);
    assert.equal(a.method, 'PUT');
    assert.equal(a.body, '{"traits":{"mode":"safe"}}');
    assert.match(a.created_at, ISO_MILLIS);
    assert.match(a.updated_at, ISO_MILLIS);
    const token = await ctx.api.adminToken();
    const key = a.notification_action_key;
    const updated = await ctx.api.request('PUT', `/api/v2/notification_actions/${key}`, {
      token,
      body: { notification_action: { type: 'SensorTraitsAction', body: { traits: { mode: 'off' } } } },
    });
    assert.equal(updated.status, 200, updated.text);
    assert.equal(updated.body.notification_action.created_at, undefined);
    assert.equal(updated.body.notification_action.updated_at, undefined);
    assert.equal(updated.body.notification_action.body, '{"traits":{"mode":"off"}}');
    // The same action through v3.
    const v3 = await ctx.api.request('GET', `/api/v3/notification_actions/${key}`, { token });
    assert.equal(v3.body.notification_action.type, 'ThingUserDefinedPropertiesAction');
    assert.equal(v3.body.notification_action.body, '{"user_defined_properties":{"mode":"off"}}');
    assert.match(v3.body.notification_action.url, /\/api\/v3\/things\/\$THING\$\/set_user_defined_properties$/);
    assert.equal(typeof v3.body.notification_action.created_at, 'number');
    const v3Update = await ctx.api.request('PUT', `/api/v3/notification_actions/${key}`, {
      token,
      body: { notification_action: { type: 'ThingUserDefinedPropertiesAction' } },
    });
    assert.equal(typeof v3Update.body.notification_action.updated_at, 'number');
  });

  it('when a kind misses a required field then it is a 400 naming it, in both versions', async () => {
    const ruleKey = await rule();
    const cases: ['v2' | 'v3', Record<string, unknown>, string][] = [
      ['v3', { type: 'EmailNotificationAction' }, 'to'],
      ['v2', { type: 'EmailNotificationAction' }, 'to'],
      ['v3', { type: 'CallHttpUrlAction', method: 'GET' }, 'url'],
      ['v3', { type: 'CallHttpUrlAction', url: 'https://example.com' }, 'method'],
      ['v2', { type: 'CallHttpUrlAction', method: 'GET' }, 'url'],
      ['v2', { type: 'CallHttpUrlAction', url: 'https://example.com' }, 'method'],
      ['v3', { type: 'ThingUserDefinedPropertiesAction' }, 'body'],
      ['v2', { type: 'SensorTraitsAction' }, 'body'],
      ['v3', { type: 'SMSNotificationAction', phone_number: '+1555' }, 'name'],
      ['v3', { type: 'SMSNotificationAction', name: 'x' }, 'phone_number'],
    ];
    for (const [version, action, field] of cases) {
      const response = await create(version, { rule_key: ruleKey, ...action });
      assert.equal(response.status, 400, `${version} ${JSON.stringify(action)}: ${response.text}`);
      assert.equal(response.body.errors[0].code, 'required');
      assert.equal(response.body.errors[0].param, `notification_action.${field}`);
    }
    for (const version of ['v2', 'v3'] as const) {
      const noType = await create(version, { rule_key: ruleKey, to: 'a@example.com' });
      assert.equal(noType.status, 400);
      assert.equal(noType.body.errors[0].param, 'notification_action.type');
      const noRule = await create(version, { type: 'EmailNotificationAction', to: 'a@example.com' });
      assert.equal(noRule.status, 400);
      assert.equal(noRule.body.errors[0].param, 'notification_action.rule_key');
      const unknownRule = await create(version, {
        type: 'EmailNotificationAction',
        rule_key: 'nosuchrule',
        to: 'a@x.io',
      });
      assert.equal(unknownRule.status, 404, unknownRule.text);
    }
    // Type names of the other version, wrapper of the other version, other kinds' fields, bad values.
    for (const [version, action] of [
      ['v2', { type: 'ThingUserDefinedPropertiesAction', body: { user_defined_properties: {} } }],
      ['v2', { type: 'SMSNotificationAction', name: 'x', phone_number: '1' }],
      ['v3', { type: 'SensorTraitsAction', body: { traits: {} } }],
      ['v3', { type: 'ThingUserDefinedPropertiesAction', body: { traits: { a: '1' } } }],
      ['v2', { type: 'SensorTraitsAction', body: { user_defined_properties: { a: '1' } } }],
      ['v3', { type: 'EmailNotificationAction', to: 'a@example.com', url: 'https://example.com' }],
      ['v3', { type: 'CallHttpUrlAction', url: 'ftp://example.com/x', method: 'GET' }],
      ['v3', { type: 'CallHttpUrlAction', url: 'not a url', method: 'GET' }],
      ['v3', { type: 'CallHttpUrlAction', url: 'https://example.com', method: 'FETCH' }],
      ['v3', { type: 'EmailNotificationAction', to: 'a@example.com', colour: 'red' }],
    ] as const) {
      const response = await create(version, { rule_key: ruleKey, ...action });
      assert.equal(response.status, 400, `${version} ${JSON.stringify(action)}: ${response.text}`);
    }
    // Values of the wrong shape, named down to the member.
    for (const [action, param] of [
      [
        { type: 'CallHttpUrlAction', url: 'https://example.com', method: 'GET', headers: { 'X-Team': { a: 1 } } },
        'notification_action.headers.X-Team',
      ],
      [
        { type: 'CallHttpUrlAction', url: 'https://example.com', method: 'GET', query: { page: [1, 2] } },
        'notification_action.query.page',
      ],
      // What the HTTP client would refuse to send, every delivery then failing.
      [
        { type: 'CallHttpUrlAction', url: 'https://example.com', method: 'GET', headers: { 'X-A': null } },
        'notification_action.headers.X-A',
      ],
      [
        { type: 'CallHttpUrlAction', url: 'https://example.com', method: 'GET', headers: { 'bad name': 'v' } },
        'notification_action.headers.bad name',
      ],
      [
        { type: 'CallHttpUrlAction', url: 'https://example.com', method: 'GET', headers: { 'X-A': 'v\r\nX-B: y' } },
        'notification_action.headers.X-A',
      ],
      [
        { type: 'CallHttpUrlAction', url: 'https://example.com', method: 'GET', query: { b: null } },
        'notification_action.query.b',
      ],
      [{ type: 'ThingUserDefinedPropertiesAction', body: 'state=on' }, 'notification_action.body'],
      [
        { type: 'ThingUserDefinedPropertiesAction', body: { user_defined_properties: { state: { on: true } } } },
        'notification_action.body.user_defined_properties.state',
      ],
      [
        { type: 'SMSNotificationAction', name: 'x', phone_number: '1', body: { text: 'hi' } },
        'notification_action.body',
      ],
      [{ type: 'EmailNotificationAction', to: 'a@example.com', body: 'text' }, 'notification_action.body'],
    ] as const) {
      const response = await create('v3', { rule_key: ruleKey, ...action });
      assert.equal(response.status, 400, `${JSON.stringify(action)}: ${response.text}`);
      assert.equal(response.body.errors[0].param, param, response.text);
    }
    const token = await ctx.api.adminToken();
    const listed = await ctx.api.request('GET', '/api/v3/notification_actions', {
      token,
      query: { rule_key: ruleKey },
    });
    assert.equal(listed.body.total_count, 0, 'nothing was written');
    // A number or a boolean is its text, as wherever text is declared.
    const texts = await create('v3', {
      rule_key: ruleKey,
      type: 'CallHttpUrlAction',
      url: 'https://example.com',
      method: 'GET',
      headers: { 'X-N': 5 },
      query: { a: 5, b: true },
    });
    assert.equal(texts.status, 200, texts.text);
    assert.deepEqual(texts.body.notification_action.headers, { 'X-N': '5' });
    assert.deepEqual(texts.body.notification_action.query, { a: '5', b: 'true' });
  });

  it('when actions are listed then rule_key is required, type filters per version, and search is ignored', async () => {
    const ruleKey = await rule();
    await create('v3', { type: 'EmailNotificationAction', rule_key: ruleKey, to: 'a@example.com' });
    await create('v3', { type: 'SMSNotificationAction', rule_key: ruleKey, name: 'n', phone_number: '1' });
    await create('v3', {
      type: 'ThingUserDefinedPropertiesAction',
      rule_key: ruleKey,
      body: { user_defined_properties: { a: '1' } },
    });
    const token = await ctx.api.adminToken();
    const list = (version: string, query: Record<string, string>) =>
      ctx.api.request('GET', `/api/${version}/notification_actions`, { token, query });
    const v3 = await list('v3', { rule_key: ruleKey });
    assert.equal(v3.status, 200, v3.text);
    assert.equal(v3.body.total_count, 3);
    assert.equal(v3.body.page, 1);
    const v2 = await list('v2', { rule_key: ruleKey });
    assert.equal(v2.body.total_count, 2, 'v2 does not know SMS actions');
    assert.deepEqual(v2.body.notification_actions.map((a: { type: string }) => a.type).sort(), [
      'EmailNotificationAction',
      'SensorTraitsAction',
    ]);
    assert.equal(
      (await list('v3', { rule_key: ruleKey, type: 'ThingUserDefinedPropertiesAction' })).body.total_count,
      1,
    );
    assert.equal((await list('v2', { rule_key: ruleKey, type: 'SensorTraitsAction' })).body.total_count, 1);
    assert.equal((await list('v2', { rule_key: ruleKey, type: 'ThingUserDefinedPropertiesAction' })).status, 400);
    assert.equal((await list('v3', { rule_key: ruleKey, type: 'SensorTraitsAction' })).status, 400);
    assert.equal((await list('v2', { rule_key: ruleKey, type: 'SMSNotificationAction' })).status, 400);
    const searched = await list('v3', { rule_key: ruleKey, search: 'nothing-matches-this', scope: 'any' });
    assert.equal(searched.body.total_count, 3);
    const paged = await ctx.api.request('GET', '/api/v3/notification_actions', {
      token,
      body: { rule_key: ruleKey, per: '2', page: '2' },
    });
    assert.equal(paged.body.page, '2');
    assert.equal(paged.body.notification_actions.length, 1);
    const missing = await list('v3', {});
    assert.equal(missing.status, 400);
    assert.equal(missing.body.errors[0].param, 'rule_key');
    assert.equal((await list('v3', { rule_key: 'nosuchrule' })).status, 404);
    const smsKey = v3.body.notification_actions.find(
      (a: { type: string }) => a.type === 'SMSNotificationAction',
    ).notification_action_key;
    assert.equal((await ctx.api.request('GET', `/api/v2/notification_actions/${smsKey}`, { token })).status, 404);
  });

  it('when an action is updated then type is required and must match, kind fields are optional, and it is audited', async () => {
    const ruleKey = await rule();
    const otherRule = await rule();
    const token = await ctx.api.adminToken();
    const created = await create('v3', {
      type: 'CallHttpUrlAction',
      rule_key: ruleKey,
      url: 'https://example.com/a',
      method: 'POST',
      headers: {
        'X-Key': 'abc',
        Authorization: 'Bearer s3cret',
        'X-Webhook-Signature': 's3cret-sig',
        'X-Site': 'north',
      },
    });
    const key = created.body.notification_action.notification_action_key;
    const put = (action: Record<string, unknown>, version = 'v3') =>
      ctx.api.request('PUT', `/api/${version}/notification_actions/${key}`, {
        token,
        body: { notification_action: action },
      });
    const noType = await put({ url: 'https://example.com/b' });
    assert.equal(noType.status, 400);
    assert.equal(noType.body.errors[0].param, 'notification_action.type');
    assert.equal((await put({ type: 'EmailNotificationAction', to: 'a@example.com' })).status, 400);
    const moved = await put({ type: 'CallHttpUrlAction', url: 'https://example.com/b', rule_key: otherRule });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(moved.body.notification_action.url, 'https://example.com/b');
    assert.equal(moved.body.notification_action.method, 'POST');
    assert.deepEqual(moved.body.notification_action.headers, {
      'X-Key': 'abc',
      Authorization: 'Bearer s3cret',
      'X-Webhook-Signature': 's3cret-sig',
      'X-Site': 'north',
    });
    assert.equal(moved.body.notification_action.rule_key, otherRule);
    assert.equal((await put({ type: 'CallHttpUrlAction', rule_key: 'nosuchrule' })).status, 404);
    const audit = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token,
      query: { entity_key: key, order_by: 'timestamp', order: 'asc' },
    });
    assert.deepEqual(
      audit.body.audit_trails.map(
        (a: { action_taken: string; entity_type: string }) => `${a.entity_type} ${a.action_taken}`,
      ),
      ['NotificationAction create', 'NotificationAction update'],
    );
    assert.equal(audit.body.audit_trails[1].old_entity_contents.url, 'https://example.com/a');
    // Credentials in headers stay out of audit trails.
    assert.doesNotMatch(audit.text, /s3cret/);
    const kept = audit.body.audit_trails[0].new_entity_contents;
    assert.deepEqual(kept.headers, {
      'X-Key': '[redacted]',
      Authorization: '[redacted]',
      'X-Webhook-Signature': '[redacted]',
      'X-Site': '[redacted]',
    });
    // So do those in the address and its query parameters.
    const inAddress = await put({
      type: 'CallHttpUrlAction',
      url: 'https://hooks:s3cret-pw@example.com/c?api_key=s3cret-q&site=north',
      query: { token: 's3cret-t', site: 'north' },
    });
    assert.equal(inAddress.status, 200, inAddress.text);
    assert.equal(
      inAddress.body.notification_action.url,
      'https://hooks:s3cret-pw@example.com/c?api_key=s3cret-q&site=north',
    );
    // The store keeps them sealed: its row holds them only as audit trails show them.
    const stored = await ctx.api.server.store.db
      .selectFrom('notification_actions')
      .selectAll()
      .where('notification_action_key', '=', key)
      .executeTakeFirstOrThrow();
    assert.doesNotMatch(JSON.stringify(stored), /s3cret/);
    assert.equal(stored.url, 'https://[redacted]@example.com/c?api_key=[redacted]&site=north');
    assert.match(String(stored.secrets_sealed), /^v1:/);
    const read = await ctx.api.request('GET', `/api/v3/notification_actions/${key}`, { token });
    assert.deepEqual(read.body.notification_action.query, { token: 's3cret-t', site: 'north' });
    assert.equal(read.body.notification_action.headers.Authorization, 'Bearer s3cret');
    const audited = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token,
      query: { entity_key: key, order_by: 'timestamp', order: 'desc', per: 1 },
    });
    assert.doesNotMatch(audited.text, /s3cret/);
    const last = audited.body.audit_trails[0].new_entity_contents;
    assert.equal(last.url, 'https://[redacted]@example.com/c?api_key=[redacted]&site=north');
    assert.deepEqual(last.query, { token: '[redacted]', site: 'north' });
    const deleted = await ctx.api.request('DELETE', `/api/v3/notification_actions/${key}`, { token });
    assert.equal(deleted.status, 200);
    assert.deepEqual(deleted.body, {});
    assert.equal((await ctx.api.request('GET', `/api/v3/notification_actions/${key}`, { token })).status, 404);
    assert.equal((await ctx.api.request('DELETE', `/api/v2/notification_actions/${key}`, { token })).status, 404);
  });

  it("when a role may read actions but not change them then an action's credentials are redacted in its answers", async () => {
    const token = await ctx.api.adminToken();
    const ruleKey = await rule();
    const created = await create('v3', {
      type: 'CallHttpUrlAction',
      rule_key: ruleKey,
      method: 'POST',
      // A webhook's secret in its path (as Slack's and Discord's are) and in a signature parameter.
      url: 'https://hooks:s3cret-pw@example.com/services/T0001/B0002/s3cretW3bhookPath0123456?sig=s3cret-q&site=north',
      headers: { Authorization: 'Bearer s3cret-h', 'X-Site': 'north' },
      query: { token: 's3cret-t', key: 's3cret-k', site: 'north' },
    });
    assert.equal(created.status, 200, created.text);
    const key = created.body.notification_action.notification_action_key;
    const reader = await userWithAbilities(ctx.api, token, [111, 31]);
    const editor = await userWithAbilities(ctx.api, token, [111, 113, 31]);
    for (const version of ['v2', 'v3']) {
      const one = await ctx.api.request('GET', `/api/${version}/notification_actions/${key}`, { token: reader.token });
      assert.equal(one.status, 200, one.text);
      const list = await ctx.api.request('GET', `/api/${version}/notification_actions`, {
        token: reader.token,
        query: { rule_key: ruleKey },
      });
      assert.equal(list.status, 200, list.text);
      for (const answer of [one.text, list.text]) assert.doesNotMatch(answer, /s3cret/, `${version}: ${answer}`);
      const shown = one.body.notification_action;
      assert.equal(
        shown.url,
        'https://[redacted]@example.com/services/T0001/B0002/[redacted]?sig=[redacted]&site=north',
      );
      assert.deepEqual(shown.headers, { Authorization: '[redacted]', 'X-Site': '[redacted]' });
      // Whoever may change the action sees what it edits.
      const whole = await ctx.api.request('GET', `/api/${version}/notification_actions/${key}`, {
        token: editor.token,
      });
      assert.equal(whole.body.notification_action.headers.Authorization, 'Bearer s3cret-h');
    }
    assert.equal(
      (await ctx.api.request('GET', `/api/v3/notification_actions/${key}`, { token: reader.token })).body
        .notification_action.query.site,
      'north',
      'what carries no credential is shown',
    );
    // Audit trails show it the same way, to whoever may read them.
    const audit = await ctx.api.request('GET', '/api/v3/audit_trails', { token, query: { entity_key: key } });
    assert.equal(audit.status, 200, audit.text);
    assert.equal(audit.body.total_count, 1);
    assert.doesNotMatch(audit.text, /s3cret/);
  });

  it('when credentials have names of their own, sit in the user name or the fragment, or look like secrets then readers see them redacted', async () => {
    const token = await ctx.api.adminToken();
    const created = await create('v3', {
      type: 'CallHttpUrlAction',
      rule_key: await rule(),
      method: 'POST',
      url: 'https://s3cret-user@example.com/in?pwd=s3cret-p&hash=s3cret-h&site=north#access_token=s3cret-f',
      headers: {
        'X-Api-Pass': 's3cret-1',
        Bearer: 's3cret-2',
        'X-Webhook-Hmac': 's3cret-3',
        'Content-Type': 'text/plain',
      },
      query: { pwd: 's3cret-4', hmac: 's3cret-5', ref: 'S3cretLooking0123456789', region: 'north' },
    });
    assert.equal(created.status, 200, created.text);
    const key = created.body.notification_action.notification_action_key;
    const reader = await userWithAbilities(ctx.api, token, [111, 31]);
    const auditor = await userWithAbilities(ctx.api, token, [101]);
    const one = await ctx.api.request('GET', `/api/v3/notification_actions/${key}`, { token: reader.token });
    assert.equal(one.status, 200, one.text);
    assert.doesNotMatch(one.text, /s3cret/i);
    const shown = one.body.notification_action;
    assert.equal(
      shown.url,
      'https://[redacted]@example.com/in?pwd=[redacted]&hash=[redacted]&site=north#access_token=[redacted]',
    );
    assert.equal(shown.headers['Content-Type'], 'text/plain', 'a header that describes the request is shown');
    assert.equal(shown.query.region, 'north', 'what carries no credential is shown');
    const audit = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token: auditor.token,
      query: { entity_key: key },
    });
    assert.equal(audit.status, 200, audit.text);
    assert.equal(audit.body.total_count, 1);
    assert.doesNotMatch(audit.text, /s3cret/i);
  });

  it('when an HTTP action names a loopback or private address outright then it is refused when made or changed; a public one is taken', async () => {
    const ruleKey = await rule();
    const action = (url: string) => ({ type: 'CallHttpUrlAction', rule_key: ruleKey, method: 'POST', url });
    for (const url of [
      'http://127.0.0.1:9/hook',
      'http://localhost:8080/$THING$',
      'http://LocalHost.:8080/x',
      'https://[::1]/x',
      'http://10.1.2.3/x',
      'http://192.168.0.7/x',
      'http://[::ffff:169.254.169.254]/latest/meta-data',
    ]) {
      const refused = await create('v3', action(url));
      assert.equal(refused.status, 400, `${url}: ${refused.text}`);
      assert.equal(refused.body.errors[0].param, 'notification_action.url');
      assert.match(refused.body.errors[0].message, /private address/);
    }
    const made = await create('v3', action('https://hooks.example.com/$THING$'));
    assert.equal(made.status, 200, made.text);
    const key = made.body.notification_action.notification_action_key;
    const changed = await ctx.api.request('PUT', `/api/v3/notification_actions/${key}`, {
      token: await ctx.api.adminToken(),
      body: { notification_action: { type: 'CallHttpUrlAction', url: 'http://127.0.0.1/hook' } },
    });
    assert.equal(changed.status, 400, changed.text);
    assert.equal(changed.body.errors[0].param, 'notification_action.url');
  });

  it('when e-mail recipients are no addresses, or hold a line break, then the action is refused; named addresses are taken', async () => {
    const ruleKey = await rule();
    const email = (fields: Record<string, unknown>) =>
      create('v3', { type: 'EmailNotificationAction', rule_key: ruleKey, to: 'ops@example.com', ...fields });
    for (const [field, value] of [
      ['to', 'inj@x.io\r\nBcc: evil@x.io'],
      ['to', 'not an address'],
      ['to', 'a@x.io; b@x.io'],
      ['cc', '"Doe" <doe@x.io>'],
      ['bcc', 'x@y.io\nBcc: evil@x.io'],
      ['subject', 'Hot\r\nBcc: evil@x.io'],
    ] as const) {
      const refused = await email({ [field]: value });
      assert.equal(refused.status, 400, `${field} ${JSON.stringify(value)}: ${refused.text}`);
      assert.equal(refused.body.errors[0].param, `notification_action.${field}`);
    }
    const taken = await email({ to: 'Ops <ops@example.com>, night@example.com,', cc: '', bcc: 'audit@example.com' });
    assert.equal(taken.status, 200, taken.text);
    const key = taken.body.notification_action.notification_action_key;
    const changed = await ctx.api.request('PUT', `/api/v3/notification_actions/${key}`, {
      token: await ctx.api.adminToken(),
      body: { notification_action: { type: 'EmailNotificationAction', to: 'a@x.io\r\nBcc: evil@x.io' } },
    });
    assert.equal(changed.status, 400, changed.text);
  });

  it('when an OEM admin moves an action to a rule of a child organisation then it belongs to the child', async () => {
    const token = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, token, { isOem: false });
    const parentRule = await rule();
    const childRule = await rule(token, { is_oem: true, child_organisation_key: child.organisationKey });
    const key = (await create('v3', { type: 'EmailNotificationAction', rule_key: parentRule, to: 'a@example.com' }))
      .body.notification_action.notification_action_key;
    const moved = await ctx.api.request('PUT', `/api/v3/notification_actions/${key}`, {
      token,
      body: { is_oem: true, notification_action: { type: 'EmailNotificationAction', rule_key: childRule } },
    });
    assert.equal(moved.status, 200, moved.text);
    // The child's own admin sees the action of its rule; the parent rule's list no longer has it.
    const seen = await ctx.api.request('GET', `/api/v3/notification_actions/${key}`, { token: child.token });
    assert.equal(seen.status, 200, seen.text);
    assert.equal(seen.body.notification_action.rule_key, childRule);
    const parentList = await ctx.api.request('GET', '/api/v3/notification_actions', {
      token,
      query: { rule_key: parentRule },
    });
    assert.equal(parentList.status, 200, parentList.text);
    assert.ok(
      !parentList.body.notification_actions.some(
        (a: { notification_action_key: string }) => a.notification_action_key === key,
      ),
    );
    // Each organisation's audit trail tells its side of the move: gone from the parent, changed in the child.
    const trail = async (asked: string) => {
      const response = await ctx.api.request('GET', '/api/v3/audit_trails', {
        token: asked,
        query: { entity_key: key, order_by: 'timestamp', order: 'asc' },
      });
      assert.equal(response.status, 200, response.text);
      return response.body.audit_trails.map((a: { action_taken: string }) => a.action_taken);
    };
    assert.deepEqual(await trail(token), ['create', 'delete']);
    assert.deepEqual(await trail(child.token), ['update']);
  });

  it("when an OEM admin moves a child's action to a rule of another child then it is refused and stays the child's", async () => {
    const token = await ctx.api.adminToken();
    const first = await childOrganisation(ctx.api, token, { isOem: false });
    const second = await childOrganisation(ctx.api, token, { isOem: false });
    const firstRule = await rule(first.token);
    const secondRule = await rule(second.token);
    const parentRule = await rule();
    const created = await create(
      'v3',
      {
        type: 'CallHttpUrlAction',
        rule_key: firstRule,
        url: 'https://example.com/in',
        method: 'POST',
      },
      first.token,
    );
    assert.equal(created.status, 200, created.text);
    const key = created.body.notification_action.notification_action_key;
    const move = (ruleKey: string) =>
      ctx.api.request('PUT', `/api/v3/notification_actions/${key}`, {
        token,
        body: { is_oem: true, notification_action: { type: 'CallHttpUrlAction', rule_key: ruleKey } },
      });
    const refused = await move(secondRule);
    assert.equal(refused.status, 404, refused.text);
    assert.equal(refused.body.errors[0].param, 'rule_key');
    const seen = await ctx.api.request('GET', `/api/v3/notification_actions/${key}`, { token: first.token });
    assert.equal(seen.status, 200, seen.text);
    assert.equal(seen.body.notification_action.rule_key, firstRule);
    assert.equal(
      (await ctx.api.request('GET', `/api/v3/notification_actions/${key}`, { token: second.token })).status,
      404,
    );
    // To the parent's own rule it may move: the parent sees the child's action already.
    const up = await move(parentRule);
    assert.equal(up.status, 200, up.text);
    assert.equal(up.body.notification_action.rule_key, parentRule);
  });

  it('when another organisation or a role without the permission asks then it is refused', async () => {
    const token = await ctx.api.adminToken();
    const ruleKey = await rule();
    const key = (await create('v3', { type: 'EmailNotificationAction', rule_key: ruleKey, to: 'a@example.com' })).body
      .notification_action.notification_action_key;
    const child = await childOrganisation(ctx.api, token);
    for (const version of ['v2', 'v3']) {
      assert.equal(
        (await ctx.api.request('GET', `/api/${version}/notification_actions/${key}`, { token: child.token })).status,
        404,
      );
      const list = await ctx.api.request('GET', `/api/${version}/notification_actions`, {
        token: child.token,
        query: { rule_key: ruleKey },
      });
      assert.equal(list.status, 404);
    }
    assert.equal(
      (await create('v3', { type: 'EmailNotificationAction', rule_key: ruleKey, to: 'a@x.io' }, child.token)).status,
      404,
    );
    const reader = await userWithAbilities(ctx.api, token, [111, 31]);
    assert.equal(
      (await ctx.api.request('GET', `/api/v3/notification_actions/${key}`, { token: reader.token })).status,
      200,
    );
    assert.equal(
      (await create('v3', { type: 'EmailNotificationAction', rule_key: ruleKey, to: 'a@x.io' }, reader.token)).status,
      403,
    );
    const none = await userWithAbilities(ctx.api, token, [31]);
    assert.equal(
      (await ctx.api.request('GET', `/api/v2/notification_actions/${key}`, { token: none.token })).status,
      403,
    );
    assert.equal(
      (await ctx.api.request('GET', `/api/v3/notification_actions/${key}/deliveries`, { token: none.token })).status,
      403,
    );
    const deliveries = await ctx.api.request('GET', `/api/v3/notification_actions/${key}/deliveries`, { token });
    assert.equal(deliveries.status, 200, deliveries.text);
    assert.deepEqual(deliveries.body, { total_count: 0, page: 1, deliveries: [] });
    await assertTokenRequired(ctx.api, [
      ['GET', '/api/v3/notification_actions'],
      ['GET', '/api/v2/notification_actions'],
      ['POST', '/api/v3/notification_actions'],
      ['POST', '/api/v2/notification_actions'],
      ['GET', `/api/v3/notification_actions/${key}`],
      ['PUT', `/api/v2/notification_actions/${key}`],
      ['DELETE', `/api/v3/notification_actions/${key}`],
      ['GET', `/api/v3/notification_actions/${key}/deliveries`],
    ]);
  });
});
