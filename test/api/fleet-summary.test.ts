import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { IngestBatch } from '../../src/events/writer.ts';
import { countStoredEvents } from '../../src/usage/service.ts';
import { createKeyPair, Device } from '../support/device.ts';
import { childOrganisation, createThing, unique, userWithAbilities } from '../support/fixtures.ts';
import { describeOnStores } from '../support/suites.ts';

const MINUTE = 60_000;

describeOnStores('fleet summary', (ctx) => {
  it("when an organisation's devices send then GET /api/v3/fleet_summary counts its things online and offline and its events per minute, and no other organisation's", async () => {
    const admin = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, admin);
    const empty = await ctx.api.request('GET', '/api/v3/fleet_summary', { token: child.token });
    assert.equal(empty.status, 200, empty.text);
    const none = empty.body.fleet_summary;
    assert.deepEqual([none.things, none.online, none.offline, none.events_last_hour], [0, 0, 0, 0]);
    assert.equal(none.events_per_minute.length, 60);

    const device = new Device(ctx.api.url, await createKeyPair(ctx.api, child.token));
    const [heard, silent] = [unique('heard'), unique('silent')];
    await device.register({ thing_key: heard });
    await createThing(ctx.api, child.token, { thing_key: silent });
    for (let i = 0; i < 3; i++) assert.equal((await device.event({ thing_key: heard, data: { t: i } })).status, 200);
    const bulk = await device.event({ events: [{ thing_key: heard, data: { t: 9 } }] });
    assert.equal(bulk.status, 200, bulk.text);

    const before = Date.now();
    const summary = (await ctx.api.request('GET', '/api/v3/fleet_summary', { token: child.token })).body.fleet_summary;
    const things = (await ctx.api.request('GET', '/api/v3/things', { token: child.token })).body.things as {
      alive: boolean;
    }[];
    assert.deepEqual(
      [summary.things, summary.online, summary.offline],
      [things.length, things.filter((t) => t.alive).length, things.filter((t) => !t.alive).length],
    );
    assert.deepEqual([summary.things, summary.online, summary.offline], [2, 1, 1]);
    assert.equal(summary.events_last_hour, 4);
    const minutes = summary.events_per_minute as { minute: number; events: number }[];
    assert.equal(
      minutes.reduce((sum, m) => sum + m.events, 0),
      4,
    );
    // Epoch seconds by default, one a minute, the current minute last.
    assert.equal((minutes[59] as { minute: number }).minute, Math.floor(before / MINUTE) * 60);
    assert.equal((minutes[1] as { minute: number }).minute - (minutes[0] as { minute: number }).minute, 60);

    const parent = (await ctx.api.request('GET', '/api/v3/fleet_summary', { token: admin })).body.fleet_summary;
    const parentThings = (await ctx.api.request('GET', '/api/v3/things', { token: admin, query: { per: 1 } })).body;
    assert.equal(parent.things, parentThings.total_count, "the parent's own things only");

    const text = await ctx.api.request('GET', '/api/v3/fleet_summary', {
      token: child.token,
      query: { timestamp_format: 'str', time_zone: 'UTC' },
    });
    assert.match(text.body.fleet_summary.events_per_minute[0].minute, /^\d{4}\/\d\d\/\d\d \d\d:\d\d:00$/);
  });

  it('when the writer stores events in a later minute then minutes older than two hours are forgotten', async () => {
    const admin = await ctx.api.adminToken();
    const child = await childOrganisation(ctx.api, admin);
    const db = ctx.api.server.store.db;
    // A minute this process has not pruned in yet (each instance prunes once a minute).
    const later = Date.now() + 10 * 3_600_000 + Math.floor(Math.random() * 10_000) * MINUTE;
    const old = later - (later % MINUTE) - 2 * 3_600_000 - MINUTE;
    await db
      .insertInto('event_minutes')
      .values({ organisation_key: child.organisationKey, minute_start: old, events: 7 })
      .execute();
    const batch = { events: [{}, {}], subject: { organisationKey: child.organisationKey } } as unknown as IngestBatch;
    await db.transaction().execute((tx) => countStoredEvents(tx, [batch], later));
    const rows = await db
      .selectFrom('event_minutes')
      .select(['minute_start', 'events'])
      .where('organisation_key', '=', child.organisationKey)
      .execute();
    assert.deepEqual(
      rows.map((r) => [Number(r.minute_start), Number(r.events)]),
      [[later - (later % MINUTE), 2]],
    );
  });

  it('when the caller may not read things then the fleet summary is a 403', async () => {
    const admin = await ctx.api.adminToken();
    const user = await userWithAbilities(ctx.api, admin, [21]);
    const refused = await ctx.api.request('GET', '/api/v3/fleet_summary', { token: user.token });
    assert.equal(refused.status, 403);
    assert.equal(typeof refused.body.message, 'string');
    assert.equal((await ctx.api.request('GET', '/api/v3/fleet_summary')).status, 401);
  });
});
