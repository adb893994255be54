import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Kysely } from 'kysely';
import { fleetRollups } from '../../src/events/fleet-rollups.ts';
import { mergeSlotStats, parseSlotStats, type SlotStats } from '../../src/events/slot-stats.ts';
import { up as templateRollupsMigration } from '../../src/store/migrations/019-template-rollups.ts';
import { childOrganisation, createThing, storedEventCount, unique, userWithAbilities } from '../support/fixtures.ts';
import { describeOnStores } from '../support/suites.ts';

const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
// 2024-03-04 00:00:00 UTC: a whole hour, so 15-minute buckets fall on rollup slots.
const BASE = Date.UTC(2024, 2, 4);

/** A time as yyyy-mm-dd hh:mm:ss in UTC. */
const utc = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');

interface Cell {
  count: number;
  sum: number;
  min: number | null;
  max: number | null;
  avg: number | null;
}

/** Cells of several things as one: what the fleet answer should say, computed from the per-thing one. */
function combined(cells: Cell[]): Cell {
  const count = cells.reduce((n, c) => n + c.count, 0);
  const sum = cells.reduce((n, c) => n + c.sum, 0);
  const mins = cells.map((c) => c.min).filter((v): v is number => v !== null);
  const maxes = cells.map((c) => c.max).filter((v): v is number => v !== null);
  return {
    count,
    sum,
    min: mins.length ? Math.min(...mins) : null,
    max: maxes.length ? Math.max(...maxes) : null,
    avg: count > 0 ? sum / count : null,
  };
}

describeOnStores('fleet aggregation', (ctx) => {
  const query = async (path: string, body: object, token?: string) =>
    ctx.api.request('POST', `/api/v3/query/${path}`, { token: token ?? (await ctx.api.adminToken()), body });

  /** A template with metrics n and m, and things of it with these events each (none for an empty list). */
  async function fleet(eventsOfThings: { timestamp: number; data: object }[][], token?: string) {
    const admin = token ?? (await ctx.api.adminToken());
    const template = await ctx.api.request('POST', '/api/v3/thing_templates', {
      token: admin,
      body: {
        thing_template: {
          name: unique('meter'),
          metrics: [
            { name: 'n', data_type: 'number' },
            { name: 'm', data_type: 'number' },
          ],
        },
      },
    });
    assert.equal(template.status, 200, template.text);
    const templateKey = template.body.thing_template.thing_template_key as string;
    const thingKeys: string[] = [];
    for (const events of eventsOfThings) {
      const thing = await createThing(ctx.api, admin, { thing_template_key: templateKey });
      thingKeys.push(thing.thing_key);
      if (events.length === 0) continue;
      const posted = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
        token: admin,
        body: { events },
      });
      assert.equal(posted.status, 200, posted.text);
    }
    return { templateKey, thingKeys };
  }

  /** Events every 5 minutes over `hours`, values differing by thing; some without m. */
  const eventsOf = (thing: number, hours: number, start = BASE) =>
    Array.from({ length: hours * 12 }, (_, i) => ({
      timestamp: start + i * 5 * MINUTE,
      data: i % 7 === 3 ? { n: thing * 10 + (i % 5) } : { n: thing * 10 + (i % 5), m: i - thing },
    }));

  /** Two things with two hours of events ten days ago (`old`, on the hour) and an hour two hours ago. */
  async function oldAndRecentFleet(token: string) {
    const old = Math.floor((Date.now() - 10 * DAY) / HOUR) * HOUR;
    const recent = Math.floor((Date.now() - 2 * HOUR) / HOUR) * HOUR;
    const made = await fleet(
      [
        [...eventsOf(1, 2, old), ...eventsOf(1, 1, recent)],
        [...eventsOf(2, 2, old), ...eventsOf(2, 1, recent)],
      ],
      token,
    );
    return { old, ...made };
  }

  /** Asserts the fleet answer is the per-thing answer of thing_aggregated_data added up across the things. */
  async function assertFleetMatches(thingKeys: string[], fleetBody: object, params: object) {
    const fleetAnswer = await query('fleet_aggregated_data', { ...fleetBody, ...params });
    assert.equal(fleetAnswer.status, 200, fleetAnswer.text);
    const perThing = await query('thing_aggregated_data', { thing_keys: thingKeys, ...params });
    assert.equal(perThing.status, 200, perThing.text);
    const fleetResult = fleetAnswer.body;
    assert.equal(fleetResult.thing_count, thingKeys.length);
    assert.deepEqual(Object.keys(fleetResult.summary_result).sort(), Object.keys(perThing.body.summary_result).sort());
    for (const metric of Object.keys(perThing.body.summary_result)) {
      const expected = combined(thingKeys.map((k) => perThing.body.thing_wise_result[k][metric]));
      assert.deepEqual(fleetResult.summary_result[metric], expected, `summary of ${metric}`);
      assert.deepEqual(fleetResult.summary_result[metric], perThing.body.summary_result[metric]);
    }
    if (perThing.body.time_grouped_result) {
      assert.deepEqual(Object.keys(fleetResult.time_grouped_result), Object.keys(perThing.body.time_grouped_result));
      for (const [bucket, things] of Object.entries<any>(perThing.body.time_grouped_result)) {
        for (const metric of Object.keys(perThing.body.summary_result)) {
          const expected = combined(thingKeys.map((k) => things[k][metric]));
          assert.deepEqual(fleetResult.time_grouped_result[bucket][metric], expected, `${bucket} ${metric}`);
        }
      }
    }
    return fleetResult;
  }

  /**
   * Asserts what a template's rollups hold, read from the store: each slot not listed for repair is the
   * merge of the rollups of the template's things (none where they have none); answers how many slots
   * are listed.
   */
  async function assertTemplateRollups(templateKey: string): Promise<number> {
    const db = ctx.api.server.store.db;
    const listed = new Set(
      (
        await db
          .selectFrom('template_rollup_repairs')
          .select('slot')
          .where('thing_template_key', '=', templateKey)
          .execute()
      ).map((r) => Number(r.slot)),
    );
    const stored = await db
      .selectFrom('template_rollups')
      .select(['slot', 'stats'])
      .where('thing_template_key', '=', templateKey)
      .execute();
    const ofThings = await db
      .selectFrom('event_rollups as r')
      .innerJoin('things as t', 't.thing_id', 'r.thing_id')
      .select(['r.slot', 'r.stats'])
      .where('t.thing_template_key', '=', templateKey)
      .execute();
    const expected = new Map<number, SlotStats>();
    for (const row of ofThings) {
      const known = expected.get(Number(row.slot));
      const stats = parseSlotStats(row.stats);
      expected.set(Number(row.slot), known ? mergeSlotStats(known, stats) : stats);
    }
    const actual = new Map(stored.map((r) => [Number(r.slot), parseSlotStats(r.stats)]));
    for (const slot of new Set([...expected.keys(), ...actual.keys()])) {
      if (listed.has(slot)) continue;
      assert.deepEqual(actual.get(slot), expected.get(slot), `template slot ${new Date(slot).toISOString()}`);
    }
    return listed.size;
  }

  it('when a template has things then the fleet answer adds up their thing_aggregated_data, bucket by bucket', async () => {
    const { templateKey, thingKeys } = await fleet([eventsOf(1, 3), eventsOf(2, 2), eventsOf(3, 3, BASE + HOUR), []]);
    const quarterHours = {
      from: utc(BASE),
      to: utc(BASE + 5 * HOUR - 1000),
      time_zone: 'UTC',
      time_grouping: 'minute',
      time_grouping_value: 15,
    };
    const result = await assertFleetMatches(thingKeys, { thing_template_key: templateKey }, quarterHours);
    assert.equal(result.thing_count, 4, 'a thing without events is counted');
    const buckets = Object.values<any>(result.time_grouped_result);
    assert.equal(buckets.length, 20, 'every bucket is present');
    assert.deepEqual(buckets[19].n, { count: 0, sum: 0, min: null, max: null, avg: null }, 'the empty last bucket');
    assert.ok(buckets[0].n.count > 0);
    // Ranges that cut slots in two, hours in a zone off UTC, no buckets at all, and some functions only.
    await assertFleetMatches(
      thingKeys,
      { thing_template_key: templateKey },
      {
        from: utc(BASE + 7 * MINUTE),
        to: utc(BASE + 3 * HOUR + 22 * MINUTE),
        time_zone: 'UTC',
        time_grouping: 'minute',
        time_grouping_value: 30,
      },
    );
    await assertFleetMatches(
      thingKeys,
      { thing_template_key: templateKey },
      {
        from: utc(BASE - HOUR),
        to: utc(BASE + 5 * HOUR),
        time_zone: 'Asia/Kolkata',
        time_grouping: 'hour',
        metrics: ['m'],
      },
    );
    await assertFleetMatches(thingKeys, { thing_keys: thingKeys }, {});
    const some = await query('fleet_aggregated_data', { thing_template_key: templateKey, functions: ['max'] });
    assert.deepEqual(Object.keys(some.body.summary_result.n), ['max']);
    assert.equal(some.body.time_grouped_result, undefined);
    const str = await query('fleet_aggregated_data', {
      thing_template_key: templateKey,
      ...quarterHours,
      timestamp_format: 'str',
    });
    assert.ok(
      Object.keys(str.body.time_grouped_result).includes('2024/03/04 00:15:00'),
      Object.keys(str.body.time_grouped_result)[1],
    );
  });

  it('when the things’ rollups are read in many short statements then the sums are those of one, and the server is not held in between', async () => {
    const { thingKeys } = await fleet([eventsOf(1, 5), eventsOf(2, 3), [], eventsOf(4, 5, BASE + HOUR)]);
    const db = ctx.api.server.store.db;
    const ids = (await db.selectFrom('things').select('thing_id').where('thing_key', 'in', thingKeys).execute()).map(
      (r) => Number(r.thing_id),
    );
    const from = BASE - HOUR;
    const to = BASE + 7 * HOUR;
    const whole = await fleetRollups(db, ids, ['n', 'm'], from, to);
    assert.ok(whole.length >= 20, `${whole.length} slots`);
    // Other work runs between the statements: on SQLite, whose statements hold the thread, only there.
    let turns = 0;
    let counting = true;
    const count = () => {
      turns++;
      if (counting) setImmediate(count);
    };
    setImmediate(count);
    // Three rollups a statement: a slot of two things, or three slots of one.
    const pieces = await fleetRollups(db, ids, ['n', 'm'], from, to, 3);
    counting = false;
    assert.deepEqual(pieces, whole);
    assert.ok(turns >= 10, `the event loop turned ${turns} times while the rollups were read`);
  });

  it('when sums pass the largest double, within a slot, across writes or across things, then they are null from rollups as from events', async () => {
    const admin = await ctx.api.adminToken();
    const big = 1e308;
    // One thing's slot past it within one write, then brought back under it by a later write: a sum of
    // the events in their order is past it (null) whatever follows.
    const { templateKey, thingKeys } = await fleet([
      [
        { timestamp: BASE + MINUTE, data: { n: big, m: 1 } },
        { timestamp: BASE + 2 * MINUTE, data: { n: big, m: 1 } },
      ],
      // Two things whose slots are each under it, and together past it.
      [{ timestamp: BASE + MINUTE, data: { n: 1.5e308, m: 1 } }],
      [{ timestamp: BASE + MINUTE, data: { n: 1.5e308, m: 1 } }],
    ]);
    const later = await ctx.api.request('POST', `/api/v3/things/${thingKeys[0]}/events`, {
      token: admin,
      body: { events: [{ timestamp: BASE + 3 * MINUTE, data: { n: -big, m: 1 } }] },
    });
    assert.equal(later.status, 200, later.text);
    // The whole slot (read from rollups), and its minutes (read event by event).
    const slot = { from: utc(BASE), to: utc(BASE + 15 * MINUTE - 1000), time_zone: 'UTC', metrics: ['n'] };
    const minutes = { ...slot, time_grouping: 'minute', time_grouping_value: 5 };
    for (const range of [slot, minutes]) {
      const one = await query('thing_aggregated_data', { thing_keys: [thingKeys[0]], ...range });
      assert.equal(one.status, 200, one.text);
      const n = one.body.summary_result.n;
      assert.deepEqual(
        { count: n.count, sum: n.sum, avg: n.avg, min: n.min, max: n.max },
        {
          count: 3,
          sum: null,
          avg: null,
          min: -big,
          max: big,
        },
      );
      const two = await query('fleet_aggregated_data', { thing_keys: thingKeys.slice(1), ...range });
      assert.equal(two.status, 200, two.text);
      assert.equal(two.body.summary_result.n.count, 2);
      assert.equal(two.body.summary_result.n.sum, null, JSON.stringify(range));
      const all = await query('fleet_aggregated_data', {
        thing_template_key: templateKey,
        ...range,
        metrics: ['n', 'm'],
      });
      assert.equal(all.status, 200, all.text);
      assert.equal(all.body.summary_result.n.count, 5);
      assert.equal(all.body.summary_result.n.sum, null, JSON.stringify(range));
      assert.equal(all.body.summary_result.m.sum, 5, 'the other metric is summed');
    }
  });

  it('when buckets are not whole slots, or metrics are ones the rollups do not count, then the answer is still the sum of the things', async () => {
    const withExtra = (thing: number) =>
      eventsOf(thing, 2).map((e, i) => ({ ...e, data: { ...e.data, extra: i % 3 === 0 ? thing : undefined } }));
    const { templateKey, thingKeys } = await fleet([withExtra(1), withExtra(2), eventsOf(3, 2)]);
    const range = { from: utc(BASE), to: utc(BASE + 2 * HOUR - 1000), time_zone: 'UTC' };
    await assertFleetMatches(
      thingKeys,
      { thing_template_key: templateKey },
      { ...range, time_grouping: 'minute', time_grouping_value: 10 },
    );
    const extra = await assertFleetMatches(
      thingKeys,
      { thing_template_key: templateKey },
      {
        ...range,
        time_grouping: 'minute',
        time_grouping_value: 15,
        metrics: ['extra', 'n'],
      },
    );
    assert.equal(extra.summary_result.extra.count, 16, 'extra is not a template metric: counted from the events');
    // More metrics than one statement sums: the rollups are read in several, each row still counted once.
    const many = ['n', 'm', ...Array.from({ length: 150 }, (_, i) => `absent${i}`)];
    await assertFleetMatches(
      thingKeys,
      { thing_template_key: templateKey },
      { ...range, time_grouping: 'hour', metrics: many },
    );
    // A template of 110 metrics: its rollups name them all, so each statement sums rows it counts.
    const token = await ctx.api.adminToken();
    const names = ['n', 'm', ...Array.from({ length: 108 }, (_, i) => `k${i}`)];
    const wide = await ctx.api.request('POST', '/api/v3/thing_templates', {
      token,
      body: { thing_template: { name: unique('wide'), metrics: names.map((name) => ({ name, data_type: 'number' })) } },
    });
    assert.equal(wide.status, 200, wide.text);
    const wideKeys: string[] = [];
    for (const thing of [1, 2]) {
      const created = await createThing(ctx.api, token, {
        thing_template_key: wide.body.thing_template.thing_template_key,
      });
      const events = eventsOf(thing, 2).map((e, i) => ({ ...e, data: { ...e.data, k105: i * thing } }));
      const posted = await ctx.api.request('POST', `/api/v3/things/${created.thing_key}/events`, {
        token,
        body: { events },
      });
      assert.equal(posted.status, 200, posted.text);
      wideKeys.push(created.thing_key);
    }
    const wideAnswer = await assertFleetMatches(
      wideKeys,
      { thing_keys: wideKeys },
      { ...range, time_grouping: 'hour', metrics: names },
    );
    assert.equal(wideAnswer.summary_result.k105.count, 48);
  });

  it('when things are chosen by keys, a group or nothing then each choice answers its own things', async () => {
    const token = await ctx.api.adminToken();
    const { thingKeys } = await fleet([eventsOf(4, 1), eventsOf(5, 1), eventsOf(6, 1)]);
    const group = await ctx.api.request('POST', '/api/v3/groups', {
      token,
      body: { group: { name: unique('line'), group_type: 1, thing_keys: thingKeys.slice(1) } },
    });
    assert.equal(group.status, 200, group.text);
    const range = { from: utc(BASE), to: utc(BASE + HOUR - 1000), time_zone: 'UTC', time_grouping: 'hour' };
    const byGroup = await assertFleetMatches(thingKeys.slice(1), { group_key: group.body.group.group_key }, range);
    assert.equal(byGroup.thing_count, 2);
    const byKeys = await assertFleetMatches([thingKeys[0] as string], { thing_keys: [thingKeys[0]] }, range);
    assert.equal(byKeys.thing_count, 1);
    const everything = await query('fleet_aggregated_data', range);
    assert.equal(everything.status, 200, everything.text);
    const things = await ctx.api.request('GET', '/api/v3/things', { token, query: { per: 1 } });
    assert.equal(everything.body.thing_count, things.body.total_count, 'none chosen: every thing the caller can read');
  });

  it('when the choice is ambiguous, unknown or not the caller’s then it is a 400 or a 404, and data read is needed', async () => {
    const token = await ctx.api.adminToken();
    const { templateKey, thingKeys } = await fleet([eventsOf(7, 1)]);
    const both = await query('fleet_aggregated_data', { thing_keys: thingKeys, thing_template_key: templateKey });
    assert.deepEqual(
      [both.status, both.body.errors[0].code, both.body.errors[0].param],
      [400, 'invalid', 'thing_template_key'],
    );
    for (const [body, param] of [
      [{ group_key: 'nogroup' }, 'group_key'],
      [{ thing_template_key: 'notemplate' }, 'thing_template_key'],
      [{ thing_keys: ['nothing-here'] }, 'thing_keys'],
      [{ thing_key: 'nothing-here' }, 'thing_key'],
    ] as const) {
      const unknown = await query('fleet_aggregated_data', body);
      assert.deepEqual(
        [unknown.status, unknown.body.errors[0].code, unknown.body.errors[0].param],
        [404, 'not_found', param],
        JSON.stringify(body),
      );
    }
    const child = await childOrganisation(ctx.api, token);
    const childTemplate = (await fleet([eventsOf(8, 1)], child.token)).templateKey;
    assert.equal((await query('fleet_aggregated_data', { thing_template_key: childTemplate })).status, 404);
    const oem = await query('fleet_aggregated_data', { thing_template_key: childTemplate, is_oem: true });
    assert.deepEqual([oem.status, oem.body.thing_count], [200, 1]);
    const seenByChild = await query('fleet_aggregated_data', { thing_keys: thingKeys }, child.token);
    assert.equal(seenByChild.status, 404, "a child never reads its parent's things");
    const noData = await userWithAbilities(ctx.api, token, [11, 21]);
    const refused = await query('fleet_aggregated_data', { thing_template_key: templateKey }, noData.token);
    assert.deepEqual([refused.status, refused.body.errors[0].code], [403, 'forbidden']);
    const reader = await userWithAbilities(ctx.api, token, [121]);
    assert.equal((await query('fleet_aggregated_data', { thing_template_key: templateKey }, reader.token)).status, 200);
    // Without a period, buckets cover the last day, as for thing_aggregated_data.
    const grouped = await query('fleet_aggregated_data', { time_grouping: 'hour' });
    assert.equal(grouped.status, 200, grouped.text);
    assert.ok([24, 25].includes(Object.keys(grouped.body.time_grouped_result).length));
    const alias = await ctx.api.request('POST', '/api/v3/datonis_query/fleet_aggregated_data', {
      token,
      body: { thing_template_key: templateKey },
    });
    assert.deepEqual([alias.status, alias.body.thing_count], [200, 1]);
  });

  it('when events expire then the fleet answers their period from the rollups, as thing_aggregated_data does', async () => {
    const org = await childOrganisation(ctx.api, await ctx.api.adminToken());
    const { old, templateKey, thingKeys } = await oldAndRecentFleet(org.token);
    const hourly = {
      from: utc(old),
      to: utc(old + 2 * HOUR - 1000),
      time_zone: 'UTC',
      time_grouping: 'hour',
      metrics: ['n'],
    };
    const fleetOf = async (body: object) => {
      const response = await query('fleet_aggregated_data', { thing_template_key: templateKey, ...body }, org.token);
      assert.equal(response.status, 200, response.text);
      return response.body;
    };
    const before = await fleetOf(hourly);
    assert.equal(before.summary_result.n.count, 48);
    const whole = { from: Math.floor((old - DAY) / 1000), to: Math.floor(Date.now() / 1000), metrics: ['n'] };
    const wholeBefore = await fleetOf(whole);
    const retention = await ctx.api.request('PUT', `/api/v3/organisations/${org.organisationKey}`, {
      token: org.token,
      body: { organisation: { retention_days: 7, rollup_retention_days: 30 } },
    });
    assert.equal(retention.status, 200, retention.text);
    await ctx.api.server.sweeper.sweep();
    assert.equal(await storedEventCount(ctx.api, thingKeys[0] as string), 12, 'the old events are deleted');
    assert.deepEqual(await fleetOf(hourly), before, 'whole slots: answered from their rollups');
    assert.deepEqual(await fleetOf(whole), wholeBefore);
    const perThing = await query('thing_aggregated_data', { thing_keys: thingKeys, ...whole }, org.token);
    assert.deepEqual(wholeBefore.summary_result, perThing.body.summary_result);
  });

  it('when events are deleted by range, a thing changes template or is deleted, then the fleet still adds up its things, before and after the sweeper counts the template rollups again', async () => {
    const token = await ctx.api.adminToken();
    const { templateKey, thingKeys } = await fleet([eventsOf(1, 3), eventsOf(2, 3), eventsOf(3, 2), eventsOf(4, 2)]);
    const range = {
      from: utc(BASE),
      to: utc(BASE + 3 * HOUR - 1000),
      time_zone: 'UTC',
      time_grouping: 'minute',
      time_grouping_value: 15,
    };
    const byTemplate = { thing_template_key: templateKey };
    assert.equal(await assertTemplateRollups(templateKey), 0, 'the writer keeps the template rollups: none to repair');
    await assertFleetMatches(thingKeys, byTemplate, range);
    const stored = await ctx.api.server.store.db
      .selectFrom('template_rollups')
      .select('slot')
      .where('thing_template_key', '=', templateKey)
      .execute();
    assert.equal(stored.length, 12, 'a row per slot with events');

    // A range cutting slots in two, of one thing: the slots it touches are read thing by thing until repaired.
    const deleted = await ctx.api.request('DELETE', `/api/v3/things/${thingKeys[0]}/events`, {
      token,
      query: { from: Math.floor((BASE + 20 * MINUTE) / 1000), to: Math.floor((BASE + 95 * MINUTE) / 1000) },
    });
    assert.equal(deleted.status, 200, deleted.text);
    assert.ok(deleted.body.deleted > 0);
    assert.equal(await assertTemplateRollups(templateKey), 6, 'the six slots the range touches are listed');
    const afterDelete = await assertFleetMatches(thingKeys, byTemplate, range);
    const swept = await ctx.api.server.sweeper.sweep();
    assert.ok(swept.repaired >= 6, JSON.stringify(swept));
    assert.equal(await assertTemplateRollups(templateKey), 0, 'repaired');
    assert.deepEqual(await assertFleetMatches(thingKeys, byTemplate, range), afterDelete);

    // A thing moved to another template leaves this one and joins that one.
    const other = await fleet([eventsOf(5, 1)]);
    const moved = await ctx.api.request('PUT', `/api/v3/things/${thingKeys[1]}`, {
      token,
      body: { thing: { thing_template_key: other.templateKey } },
    });
    assert.equal(moved.status, 200, moved.text);
    const left = thingKeys.filter((k) => k !== thingKeys[1]);
    const joined = [...other.thingKeys, thingKeys[1] as string];
    await assertFleetMatches(left, byTemplate, range);
    await assertFleetMatches(joined, { thing_template_key: other.templateKey }, range);
    assert.ok((await assertTemplateRollups(other.templateKey)) > 0);
    await ctx.api.server.sweeper.sweep();
    assert.equal(await assertTemplateRollups(templateKey), 0);
    assert.equal(await assertTemplateRollups(other.templateKey), 0);
    await assertFleetMatches(left, byTemplate, range);
    await assertFleetMatches(joined, { thing_template_key: other.templateKey }, range);

    // A thing deleted counts no more.
    const gone = await ctx.api.request('DELETE', `/api/v3/things/${thingKeys[2]}`, { token });
    assert.equal(gone.status, 200, gone.text);
    const kept = left.filter((k) => k !== thingKeys[2]);
    await assertFleetMatches(kept, byTemplate, range);
    await ctx.api.server.sweeper.sweep();
    assert.equal(await assertTemplateRollups(templateKey), 0);
    const afterSweep = await assertFleetMatches(kept, byTemplate, range);

    // Events stored after a repair are merged into the repaired rows.
    const posted = await ctx.api.request('POST', `/api/v3/things/${thingKeys[0]}/events`, {
      token,
      body: { events: [{ timestamp: BASE + 30 * MINUTE, data: { n: 1000, m: -1000 } }] },
    });
    assert.equal(posted.status, 200, posted.text);
    assert.equal(await assertTemplateRollups(templateKey), 0);
    const later = await assertFleetMatches(kept, byTemplate, range);
    assert.equal(later.summary_result.n.count, afterSweep.summary_result.n.count + 1);
    assert.equal(later.summary_result.n.max, 1000);
  });

  it('when only some of a template’s things are chosen then the fleet counts those alone, not the template’s rollups', async () => {
    const token = await ctx.api.adminToken();
    const { templateKey, thingKeys } = await fleet([eventsOf(1, 1), eventsOf(2, 1), eventsOf(3, 1)]);
    const range = { from: utc(BASE), to: utc(BASE + HOUR - 1000), time_zone: 'UTC', time_grouping: 'hour' };
    await assertFleetMatches(thingKeys, { thing_template_key: templateKey }, range);
    const some = await assertFleetMatches(thingKeys.slice(0, 2), { thing_keys: thingKeys.slice(0, 2) }, range);
    const all = await assertFleetMatches(thingKeys, { thing_keys: thingKeys }, range);
    assert.ok(some.summary_result.n.count < all.summary_result.n.count);
    const reader = await userWithAbilities(ctx.api, token, [121]);
    const answer = await query('fleet_aggregated_data', { thing_template_key: templateKey, ...range }, reader.token);
    const mine = await query('fleet_aggregated_data', { thing_keys: thingKeys, ...range });
    assert.deepEqual(answer.body, mine.body);
  });

  it('when rollups expire then the template rollups of their time go too and the fleet counts nothing there', async () => {
    const org = await childOrganisation(ctx.api, await ctx.api.adminToken());
    const { old, templateKey, thingKeys } = await oldAndRecentFleet(org.token);
    const whole = { from: Math.floor((old - DAY) / 1000), to: Math.floor(Date.now() / 1000), metrics: ['n'] };
    const fleetOf = async () => {
      const response = await query('fleet_aggregated_data', { thing_template_key: templateKey, ...whole }, org.token);
      assert.equal(response.status, 200, response.text);
      return response.body;
    };
    assert.equal((await fleetOf()).summary_result.n.count, 72);
    const retention = await ctx.api.request('PUT', `/api/v3/organisations/${org.organisationKey}`, {
      token: org.token,
      body: { organisation: { retention_days: 5, rollup_retention_days: 5 } },
    });
    assert.equal(retention.status, 200, retention.text);
    assert.equal((await fleetOf()).summary_result.n.count, 24, 'expired at once, before any sweep');
    await ctx.api.server.sweeper.sweep();
    assert.equal(await assertTemplateRollups(templateKey), 0);
    const rows = await ctx.api.server.store.db
      .selectFrom('template_rollups')
      .select('slot')
      .where('thing_template_key', '=', templateKey)
      .execute();
    assert.equal(rows.length, 4, 'only the recent hour');
    assert.equal((await fleetOf()).summary_result.n.count, 24);
    const perThing = await query('thing_aggregated_data', { thing_keys: thingKeys, ...whole }, org.token);
    assert.deepEqual((await fleetOf()).summary_result, perThing.body.summary_result);
  });

  it('when rollups were stored before template rollups existed then migration 019 lists their slots and the sweeper builds them', async () => {
    const { templateKey, thingKeys } = await fleet([eventsOf(1, 2), eventsOf(2, 1)]);
    const range = { from: utc(BASE), to: utc(BASE + 2 * HOUR - 1000), time_zone: 'UTC', time_grouping: 'hour' };
    const before = await assertFleetMatches(thingKeys, { thing_template_key: templateKey }, range);
    const db = ctx.api.server.store.db;
    await db.schema.dropTable('template_rollup_repairs').execute();
    await db.schema.dropTable('template_rollups').execute();
    await templateRollupsMigration(db as unknown as Kysely<unknown>);
    assert.equal(await assertTemplateRollups(templateKey), 8, 'every slot with rollups is listed');
    assert.deepEqual(await assertFleetMatches(thingKeys, { thing_template_key: templateKey }, range), before);
    await ctx.api.server.sweeper.sweep();
    assert.equal(await assertTemplateRollups(templateKey), 0);
    const built = await db
      .selectFrom('template_rollups')
      .select('slot')
      .where('thing_template_key', '=', templateKey)
      .execute();
    assert.equal(built.length, 8);
    assert.deepEqual(await assertFleetMatches(thingKeys, { thing_template_key: templateKey }, range), before);
  });
});
