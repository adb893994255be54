/**
 * The event writer's check, in each transaction, that the things and templates a batch was checked
 * against still hold (events/writer.ts, `staleBatches`): a change another instance committed, which
 * this one's caches have not heard of yet, must not let events in under the old thing or metrics. The
 * changes here are written to the store directly, as such an instance would, so no cache hears of them.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { EventWriter, type IngestBatch, StaleSubjectError } from '../../src/events/writer.ts';
import { createThing } from '../support/fixtures.ts';
import { describeOnStores } from '../support/suites.ts';

describeOnStores('event writer, stale subjects', (ctx) => {
  /** A new thing, and a batch of one event for it checked against the thing as stored now. */
  async function thingAndBatch(): Promise<{ thingId: number; templateKey: string; batch: () => IngestBatch }> {
    const token = await ctx.api.adminToken();
    const { thing_key } = await createThing(ctx.api, token, {});
    const db = ctx.api.server.store.db;
    const row = await db
      .selectFrom('things as t')
      .innerJoin('thing_templates as tt', 'tt.thing_template_key', 't.thing_template_key')
      .select(['t.thing_id', 't.thing_key', 't.thing_template_key', 'tt.metrics'])
      .where('t.thing_key', '=', thing_key)
      .executeTakeFirstOrThrow();
    const thingId = Number(row.thing_id);
    const subject = {
      thing_key: row.thing_key,
      thing_template_key: row.thing_template_key,
      metrics: row.metrics,
    };
    return {
      thingId,
      templateKey: row.thing_template_key,
      batch: () => ({
        events: [{ thingId, timestamp: Date.now(), data: { temperature: 20 }, waypoint: null }],
        subject: { organisationKey: 'any', things: new Map([[thingId, subject]]) },
      }),
    };
  }

  /** Moves a thing to a new copy of a template, written straight to the store; answers the copy's key. */
  async function moveToCopyOf(thingId: number, templateKey: string, suffix: string): Promise<string> {
    const db = ctx.api.server.store.db;
    const template = await db
      .selectFrom('thing_templates')
      .selectAll()
      .where('thing_template_key', '=', templateKey)
      .executeTakeFirstOrThrow();
    const copy = `${template.thing_template_key}-${suffix}`;
    await db
      .insertInto('thing_templates')
      .values({ ...template, thing_template_key: copy, name: `${template.name} ${suffix}` })
      .execute();
    await db.updateTable('things').set({ thing_template_key: copy }).where('thing_id', '=', thingId).execute();
    return copy;
  }

  const storedEvents = async (thingId: number) =>
    Number(
      (
        await ctx.api.server.store.db
          .selectFrom('events')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('thing_id', '=', thingId)
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('when a batch was checked against a thing and template that still hold then it is stored', async () => {
    const { thingId, batch } = await thingAndBatch();
    await new EventWriter(ctx.api.server.store).write(batch());
    assert.equal(await storedEvents(thingId), 1);
  });

  it('when the thing moved to another template since then the batch is refused and nothing of it stored', async () => {
    const { thingId, batch } = await thingAndBatch();
    const other = await thingAndBatch();
    await moveToCopyOf(thingId, other.templateKey, 'moved');
    await assert.rejects(new EventWriter(ctx.api.server.store).write(batch()), StaleSubjectError);
    assert.equal(await storedEvents(thingId), 0);
  });

  it("when the template's metrics changed since then the batch is refused, and a fresh one in the same transaction is stored", async () => {
    const stale = await thingAndBatch();
    const fresh = await thingAndBatch();
    // A template of its own, so that the other thing's template is left as it is.
    const own = await moveToCopyOf(stale.thingId, stale.templateKey, 'own');
    const staleBatch = stale.batch();
    (staleBatch.subject.things.get(stale.thingId) as { thing_template_key: string }).thing_template_key = own;
    await ctx.api.server.store.db
      .updateTable('thing_templates')
      .set({ metrics: JSON.stringify([{ name: 'humidity', data_type: 'number' }]) })
      .where('thing_template_key', '=', own)
      .execute();
    const transactions: number[] = [];
    const writer = new EventWriter(ctx.api.server.store, {
      startSpacingMs: 2_000,
      process: async (_tx, batches) => void transactions.push(batches.length),
    });
    // The first write starts a transaction of its own; the next two wait for the spacing together.
    await writer.write({ events: [], subject: { organisationKey: 'any', things: new Map() } });
    const [staleResult, freshResult] = await Promise.allSettled([
      writer.write(staleBatch),
      writer.write(fresh.batch()),
    ]);
    assert.equal(staleResult.status, 'rejected');
    assert.ok((staleResult as PromiseRejectedResult).reason instanceof StaleSubjectError);
    assert.equal(freshResult.status, 'fulfilled');
    assert.deepEqual(transactions, [1, 1], 'the stale batch is not processed with the fresh one');
    assert.equal(await storedEvents(stale.thingId), 0);
    assert.equal(await storedEvents(fresh.thingId), 1);
  });
});
