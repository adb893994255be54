/**
 * Rule timing (docs/rules.md, "Rule timing"): `for_seconds` runs by event time, `auto_clear` with one
 * open alert per rule and thing, `no_data` rules fired by a timer (also for things that never sent
 * anything), each across a restart, and watching the things that enter their scope; two instances
 * on PostgreSQL firing a silence once and sharing a run; and the bad input of each field.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { clearAlertByRule } from '../../src/alerts/service.ts';
import { createThing, defaultTemplateKey, unique } from '../support/fixtures.ts';
import { startServer, type TestServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';
import { describeOnStores } from '../support/suites.ts';

/** How often no_data rules look for due silences in these tests (ms). */
const CHECK_MS = 100;
const env = { NO_DATA_CHECK_MS: String(CHECK_MS) };

async function createRule(api: TestServer, token: string, rule: Record<string, unknown>) {
  const created = await api.request('POST', '/api/v3/rules', {
    token,
    body: { rule: { name: unique('rule'), alert_type: 1, ...rule } },
  });
  assert.equal(created.status, 200, created.text);
  return created.body.rule as { rule_key: string; [field: string]: unknown };
}

/** Sends events `[seconds after base, v]` in one request, in this order. */
async function send(api: TestServer, token: string, thingKey: string, base: number, events: [number, number][]) {
  const sent = await api.request('POST', `/api/v3/things/${thingKey}/events`, {
    token,
    body: { events: events.map(([s, v]) => ({ timestamp: base + s * 1000, data: { v } })) },
  });
  assert.equal(sent.status, 200, sent.text);
}

async function createTemplate(api: TestServer, token: string, name: string): Promise<string> {
  const template = await api.request('POST', '/api/v3/thing_templates', {
    token,
    body: { thing_template: { name } },
  });
  assert.equal(template.status, 200, template.text);
  return template.body.thing_template.thing_template_key as string;
}

async function alertsOf(api: TestServer, token: string, query: Record<string, unknown>) {
  const list = await api.request('GET', '/api/v3/alerts', {
    token,
    query: { per: 1000, order_by: 'timestamp', order: 'asc', ...query },
  });
  assert.equal(list.status, 200, list.text);
  return list.body.alerts as Record<string, any>[];
}

/** Deliveries queued for a rule, read from the store. */
async function deliveriesOf(api: TestServer, ruleKey: string): Promise<number> {
  const rows = await api.server.store.db
    .selectFrom('deliveries')
    .select('delivery_key')
    .where('rule_key', '=', ruleKey)
    .execute();
  return rows.length;
}

async function withAction(api: TestServer, token: string, ruleKey: string) {
  const action = await api.request('POST', '/api/v3/notification_actions', {
    token,
    body: {
      notification_action: {
        type: 'CallHttpUrlAction',
        rule_key: ruleKey,
        method: 'POST',
        url: 'https://example.invalid/hook',
      },
    },
  });
  assert.equal(action.status, 200, action.text);
}

const BASE = Date.UTC(2026, 0, 1);

describeOnStores(
  'rule timing',
  (ctx) => {
    it('when a rule has for_seconds then it fires at the first event that far into an unbroken run, by event time', async () => {
      const token = await ctx.api.adminToken();
      const thing = await createThing(ctx.api, token, {});
      const rule = await createRule(ctx.api, token, {
        condition: 'v > 5',
        for_seconds: 60,
        thing_keys: [thing.thing_key],
        alert_message: 'v={{v}}',
      });
      assert.equal(rule.for_seconds, 60);
      assert.equal(rule.auto_clear, false);
      // A run broken at 50 s; a new run from 70 s fires at 130 s, not at 125 s.
      await send(ctx.api, token, thing.thing_key, BASE, [
        [0, 9],
        [30, 9],
        [50, 1],
        [70, 8],
        [125, 8],
      ]);
      assert.deepEqual(await alertsOf(ctx.api, token, { thing_key: thing.thing_key }), []);
      await send(ctx.api, token, thing.thing_key, BASE, [
        [130, 7],
        [200, 9],
      ]);
      const alerts = await alertsOf(ctx.api, token, { thing_key: thing.thing_key });
      assert.deepEqual(
        alerts.map((a) => [a.message, a.timestamp]),
        [['v=7', (BASE + 130_000) / 1000]],
        'once per run, with the firing event as its time',
      );
      assert.equal(alerts[0]?.rule_key, rule.rule_key);
    });

    it('when the server restarts in the middle of a for_seconds run then the run goes on and fires once at the right event', async () => {
      const settings = ctx.store.fresh();
      const first = await startServer(ctx.store, { env, storeSettings: settings });
      let second: TestServer | undefined;
      try {
        const token = await first.adminToken();
        const thing = await createThing(first, token, {});
        await createRule(first, token, {
          condition: 'v > 5',
          for_seconds: 10,
          thing_keys: [thing.thing_key],
          alert_message: 'v={{v}}',
        });
        await send(first, token, thing.thing_key, BASE, [
          [0, 6],
          [5, 7],
        ]);
        await first.close();
        second = await startServer(ctx.store, { env, storeSettings: settings });
        const again = await second.adminToken();
        await send(second, again, thing.thing_key, BASE, [[9, 8]]);
        assert.deepEqual(await alertsOf(second, again, { thing_key: thing.thing_key }), []);
        await send(second, again, thing.thing_key, BASE, [
          [10, 9],
          [11, 10],
        ]);
        const alerts = await alertsOf(second, again, { thing_key: thing.thing_key });
        assert.deepEqual(
          alerts.map((a) => [a.message, a.timestamp]),
          [['v=9', (BASE + 10_000) / 1000]],
        );
      } finally {
        await second?.close();
        await ctx.store.dispose(settings);
      }
    });

    it('when an on_enter rule has auto_clear then it keeps one alert open, sends its actions once, and clears it when the condition fails', async () => {
      const token = await ctx.api.adminToken();
      const thing = await createThing(ctx.api, token, {});
      const rule = await createRule(ctx.api, token, {
        condition: 'v > 5',
        for_seconds: 5,
        auto_clear: true,
        thing_keys: [thing.thing_key],
      });
      await withAction(ctx.api, token, rule.rule_key);
      await send(ctx.api, token, thing.thing_key, BASE, [
        [0, 9],
        [5, 9],
        [10, 9],
      ]);
      let alerts = await alertsOf(ctx.api, token, { rule_key: rule.rule_key });
      assert.equal(alerts.length, 1);
      assert.equal(alerts[0]?.status, 'open');
      assert.equal(await deliveriesOf(ctx.api, rule.rule_key), 1);
      // Acknowledged is still open to the rule: nothing new.
      const acknowledged = await ctx.api.request('POST', `/api/v3/alerts/${alerts[0]?.alert_key}/acknowledge`, {
        token,
      });
      assert.equal(acknowledged.status, 200, acknowledged.text);
      await send(ctx.api, token, thing.thing_key, BASE, [
        [20, 1],
        [21, 2],
      ]);
      alerts = await alertsOf(ctx.api, token, { rule_key: rule.rule_key });
      assert.equal(alerts.length, 1);
      assert.equal(alerts[0]?.status, 'cleared');
      assert.equal(alerts[0]?.cleared_by, 'rule');
      assert.equal(typeof alerts[0]?.cleared_at, 'number');
      assert.equal(alerts[0]?.acknowledged_by !== null, true);
      await send(ctx.api, token, thing.thing_key, BASE, [
        [30, 9],
        [36, 9],
      ]);
      alerts = await alertsOf(ctx.api, token, { rule_key: rule.rule_key });
      assert.deepEqual(
        alerts.map((a) => a.status),
        ['cleared', 'open'],
      );
      assert.equal(await deliveriesOf(ctx.api, rule.rule_key), 2);
    });

    it('when an every_event rule has auto_clear then repeats raise nothing until its alert is cleared by a user or the rule', async () => {
      const token = await ctx.api.adminToken();
      const thing = await createThing(ctx.api, token, {});
      const rule = await createRule(ctx.api, token, {
        condition: 'v > 5',
        trigger: 'every_event',
        auto_clear: true,
        thing_keys: [thing.thing_key],
      });
      await withAction(ctx.api, token, rule.rule_key);
      await send(ctx.api, token, thing.thing_key, BASE, [
        [0, 9],
        [1, 9],
      ]);
      await send(ctx.api, token, thing.thing_key, BASE, [[2, 9]]);
      let alerts = await alertsOf(ctx.api, token, { rule_key: rule.rule_key });
      assert.equal(alerts.length, 1);
      assert.equal(await deliveriesOf(ctx.api, rule.rule_key), 1);
      const cleared = await ctx.api.request('POST', `/api/v3/alerts/${alerts[0]?.alert_key}/clear`, {
        token,
        body: { comment: 'handled' },
      });
      assert.equal(cleared.status, 200, cleared.text);
      await send(ctx.api, token, thing.thing_key, BASE, [
        [3, 9],
        [4, 9],
      ]);
      alerts = await alertsOf(ctx.api, token, { rule_key: rule.rule_key, status: 'open' });
      assert.equal(alerts.length, 1, 'a user clearing it lets the rule raise another');
      await send(ctx.api, token, thing.thing_key, BASE, [
        [5, 1],
        [6, 9],
      ]);
      alerts = await alertsOf(ctx.api, token, { rule_key: rule.rule_key });
      assert.deepEqual(
        alerts.map((a) => [a.status, a.cleared_by]),
        [
          ['cleared', 'admin@example.com'],
          ['cleared', 'rule'],
          ['open', null],
        ],
      );
      assert.equal(await deliveriesOf(ctx.api, rule.rule_key), 3);
    });

    it('when a rule is edited while its alert is open then the alert stays open and the rule still clears it, unless auto_clear is turned off', async () => {
      const token = await ctx.api.adminToken();
      const thing = await createThing(ctx.api, token, {});
      const rule = await createRule(ctx.api, token, {
        condition: 'v > 5',
        auto_clear: true,
        thing_keys: [thing.thing_key],
      });
      await send(ctx.api, token, thing.thing_key, BASE, [[0, 9]]);
      const edit = (changes: object) =>
        ctx.api.request('PUT', `/api/v3/rules/${rule.rule_key}`, { token, body: { rule: changes } });
      assert.equal((await edit({ condition: 'v > 6' })).status, 200);
      // The new condition holds: the run starts over, but the alert still open is not raised again.
      await send(ctx.api, token, thing.thing_key, BASE, [[1, 9]]);
      let alerts = await alertsOf(ctx.api, token, { rule_key: rule.rule_key });
      assert.deepEqual(
        alerts.map((a) => a.status),
        ['open'],
      );
      await send(ctx.api, token, thing.thing_key, BASE, [[2, 6]]);
      alerts = await alertsOf(ctx.api, token, { rule_key: rule.rule_key });
      assert.deepEqual(
        alerts.map((a) => [a.status, a.cleared_by]),
        [['cleared', 'rule']],
      );
      await send(ctx.api, token, thing.thing_key, BASE, [[3, 9]]);
      assert.equal((await edit({ auto_clear: false })).status, 200);
      await send(ctx.api, token, thing.thing_key, BASE, [[4, 1]]);
      alerts = await alertsOf(ctx.api, token, { rule_key: rule.rule_key, status: 'open' });
      assert.equal(alerts.length, 1, 'left to users once auto_clear is off');
    });

    it('when timing fields are wrong then the rule is refused with a 400 naming them, on create and update', async () => {
      const token = await ctx.api.adminToken();
      const refused = async (rule: Record<string, unknown>, param: string) => {
        const answer = await ctx.api.request('POST', '/api/v3/rules', {
          token,
          body: { rule: { name: unique('bad'), ...rule } },
        });
        assert.equal(answer.status, 400, `${JSON.stringify(rule)}: ${answer.text}`);
        assert.equal(answer.body.success, false);
        assert.match(answer.body.errors[0].param, new RegExp(`^rule\\.${param}`), answer.text);
      };
      await refused({ condition: 'v > 1', for_seconds: -1 }, 'for_seconds');
      await refused({ condition: 'v > 1', for_seconds: 2_592_001 }, 'for_seconds');
      await refused({ condition: 'v > 1', for_seconds: 1.5 }, 'for_seconds');
      await refused({ condition: 'v > 1', for_seconds: 'soon' }, 'for_seconds');
      await refused({ trigger: 'no_data' }, 'for_seconds');
      await refused({ trigger: 'no_data', for_seconds: 0 }, 'for_seconds');
      await refused({ condition: 'v > 1', trigger: 'every_event', for_seconds: 5 }, 'for_seconds');
      await refused({ condition: 'v > 1', auto_clear: true, alert_type: null }, 'auto_clear');
      await refused({ condition: 'v > 1', auto_clear: 'maybe' }, 'auto_clear');
      await refused({ for_seconds: 5 }, 'condition');
      await refused({ trigger: 'no_data', for_seconds: 5, condition: 'v >' }, 'condition');
      await refused({ condition: 'v > 1', trigger: 'later' }, 'trigger');
      const rule = await createRule(ctx.api, token, { condition: 'v > 1' });
      const update = await ctx.api.request('PUT', `/api/v3/rules/${rule.rule_key}`, {
        token,
        body: { rule: { trigger: 'no_data' } },
      });
      assert.equal(update.status, 400, update.text);
      assert.equal(update.body.errors[0].param, 'rule.for_seconds');
      const read = await ctx.api.request('GET', `/api/v3/rules/${rule.rule_key}`, { token });
      assert.equal(read.body.rule.trigger, 'on_enter', 'nothing of a refused update is kept');
      const noData = await createRule(ctx.api, token, { trigger: 'no_data', for_seconds: 3600 });
      assert.equal(noData.condition, '');
      assert.equal(noData.for_seconds, 3600);
    });

    it('when a thing never sends anything then a no_data rule fires once for its silence, and again after an event and a new silence', async () => {
      const token = await ctx.api.adminToken();
      const thing = await createThing(ctx.api, token, {});
      const before = Date.now();
      const rule = await createRule(ctx.api, token, {
        trigger: 'no_data',
        for_seconds: 1,
        auto_clear: true,
        thing_keys: [thing.thing_key],
        alert_message: '{{thing.name}} is silent',
      });
      // Without a message or a condition, the default message is the rule's name and the thing's.
      const plain = await createRule(ctx.api, token, {
        trigger: 'no_data',
        for_seconds: 1,
        thing_keys: [thing.thing_key],
      });
      await sleep(2500);
      let alerts = await alertsOf(ctx.api, token, { rule_key: rule.rule_key });
      assert.equal(alerts.length, 1, 'once per silence');
      assert.equal(alerts[0]?.message, `${thing.name} is silent`);
      const [plainAlert] = await alertsOf(ctx.api, token, { rule_key: plain.rule_key });
      assert.equal(plainAlert?.message, `${plain.name} (${thing.name})`);
      assert.ok(alerts[0]?.timestamp * 1000 >= before + 1000 - 1000, 'fired when the silence had lasted');
      assert.equal(alerts[0]?.status, 'open');
      // The empty event at the firing time, in epoch seconds as the alert's own timestamp.
      assert.deepEqual(alerts[0]?.data.event.data, {});
      assert.ok(Math.abs(alerts[0]?.data.event.timestamp - alerts[0]?.timestamp) <= 1, JSON.stringify(alerts[0]?.data));
      const sent = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
        token,
        body: { events: [{ data: { v: 1 } }] },
      });
      assert.equal(sent.status, 200, sent.text);
      alerts = await alertsOf(ctx.api, token, { rule_key: rule.rule_key });
      assert.deepEqual(
        alerts.map((a) => [a.status, a.cleared_by]),
        [['cleared', 'rule']],
        'cleared by the first event',
      );
      await sleep(2000);
      alerts = await alertsOf(ctx.api, token, { rule_key: rule.rule_key });
      assert.deepEqual(
        alerts.map((a) => a.status),
        ['cleared', 'open'],
        'a new silence fires again',
      );
    });

    it('when a thing is created after a no_data rule of its template then it is watched from its creation; a condition is checked against the last event', async () => {
      const token = await ctx.api.adminToken();
      const templateKey = await createTemplate(ctx.api, token, unique('template'));
      const rule = await createRule(ctx.api, token, {
        trigger: 'no_data',
        for_seconds: 1,
        thing_template_key: templateKey,
        condition: 'mode != "off"',
      });
      const silent = await createThing(ctx.api, token, { thing_template_key: templateKey });
      const switchedOff = await createThing(ctx.api, token, { thing_template_key: templateKey });
      const other = await createThing(ctx.api, token, { thing_template_key: await defaultTemplateKey(ctx.api, token) });
      const off = await ctx.api.request('POST', `/api/v3/things/${switchedOff.thing_key}/events`, {
        token,
        body: { events: [{ data: { mode: 'off' } }] },
      });
      assert.equal(off.status, 200, off.text);
      await sleep(2500);
      const alerts = await alertsOf(ctx.api, token, { rule_key: rule.rule_key });
      assert.deepEqual(
        alerts.map((a) => a.thing_key),
        [silent.thing_key],
      );
      assert.equal((await alertsOf(ctx.api, token, { thing_key: other.thing_key })).length, 0);
    });

    it('when a no_data rule is disabled, renamed and enabled again then it fires only while enabled, with its actions', async () => {
      const token = await ctx.api.adminToken();
      const thing = await createThing(ctx.api, token, {});
      const rule = await createRule(ctx.api, token, {
        trigger: 'no_data',
        for_seconds: 1,
        thing_keys: [thing.thing_key],
        enabled: false,
      });
      await withAction(ctx.api, token, rule.rule_key);
      const edit = async (changes: object) => {
        const answer = await ctx.api.request('PUT', `/api/v3/rules/${rule.rule_key}`, {
          token,
          body: { rule: changes },
        });
        assert.equal(answer.status, 200, answer.text);
      };
      await sleep(1500);
      assert.equal((await alertsOf(ctx.api, token, { rule_key: rule.rule_key })).length, 0, 'disabled');
      await edit({ enabled: true });
      await edit({ name: unique('renamed') });
      await sleep(1800);
      assert.equal((await alertsOf(ctx.api, token, { rule_key: rule.rule_key })).length, 1);
      assert.equal(await deliveriesOf(ctx.api, rule.rule_key), 1);
      await edit({ enabled: false });
      await sleep(1500);
      assert.equal((await alertsOf(ctx.api, token, { rule_key: rule.rule_key })).length, 1, 'disabled again');
      await edit({ trigger: 'on_enter', condition: 'v > 1', enabled: true });
      await sleep(1500);
      assert.equal((await alertsOf(ctx.api, token, { rule_key: rule.rule_key })).length, 1, 'no longer no_data');
    });

    it('when a no_data alert is open and the rule is edited then the new silence raises no second alert', async () => {
      const token = await ctx.api.adminToken();
      const thing = await createThing(ctx.api, token, {});
      const rule = await createRule(ctx.api, token, {
        trigger: 'no_data',
        for_seconds: 1,
        auto_clear: true,
        thing_keys: [thing.thing_key],
      });
      await sleep(1800);
      assert.equal((await alertsOf(ctx.api, token, { rule_key: rule.rule_key })).length, 1);
      const edited = await ctx.api.request('PUT', `/api/v3/rules/${rule.rule_key}`, {
        token,
        body: { rule: { for_seconds: 2 } },
      });
      assert.equal(edited.status, 200, edited.text);
      await sleep(3000);
      const alerts = await alertsOf(ctx.api, token, { rule_key: rule.rule_key });
      assert.deepEqual(
        alerts.map((a) => a.status),
        ['open'],
      );
    });

    it('when a watched thing is deleted or leaves a dynamic group then its silence fires nothing', async () => {
      const token = await ctx.api.adminToken();
      const tag = unique('tag');
      const group = await ctx.api.request('POST', '/api/v3/groups', {
        token,
        body: { group: { name: unique('g'), group_type: 2, thing_expression: `tags contains '${tag}'` } },
      });
      assert.equal(group.status, 200, group.text);
      const leaving = await createThing(ctx.api, token, { tags: [tag] });
      const deleted = await createThing(ctx.api, token, { tags: [tag] });
      const staying = await createThing(ctx.api, token, { tags: [tag] });
      const rule = await createRule(ctx.api, token, {
        trigger: 'no_data',
        for_seconds: 1,
        group_key: group.body.group.group_key,
      });
      const moved = await ctx.api.request('PUT', `/api/v3/things/${leaving.thing_key}`, {
        token,
        body: { thing: { tags: ['elsewhere'] } },
      });
      assert.equal(moved.status, 200, moved.text);
      assert.equal((await ctx.api.request('DELETE', `/api/v3/things/${deleted.thing_key}`, { token })).status, 200);
      await sleep(2000);
      const alerts = await alertsOf(ctx.api, token, { rule_key: rule.rule_key });
      assert.deepEqual(
        alerts.map((a) => a.thing_key),
        [staying.thing_key],
      );
      const watches = await ctx.api.server.store.db
        .selectFrom('rule_states')
        .select(['thing_key', 'due_at'])
        .where('rule_key', '=', rule.rule_key)
        .execute();
      const byThing = new Map(watches.map((w) => [w.thing_key, w.due_at]));
      assert.equal(byThing.has(deleted.thing_key), false, "a deleted thing's watch goes");
      assert.equal(byThing.get(leaving.thing_key), null, 'a thing out of scope is not watched');
    });

    /** The due time of each of a rule's watches, by thing key (null: not watched). */
    async function watchesOf(ruleKey: string) {
      const rows = await ctx.api.server.store.db
        .selectFrom('rule_states')
        .select(['thing_key', 'due_at'])
        .where('rule_key', '=', ruleKey)
        .execute();
      return new Map(rows.map((r) => [r.thing_key, r.due_at === null ? null : Number(r.due_at)]));
    }

    /**
     * Right after a scope change: `entered` is watched and `left` is not; then the silence of `entered`
     * (2 s) fires, and nothing else does.
     */
    async function followedScope(token: string, ruleKey: string, entered: string, left: string) {
      const watches = await watchesOf(ruleKey);
      assert.notEqual(watches.get(entered) ?? null, null, 'watched from its entering the scope');
      assert.equal(watches.get(left), null, 'the thing that left is watched no more');
      await sleep(3000);
      const alerts = await alertsOf(ctx.api, token, { rule_key: ruleKey });
      assert.deepEqual(
        alerts.map((a) => a.thing_key),
        [entered],
      );
    }

    it("when a silent thing joins a no_data rule's static group then it is watched from then and fires; one leaving is unwatched at once", async () => {
      const token = await ctx.api.adminToken();
      const joining = await createThing(ctx.api, token, {});
      const leaving = await createThing(ctx.api, token, {});
      const group = await ctx.api.request('POST', '/api/v3/groups', {
        token,
        body: { group: { name: unique('g'), group_type: 1, thing_keys: [leaving.thing_key] } },
      });
      assert.equal(group.status, 200, group.text);
      const groupKey = group.body.group.group_key as string;
      const rule = await createRule(ctx.api, token, { trigger: 'no_data', for_seconds: 2, group_key: groupKey });
      assert.equal((await watchesOf(rule.rule_key)).has(joining.thing_key), false, 'not in scope yet');
      const moved = await ctx.api.request('PUT', `/api/v3/groups/${groupKey}`, {
        token,
        body: { group: { thing_keys: [joining.thing_key] } },
      });
      assert.equal(moved.status, 200, moved.text);
      await followedScope(token, rule.rule_key, joining.thing_key, leaving.thing_key);
    });

    it("when a silent thing is moved to a no_data rule's template then it is watched from then and fires; one moved away is unwatched at once", async () => {
      const token = await ctx.api.adminToken();
      const templateKey = await createTemplate(ctx.api, token, unique('template'));
      const otherKey = await defaultTemplateKey(ctx.api, token);
      const arriving = await createThing(ctx.api, token, { thing_template_key: otherKey });
      const departing = await createThing(ctx.api, token, { thing_template_key: templateKey });
      const rule = await createRule(ctx.api, token, {
        trigger: 'no_data',
        for_seconds: 2,
        thing_template_key: templateKey,
      });
      const move = async (thingKey: string, to: string) => {
        const moved = await ctx.api.request('PUT', `/api/v3/things/${thingKey}`, {
          token,
          body: { thing: { thing_template_key: to } },
        });
        assert.equal(moved.status, 200, moved.text);
      };
      await move(arriving.thing_key, templateKey);
      await move(departing.thing_key, otherKey);
      await followedScope(token, rule.rule_key, arriving.thing_key, departing.thing_key);
    });

    it('when a watch was ended out of scope and its thing is back in scope then its next event watches it again', async () => {
      const token = await ctx.api.adminToken();
      const name = unique('pumps');
      const templateKey = await createTemplate(ctx.api, token, name);
      const group = await ctx.api.request('POST', '/api/v3/groups', {
        token,
        body: { group: { name: unique('g'), group_type: 2, thing_expression: `thing_template_name == '${name}'` } },
      });
      assert.equal(group.status, 200, group.text);
      const thing = await createThing(ctx.api, token, { thing_template_key: templateKey });
      const rule = await createRule(ctx.api, token, {
        trigger: 'no_data',
        for_seconds: 1,
        group_key: group.body.group.group_key,
      });
      const rename = async (to: string) => {
        const renamed = await ctx.api.request('PUT', `/api/v3/thing_templates/${templateKey}`, {
          token,
          body: { thing_template: { name: to } },
        });
        assert.equal(renamed.status, 200, renamed.text);
      };
      // Renaming the template takes the thing out of the group's expression; the timer then ends the watch.
      await rename(unique('other'));
      await sleep(1800);
      assert.equal((await watchesOf(rule.rule_key)).get(thing.thing_key), null, 'out of scope when it came due');
      assert.equal((await alertsOf(ctx.api, token, { rule_key: rule.rule_key })).length, 0);
      await rename(name);
      const sent = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
        token,
        body: { events: [{ data: { v: 1 } }] },
      });
      assert.equal(sent.status, 200, sent.text);
      assert.notEqual((await watchesOf(rule.rule_key)).get(thing.thing_key) ?? null, null, 'watched again');
      await sleep(2500);
      const alerts = await alertsOf(ctx.api, token, { rule_key: rule.rule_key });
      assert.deepEqual(
        alerts.map((a) => a.thing_key),
        [thing.thing_key],
        'its next silence fires',
      );
    });

    it('when the rule clears an alert a user cleared first then nothing changes', async () => {
      const token = await ctx.api.adminToken();
      const { alert_key: alertKey, organisationKey } = await (async () => {
        const thing = await createThing(ctx.api, token, {});
        await createRule(ctx.api, token, { condition: 'v > 5', thing_keys: [thing.thing_key] });
        await send(ctx.api, token, thing.thing_key, BASE, [[0, 9]]);
        const [alert] = await alertsOf(ctx.api, token, { thing_key: thing.thing_key });
        const row = await ctx.api.server.store.db
          .selectFrom('alerts')
          .select('organisation_key')
          .where('alert_key', '=', alert?.alert_key)
          .executeTakeFirstOrThrow();
        return { alert_key: alert?.alert_key as string, organisationKey: row.organisation_key };
      })();
      assert.equal((await ctx.api.request('POST', `/api/v3/alerts/${alertKey}/clear`, { token })).status, 200);
      assert.equal(await clearAlertByRule(ctx.api.server.store.db, organisationKey, alertKey), false);
      const read = await ctx.api.request('GET', `/api/v3/alerts/${alertKey}`, { token });
      assert.equal(read.body.alert.cleared_by, 'admin@example.com');
    });

    it('when the server restarts in the middle of a no_data silence then the rule fires once, when the silence has lasted', async () => {
      const settings = ctx.store.fresh();
      const first = await startServer(ctx.store, { env, storeSettings: settings });
      let second: TestServer | undefined;
      try {
        const token = await first.adminToken();
        const thing = await createThing(first, token, {});
        const rule = await createRule(first, token, {
          trigger: 'no_data',
          for_seconds: 2,
          thing_keys: [thing.thing_key],
        });
        const armed = Date.now();
        await sleep(800);
        await first.close();
        second = await startServer(ctx.store, { env, storeSettings: settings });
        const again = await second.adminToken();
        await sleep(3000);
        const alerts = await alertsOf(second, again, { rule_key: rule.rule_key });
        assert.equal(alerts.length, 1, 'once');
        // Not before the silence had lasted (answers give whole seconds).
        const firedAt = (alerts[0]?.timestamp as number) * 1000;
        assert.ok(firedAt > armed + 2000 - 1000, `fired at ${firedAt}, armed ${armed}`);
      } finally {
        await second?.close();
        await ctx.store.dispose(settings);
      }
    });
  },
  { env },
);

const postgres = STORES.find((s) => s.name === 'postgres');
if (postgres) {
  describe('rule states on two instances of one PostgreSQL store', { skip: postgres.skip }, () => {
    it('when a run starts through one instance then an event on which the condition fails through the other ends it', async () => {
      const a = await startServer(postgres, { env });
      const b = await startServer(postgres, { env, storeSettings: a.storeSettings });
      try {
        const [tokenA, tokenB] = [await a.adminToken(), await b.adminToken()];
        const thing = await createThing(a, tokenA, {});
        const rule = await createRule(a, tokenA, {
          condition: 'v > 5',
          for_seconds: 60,
          thing_keys: [thing.thing_key],
        });
        // Instance b sees the state at rest; a starts a run; b's failing event must end it.
        await send(b, tokenB, thing.thing_key, BASE, [[0, 1]]);
        await send(a, tokenA, thing.thing_key, BASE, [[10, 9]]);
        await send(b, tokenB, thing.thing_key, BASE, [[40, 1]]);
        await send(a, tokenA, thing.thing_key, BASE, [[80, 9]]);
        assert.equal(
          (await alertsOf(a, tokenA, { rule_key: rule.rule_key })).length,
          0,
          'the run of 10 s ended at 40 s',
        );
        await send(b, tokenB, thing.thing_key, BASE, [[150, 9]]);
        const alerts = await alertsOf(a, tokenA, { rule_key: rule.rule_key });
        assert.deepEqual(
          alerts.map((x) => x.timestamp * 1000 - BASE),
          [150_000],
          'the run of 80 s fires at 150 s',
        );
      } finally {
        await b.close();
        await a.close();
      }
    });
  });

  describe('no_data rules on two instances of one PostgreSQL store', { skip: postgres.skip }, () => {
    it('when both instances watch the same silences then each fires exactly once', async () => {
      const a = await startServer(postgres, { env });
      const b = await startServer(postgres, { env, storeSettings: a.storeSettings });
      try {
        const token = await a.adminToken();
        const things = [];
        for (let i = 0; i < 30; i++) things.push(await createThing(a, token, {}));
        const rule = await createRule(a, token, {
          trigger: 'no_data',
          for_seconds: 1,
          thing_keys: things.map((t) => t.thing_key),
        });
        await sleep(3500);
        const alerts = await alertsOf(a, token, { rule_key: rule.rule_key });
        assert.equal(alerts.length, things.length, 'one per thing');
        assert.equal(new Set(alerts.map((x) => x.thing_key)).size, things.length);
      } finally {
        await b.close();
        await a.close();
      }
    });
  });
}
