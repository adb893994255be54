import assert from 'node:assert/strict';
import { it } from 'node:test';
import { childOrganisation, createThing, storedEventCount, userWithAbilities } from '../support/fixtures.ts';
import { describeOnStores } from '../support/suites.ts';

const T0 = Date.UTC(2025, 2, 1, 10);
const MINUTE = 60_000;
const s = (ms: number) => ms / 1000;

describeOnStores('deleting a range of events', (ctx) => {
  /** A thing of a template with metric n, with an event every 5 minutes for an hour (n = 0..11). */
  async function thingWithHour(token?: string) {
    const auth = token ?? (await ctx.api.adminToken());
    const template = await ctx.api.request('POST', '/api/v3/thing_templates', {
      token: auth,
      body: { thing_template: { name: `meter ${Math.random()}`, metrics: [{ name: 'n', data_type: 'number' }] } },
    });
    assert.equal(template.status, 200, template.text);
    const thing = await createThing(ctx.api, auth, {
      thing_template_key: template.body.thing_template.thing_template_key,
    });
    const events = Array.from({ length: 12 }, (_, n) => ({ timestamp: T0 + n * 5 * MINUTE, data: { n } }));
    const posted = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
      token: auth,
      body: { events },
    });
    assert.equal(posted.status, 200, posted.text);
    return thing.thing_key;
  }

  const remove = async (key: string, query: Record<string, string | number>, token?: string) =>
    ctx.api.request('DELETE', `/api/v3/things/${key}/events`, {
      token: token ?? (await ctx.api.adminToken()),
      query: query as Record<string, string>,
    });

  const quarterHours = async (key: string, grouping: { time_grouping: string; time_grouping_value: number }) => {
    const response = await ctx.api.request('POST', '/api/v3/query/thing_aggregated_data', {
      token: await ctx.api.adminToken(),
      body: {
        thing_keys: [key],
        metrics: ['n'],
        from: s(T0),
        to: s(T0 + 60 * MINUTE) - 1,
        time_zone: 'UTC',
        ...grouping,
      },
    });
    assert.equal(response.status, 200, response.text);
    return response.body;
  };

  it('when a range is deleted then its events go, the answer counts them, and the rollups agree with the events left', async () => {
    const key = await thingWithHour();
    // 00:10 to 00:40 inclusive: n = 2..8.
    const deleted = await remove(key, { from: s(T0 + 10 * MINUTE), to: s(T0 + 40 * MINUTE) });
    assert.equal(deleted.status, 200, deleted.text);
    assert.deepEqual(deleted.body, { deleted: 7 });
    assert.equal(await storedEventCount(ctx.api, key), 5);
    const data = await ctx.api.request('POST', '/api/v3/query/thing_data', {
      token: await ctx.api.adminToken(),
      body: { thing_key: key, order: 'asc' },
    });
    assert.equal(data.body[key].total_event_count, 5);
    assert.deepEqual(
      data.body[key].event_data.map((e: any) => e.data.n),
      [0, 1, 9, 10, 11],
    );
    // Quarter hours are read from the rollups; five-minute buckets from the events: the same counts.
    const fromRollups = await quarterHours(key, { time_grouping: 'minute', time_grouping_value: 15 });
    const fromEvents = await quarterHours(key, { time_grouping: 'minute', time_grouping_value: 5 });
    assert.deepEqual(fromRollups.summary_result, fromEvents.summary_result);
    assert.deepEqual(fromRollups.summary_result.n, { count: 5, sum: 31, min: 0, max: 11, avg: 6.2 });
    const buckets = Object.values(fromRollups.time_grouped_result).map((b: any) => b[key].n.count);
    assert.deepEqual(buckets, [2, 0, 0, 3]);
    const maxes = Object.values(fromRollups.time_grouped_result).map((b: any) => b[key].n.max);
    assert.deepEqual(maxes, [1, null, null, 11], 'a partly deleted slot is counted again, not just less');

    const updates = await rangeTrails(key);
    assert.equal(updates.length, 1, JSON.stringify(updates));
    const [trail] = updates;
    assert.deepEqual(trail.new_entity_contents.deleted_events, {
      from: T0 + 10 * MINUTE,
      to: T0 + 40 * MINUTE + 999,
      count: 7,
    });
    assert.equal(trail.old_entity_contents.deleted_events, undefined);
    assert.equal(trail.new_entity_contents.thing_key, key);
  });

  /** The thing's audit trails of range deletes, newest first. */
  async function rangeTrails(key: string) {
    const trails = await ctx.api.request('GET', '/api/v3/audit_trails', {
      token: await ctx.api.adminToken(),
      query: { entity_type: 'Thing', entity_key: key },
    });
    assert.equal(trails.status, 200, trails.text);
    return trails.body.audit_trails.filter((t: any) => t.action_taken === 'update');
  }

  it('when a range holds no event then nothing is audited, and a later delete audits its own range', async () => {
    const key = await thingWithHour();
    const none = await remove(key, { from: s(T0 + 2 * 60 * MINUTE), to: s(T0 + 3 * 60 * MINUTE) });
    assert.deepEqual(none.body, { deleted: 0 });
    assert.deepEqual(await rangeTrails(key), [], 'a delete that deleted nothing changed nothing');
    const some = await remove(key, { from: s(T0), to: s(T0) });
    assert.deepEqual(some.body, { deleted: 1 });
    const [trail] = await rangeTrails(key);
    assert.deepEqual(trail.new_entity_contents.deleted_events, { from: T0, to: T0 + 999, count: 1 });
  });

  it('when the newest events are deleted then the thing’s last event is the newest one left, or none', async () => {
    const key = await thingWithHour();
    const tail = await remove(key, { from: '2025-03-01 10:50:00', to: '2025-03-01 11:00:00', time_zone: 'UTC' });
    assert.deepEqual(tail.body, { deleted: 2 });
    const thing = await ctx.api.request('GET', `/api/v3/things/${key}`, { token: await ctx.api.adminToken() });
    assert.deepEqual(thing.body.thing.last_event, { timestamp: s(T0 + 45 * MINUTE), data: { n: 9 } });
    const all = await remove(key, { from: 0, to: s(T0 + 2 * 60 * MINUTE) });
    assert.deepEqual(all.body, { deleted: 10 });
    const empty = await ctx.api.request('GET', `/api/v3/things/${key}`, { token: await ctx.api.adminToken() });
    assert.equal(empty.body.thing.last_event, null);
    const none = await remove(key, { from: 0, to: s(T0 + 2 * 60 * MINUTE) });
    assert.deepEqual(none.body, { deleted: 0 });
    const total = await quarterHours(key, { time_grouping: 'minute', time_grouping_value: 15 });
    assert.equal(total.summary_result.n.count, 0);
  });

  it('when to names a second it takes in the whole second, and when it names a fraction it takes in no more', async () => {
    const admin = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, admin, {});
    const times = [T0, T0 + 500, T0 + 1000, T0 + 1400];
    const events = times.map((timestamp, n) => ({ timestamp, data: { n } }));
    const posted = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
      token: admin,
      body: { events },
    });
    assert.equal(posted.status, 200, posted.text);
    // T0.2 s: the event at T0 only, not the events of the next 999 ms.
    assert.deepEqual((await remove(thing.thing_key, { from: s(T0), to: `${s(T0)}.2` })).body, { deleted: 1 });
    // Epoch seconds as a number or as text: the whole second T0, the event at T0 + 500 ms included.
    assert.deepEqual((await remove(thing.thing_key, { from: s(T0), to: s(T0) })).body, { deleted: 1 });
    const iso = await remove(thing.thing_key, { from: s(T0), to: new Date(T0 + 1100).toISOString() });
    assert.deepEqual(iso.body, { deleted: 1 }, 'an ISO time to the millisecond is that instant');
    assert.equal(await storedEventCount(ctx.api, thing.thing_key), 1);
    const data = await ctx.api.request('POST', '/api/v3/query/thing_data', {
      token: admin,
      body: { thing_key: thing.thing_key, from: s(T0 + 1000), to: s(T0 + 1000) },
    });
    assert.deepEqual(
      data.body[thing.thing_key].event_data.map((e: any) => e.data.n),
      [3],
      'reads take in the whole second too',
    );
  });

  it('when a range holds events that have expired but are not yet swept then they go too, rollups corrected, and a longer retention brings none back', async () => {
    const admin = await ctx.api.adminToken();
    const template = await ctx.api.request('POST', '/api/v3/thing_templates', {
      token: admin,
      body: { thing_template: { name: `expiring ${Math.random()}`, metrics: [{ name: 'n', data_type: 'number' }] } },
    });
    const templateKey = template.body.thing_template.thing_template_key;
    const thing = await createThing(ctx.api, admin, { thing_template_key: templateKey });
    const hour = Math.floor((Date.now() - 40 * 86_400_000) / 3_600_000) * 3_600_000;
    const events = [hour + 10 * MINUTE, hour + 20 * MINUTE].map((timestamp, n) => ({ timestamp, data: { n } }));
    const posted = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
      token: admin,
      body: { events },
    });
    assert.equal(posted.status, 200, posted.text);
    const setRetention = async (retention_days: number | null) => {
      const set = await ctx.api.request('PUT', `/api/v3/thing_templates/${templateKey}`, {
        token: admin,
        body: { thing_template: { retention_days } },
      });
      assert.equal(set.status, 200, set.text);
    };
    const answered = async () => {
      const data = await ctx.api.request('POST', '/api/v3/query/thing_data', {
        token: admin,
        body: { thing_key: thing.thing_key, from: s(hour), to: s(hour + 60 * MINUTE) - 1 },
      });
      assert.equal(data.status, 200, data.text);
      return data.body[thing.thing_key]?.event_data.length ?? 0;
    };
    const counted = async () => {
      const aggregate = await ctx.api.request('POST', '/api/v3/query/thing_aggregated_data', {
        token: admin,
        body: {
          thing_keys: [thing.thing_key],
          metrics: ['n'],
          from: s(hour),
          to: s(hour + 60 * MINUTE) - 1,
          time_zone: 'UTC',
          time_grouping: 'hour',
          time_grouping_value: 1,
        },
      });
      assert.equal(aggregate.status, 200, aggregate.text);
      return aggregate.body.summary_result.n?.count ?? 0;
    };
    await setRetention(30);
    assert.equal(await answered(), 0, 'expired events are not answered');
    assert.equal(await counted(), 2, 'the rollups still count them');
    const deleted = await remove(thing.thing_key, { from: s(hour), to: s(hour + 60 * MINUTE) - 1 });
    assert.equal(deleted.status, 200, deleted.text);
    assert.deepEqual(deleted.body, { deleted: 2 }, 'the expired events of the range are deleted and counted');
    assert.equal(await counted(), 0, 'the rollups no longer count them');
    assert.equal(await storedEventCount(ctx.api, thing.thing_key), 0);
    const [trail] = await rangeTrails(thing.thing_key);
    assert.equal(trail.new_entity_contents.deleted_events.count, 2);
    await setRetention(null);
    assert.equal(await answered(), 0, 'a deleted event never comes back');
    assert.equal(await counted(), 0);
  });

  it('when a range delete is asked badly or by someone who may not then nothing is deleted', async () => {
    const admin = await ctx.api.adminToken();
    const key = await thingWithHour();
    const cases: [Record<string, string | number>, string, string][] = [
      [{ to: s(T0) }, 'from', 'required'],
      [{ from: s(T0) }, 'to', 'required'],
      [{ from: '', to: s(T0) }, 'from', 'required'],
      [{ from: s(T0), to: '' }, 'to', 'required'],
      [{ from: s(T0 + MINUTE), to: s(T0) }, 'from', 'invalid'],
      [{ from: 'yesterday', to: s(T0) }, 'from', 'invalid'],
    ];
    for (const [query, param, code] of cases) {
      const refused = await remove(key, query);
      assert.equal(refused.status, 400, `${JSON.stringify(query)}: ${refused.text}`);
      assert.equal(refused.body.success, false);
      assert.equal(refused.body.errors[0].param, param, JSON.stringify(query));
      assert.equal(refused.body.errors[0].code, code, JSON.stringify(query));
    }
    const reader = await userWithAbilities(ctx.api, admin, [121]);
    assert.equal((await remove(key, { from: 0, to: s(T0 + 3_600_000) }, reader.token)).status, 403);
    const child = await childOrganisation(ctx.api, admin);
    assert.equal((await remove(key, { from: 0, to: s(T0 + 3_600_000) }, child.token)).status, 404);
    assert.equal((await remove('no-such-thing', { from: 0, to: 1 })).status, 404);
    assert.equal(await storedEventCount(ctx.api, key), 12, 'nothing was deleted');
    const deleter = await userWithAbilities(ctx.api, admin, [124]);
    const allowed = await remove(key, { from: s(T0), to: s(T0) }, deleter.token);
    assert.equal(allowed.status, 200, allowed.text);
    assert.deepEqual(allowed.body, { deleted: 1 });
  });
});
