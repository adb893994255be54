import assert from 'node:assert/strict';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { overCompactedEvents } from '../support/compaction.ts';
import { childOrganisation, createThing, unique, userWithAbilities } from '../support/fixtures.ts';
import { startServer } from '../support/server.ts';
import { describeOnStores } from '../support/suites.ts';

// 2024-01-01 00:00:00 in Asia/Kolkata (UTC+05:30) is 2023-12-31T18:30:00Z.
const KOLKATA_MIDNIGHT = Date.UTC(2023, 11, 31, 18, 30);
const MINUTE = 60_000;

describeOnStores('data queries', (ctx) => {
  async function thingWithEvents(events: { timestamp: number; data: object }[]) {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, {});
    const posted = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
      token,
      body: { events },
    });
    assert.equal(posted.status, 200, posted.text);
    return thing.thing_key;
  }

  const query = async (path: string, body: object) => {
    const response = await ctx.api.request('POST', `/api/v3/query/${path}`, {
      token: await ctx.api.adminToken(),
      body,
    });
    return response;
  };

  it('when thing_data is asked with a zone-local range then it answers the events in it, newest first', async () => {
    const key = await thingWithEvents(
      [0, 10, 20, 30, 40].map((m) => ({
        timestamp: KOLKATA_MIDNIGHT + m * MINUTE,
        data: { temperature: 20 + m, machine: { status: `s${m}` } },
      })),
    );
    const response = await query('thing_data', {
      thing_key: key,
      from: '2024/01/01 00:10:00',
      to: '2024-01-01 00:30:00',
      time_zone: 'Asia/Kolkata',
    });
    assert.equal(response.status, 200, response.text);
    const entry = response.body[key];
    assert.equal(entry.total_event_count, 3);
    assert.equal(entry.page_number, '1');
    assert.deepEqual(
      entry.event_data.map((e: any) => [e.timestamp, e.data.temperature]),
      [
        [(KOLKATA_MIDNIGHT + 30 * MINUTE) / 1000, 50],
        [(KOLKATA_MIDNIGHT + 20 * MINUTE) / 1000, 40],
        [(KOLKATA_MIDNIGHT + 10 * MINUTE) / 1000, 30],
      ],
    );
    const bySeconds = await query('thing_data', {
      thing_key: key,
      from: (KOLKATA_MIDNIGHT + 10 * MINUTE) / 1000,
      to: String((KOLKATA_MIDNIGHT + 30 * MINUTE) / 1000),
    });
    assert.equal(bySeconds.body[key].total_event_count, 3);
  });

  it('when event data holds backslashes, quotes, tabs, newlines and other scripts then it reads back exactly', async () => {
    const data = {
      note: 'tab\there "quoted" back\\slash\\n not a newline\nnewline\r\n\\N ü 温度 😀',
      path: 'C:\\logs\\press.txt',
      nested: { empty: '', list: ['a\tb', 'c\\d'] },
      temperature: 21.5,
    };
    // Quotes without backslashes or control characters take another way into PostgreSQL (dialect.ts).
    const quoted = { 'say "hi"': 'a "quoted" {value}, with commas', other: 'ü 温度 😀', n: null, temperature: 22 };
    const key = await thingWithEvents([
      { timestamp: KOLKATA_MIDNIGHT, data },
      { timestamp: KOLKATA_MIDNIGHT + MINUTE, data: quoted },
    ]);
    const response = await query('thing_data', { thing_key: key, order: 'asc' });
    assert.equal(response.status, 200, response.text);
    assert.deepEqual(
      response.body[key].event_data.map((e: any) => e.data),
      [data, quoted],
    );
  });

  it('when thing_data pages, orders, filters metrics and formats as array then each option shows', async () => {
    const key = await thingWithEvents(
      [0, 1, 2, 3, 4].map((m) => ({
        timestamp: KOLKATA_MIDNIGHT + m * MINUTE,
        data: { t: m, p: m * 10, machine: { status: `s${m}`, rpm: m } },
      })),
    );
    const page2 = await query('thing_data', { thing_key: key, per: '2', page: 2, order: 'asc' });
    assert.deepEqual(
      page2.body[key].event_data.map((e: any) => e.data.t),
      [2, 3],
    );
    assert.equal(page2.body[key].page_number, '2');
    assert.equal(page2.body[key].total_event_count, 5);
    const picked = await query('thing_data', { thing_key: key, per: 1, metrics: ['p', 'machine.status'] });
    assert.deepEqual(picked.body[key].event_data[0].data, { p: 40, machine: { status: 's4' } });
    const rows = await ctx.api.request('POST', '/api/v3/datonis_query/thing_data', {
      token: await ctx.api.adminToken(),
      body: {
        thing_key: key,
        per: 2,
        data_format: 'array',
        metrics: ['t', 'machine.rpm', 'missing'],
        time_format: 'str',
        time_zone: 'Mumbai',
      },
    });
    assert.equal(rows.status, 200, rows.text);
    assert.deepEqual(rows.body[key].metrics, ['t', 'machine.rpm', 'missing']);
    assert.deepEqual(rows.body[key].event_data, [
      ['2024/01/01 00:04:00', 4, 4, null],
      ['2024/01/01 00:03:00', 3, 3, null],
    ]);
  });

  it('when a thing gets events in several requests then its whole-history total counts each, as recounting them does', async () => {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, {});
    const other = await createThing(ctx.api, token, {});
    const post = (thingKey: string, minutes: number[]) =>
      ctx.api.request('POST', `/api/v3/things/${thingKey}/events`, {
        token,
        body: { events: minutes.map((m) => ({ timestamp: KOLKATA_MIDNIGHT + m * MINUTE, data: { t: m } })) },
      });
    assert.equal((await post(thing.thing_key, [0, 1, 2])).status, 200);
    assert.equal((await post(other.thing_key, [0])).status, 200);
    // A late event (older than the last) counts too, as do several requests at once.
    const posted = await Promise.all([
      post(thing.thing_key, [-5]),
      post(thing.thing_key, [3, 4]),
      post(thing.thing_key, [5]),
    ]);
    for (const response of posted) assert.equal(response.status, 200, response.text);
    const total = async (body: object) =>
      (await query('thing_data', { thing_key: thing.thing_key, ...body })).body[thing.thing_key].total_event_count;
    assert.equal(await total({}), 7);
    assert.equal(await total({ page: 9, per: 5 }), 7, 'a page past the end');
    assert.equal(
      await total({ from: (KOLKATA_MIDNIGHT + MINUTE) / 1000 }),
      5,
      'a bounded range still counts its events',
    );
    assert.equal(
      (await query('thing_data', { thing_key: other.thing_key })).body[other.thing_key].total_event_count,
      1,
    );
    // What upgrading a store does (migration 006): counted again from the stored events, the same totals.
    // (A store being upgraded has no blocks yet: not over compacted events.)
    if (overCompactedEvents()) return;
    const { countStoredEvents } = await import('../../src/store/migrations/006-event-counts.ts');
    const db = ctx.api.server.store.db;
    await db.updateTable('things').set({ event_count: 0 }).execute();
    assert.equal(await total({}), 0);
    await countStoredEvents(db);
    assert.equal(await total({}), 7);
  });

  it('when query_by_created_at is set then from and to apply to the receipt time', async () => {
    const key = await thingWithEvents([{ timestamp: KOLKATA_MIDNIGHT, data: { v: 1 } }]);
    const now = Math.floor(Date.now() / 1000);
    const byEventTime = await query('thing_data', { thing_key: key, from: now - 3600 });
    assert.equal(byEventTime.body[key].total_event_count, 0);
    const byReceipt = await query('thing_data', { thing_key: key, from: now - 3600, query_by_created_at: true });
    assert.equal(byReceipt.body[key].total_event_count, 1);
  });

  it('when events arrive late, early and on time then query_by_created_at finds them by arrival, in arrival order', async () => {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, {});
    const key = thing.thing_key;
    const post = (events: { timestamp: number; data: object }[]) =>
      ctx.api.request('POST', `/api/v3/things/${key}/events`, { token, body: { events } });
    const sentAt = Date.now();
    // Years late and on time, then (a later arrival) an hour ahead of the server's clock and ten minutes late.
    assert.equal(
      (
        await post([
          { timestamp: KOLKATA_MIDNIGHT, data: { n: 1 } },
          { timestamp: sentAt - 1000, data: { n: 2 } },
        ])
      ).status,
      200,
    );
    assert.equal(
      (
        await post([
          { timestamp: sentAt + 60 * MINUTE, data: { n: 3 } },
          { timestamp: sentAt - 10 * MINUTE, data: { n: 4 } },
        ])
      ).status,
      200,
    );
    const seconds = Math.floor(sentAt / 1000);
    const arrived = async (body: object) => {
      const response = await query('thing_data', { thing_key: key, query_by_created_at: true, ...body });
      assert.equal(response.status, 200, response.text);
      const entry = response.body[key];
      return { total: entry.total_event_count, ns: entry.event_data.map((e: any) => e.data.n) };
    };
    const around = { from: seconds - 5, to: seconds + 60 };
    assert.deepEqual(await arrived({ ...around, order: 'asc' }), { total: 4, ns: [1, 2, 3, 4] });
    assert.deepEqual(await arrived({ ...around, per: 3 }), { total: 4, ns: [4, 3, 2] });
    assert.deepEqual(await arrived({ from: seconds - 5 }), { total: 4, ns: [4, 3, 2, 1] });
    assert.deepEqual(await arrived({ to: seconds + 60, page: 2, per: 3 }), { total: 4, ns: [1] });
    // Event times inside a range do not make its events arrive in it.
    assert.deepEqual(await arrived({ to: seconds - 60 }), { total: 0, ns: [] });
    const longAgo = { from: KOLKATA_MIDNIGHT / 1000 - 60, to: KOLKATA_MIDNIGHT / 1000 + 60 };
    assert.deepEqual(await arrived(longAgo), { total: 0, ns: [] });
    const byEventTime = await query('thing_data', { thing_key: key, ...around, order: 'asc' });
    assert.deepEqual(
      byEventTime.body[key].event_data.map((e: any) => e.data.n),
      [2],
    );
    // The reads rest on the thing's arrival lags: without them a range finds nothing; measured again
    // from the stored events, as upgrading a store does (migration 007), the answers are the same.
    // (A store being upgraded has no blocks yet: not over compacted events.)
    if (overCompactedEvents()) return;
    const { measureArrivalLags } = await import('../../src/store/migrations/007-arrival-lag.ts');
    const db = ctx.api.server.store.db;
    await db.updateTable('things').set({ arrival_lag_min: null, arrival_lag_max: null }).execute();
    assert.deepEqual(await arrived(around), { total: 0, ns: [] });
    await measureArrivalLags(db);
    assert.deepEqual(await arrived({ ...around, order: 'asc' }), { total: 4, ns: [1, 2, 3, 4] });
  });

  it('when thing_data has no thing_key then every readable thing is answered, and is_oem adds the children', async () => {
    const token = await ctx.api.adminToken();
    const mine = await thingWithEvents([{ timestamp: KOLKATA_MIDNIGHT, data: { v: 1 } }]);
    const child = await childOrganisation(ctx.api, token);
    const childThing = await createThing(ctx.api, child.token, {});
    const all = await query('thing_data', {});
    assert.ok(mine in all.body);
    assert.ok(!(childThing.thing_key in all.body));
    const withChildren = await query('thing_data', { is_oem: true });
    assert.ok(childThing.thing_key in withChildren.body);
    const foreign = await ctx.api.request('POST', '/api/v3/query/thing_data', {
      token: child.token,
      body: { thing_key: mine },
    });
    assert.equal(foreign.status, 404);
  });

  it('when thing_data is asked wrongly then it is a 400, 403 or 404', async () => {
    const token = await ctx.api.adminToken();
    assert.equal((await query('thing_data', { thing_key: 'nosuchthing' })).status, 404);
    assert.equal((await query('thing_data', { per: 10_001 })).status, 400);
    assert.equal((await query('thing_data', { from: 'yesterday' })).body.errors[0].param, 'from');
    assert.equal((await query('thing_data', { data_format: 'csv' })).status, 400);
    const backwards = await query('thing_data', { from: 1_700_000_100, to: 1_700_000_000 });
    assert.equal(backwards.status, 400, backwards.text);
    assert.equal(backwards.body.errors[0].param, 'from');
    const user = await userWithAbilities(ctx.api, token, [11]);
    assert.equal(
      (await ctx.api.request('POST', '/api/v3/query/thing_data', { token: user.token, body: {} })).status,
      403,
    );
  });

  it('when data is aggregated in 15-minute buckets in Asia/Kolkata then buckets are aligned, gap-filled and correct', async () => {
    // Events at 00:00, 00:05 and 00:40 local time; the 00:15 bucket stays empty.
    const key = await thingWithEvents([
      { timestamp: KOLKATA_MIDNIGHT, data: { temperature: 10, label: 'x' } },
      { timestamp: KOLKATA_MIDNIGHT + 5 * MINUTE, data: { temperature: 20 } },
      { timestamp: KOLKATA_MIDNIGHT + 40 * MINUTE, data: { temperature: 60 } },
    ]);
    const response = await query('thing_aggregated_data', {
      thing_keys: [key],
      time_grouping: 'minute',
      time_grouping_value: 15,
      time_zone: 'Asia/Kolkata',
      timestamp_format: 'str',
      from: '2024/01/01 00:00:00',
      to: '2024/01/01 00:59:59',
      metrics: ['temperature'],
    });
    assert.equal(response.status, 200, response.text);
    const { summary_result: summary, thing_wise_result: thingWise, time_grouped_result: grouped } = response.body;
    assert.deepEqual(summary.temperature, { count: 3, sum: 90, min: 10, max: 60, avg: 30 });
    assert.deepEqual(thingWise[key].temperature, { count: 3, sum: 90, min: 10, max: 60, avg: 30 });
    assert.deepEqual(Object.keys(grouped), [
      '2024/01/01 00:00:00',
      '2024/01/01 00:15:00',
      '2024/01/01 00:30:00',
      '2024/01/01 00:45:00',
    ]);
    assert.deepEqual(grouped['2024/01/01 00:00:00'][key].temperature, { count: 2, sum: 30, min: 10, max: 20, avg: 15 });
    assert.deepEqual(grouped['2024/01/01 00:15:00'][key].temperature, {
      count: 0,
      sum: 0,
      min: null,
      max: null,
      avg: null,
    });
    assert.deepEqual(grouped['2024/01/01 00:30:00'][key].temperature, { count: 1, sum: 60, min: 60, max: 60, avg: 60 });
  });

  it('when the clock falls back then the str key of the repeated hour counts both of its buckets, and int keys part them', async () => {
    // 2024-11-03 in America/New_York: 01:00 EDT is 05:00Z, 01:00 EST is 06:00Z.
    const key = await thingWithEvents([
      { timestamp: Date.UTC(2024, 10, 3, 5, 10), data: { t: 1 } },
      { timestamp: Date.UTC(2024, 10, 3, 6, 20), data: { t: 3 } },
      { timestamp: Date.UTC(2024, 10, 3, 7, 0), data: { t: 5 } },
    ]);
    const asked = {
      thing_keys: [key],
      time_grouping: 'hour',
      time_zone: 'America/New_York',
      from: '2024/11/03 00:00:00',
      to: '2024/11/03 02:59:59',
      metrics: ['t'],
      idle_time_required: 1,
    };
    const str = await query('thing_aggregated_data', { ...asked, timestamp_format: 'str' });
    assert.equal(str.status, 200, str.text);
    const grouped = str.body.time_grouped_result;
    assert.deepEqual(Object.keys(grouped), ['2024/11/03 00:00:00', '2024/11/03 01:00:00', '2024/11/03 02:00:00']);
    assert.deepEqual(grouped['2024/11/03 01:00:00'][key].t, {
      count: 2,
      sum: 4,
      min: 1,
      max: 3,
      avg: 2,
      idle_time_mins: 120,
      total_time_mins: 120,
    });
    const counted = Object.values(grouped).reduce((n: number, bucket: any) => n + bucket[key].t.count, 0);
    assert.equal(counted, str.body.summary_result.t.count);
    const int = await query('thing_aggregated_data', { ...asked, timestamp_format: 'int' });
    assert.equal(int.status, 200, int.text);
    const byEpoch = int.body.time_grouped_result;
    assert.equal(Object.keys(byEpoch).length, 4);
    assert.equal(byEpoch[String(Date.UTC(2024, 10, 3, 5) / 1000)][key].t.sum, 1);
    assert.equal(byEpoch[String(Date.UTC(2024, 10, 3, 6) / 1000)][key].t.sum, 3);
  });

  it('when the aggregated answer is asked pretty, with a metric named twice and one that needs escaping, then it is one JSON answer', async () => {
    const key = await thingWithEvents([{ timestamp: KOLKATA_MIDNIGHT, data: { temperature: 10, 'we"ird\\': 2 } }]);
    const asked = {
      thing_keys: [key],
      time_grouping: 'minute',
      time_grouping_value: 30,
      time_zone: 'Asia/Kolkata',
      from: '2024/01/01 00:00:00',
      to: '2024/01/01 00:59:59',
      metrics: ['temperature', 'temperature', 'we"ird\\'],
      functions: ['max', 'count'],
    };
    const plain = await query('thing_aggregated_data', asked);
    const pretty = await query('thing_aggregated_data', { ...asked, pretty: true });
    assert.equal(plain.status, 200, plain.text);
    assert.equal(pretty.status, 200, pretty.text);
    assert.match(pretty.text, /^\{\n {2}"summary_result": \{\n/);
    assert.deepEqual(JSON.parse(pretty.text), plain.body);
    assert.deepEqual(plain.body.summary_result, {
      temperature: { count: 1, max: 10 },
      'we"ird\\': { count: 1, max: 2 },
    });
    const buckets = Object.values(plain.body.time_grouped_result) as Record<string, unknown>[];
    assert.equal(buckets.length, 2);
    assert.deepEqual(buckets[1]?.[key], {
      temperature: { count: 0, max: null },
      'we"ird\\': { count: 0, max: null },
    });
  });

  it('when aggregated buckets fall on 15-minute slots then the rollup answer equals counting every event', async () => {
    const token = await ctx.api.adminToken();
    const template = await ctx.api.request('POST', '/api/v3/thing_templates', {
      token,
      body: {
        thing_template: {
          name: unique('rollup'),
          metrics: [
            { name: 'temperature', data_type: 'number' },
            { name: 'machine.load', data_type: 'number' },
            { name: 'state', data_type: 'string' },
          ],
        },
      },
    });
    assert.equal(template.status, 200, template.text);
    const templateKey = template.body.thing_template.thing_template_key;
    const thing = await createThing(ctx.api, token, { thing_template_key: templateKey });
    // 300 events over 5 hours at uneven times, with fractions, nulls, text and a missing metric now and then; sent
    // in three requests whose times interleave, so slots are counted in several transactions and merged.
    const events = Array.from({ length: 300 }, (_, i) => ({
      timestamp: KOLKATA_MIDNIGHT + ((i * 7919) % 300) * MINUTE + (i % 13) * 1000,
      data: {
        temperature: i % 17 === 0 ? null : Math.round(Math.sin(i) * 1000) / 37,
        ...(i % 5 === 0 ? {} : { machine: { load: (i % 11) / 10 } }),
        state: `s${i % 3}`,
        extra: i,
      },
    }));
    for (let i = 0; i < 3; i++) {
      const posted = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
        token,
        body: { events: events.filter((_, j) => j % 3 === i) },
      });
      assert.equal(posted.status, 200, posted.text);
    }
    // Unaligned ends: the partial slots at both ends are read event by event, the rest from rollups.
    const from = KOLKATA_MIDNIGHT + 7 * MINUTE + 500;
    const to = KOLKATA_MIDNIGHT + 4 * 60 * MINUTE + 52 * MINUTE;
    const asked = {
      thing_keys: [thing.thing_key],
      time_grouping: 'minute',
      time_grouping_value: 15,
      from: from / 1000,
      to: to / 1000,
      metrics: ['temperature', 'machine.load'],
    };
    const fromRollups = await query('thing_aggregated_data', asked);
    assert.equal(fromRollups.status, 200, fromRollups.text);
    // The expected figures, counted here from the events sent.
    const expected = (metric: string, start: number, end: number) => {
      const values = events
        .filter((e) => e.timestamp >= Math.max(start, from) && e.timestamp < Math.min(end, to + 1))
        .map((e) => metric.split('.').reduce<any>((v, k) => v?.[k], e.data))
        .filter((v): v is number => typeof v === 'number');
      const sum = values.reduce((a, b) => a + b, 0);
      return {
        count: values.length,
        sum,
        min: values.length ? Math.min(...values) : null,
        max: values.length ? Math.max(...values) : null,
        avg: values.length ? sum / values.length : null,
      };
    };
    const close = (actual: any, wanted: any, where: string) => {
      assert.equal(actual.count, wanted.count, where);
      assert.equal(actual.min, wanted.min, where);
      assert.equal(actual.max, wanted.max, where);
      assert.ok(Math.abs(actual.sum - wanted.sum) < 1e-9, `${where}: sum ${actual.sum} vs ${wanted.sum}`);
      if (wanted.avg !== null) assert.ok(Math.abs(actual.avg - wanted.avg) < 1e-9, where);
      else assert.equal(actual.avg, null, where);
    };
    const check = (answer: any, label: string) => {
      const buckets = Object.entries(answer.time_grouped_result);
      assert.equal(buckets.length, 20);
      for (const metric of Object.keys(answer.summary_result)) {
        close(answer.summary_result[metric], expected(metric, from, to + 1), `${label}: summary ${metric}`);
        buckets.forEach(([name, bucket]: [string, any], i) => {
          const start = KOLKATA_MIDNIGHT + i * 15 * MINUTE;
          const wanted = expected(metric, start, start + 15 * MINUTE);
          close(bucket[thing.thing_key][metric], wanted, `${label}: ${name} ${metric}`);
        });
      }
    };
    check(fromRollups.body, 'rollups');
    assert.deepEqual(Object.keys(fromRollups.body.summary_result), asked.metrics);
    assert.ok(fromRollups.body.summary_result.temperature.count > 200);

    // A metric the template gains later was not counted in the slots before: those read the events.
    const grown = await ctx.api.request('PUT', `/api/v3/thing_templates/${templateKey}`, {
      token,
      body: {
        thing_template: {
          metrics: [
            { name: 'temperature', data_type: 'number' },
            { name: 'machine.load', data_type: 'number' },
            { name: 'state', data_type: 'string' },
            { name: 'extra', data_type: 'number' },
          ],
        },
      },
    });
    assert.equal(grown.status, 200, grown.text);
    const late = { timestamp: KOLKATA_MIDNIGHT + 60 * MINUTE, data: { temperature: 1, extra: 1000 } };
    const posted = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
      token,
      body: { events: [late] },
    });
    assert.equal(posted.status, 200, posted.text);
    events.push(late as (typeof events)[number]);
    asked.metrics.push('extra');
    check((await query('thing_aggregated_data', asked)).body, 'after the template grew');

    // Rollups counted again from the stored events (as the migration does for older stores) give the same answer.
    const { rebuildRollups } = await import('../../src/events/rollups.ts');
    await ctx.api.server.store.db.deleteFrom('event_rollups').execute();
    await rebuildRollups(ctx.api.server.store.db);
    check((await query('thing_aggregated_data', asked)).body, 'rebuilt');
  });

  it('when idle time is asked then gaps longer than the idle timeout are counted whole', async () => {
    // Default template: idle_timeout 300 s. Events at 00:00, 00:02, 00:20 of a 00:00-00:30 window:
    // gaps 2 (no), 18 (idle), 10 to the end (idle) -> 28 idle minutes of 30.
    const key = await thingWithEvents(
      [0, 2, 20].map((m) => ({ timestamp: KOLKATA_MIDNIGHT + m * MINUTE, data: { rpm: m } })),
    );
    const response = await query('thing_aggregated_data', {
      thing_keys: [key],
      idle_time_required: 1,
      from: KOLKATA_MIDNIGHT / 1000,
      to: (KOLKATA_MIDNIGHT + 30 * MINUTE) / 1000,
      metrics: ['rpm'],
      functions: ['max'],
    });
    assert.equal(response.status, 200, response.text);
    assert.deepEqual(response.body.thing_wise_result[key].rpm, { max: 20, idle_time_mins: 28, total_time_mins: 30 });
    assert.equal(response.body.time_grouped_result, undefined);
    // true and false as the query string and JSON text carry them, as well as 1, 0 and JSON booleans.
    const range = `from=${KOLKATA_MIDNIGHT / 1000}&to=${(KOLKATA_MIDNIGHT + 30 * MINUTE) / 1000}`;
    for (const [asked, idle] of [
      ['true', true],
      ['false', false],
    ] as const) {
      const inQuery = await ctx.api.request(
        'POST',
        `/api/v3/query/thing_aggregated_data?idle_time_required=${asked}&${range}&thing_keys=${key}&metrics=rpm&functions=max`,
        { token: await ctx.api.adminToken() },
      );
      const inBody = await query('thing_aggregated_data', {
        thing_keys: [key],
        idle_time_required: asked,
        from: KOLKATA_MIDNIGHT / 1000,
        to: (KOLKATA_MIDNIGHT + 30 * MINUTE) / 1000,
        metrics: ['rpm'],
        functions: ['max'],
      });
      for (const answer of [inQuery, inBody]) {
        assert.equal(answer.status, 200, answer.text);
        assert.deepEqual(
          answer.body.thing_wise_result[key].rpm,
          idle ? { max: 20, idle_time_mins: 28, total_time_mins: 30 } : { max: 20 },
        );
      }
    }
    const wrong = await query('thing_aggregated_data', { thing_keys: [key], idle_time_required: 'yes' });
    assert.equal(wrong.status, 400, wrong.text);
    assert.equal(wrong.body.errors[0].param, 'idle_time_required');
    assert.equal(wrong.body.errors[0].message, 'must be true, false or a whole number (1 or 0)');
  });

  it('when a thing has more events than one read holds then aggregation still counts every one in order', async () => {
    // 25,000 one-second events: more than one chunk of the aggregation's reads, several with equal times.
    const total = 25_000;
    const events = Array.from({ length: total }, (_, i) => ({
      timestamp: KOLKATA_MIDNIGHT + Math.floor(i / 2) * 1000,
      data: { level: i % 10 },
    }));
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, {});
    for (let i = 0; i < total; i += 10_000) {
      const posted = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
        token,
        body: { events: events.slice(i, i + 10_000) },
      });
      assert.equal(posted.status, 200, posted.text);
    }
    const response = await query('thing_aggregated_data', {
      thing_keys: [thing.thing_key],
      from: '2024/01/01 00:00:00',
      to: '2024/01/01 06:00:00',
      time_grouping: 'hour',
      time_grouping_value: 1,
      time_zone: 'Asia/Kolkata',
      metrics: ['level'],
    });
    assert.equal(response.status, 200, response.text);
    const summary = response.body.summary_result.level;
    assert.equal(summary.count, total);
    assert.equal(summary.sum, 4.5 * total);
    assert.equal(summary.min, 0);
    assert.equal(summary.max, 9);
    const hours = Object.values(response.body.time_grouped_result).map(
      (bucket: any) => bucket[thing.thing_key].level.count as number,
    );
    // 12,500 distinct seconds: 3,600 seconds (7,200 events) per hour, the rest in the fourth hour.
    assert.deepEqual(hours.slice(0, 4), [7200, 7200, 7200, 3400]);
  });

  it('when two servers on one PostgreSQL store write events of one slot at once then its rollup counts every one', {
    skip: ctx.store.name === 'postgres' ? false : 'one server per SQLite store',
  }, async () => {
    const other = await startServer(ctx.store, { storeSettings: ctx.api.storeSettings });
    try {
      const token = await ctx.api.adminToken();
      const template = await ctx.api.request('POST', '/api/v3/thing_templates', {
        token,
        body: { thing_template: { name: unique('slot'), metrics: [{ name: 'v', data_type: 'number' }] } },
      });
      assert.equal(template.status, 200, template.text);
      const thing = await createThing(ctx.api, token, {
        thing_template_key: template.body.thing_template.thing_template_key,
      });
      // 40 requests of 10 events, half through each server, all at once, all in one 15-minute slot.
      const otherToken = await other.signIn();
      const sends = Array.from({ length: 40 }, (_, r) => {
        const [server, asWho] = r % 2 === 0 ? [ctx.api, token] : [other, otherToken];
        const events = Array.from({ length: 10 }, (_, i) => ({
          timestamp: KOLKATA_MIDNIGHT + (r * 10 + i) * 1000,
          data: { v: r * 10 + i },
        }));
        return server.request('POST', `/api/v3/things/${thing.thing_key}/events`, { token: asWho, body: { events } });
      });
      for (const answer of await Promise.all(sends)) assert.equal(answer.status, 200, answer.text);
      const slots = await ctx.api.server.store.db
        .selectFrom('event_rollups')
        .innerJoin('things', 'things.thing_id', 'event_rollups.thing_id')
        .select('event_rollups.stats')
        .where('things.thing_key', '=', thing.thing_key)
        .execute();
      assert.equal(slots.length, 1);
      assert.deepEqual(JSON.parse(slots[0]?.stats as string).v, [400, (399 * 400) / 2, 0, 399]);
      const answer = await query('thing_aggregated_data', { thing_keys: [thing.thing_key], metrics: ['v'] });
      assert.deepEqual(answer.body.summary_result.v, { count: 400, sum: 79_800, min: 0, max: 399, avg: 199.5 });
    } finally {
      await other.close();
    }
  });

  it('when two transactions add to one stored slot at once then the second waits for the first and adds to it', {
    skip: ctx.store.name === 'postgres' ? false : 'SQLite has one writer at a time',
  }, async () => {
    const { addToRollups } = await import('../../src/events/rollups.ts');
    const { store } = ctx.api.server;
    const slot = (count: number, sum: number) => [
      {
        thingId: 987_654_321,
        slot: KOLKATA_MIDNIGHT,
        stats: { v: [count, sum, 1, 9] as [number, number, number, number] },
      },
    ];
    await addToRollups(store.db, slot(1, 1));
    let releaseFirst: () => void = () => {};
    const firstHolds = new Promise<void>((resolve) => {
      releaseFirst = resolve;
    });
    let firstWrote: () => void = () => {};
    const written = new Promise<void>((resolve) => {
      firstWrote = resolve;
    });
    const first = store.transaction(async (tx) => {
      await addToRollups(tx, slot(10, 50));
      firstWrote();
      await firstHolds;
    });
    await written;
    // The second starts while the first holds its merged row uncommitted.
    const second = store.transaction((tx) => addToRollups(tx, slot(100, 500)));
    await sleep(200);
    releaseFirst();
    await Promise.all([first, second]);
    const row = await store.db
      .selectFrom('event_rollups')
      .select('stats')
      .where('thing_id', '=', 987_654_321)
      .executeTakeFirstOrThrow();
    assert.deepEqual(JSON.parse(row.stats).v, [111, 551, 1, 9]);
  });

  it('when aggregation is asked wrongly then it is a 400 or 404', async () => {
    assert.equal((await query('thing_aggregated_data', { time_grouping: 'week', from: 1, to: 2 })).status, 400);
    const tooMany = await query('thing_aggregated_data', { time_grouping: 'minute', from: 0, to: 86400 * 30 });
    assert.equal(tooMany.status, 400);
    assert.equal((await query('thing_aggregated_data', { thing_keys: ['nosuchthing'] })).status, 404);
    assert.equal((await query('thing_aggregated_data', { functions: ['median'] })).status, 400);
  });

  it('when an aggregation would answer more cells than it may then it is a 400 naming the limit, asked before anything is read', async () => {
    const key = await thingWithEvents([{ timestamp: Date.now() - 10 * MINUTE, data: { rpm: 7 } }]);
    const metrics = Array.from({ length: 500 }, (_, i) => `m${i}`);
    const bounds = { from: 0, to: 9999 * 60 - 1, time_grouping: 'minute', time_zone: 'UTC' };
    for (const path of ['thing_aggregated_data', 'fleet_aggregated_data']) {
      const refused = await query(path, { thing_keys: [key], metrics, ...bounds });
      assert.equal(refused.status, 400, refused.text);
      assert.equal(refused.body.errors[0].param, 'time_grouping');
      assert.match(refused.body.errors[0].message, /at most 250000 are/);
      const fewer = await query(path, { thing_keys: [key], metrics: metrics.slice(0, 20), ...bounds });
      assert.equal(fewer.status, 200, fewer.text);
    }
  });

  it('when grouping or idle time is asked without from or to then the period ends now and spans its default', async () => {
    const now = Date.now();
    const key = await thingWithEvents([{ timestamp: now - 10 * MINUTE, data: { rpm: 7 } }]);
    const hourly = await query('thing_aggregated_data', { thing_keys: [key], time_grouping: 'hour', metrics: ['rpm'] });
    assert.equal(hourly.status, 200, hourly.text);
    // The last 24 hours by the hour: 24 or 25 buckets, the event in the last or the one before.
    const buckets = Object.keys(hourly.body.time_grouped_result);
    assert.ok(buckets.length === 24 || buckets.length === 25, `${buckets.length} buckets`);
    assert.equal(hourly.body.thing_wise_result[key].rpm.count, 1);
    const idle = await query('thing_aggregated_data', { thing_keys: [key], idle_time_required: 1, metrics: ['rpm'] });
    assert.equal(idle.status, 200, idle.text);
    assert.equal(idle.body.thing_wise_result[key].rpm.total_time_mins, 24 * 60);
    // From alone: until now; to alone: its span before it.
    const fromOnly = await query('thing_aggregated_data', {
      thing_keys: [key],
      idle_time_required: 1,
      metrics: ['rpm'],
      from: Math.floor((now - 2 * 3_600_000) / 1000),
    });
    assert.equal(fromOnly.status, 200, fromOnly.text);
    assert.ok(Math.abs(fromOnly.body.thing_wise_result[key].rpm.total_time_mins - 120) <= 1);
    const toOnly = await query('thing_aggregated_data', {
      thing_keys: [key],
      time_grouping: 'minute',
      metrics: ['rpm'],
      to: Math.floor((now - 5 * MINUTE) / 1000),
    });
    assert.equal(toOnly.status, 200, toOnly.text);
    assert.equal(toOnly.body.thing_wise_result[key].rpm.count, 1);
    assert.ok(Object.keys(toOnly.body.time_grouped_result).length >= 60);
  });
});
