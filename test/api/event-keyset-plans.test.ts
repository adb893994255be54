/**
 * How the reads of events from a position (docs/storage.md, "Reading from a position") are planned, on
 * both stores: each statement a read sends is explained as the engine would run it, and must read the
 * (thing, time) index from the position, in its order, with no sort, whatever the table's statistics
 * say: a table never analysed (just filled), one analysed before a thing grew, one analysed now. On
 * PostgreSQL both the plan made for the statement's values and the generic plan of a prepared
 * statement are checked. Plans, not timings: a plan that gathers the rest of a thing's events and sorts
 * them is as correct as one that stops after the page, and only slower.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type CompiledQuery, Kysely, sql } from 'kysely';
import { EventCompactor } from '../../src/events/compactor.ts';
import { type EventRange, eventChunks, insertEvents, pageOfEvents } from '../../src/events/repository.ts';
import { createDialect } from '../../src/store/dialect.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import type { Database } from '../../src/store/tables.ts';
import { STORES } from '../support/stores.ts';

const HOUR = 3_600_000;
const T0 = Date.UTC(2025, 0, 1);
/** Events of each thing: after a read's first chunk, more than its next one holds (a full page to read). */
const EVENTS = 30_000;

for (const storeCase of STORES) {
  describe(`plans of the reads of events from a position [${storeCase.name}]`, { skip: storeCase.skip }, () => {
    const settings = storeCase.fresh();
    let store: Store;
    /** The same store through a second connection that notes every statement it sends. */
    let noted: Kysely<Database>;
    const sent: CompiledQuery[] = [];

    before(async () => {
      store = await openStore({ databaseUrl: settings.databaseUrl, schema: settings.databaseSchema });
      noted = new Kysely<Database>({
        dialect: createDialect(settings.databaseUrl, settings.databaseSchema),
        log: (event) => {
          if (event.level === 'query') sent.push(event.query);
        },
      });
      if (store.engine === 'postgres') {
        // Never analysed until a test says so: autovacuum would otherwise analyse it when it comes round.
        await sql`alter table events set (autovacuum_enabled = false)`.execute(store.db);
      }
      await store.db
        .insertInto('thing_templates')
        .values({
          thing_template_key: 'tpl',
          organisation_key: 'org',
          name: 'Default',
          metrics: '[]',
          heartbeat_interval: 60,
          idle_timeout: 300,
          created_at: T0,
          updated_at: T0,
        } as never)
        .execute();
    });
    after(async () => {
      await noted?.destroy();
      await store?.close();
      await storeCase.dispose(settings);
    });

    async function thingWith(key: string, count: number): Promise<number> {
      const row = await store.db
        .insertInto('things')
        .values({
          thing_key: key,
          organisation_key: 'org',
          thing_template_key: 'tpl',
          name: key,
          created_at: T0,
          updated_at: T0,
        } as never)
        .returning('thing_id')
        .executeTakeFirstOrThrow();
      const thingId = Number(row.thing_id);
      // One event a second, received a second later; written in the writer's batches.
      for (let i = 0; i < count; i += 5000) {
        const batch = Array.from({ length: Math.min(5000, count - i) }, (_, j) => ({
          thingId,
          timestamp: T0 + (i + j) * 1000,
          data: { temperature: i + j },
          waypoint: null,
        }));
        await store.transaction((tx) => insertEvents(tx, batch, T0 + (i + count) * 1000));
      }
      await store.db
        .updateTable('things')
        .set({ event_count: count, arrival_lag_min: 0, arrival_lag_max: count * 1000 } as never)
        .where('thing_id', '=', thingId)
        .execute();
      return thingId;
    }

    /** The statements the reads of `work` sent that read events from a position (after an event id). */
    async function positionReads(work: () => Promise<void>): Promise<CompiledQuery[]> {
      sent.length = 0;
      await work();
      return sent.filter((q) => /from "events"/.test(q.sql) && /"event_id"\)? [<>]/.test(q.sql));
    }

    /** The statements that list a thing's blocks from a position (bounded by it on the side they are ordered by). */
    const blockReads = () =>
      sent.filter(
        (q) =>
          /^select .* from "event_blocks" where .* order by "(min|max)_timestamp"/.test(q.sql) &&
          /"min_timestamp" > (\?|\$\d+)|"max_timestamp" < (\?|\$\d+)/.test(q.sql),
      );

    /** The plans of a statement: SQLite's; PostgreSQL's for its values and its generic one. */
    async function plansOf(query: CompiledQuery): Promise<string[]> {
      if (store.engine === 'sqlite') {
        const rows = await store.db.executeQuery<{ detail: string }>({
          ...query,
          sql: `explain query plan ${query.sql}`,
        });
        return [rows.rows.map((r) => r.detail).join('\n')];
      }
      const literal = (value: unknown) => (typeof value === 'number' ? String(value) : `'${String(value)}'`);
      const plans: string[] = [];
      // One connection: a prepared statement and the setting belong to it.
      await store.db.connection().execute(async (db) => {
        const explain = async (text: string) =>
          (await sql<{ 'QUERY PLAN': string }>`${sql.raw(text)}`.execute(db)).rows
            .map((r) => r['QUERY PLAN'])
            .join('\n');
        await sql`prepare position_read as ${sql.raw(query.sql)}`.execute(db);
        try {
          for (const mode of ['force_custom_plan', 'force_generic_plan']) {
            await sql`set plan_cache_mode = ${sql.raw(mode)}`.execute(db);
            plans.push(
              `${mode}\n${await explain(`explain execute position_read(${query.parameters.map(literal).join(', ')})`)}`,
            );
          }
        } finally {
          await sql`deallocate position_read`.execute(db);
          await sql`reset plan_cache_mode`.execute(db);
        }
      });
      return plans;
    }

    /**
     * SQLite: whether the index range a statement reads starts (or, read backwards, ends) at the
     * parameter that `bound` finds in its text. The plan names the index's bounds but not which of
     * several on one column it starts at: the program does. Its first seek into the index takes a key
     * of registers, the second of which (the column after the thing) is loaded from a parameter.
     */
    async function startsAt(query: CompiledQuery, bound: RegExp): Promise<boolean> {
      const found = bound.exec(query.sql);
      assert.ok(found, `${bound} in ${query.sql}`);
      const parameter = (query.sql.slice(0, found.index + found[0].length).match(/\?/g) ?? []).length;
      const program = (
        await store.db.executeQuery<{ opcode: string; p1: number; p2: number; p3: number }>({
          ...query,
          sql: `explain ${query.sql}`,
        })
      ).rows;
      const seek = program.findIndex((op) => /^Seek(GE|GT|LE|LT)$/.test(op.opcode));
      const register = (program[seek] as { p3: number }).p3 + 1;
      const loaded = program.slice(0, seek).findLast((op) => op.opcode === 'Variable' && op.p2 === register);
      return loaded?.p1 === parameter;
    }

    /** Every plan reads the events' index from the position, with no sort. */
    async function assertIndexOrder(reads: CompiledQuery[], label: string) {
      assert.ok(reads.length > 0, `${label}: no read from a position was sent`);
      for (const query of reads) {
        for (const plan of await plansOf(query)) {
          const context = `${label}\n${query.sql}\n${plan}`;
          if (store.engine === 'sqlite') {
            assert.match(
              plan,
              /SEARCH events USING INDEX events_thing_timestamp \(thing_id=\? AND timestamp[<>]/,
              context,
            );
            assert.doesNotMatch(plan, /TEMP B-TREE/, context);
            assert.ok(await startsAt(query, /\("timestamp", "event_id"\) [<>] \(\?/), `from the position: ${context}`);
          } else {
            assert.match(plan, /Index Scan (Backward )?using events_thing_time_id on events/, context);
            assert.match(plan, /Index Cond: .*ROW\("timestamp", event_id\) [<>] ROW\(/, context);
            assert.doesNotMatch(plan, /Sort|Bitmap/, context);
          }
        }
      }
    }

    /** The reads from a position of a thing's events: export and aggregation chunks, merged pages. */
    async function assertReadsOf(thingId: number, label: string) {
      const ranges: [string, EventRange][] = [
        ['whole history', { thingId, from: undefined, to: undefined, byCreatedAt: false }],
        ['range', { thingId, from: T0 + 1000, to: T0 + (EVENTS - 1000) * 1000, byCreatedAt: false }],
        ['retention', { thingId, from: undefined, to: undefined, byCreatedAt: false, notBefore: T0 }],
      ];
      for (const [name, range] of ranges) {
        for (const size of [1000, 5000]) {
          const reads = await positionReads(async () => {
            let chunks = 0;
            for await (const chunk of eventChunks(noted, range, size)) {
              // Full chunks (the range's last one apart), each after the one before.
              if (++chunks === 1) assert.equal(chunk.length, size);
              if (chunks === 2) break;
            }
          });
          await assertIndexOrder(reads, `${label}, ${name}, chunks of ${size}`);
        }
      }
    }

    it('when the events table was never analysed then every read from a position reads the index in order', async () => {
      await thingWith('busy-1', EVENTS);
      const thingId = await thingWith('busy-2', EVENTS);
      await assertReadsOf(thingId, 'never analysed');
    });

    it('when a thing grew after the table was analysed then its reads from a position read the index in order', async () => {
      if (store.engine === 'postgres') await sql`analyze events`.execute(store.db);
      const thingId = await thingWith('grown', EVENTS);
      await assertReadsOf(thingId, 'grown since analysed');
    });

    it('when the table was analysed then every read from a position reads the index in order', async () => {
      if (store.engine === 'postgres') await sql`analyze events`.execute(store.db);
      const [thing] = await store.db
        .selectFrom('things')
        .select('thing_id')
        .where('thing_key', '=', 'busy-2')
        .execute();
      await assertReadsOf(Number(thing?.thing_id), 'analysed');
    });

    it('when some events are in blocks then the merged reads list blocks and read rows from their position in order', async () => {
      const thingId = await thingWith('compacted', EVENTS);
      // Its first six hours into blocks (more than a step lists at first), the rest left as rows.
      const compactor = new EventCompactor(store, { ageMs: 1, now: () => T0 + 6 * HOUR + 1 });
      assert.equal(await compactor.compactThings([thingId]), 6 * 3600);
      const lists: CompiledQuery[] = [];
      // The whole history, and under a retention (a bound of its own on the blocks' times).
      for (const notBefore of [undefined, T0]) {
        const range: EventRange = { thingId, from: undefined, to: undefined, byCreatedAt: false, notBefore };
        for (const order of ['asc', 'desc'] as const) {
          const reads = await positionReads(async () => {
            const page = await pageOfEvents(noted, range, order, 1000, 6 * 3600 + 1500);
            assert.equal(page.events.length, 1000);
          });
          lists.push(...blockReads());
          await assertIndexOrder(reads, `merged page, ${order}, retention ${notBefore}`);
        }
        const reads = await positionReads(async () => {
          for await (const chunk of eventChunks(noted, range, 1000)) {
            if (chunk[0] && chunk[0][0] > T0 + 7 * HOUR) break;
          }
        });
        lists.push(...blockReads());
        await assertIndexOrder(reads, `merged chunks, retention ${notBefore}`);
      }
      assert.ok(
        lists.some((q) => /"max_timestamp" </.test(q.sql)) && lists.some((q) => /"min_timestamp" >/.test(q.sql)),
      );
      for (const query of lists) {
        for (const plan of await plansOf(query)) {
          const context = `${query.sql}\n${plan}`;
          if (store.engine === 'sqlite') {
            assert.match(plan, /SEARCH event_blocks USING INDEX event_blocks_thing_(min|max) \(thing_id=\?/, context);
            assert.doesNotMatch(plan, /TEMP B-TREE/, context);
            assert.ok(
              await startsAt(query, /"min_timestamp" > \?|"max_timestamp" < \?/),
              `from the position: ${context}`,
            );
          } else {
            assert.match(plan, /Index Scan (Backward )?using \w+_thing_id_(min|max)_timestamp_block_id_idx/, context);
            assert.doesNotMatch(plan, /Sort|Bitmap/, context);
          }
        }
      }
    });
  });
}
