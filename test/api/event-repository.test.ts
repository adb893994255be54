/**
 * What the event writer writes, through the capabilities that own each table, against a real store on
 * each engine: event rows (events/repository.ts), the things' last-event columns and heartbeats
 * (things/service.ts), and the Default template's metric growth (templates/service.ts), which the
 * change feed is told of once it commits.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import type { EntityChange } from '../../src/core/change-feed.ts';
import { insertEvents, pageOfEvents } from '../../src/events/repository.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { growTemplateMetrics } from '../../src/templates/service.ts';
import { recordHeartbeat, recordLastEvents, type ThingTouch } from '../../src/things/service.ts';
import { fetchedByIndexes } from '../support/postgres-statistics.ts';
import { STORES } from '../support/stores.ts';

const NOW = Date.UTC(2025, 5, 1, 12);

for (const storeCase of STORES) {
  describe(`event writer's tables [${storeCase.name}]`, { skip: storeCase.skip }, () => {
    const settings = storeCase.fresh();
    let store: Store;
    const thingIds: number[] = [];

    before(async () => {
      store = await openStore({ databaseUrl: settings.databaseUrl, schema: settings.databaseSchema });
      await store.db
        .insertInto('thing_templates')
        .values({
          thing_template_key: 'tpl',
          organisation_key: 'org',
          name: 'Default',
          description: '',
          metrics: JSON.stringify([{ name: 'temp', data_type: 'number', unit: '' }]),
          heartbeat_interval: 60,
          idle_timeout: 300,
          is_default: 1,
          created_at: NOW,
          updated_at: NOW,
        })
        .execute();
      for (const key of ['t1', 't2']) {
        await store.db
          .insertInto('things')
          .values({
            thing_key: key,
            organisation_key: 'org',
            thing_template_key: 'tpl',
            name: key,
            description: '',
            tags: '[]',
            coordinates: null,
            bi_directional: 0,
            user_defined_properties: '{}',
            last_event_at: null,
            last_event: null,
            last_event_timestamp: null,
            last_beat_at: null,
            created_at: NOW,
            updated_at: NOW,
          })
          .execute();
      }
      const rows = await store.db.selectFrom('things').select('thing_id').orderBy('thing_key').execute();
      thingIds.push(...rows.map((r) => Number(r.thing_id)));
    });
    after(async () => {
      await store?.close();
      await storeCase.dispose(settings);
    });

    it('when events are inserted then each is a row with its thing, time, receipt time, data and waypoint', async () => {
      const [t1, t2] = thingIds as [number, number];
      await store.transaction((tx) =>
        insertEvents(
          tx,
          [
            { thingId: t1, timestamp: NOW - 2000, data: { temp: 20, nested: { a: 'x' } }, waypoint: null },
            { thingId: t2, timestamp: NOW - 1000, data: { temp: 21 }, waypoint: [52.5, 13.4] },
          ],
          NOW,
        ),
      );
      const rows = await store.db
        .selectFrom('events')
        .select(['thing_id', 'timestamp', 'created_at', 'data', 'waypoint'])
        .orderBy('timestamp')
        .execute();
      assert.deepEqual(
        rows.map((r) => [
          Number(r.thing_id),
          Number(r.timestamp),
          Number(r.created_at),
          JSON.parse(r.data),
          r.waypoint === null ? null : JSON.parse(r.waypoint),
        ]),
        [
          [t1, NOW - 2000, NOW, { temp: 20, nested: { a: 'x' } }, null],
          [t2, NOW - 1000, NOW, { temp: 21 }, [52.5, 13.4]],
        ],
      );
    });

    it('when a busy thing is newer than the statistics then its newest page fetches only that page, with and without a retention', async () => {
      const [t1, t2] = thingIds as [number, number];
      // Statistics of a table where the thing has no event, as when it is new or far busier than the rest.
      await store.transaction((tx) =>
        insertEvents(tx, [{ thingId: t1, timestamp: NOW, data: { temp: 1 }, waypoint: null }], NOW),
      );
      if (store.engine === 'postgres') await sql`analyze events`.execute(store.db);
      const count = 20_000;
      const events = Array.from({ length: count }, (_, i) => ({
        thingId: t2,
        timestamp: NOW + i * 1000,
        data: { temp: i },
        waypoint: null,
      }));
      for (let i = 0; i < count; i += 5000) {
        await store.transaction((tx) => insertEvents(tx, events.slice(i, i + 5000), NOW));
      }
      const fetched = await store.transaction(async (tx) => {
        const before = store.engine === 'postgres' ? await fetchedByIndexes(tx) : 0;
        for (const notBefore of [undefined, NOW - 86_400_000]) {
          const range = { thingId: t2, from: undefined, to: undefined, byCreatedAt: false, notBefore };
          const page = await pageOfEvents(tx, range, 'desc', 100, 0);
          assert.deepEqual(
            page.events.slice(0, 2).map((e) => Number(e.timestamp)),
            [NOW + (count - 1) * 1000, NOW + (count - 2) * 1000],
          );
          assert.equal(page.events.length, 100);
        }
        return store.engine === 'postgres' ? (await fetchedByIndexes(tx)) - before : 0;
      });
      // Sorting the thing's events by time and id to answer a page fetches all 20,000 of them.
      assert.ok(fetched < 1000, `${fetched} rows fetched for two pages of 100`);
    });

    it('when a transaction records last events then only a newer event replaces the last one, counts add up and lag bounds widen', async () => {
      const [t1] = thingIds as [number];
      const touch = (timestamp: number, count: number, lag: number, waypoint?: [number, number]): ThingTouch => ({
        newest: { timestamp, data: { temp: timestamp } },
        count,
        waypoint,
        lagMin: lag,
        lagMax: lag,
      });
      await store.transaction((tx) => recordLastEvents(tx, new Map([[t1, touch(NOW - 100, 3, 100, [1, 2])]]), NOW));
      // A late event (older by its own time): counted and heard from, but the last event stays.
      await store.transaction((tx) => recordLastEvents(tx, new Map([[t1, touch(NOW - 5000, 2, 5000)]]), NOW + 10));
      const row = await store.db.selectFrom('things').selectAll().where('thing_id', '=', t1).executeTakeFirstOrThrow();
      assert.equal(Number(row.event_count), 5);
      assert.equal(Number(row.last_event_at), NOW + 10);
      assert.equal(Number(row.last_event_timestamp), NOW - 100);
      assert.deepEqual(JSON.parse(row.last_event as string), { timestamp: NOW - 100, data: { temp: NOW - 100 } });
      assert.deepEqual(JSON.parse(row.coordinates as string), [1, 2], 'no waypoint keeps the coordinates');
      assert.equal(Number(row.arrival_lag_min), 100);
      assert.equal(Number(row.arrival_lag_max), 5000);
    });

    it('when a heartbeat is recorded then the thing was heard from then, and nothing else changes', async () => {
      const [, t2] = thingIds as [number, number];
      const before = await store.db
        .selectFrom('things')
        .selectAll()
        .where('thing_id', '=', t2)
        .executeTakeFirstOrThrow();
      await store.transaction((tx) => recordHeartbeat(tx, t2, NOW + 500));
      const row = await store.db.selectFrom('things').selectAll().where('thing_id', '=', t2).executeTakeFirstOrThrow();
      assert.equal(Number(row.last_beat_at), NOW + 500);
      assert.deepEqual({ ...row, last_beat_at: null }, { ...before, last_beat_at: null });
    });

    it('when a template grows metrics then only new names are added, in order, and the feed is told after commit', async () => {
      const told: EntityChange[] = [];
      const stop = store.changes.follow(['ThingTemplate'], (change) => told.push(change));
      try {
        let toldInside = -1;
        await store.transaction(async (tx) => {
          await growTemplateMetrics(
            tx,
            'org',
            new Map([
              [
                'tpl',
                new Map([
                  ['temp', { name: 'temp', data_type: 'string' as const, unit: '' }],
                  ['rpm', { name: 'rpm', data_type: 'number' as const, unit: '' }],
                ]),
              ],
              ['gone', new Map([['x', { name: 'x', data_type: 'number' as const, unit: '' }]])],
            ]),
          );
          toldInside = told.length;
        });
        assert.equal(toldInside, 0);
        const row = await store.db
          .selectFrom('thing_templates')
          .select('metrics')
          .where('thing_template_key', '=', 'tpl')
          .executeTakeFirstOrThrow();
        assert.deepEqual(
          (JSON.parse(row.metrics) as { name: string; data_type: string }[]).map((m) => [m.name, m.data_type]),
          [
            ['temp', 'number'],
            ['rpm', 'number'],
          ],
          'a known name keeps its type',
        );
        assert.deepEqual(
          told.map((c) => [c.entityType, c.organisationKey, c.entityKey, c.action]),
          [['ThingTemplate', 'org', 'tpl', 'update']],
        );
        // Nothing new: nothing written, nothing told.
        await store.transaction((tx) =>
          growTemplateMetrics(
            tx,
            'org',
            new Map([['tpl', new Map([['rpm', { name: 'rpm', data_type: 'number' as const, unit: '' }]])]]),
          ),
        );
        assert.equal(told.length, 1);
      } finally {
        stop();
      }
    });
  });
}
