/**
 * Migration 005 counts the rollups of the events stored before rollups existed with a frozen copy of
 * the rebuild in events/rollups.ts: on the same events, both must store the same rollups.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Kysely } from 'kysely';
import { rebuildRollups } from '../../src/events/rollups.ts';
import { countRollups } from '../../src/store/migrations/005-rollups.ts';
import { createThing } from '../support/fixtures.ts';
import { describeOnStores } from '../support/suites.ts';

const MINUTE = 60_000;
const START = Date.UTC(2024, 0, 1);

describeOnStores('rollups counted by migration 005', (ctx) => {
  async function storedRollups() {
    return ctx.api.server.store.db
      .selectFrom('event_rollups')
      .select(['thing_id', 'slot', 'stats'])
      .orderBy('thing_id')
      .orderBy('slot')
      .execute();
  }

  async function thingWithEvents(events: { timestamp: number; data: object }[]) {
    const token = await ctx.api.adminToken();
    const thing = await createThing(ctx.api, token, {});
    const posted = await ctx.api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
      token,
      body: { events },
    });
    assert.equal(posted.status, 200, posted.text);
    const row = await ctx.api.server.store.db
      .selectFrom('things')
      .select('thing_id')
      .where('thing_key', '=', thing.thing_key)
      .executeTakeFirstOrThrow();
    return Number(row.thing_id);
  }

  it('when the migration counts stored events then it stores the rollups the rebuild stores', async () => {
    const db = ctx.api.server.store.db;
    await thingWithEvents(
      [0, 3, 14, 15, 31, 32, 95].map((m, i) => ({
        timestamp: START + m * MINUTE + i,
        data: { temperature: 20.1 + m / 7, machine: { rpm: i % 2 === 0 ? 1000 + i : 'stalled' }, label: `e${m}` },
      })),
    );
    // More events than one read takes (20,000), so the migration reads on after the first chunk.
    const many = await thingWithEvents([{ timestamp: START, data: { level: 0.5 } }]);
    const rows = Array.from({ length: 20_150 }, (_, i) => ({
      thing_id: many,
      timestamp: START + (i % 997) * MINUTE + Math.floor(i / 997),
      created_at: Date.now(),
      data: JSON.stringify({ level: (i % 13) / 3 + 0.1 }),
      waypoint: null,
    }));
    for (let i = 0; i < rows.length; i += 500) {
      await db
        .insertInto('events')
        .values(rows.slice(i, i + 500))
        .execute();
    }

    await db.deleteFrom('event_rollups').execute();
    await rebuildRollups(db);
    const rebuilt = await storedRollups();
    assert.ok(rebuilt.length > 60, `rollups counted: ${rebuilt.length}`);

    await db.deleteFrom('event_rollups').execute();
    await countRollups(db as unknown as Kysely<unknown>);
    assert.deepEqual(await storedRollups(), rebuilt);

    // Counted again over rollups already stored: the same rows, not added to.
    await countRollups(db as unknown as Kysely<unknown>);
    assert.deepEqual(await storedRollups(), rebuilt);
  });
});
