import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { eventDataAt } from '../../src/events/service.ts';
import { RetentionSweeper } from '../../src/events/sweeper.ts';
import { EventWriter } from '../../src/events/writer.ts';
import { reclaimFreePages } from '../../src/store/dialect.ts';
import { openStore } from '../../src/store/store.ts';
import { childOrganisation, createThing, storedEventCount, userWithAbilities } from '../support/fixtures.ts';
import { SocketClient } from '../support/realtime.ts';
import { describeOnStores } from '../support/suites.ts';

it('when a SQLite file made before incremental auto-vacuum is opened then it keeps its mode and frees pages for reuse only', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'thingbase-old-')), 'old.db');
  // A table made first, as every earlier version did: the mode can no longer be chosen.
  const before = new BetterSqlite3(path);
  before.exec('create table made_earlier (id integer primary key)');
  before.close();
  const store = await openStore({ databaseUrl: `sqlite:${path}` });
  try {
    const [mode] = (await sql<{ auto_vacuum: number }>`pragma auto_vacuum`.execute(store.db)).rows;
    assert.equal(mode?.auto_vacuum, 0);
    assert.equal(await reclaimFreePages(store.db, 10), 0);
  } finally {
    await store.close();
  }
});

const DAY = 86_400_000;
const SLOT = 15 * 60_000;
const HOUR = 3_600_000;

/** A time as yyyy-mm-dd hh:mm:ss in UTC. */
const utc = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');

/** A slot-aligned time `days` ago, so rollups and buckets fall on whole slots. */
const daysAgo = (days: number) => Math.floor((Date.now() - days * DAY) / HOUR) * HOUR;

describeOnStores(
  'retention',
  (ctx) => {
    /** A child organisation of its own (retention is per organisation), its admin, and a thing with events. */
    async function organisationWithEvents(events: { timestamp: number; data: object }[]) {
      const org = await childOrganisation(ctx.api, await ctx.api.adminToken());
      // Metrics declared: rollups count a template's metrics, and the Default template has none until
      // its first events are stored.
      const template = await ctx.api.request('POST', '/api/v3/thing_templates', {
        token: org.token,
        body: {
          thing_template: {
            name: 'meter',
            metrics: [
              { name: 'n', data_type: 'number' },
              { name: 'm', data_type: 'number' },
            ],
          },
        },
      });
      assert.equal(template.status, 200, template.text);
      const templateKey = template.body.thing_template.thing_template_key as string;
      const thing = await createThing(ctx.api, org.token, { thing_template_key: templateKey });
      for (let i = 0; i < events.length; i += 5000) {
        const posted = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
          token: org.token,
          body: { events: events.slice(i, i + 5000) },
        });
        assert.equal(posted.status, 200, posted.text);
      }
      return { ...org, thingKey: thing.thing_key, templateKey };
    }

    const setRetention = (org: { organisationKey: string; token: string }, organisation: object) =>
      ctx.api.request('PUT', `/api/v3/organisations/${org.organisationKey}`, {
        token: org.token,
        body: { organisation },
      });

    const thingData = async (org: { token: string; thingKey: string }, body: object = {}) => {
      const response = await ctx.api.request('POST', '/api/v3/query/thing_data', {
        token: org.token,
        body: { thing_key: org.thingKey, per: 10_000, order: 'asc', ...body },
      });
      assert.equal(response.status, 200, response.text);
      return response.body[org.thingKey] as { total_event_count: number; event_data: { data: { n: number } }[] };
    };

    /** The thing's last_event as GET /things/:thing_key and the things list show it. */
    const lastEvents = async (org: { token: string; thingKey: string }) => {
      const one = await ctx.api.request('GET', `/api/v3/things/${org.thingKey}`, { token: org.token });
      assert.equal(one.status, 200, one.text);
      const list = await ctx.api.request('GET', '/api/v3/things', { token: org.token });
      assert.equal(list.status, 200, list.text);
      const listed = list.body.things.find((t: any) => t.thing_key === org.thingKey);
      return [one.body.thing.last_event, listed.last_event];
    };

    const aggregated = async (org: { token: string; thingKey: string }, body: object) => {
      const response = await ctx.api.request('POST', '/api/v3/query/thing_aggregated_data', {
        token: org.token,
        body: { thing_keys: [org.thingKey], metrics: ['n'], time_zone: 'UTC', ...body },
      });
      assert.equal(response.status, 200, response.text);
      return response.body;
    };

    it('when an account admin reads and sets its own retention then it is kept, and bad values are refused with the cap named', async () => {
      const org = await childOrganisation(ctx.api, await ctx.api.adminToken());
      const path = `/api/v3/organisations/${org.organisationKey}`;
      const read = await ctx.api.request('GET', path, { token: org.token });
      assert.equal(read.status, 200, read.text);
      assert.equal(read.body.organisation.retention_days, null);
      assert.equal(read.body.organisation.rollup_retention_days, null);
      const set = await setRetention(org, { retention_days: 30, rollup_retention_days: 400 });
      assert.equal(set.status, 200, set.text);
      assert.equal(set.body.organisation.retention_days, 30);
      assert.equal(set.body.organisation.rollup_retention_days, 400);
      assert.equal((await ctx.api.request('GET', path, { token: org.token })).body.organisation.retention_days, 30);
      // Empty text would be read as null (for ever) by coercion.
      for (const bad of [0, -5, 1.5, 'soon', '']) {
        const refused = await setRetention(org, { retention_days: bad });
        assert.equal(refused.status, 400, `${bad}: ${refused.text}`);
        assert.equal(refused.body.success, false);
        assert.equal(refused.body.errors[0].param, 'organisation.retention_days');
      }
      const huge = await setRetention(org, { rollup_retention_days: 36_501 });
      assert.equal(huge.status, 400);
      assert.match(huge.body.errors[0].message, /36500/);
      assert.equal((await setRetention(org, { retention_days: 36_500 })).status, 200, 'the cap itself is allowed');
      const cleared = await setRetention(org, { retention_days: null });
      assert.equal(cleared.body.organisation.retention_days, null);
      assert.equal(cleared.body.organisation.rollup_retention_days, 400, 'a field not sent is kept');
      // Its name and OEM status are its parent's to change.
      assert.equal((await setRetention(org, { name: 'mine' })).status, 403);
      assert.equal((await setRetention(org, { is_oem: true })).status, 403);
      const trail = await ctx.api.request('GET', '/api/v3/audit_trails', {
        token: org.token,
        query: { entity_type: 'Organisation' },
      });
      assert.equal(trail.status, 200, trail.text);
      assert.ok(
        trail.body.audit_trails.some((t: any) => t.entity_key === org.organisationKey && t.action_taken === 'update'),
      );
    });

    it('when a non-admin or another organisation touches retention then it is refused', async () => {
      const admin = await ctx.api.adminToken();
      const org = await childOrganisation(ctx.api, admin);
      const other = await childOrganisation(ctx.api, admin);
      // Everything but account admin.
      const user = await userWithAbilities(ctx.api, org.token, [995]);
      const path = `/api/v3/organisations/${org.organisationKey}`;
      assert.equal((await ctx.api.request('GET', path, { token: user.token })).status, 403);
      const byUser = await ctx.api.request('PUT', path, {
        token: user.token,
        body: { organisation: { retention_days: 5 } },
      });
      assert.equal(byUser.status, 403);
      assert.equal(byUser.body.errors[0].code, 'forbidden');
      assert.equal((await ctx.api.request('GET', path, { token: other.token })).status, 404);
      const byOther = await ctx.api.request('PUT', path, {
        token: other.token,
        body: { organisation: { retention_days: 5 } },
      });
      assert.equal(byOther.status, 404);
      // The OEM parent reaches its child; the child does not reach its parent.
      const byParent = await ctx.api.request('PUT', path, {
        token: admin,
        body: { organisation: { retention_days: 9 } },
      });
      assert.equal(byParent.status, 200, byParent.text);
      assert.equal(byParent.body.organisation.retention_days, 9);
      const parentKey = byParent.body.organisation.parent_organisation_key as string;
      assert.equal(
        (await ctx.api.request('GET', `/api/v3/organisations/${parentKey}`, { token: org.token })).status,
        404,
      );

      const template = await ctx.api.request('POST', '/api/v3/thing_templates', {
        token: user.token,
        body: { thing_template: { name: 'kept', retention_days: 3 } },
      });
      assert.equal(template.status, 403, 'a template retention is the account admin’s too');
      const plain = await ctx.api.request('POST', '/api/v3/thing_templates', {
        token: user.token,
        body: { thing_template: { name: 'plain' } },
      });
      assert.equal(plain.status, 200, plain.text);
      assert.equal(plain.body.thing_template.retention_days, null);
      const change = await ctx.api.request(
        'PUT',
        `/api/v3/thing_templates/${plain.body.thing_template.thing_template_key}`,
        {
          token: user.token,
          body: { thing_template: { retention_days: 3 } },
        },
      );
      assert.equal(change.status, 403);
      const byAdmin = await ctx.api.request(
        'PUT',
        `/api/v3/thing_templates/${plain.body.thing_template.thing_template_key}`,
        { token: org.token, body: { thing_template: { retention_days: 3 } } },
      );
      assert.equal(byAdmin.status, 200, byAdmin.text);
      assert.equal(byAdmin.body.thing_template.retention_days, 3);
      for (const bad of [0, 40_000]) {
        const refused = await ctx.api.request('POST', '/api/v3/thing_templates', {
          token: org.token,
          body: { thing_template: { name: `bad ${bad}`, retention_days: bad } },
        });
        assert.equal(refused.status, 400, refused.text);
        assert.equal(refused.body.errors[0].param, 'thing_template.retention_days');
      }
      const created = await ctx.api.request('POST', '/api/v3/thing_templates', {
        token: org.token,
        body: { thing_template: { name: 'short', retention_days: 2 } },
      });
      assert.equal(created.status, 200, created.text);
      assert.equal(created.body.thing_template.retention_days, 2);
    });

    it('when events expire then no query answers them, before the sweeper runs and after, and the template retention wins', async () => {
      const events = [20, 10, 5, 1].map((d, i) => ({ timestamp: daysAgo(d), data: { n: i } }));
      const org = await organisationWithEvents(events);
      assert.deepEqual(
        (await thingData(org)).event_data.map((e) => e.data.n),
        [0, 1, 2, 3],
      );
      assert.equal((await setRetention(org, { retention_days: 7 })).status, 200);
      const expired = await thingData(org);
      assert.deepEqual(
        expired.event_data.map((e) => e.data.n),
        [2, 3],
      );
      assert.equal(expired.total_event_count, 2, 'the total leaves out what the sweeper has not deleted yet');
      const ranged = await thingData(org, { from: Math.floor(daysAgo(30) / 1000), to: Math.floor(Date.now() / 1000) });
      assert.equal(ranged.total_event_count, 2);
      const byArrival = await thingData(org, { query_by_created_at: true, from: Math.floor(daysAgo(1) / 1000) });
      assert.deepEqual(
        byArrival.event_data.map((e) => e.data.n),
        [2, 3],
        'received today, but happened before the retention',
      );
      const exported = await ctx.api.request('GET', `/api/v3/things/${org.thingKey}/events/export`, {
        token: org.token,
      });
      assert.deepEqual(
        exported.text
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l).data.n),
        [2, 3],
      );
      assert.equal(await storedEventCount(ctx.api, org.thingKey), 4, 'not deleted yet');

      // The thing's template keeps fewer days than its organisation.
      const short = await ctx.api.request('PUT', `/api/v3/thing_templates/${org.templateKey}`, {
        token: org.token,
        body: { thing_template: { retention_days: 2 } },
      });
      assert.equal(short.status, 200, short.text);
      assert.deepEqual(
        (await thingData(org)).event_data.map((e) => e.data.n),
        [3],
      );
      const swept = await ctx.api.server.sweeper.sweep();
      assert.ok(swept.events >= 3, `swept ${swept.events}`);
      assert.equal(await storedEventCount(ctx.api, org.thingKey), 1);
      const after = await thingData(org);
      assert.equal(after.total_event_count, 1, 'the count went down with the deletes');
      assert.deepEqual(
        after.event_data.map((e) => e.data.n),
        [3],
      );
      // Longer again: what was deleted stays deleted, what was kept is answered.
      await ctx.api.request('PUT', `/api/v3/thing_templates/${org.templateKey}`, {
        token: org.token,
        body: { thing_template: { retention_days: null } },
      });
      assert.equal((await thingData(org)).total_event_count, 1);
    });

    it('when events expire then aggregation answers their period from the rollups while those are kept', async () => {
      // Four events in each of the hours from 10 days ago, and four in the last hour.
      const base = daysAgo(10);
      const old = Array.from({ length: 8 }, (_, i) => ({ timestamp: base + i * SLOT, data: { n: i + 1 } }));
      const recent = Array.from({ length: 4 }, (_, i) => ({
        timestamp: daysAgo(0) - HOUR + i * SLOT,
        data: { n: 100 },
      }));
      const org = await organisationWithEvents([...old, ...recent]);
      const range = { from: Math.floor((base - DAY) / 1000), to: Math.floor(Date.now() / 1000) };
      // Inclusive to the second it names: the two hours are whole slots.
      const hourly = { from: utc(base), to: utc(base + 2 * HOUR - 1000) };
      const before = await aggregated(org, { ...hourly, time_grouping: 'hour' });
      assert.equal(before.summary_result.n.count, 8);

      assert.equal((await setRetention(org, { retention_days: 7, rollup_retention_days: 30 })).status, 200);
      await ctx.api.server.sweeper.sweep();
      assert.equal(await storedEventCount(ctx.api, org.thingKey), 4, 'the old events are deleted');
      const fromRollups = await aggregated(org, { ...hourly, time_grouping: 'hour' });
      assert.deepEqual(fromRollups, before, 'hours are whole slots: answered from their rollups');
      const whole = await aggregated(org, range);
      assert.equal(whole.summary_result.n.count, 12);
      assert.equal(whole.summary_result.n.sum, 36 + 400);
      assert.equal(whole.summary_result.n.min, 1);
      assert.equal(whole.thing_wise_result[org.thingKey].n.max, 100);
      // Five-minute buckets are not whole slots: they count nothing over the expired part, while the
      // summary and per-thing results still answer its whole slots.
      const fine = await aggregated(org, { ...hourly, time_grouping: 'minute', time_grouping_value: 5 });
      const fineBuckets = Object.values(fine.time_grouped_result) as Record<string, { n: { count: number } }>[];
      assert.equal(fineBuckets.length, 24);
      assert.ok(fineBuckets.every((bucket) => bucket[org.thingKey]?.n.count === 0));
      assert.deepEqual(fine.summary_result, before.summary_result);
      assert.deepEqual(fine.thing_wise_result, before.thing_wise_result);
      // Idle time needs each event's time: the expired period has none, so it is all idle.
      const idle = await aggregated(org, { ...hourly, idle_time_required: true });
      assert.equal(idle.summary_result.n.count, 8);
      assert.equal(idle.summary_result.n.idle_time_mins, idle.summary_result.n.total_time_mins);

      // Rollups kept fewer days than the old events' age: they expire too (at once, then swept).
      assert.equal((await setRetention(org, { rollup_retention_days: 8 })).status, 200);
      assert.equal((await aggregated(org, range)).summary_result.n.count, 4);
      const swept = await ctx.api.server.sweeper.sweep();
      assert.equal(swept.rollups, 8, 'one slot per old event');
      assert.equal((await aggregated(org, range)).summary_result.n.count, 4);
    });

    it('when buckets are not whole slots then the summary and per-thing results still answer expired slots from their rollups', async () => {
      // One event at a time that is not on a slot boundary, in a range that is not either.
      const at = daysAgo(3) + 7 * 60_000 + 13_000;
      const org = await organisationWithEvents([{ timestamp: at, data: { n: 23 } }]);
      assert.equal((await setRetention(org, { retention_days: 1, rollup_retention_days: null })).status, 200);
      const range = { from: Math.floor(at / 1000) - 3600, to: Math.floor(at / 1000) + 3600 };
      const one = { count: 1, sum: 23, min: 23, max: 23, avg: 23 };
      for (const grouping of [{}, { time_grouping: 'minute', time_grouping_value: 15 }, { time_grouping: 'hour' }]) {
        const answer = await aggregated(org, { ...range, ...grouping });
        assert.deepEqual(answer.summary_result.n, one, JSON.stringify(grouping));
        assert.deepEqual(answer.thing_wise_result[org.thingKey].n, one, JSON.stringify(grouping));
      }
      for (const size of [7, 1]) {
        const answer = await aggregated(org, { ...range, time_grouping: 'minute', time_grouping_value: size });
        assert.deepEqual(answer.summary_result.n, one, `${size}-minute buckets`);
        assert.deepEqual(answer.thing_wise_result[org.thingKey].n, one, `${size}-minute buckets`);
        const buckets = Object.values(answer.time_grouped_result) as Record<string, { n: { count: number } }>[];
        assert.ok(buckets.length > 0);
        assert.ok(
          buckets.every((bucket) => bucket[org.thingKey]?.n.count === 0),
          'buckets that are not whole slots count nothing over the expired part',
        );
      }
    });

    it('when a template of a thing has a metric its old slots lack then the expired slots still answer what they counted', async () => {
      const base = daysAgo(10);
      const org = await organisationWithEvents([
        { timestamp: base, data: { n: 5, m: 1 } },
        { timestamp: daysAgo(0) - HOUR, data: { n: 7, m: 2 } },
      ]);
      // A metric added now was counted in no slot.
      const grown = await ctx.api.request('PUT', `/api/v3/thing_templates/${org.templateKey}`, {
        token: org.token,
        body: {
          thing_template: {
            metrics: [
              { name: 'n', data_type: 'number' },
              { name: 'm', data_type: 'number' },
              { name: 'z', data_type: 'number' },
            ],
          },
        },
      });
      assert.equal(grown.status, 200, grown.text);
      await setRetention(org, { retention_days: 7 });
      const answer = await aggregated(org, {
        metrics: ['n', 'z'],
        from: Math.floor((base - HOUR) / 1000),
        to: Math.floor(Date.now() / 1000),
      });
      assert.equal(answer.summary_result.n.count, 2, 'the expired slot from its rollup, the rest from events');
      assert.equal(answer.summary_result.n.sum, 12);
      assert.equal(answer.summary_result.z.count, 0);
    });

    it('when the sweeper is stopped part way then it ends after its transaction and the next sweep finishes', async () => {
      const events = Array.from({ length: 3000 }, (_, n) => ({ timestamp: daysAgo(20) + n * 1000, data: { n } }));
      const org = await organisationWithEvents(events);
      await setRetention(org, { retention_days: 7 });
      const sweeper = new RetentionSweeper(ctx.api.server.store, { step: 100, budgetMs: 0 });
      const sweeping = sweeper.sweep();
      assert.equal(sweeper.sweep(), sweeping, 'a sweep asked during another joins it');
      await sweeper.stop();
      const stopped = await sweeping;
      assert.ok(stopped.events < 3000, `swept ${stopped.events} before stopping`);
      const left = await storedEventCount(ctx.api, org.thingKey);
      assert.equal(left, 3000 - stopped.events);
      assert.equal((await thingData(org)).total_event_count, 0);
      await new RetentionSweeper(ctx.api.server.store).sweep();
      assert.equal(await storedEventCount(ctx.api, org.thingKey), 0);
    });

    it('when the sweeper deletes the newest event of a thing then the thing and the things list show no expired last event', async () => {
      const org = await organisationWithEvents([
        { timestamp: daysAgo(20), data: { n: 1 } },
        { timestamp: daysAgo(10), data: { n: 2 } },
      ]);
      const [before] = await lastEvents(org);
      assert.equal(before.timestamp, daysAgo(10) / 1000);
      assert.deepEqual(before.data, { n: 2 });
      await setRetention(org, { retention_days: 7 });
      // One event a transaction: the first leaves an expired newest event, the second none.
      const swept = await new RetentionSweeper(ctx.api.server.store, { step: 1, budgetMs: 0 }).sweep();
      assert.equal(swept.events, 2);
      assert.equal(await storedEventCount(ctx.api, org.thingKey), 0);
      assert.deepEqual(await lastEvents(org), [null, null]);
      const row = await ctx.api.server.store.db
        .selectFrom('things')
        .select(['last_event', 'last_event_timestamp'])
        .where('thing_key', '=', org.thingKey)
        .executeTakeFirstOrThrow();
      assert.deepEqual(row, { last_event: null, last_event_timestamp: null }, 'none left, none kept');
    });

    it('when the newest event of a thing expires then the thing, the things list and realtime show no last event before any sweep', async () => {
      const org = await organisationWithEvents([{ timestamp: daysAgo(10), data: { n: 2 } }]);
      const [one, listed] = await lastEvents(org);
      assert.deepEqual([one.data, listed.data], [{ n: 2 }, { n: 2 }]);
      await setRetention(org, { retention_days: 7 });
      assert.deepEqual(await lastEvents(org), [null, null]);
      const client = await SocketClient.open(ctx.api.url, org.token);
      try {
        await client.subscribe('t', 'things', { thing_keys: [org.thingKey] });
        const updated = await ctx.api.request('PUT', `/api/v3/things/${org.thingKey}`, {
          token: org.token,
          body: { thing: { description: 'moved' } },
        });
        assert.equal(updated.status, 200, updated.text);
        const told = await client.next((m) => m.type === 'thing' && m.change === 'updated');
        assert.equal(told.last_event, null);
      } finally {
        client.close();
      }
      assert.equal(await storedEventCount(ctx.api, org.thingKey), 1, 'not swept: cut where it is shown');
    });

    it('when realtime push reads back an event told without its data then an expired one is not read', async () => {
      const org = await organisationWithEvents([{ timestamp: daysAgo(10), data: { n: 7 } }]);
      const read = () =>
        eventDataAt(ctx.api.server.store.db, org.organisationKey, org.thingKey, daysAgo(10), Date.now());
      assert.deepEqual(JSON.parse((await read()) as string), { n: 7 });
      await setRetention(org, { retention_days: 7 });
      assert.equal(await read(), undefined);
    });

    it('when an event arrives already expired then it is acknowledged and nothing of it is kept, shown, pushed or counted', async () => {
      const org = await organisationWithEvents([]);
      await setRetention(org, { retention_days: 7 });
      const client = await SocketClient.open(ctx.api.url, org.token);
      try {
        await client.subscribe('e', 'events', { thing_keys: [org.thingKey] });
        const posted = await ctx.api.request('POST', `/api/v3/things/${org.thingKey}/events`, {
          token: org.token,
          body: {
            events: [
              { timestamp: daysAgo(10), data: { n: 5, m: 1 } },
              { timestamp: daysAgo(1), data: { n: 6, m: 1 } },
            ],
          },
        });
        assert.equal(posted.status, 200, posted.text);
        const pushed = await client.next((m) => m.type === 'event');
        assert.deepEqual(pushed.data, { n: 6, m: 1 }, 'the expired one is not pushed');
      } finally {
        client.close();
      }
      assert.equal(await storedEventCount(ctx.api, org.thingKey), 1);
      const kept = await thingData(org);
      assert.equal(kept.total_event_count, 1);
      const thing = await ctx.api.request('GET', `/api/v3/things/${org.thingKey}`, { token: org.token });
      assert.deepEqual(thing.body.thing.last_event.data, { n: 6, m: 1 });
      // Rollups are kept for ever here: the expired event's slot would be answered from them.
      const hour = { from: utc(daysAgo(10)), to: utc(daysAgo(10) + HOUR - 1000), time_grouping: 'hour' };
      assert.equal((await aggregated(org, hour)).summary_result.n.count, 0);
      const usage = await ctx.api.server.store.db
        .selectFrom('event_days')
        .select((eb) => eb.fn.sum<number>('events').as('events'))
        .where('organisation_key', '=', org.organisationKey)
        .executeTakeFirst();
      assert.equal(Number(usage?.events), 1, 'usage counts the stored event only');
    });

    it('when turns are asked of the event writer while events wait then each runs between two of its transactions', async () => {
      const order: string[] = [];
      const writer = new EventWriter(ctx.api.server.store, {
        batchRows: 1,
        concurrency: 1,
        process: async () => {
          order.push('transaction');
        },
      });
      const nothing = () => ({ events: [], subject: { organisationKey: 'none', things: new Map() } });
      const turn = (name: string) =>
        writer.turn(async () => {
          order.push(name);
          return name;
        });
      const writes = [writer.write(nothing()), writer.write(nothing()), writer.write(nothing())];
      const turns = [turn('turn 1'), turn('turn 2')];
      assert.deepEqual(await Promise.all(turns), ['turn 1', 'turn 2']);
      await Promise.all(writes);
      await writer.drain();
      // The first turn finds the writer idle; the queue's first transaction goes next, then the turn
      // that waited for it, then the rest of the queue.
      assert.deepEqual(order, ['turn 1', 'transaction', 'turn 2', 'transaction', 'transaction']);
    });

    it('when the sweeper deletes on SQLite then the file gives the pages back', async () => {
      if (ctx.store.name !== 'sqlite') return;
      const filler = 'x'.repeat(500);
      const events = Array.from({ length: 6000 }, (_, i) => ({
        timestamp: daysAgo(20) + i * 1000,
        data: { n: i, filler },
      }));
      const org = await organisationWithEvents(events);
      const pages = async () =>
        (await sql<{ page_count: number }>`pragma page_count`.execute(ctx.api.server.store.db)).rows[0]?.page_count ??
        0;
      const full = await pages();
      await setRetention(org, { retention_days: 7 });
      await ctx.api.server.sweeper.sweep();
      assert.equal(await storedEventCount(ctx.api, org.thingKey), 0);
      const freed = await pages();
      assert.ok(full - freed > 500, `${full} pages, then ${freed}`);
      const [free] = (await sql<{ freelist_count: number }>`pragma freelist_count`.execute(ctx.api.server.store.db))
        .rows;
      assert.equal(free?.freelist_count, 0);
    });
  },
  { env: { RETENTION_SWEEP_INTERVAL: '0' } },
);
