/**
 * A change to what a rule watches or does (its group's members or expression, a thing's fields a
 * dynamic group reads, the rule itself, its notification actions) applies to the next event, on every
 * instance (docs/rules.md, "How rules are evaluated"). Each test first sends an event so that the
 * rules are already cached when the change is made.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createThing, unique } from '../support/fixtures.ts';
import { startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';
import { describeOnStores } from '../support/suites.ts';

async function sendEvent(api: TestServer, token: string, thingKey: string, n: number) {
  const sent = await api.request('POST', `/api/v3/things/${thingKey}/events`, {
    token,
    body: { events: [{ timestamp: Date.now(), data: { n } }] },
  });
  assert.equal(sent.status, 200, sent.text);
}

async function alertCount(api: TestServer, token: string, thingKey: string): Promise<number> {
  const list = await api.request('GET', '/api/v3/alerts', { token, query: { thing_key: thingKey } });
  assert.equal(list.status, 200, list.text);
  return list.body.total_count as number;
}

/** An `every_event` rule raising an alert for every event with `n > 0`. */
async function everyEventRule(api: TestServer, token: string, scope: Record<string, unknown>) {
  const created = await api.request('POST', '/api/v3/rules', {
    token,
    body: { rule: { name: unique('watch'), condition: 'n > 0', trigger: 'every_event', alert_type: 1, ...scope } },
  });
  assert.equal(created.status, 200, created.text);
  return created.body.rule.rule_key as string;
}

async function createGroup(api: TestServer, token: string, group: Record<string, unknown>) {
  const created = await api.request('POST', '/api/v3/groups', {
    token,
    body: { group: { name: unique('g'), ...group } },
  });
  assert.equal(created.status, 200, created.text);
  return created.body.group.group_key as string;
}

async function updateGroup(api: TestServer, token: string, groupKey: string, group: Record<string, unknown>) {
  const updated = await api.request('PUT', `/api/v3/groups/${groupKey}`, { token, body: { group } });
  assert.equal(updated.status, 200, updated.text);
}

async function deliveriesOf(api: TestServer, ruleKey: string): Promise<number> {
  const row = await api.server.store.db
    .selectFrom('deliveries')
    .select((eb) => eb.fn.countAll().as('count'))
    .where('rule_key', '=', ruleKey)
    .executeTakeFirst();
  return Number(row?.count ?? 0);
}

const webhook = (ruleKey: string) => ({
  notification_action: {
    type: 'CallHttpUrlAction',
    rule_key: ruleKey,
    method: 'POST',
    url: 'https://example.com/hook',
  },
});

describeOnStores('what a rule watches, changed', (ctx) => {
  it('when a thing is added to and removed from a rule’s static group then the next event follows the change', async () => {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, {});
    const groupKey = await createGroup(ctx.api, token, { group_type: 1, thing_keys: [] });
    await everyEventRule(ctx.api, token, { group_key: groupKey });
    await sendEvent(ctx.api, token, thing.thing_key, 1);
    assert.equal(await alertCount(ctx.api, token, thing.thing_key), 0, 'not a member yet');

    await updateGroup(ctx.api, token, groupKey, { thing_keys: [thing.thing_key] });
    await sendEvent(ctx.api, token, thing.thing_key, 2);
    assert.equal(await alertCount(ctx.api, token, thing.thing_key), 1, 'the event after the thing was added fires');

    await updateGroup(ctx.api, token, groupKey, { thing_keys: [] });
    await sendEvent(ctx.api, token, thing.thing_key, 3);
    assert.equal(await alertCount(ctx.api, token, thing.thing_key), 1, 'the event after it was removed does not');
  });

  it('when a member of a rule’s static group is deleted and made again with its key then it is no longer watched', async () => {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, {});
    const groupKey = await createGroup(ctx.api, token, { group_type: 1, thing_keys: [thing.thing_key] });
    await everyEventRule(ctx.api, token, { group_key: groupKey });
    await sendEvent(ctx.api, token, thing.thing_key, 1);
    assert.equal(await alertCount(ctx.api, token, thing.thing_key), 1);

    const deleted = await ctx.api.request('DELETE', `/api/v3/things/${thing.thing_key}`, { token });
    assert.equal(deleted.status, 200, deleted.text);
    await createThing(ctx.api, token, { thing_key: thing.thing_key });
    await sendEvent(ctx.api, token, thing.thing_key, 2);
    assert.equal(await alertCount(ctx.api, token, thing.thing_key), 1, 'the new thing is not a member of the group');
  });

  it('when a thing’s tags or a dynamic group’s expression change then the next event follows the change', async () => {
    const token = await ctx.api.adminToken();
    const tag = unique('hot').replaceAll('-', '_');
    const thing = await createThing(ctx.api, token, { tags: ['cold'] });
    const groupKey = await createGroup(ctx.api, token, { group_type: 2, thing_expression: `tags contains '${tag}'` });
    await everyEventRule(ctx.api, token, { group_key: groupKey });
    await sendEvent(ctx.api, token, thing.thing_key, 1);
    assert.equal(await alertCount(ctx.api, token, thing.thing_key), 0, 'the expression does not match it yet');

    const tagged = await ctx.api.request('PUT', `/api/v3/things/${thing.thing_key}`, {
      token,
      body: { thing: { tags: [tag] } },
    });
    assert.equal(tagged.status, 200, tagged.text);
    await sendEvent(ctx.api, token, thing.thing_key, 2);
    assert.equal(await alertCount(ctx.api, token, thing.thing_key), 1, 'the event after the thing entered the group');

    await updateGroup(ctx.api, token, groupKey, { thing_expression: "tags contains 'cold'" });
    await sendEvent(ctx.api, token, thing.thing_key, 3);
    assert.equal(await alertCount(ctx.api, token, thing.thing_key), 1, 'the event after the expression changed');

    await updateGroup(ctx.api, token, groupKey, { thing_expression: `tags contains '${tag}'` });
    await sendEvent(ctx.api, token, thing.thing_key, 4);
    assert.equal(await alertCount(ctx.api, token, thing.thing_key), 2, 'the event after it changed back');
  });

  it('when a thing moves to the template a rule watches and back then the next event follows the move', async () => {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, {});
    const template = await ctx.api.request('POST', '/api/v3/thing_templates', {
      token,
      body: { thing_template: { name: unique('t') } },
    });
    assert.equal(template.status, 200, template.text);
    const templateKey = template.body.thing_template.thing_template_key as string;
    await everyEventRule(ctx.api, token, { thing_template_key: templateKey });
    await sendEvent(ctx.api, token, thing.thing_key, 1);
    assert.equal(await alertCount(ctx.api, token, thing.thing_key), 0, 'not of the template yet');

    const moved = await ctx.api.request('PUT', `/api/v3/things/${thing.thing_key}`, {
      token,
      body: { thing: { thing_template_key: templateKey } },
    });
    assert.equal(moved.status, 200, moved.text);
    await sendEvent(ctx.api, token, thing.thing_key, 2);
    assert.equal(await alertCount(ctx.api, token, thing.thing_key), 1, 'the event after it moved to the template');

    const back = await ctx.api.request('PUT', `/api/v3/things/${thing.thing_key}`, {
      token,
      body: { thing: { thing_template_key: thing.thing_template_key } },
    });
    assert.equal(back.status, 200, back.text);
    await sendEvent(ctx.api, token, thing.thing_key, 3);
    assert.equal(await alertCount(ctx.api, token, thing.thing_key), 1, 'the event after it moved back');
  });

  it('when a rule’s notification action is added, moved or deleted then the next event follows the change', async () => {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, {});
    const ruleKey = await everyEventRule(ctx.api, token, { thing_keys: [thing.thing_key] });
    const otherRuleKey = await everyEventRule(ctx.api, token, { thing_keys: [thing.thing_key] });
    await sendEvent(ctx.api, token, thing.thing_key, 1);
    assert.equal(await deliveriesOf(ctx.api, ruleKey), 0);

    const added = await ctx.api.request('POST', '/api/v3/notification_actions', { token, body: webhook(ruleKey) });
    assert.equal(added.status, 200, added.text);
    const actionKey = added.body.notification_action.notification_action_key as string;
    await sendEvent(ctx.api, token, thing.thing_key, 2);
    assert.equal(await deliveriesOf(ctx.api, ruleKey), 1, 'the event after the action was added queues it');

    const moved = await ctx.api.request('PUT', `/api/v3/notification_actions/${actionKey}`, {
      token,
      body: { notification_action: { type: 'CallHttpUrlAction', rule_key: otherRuleKey } },
    });
    assert.equal(moved.status, 200, moved.text);
    await sendEvent(ctx.api, token, thing.thing_key, 3);
    assert.equal(await deliveriesOf(ctx.api, ruleKey), 1, 'the rule it left queues nothing more');
    assert.equal(await deliveriesOf(ctx.api, otherRuleKey), 1, 'the rule it moved to queues it');

    const deleted = await ctx.api.request('DELETE', `/api/v3/notification_actions/${actionKey}`, { token });
    assert.equal(deleted.status, 200, deleted.text);
    await sendEvent(ctx.api, token, thing.thing_key, 4);
    assert.equal(await deliveriesOf(ctx.api, otherRuleKey), 1, 'the event after the action was deleted queues nothing');
  });
});

const postgres = STORES.find((s) => s.name === 'postgres');
if (postgres) {
  describe('what a rule watches, changed through another instance [postgres]', { skip: postgres.skip }, () => {
    it('when a rule, its group or its actions change through one instance then the next event through the other follows', async () => {
      const a = await startServer(postgres);
      const b = await startServer(postgres, { storeSettings: a.storeSettings });
      try {
        const token = await a.adminToken();
        const thing = await createThing(a, token, {});
        const groupKey = await createGroup(a, token, { group_type: 1, thing_keys: [] });
        // b has the organisation's rules cached (none yet), then a rule is made through a.
        await sendEvent(b, token, thing.thing_key, 1);
        const ruleKey = await everyEventRule(a, token, { group_key: groupKey });
        await sendEvent(b, token, thing.thing_key, 2);
        assert.equal(await alertCount(b, token, thing.thing_key), 0, 'not a member yet');

        await updateGroup(a, token, groupKey, { thing_keys: [thing.thing_key] });
        await sendEvent(b, token, thing.thing_key, 3);
        assert.equal(await alertCount(b, token, thing.thing_key), 1, 'the event after the thing was added fires');

        const added = await a.request('POST', '/api/v3/notification_actions', { token, body: webhook(ruleKey) });
        assert.equal(added.status, 200, added.text);
        await sendEvent(b, token, thing.thing_key, 4);
        assert.equal(await deliveriesOf(b, ruleKey), 1, 'the event after the action was added queues it');
        assert.equal(await alertCount(b, token, thing.thing_key), 2);

        const disabled = await a.request('PUT', `/api/v3/rules/${ruleKey}`, {
          token,
          body: { rule: { enabled: false } },
        });
        assert.equal(disabled.status, 200, disabled.text);
        await sendEvent(b, token, thing.thing_key, 5);
        assert.equal(await alertCount(b, token, thing.thing_key), 2, 'the event after the rule was disabled');

        const enabled = await a.request('PUT', `/api/v3/rules/${ruleKey}`, {
          token,
          body: { rule: { enabled: true } },
        });
        assert.equal(enabled.status, 200, enabled.text);
        await sendEvent(b, token, thing.thing_key, 6);
        assert.equal(await alertCount(b, token, thing.thing_key), 3, 'the event after the rule was enabled again');

        await updateGroup(a, token, groupKey, { thing_keys: [] });
        await sendEvent(b, token, thing.thing_key, 7);
        assert.equal(await alertCount(b, token, thing.thing_key), 3, 'the event after the thing was removed');
      } finally {
        await b.close();
        await a.close();
      }
    });
  });
}
