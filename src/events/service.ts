/**
 * What other capabilities may use of the events capability's stored events: reads for data queries
 * (docs/api.md, "Data queries") and realtime push. Events are written only by the event writer, and
 * deleted by the retention sweeper (events/sweeper.ts) and by a range delete (here).
 */
import type { Actor } from '../audit/recorder.ts';
import type { Store, Tx } from '../store/store.ts';
import { findTemplate } from '../templates/service.ts';
import { recordEventsRemoved, recordNewestEvent, recordThingUpdated, requireThing } from '../things/service.ts';
import { deleteEventsBetween, newestEvent } from './repository.ts';
import { correctRollups } from './rollups.ts';

export {
  byTimeThenId,
  countEvents,
  type EventRange,
  type EventTriple,
  eventChunks,
  eventDataAt,
  pageOfEvents,
  type StoredEvent,
} from './repository.ts';
export { DAY_MS, firstKeptSlot, type RetentionCuts, retentionCuts } from './retention.ts';

/**
 * Deletes a thing's events whose time is in [from, to] (ms), correcting its rollups, its event count and
 * its last event in the same transaction, and records the change as an update of the thing when any
 * was deleted (docs/storage.md, "Deleting a range of events"). Answers how many were deleted.
 */
export async function deleteEventRange(
  store: Store,
  actor: Actor,
  organisationKeys: string[],
  thingKey: string,
  from: number,
  to: number,
): Promise<number> {
  return store.transaction(async (tx) => {
    const before = await requireThing(tx, organisationKeys, thingKey);
    // Whatever the retention: expired events the sweeper has not reached yet go too, so the rollups
    // that still count them are corrected and a longer retention set later cannot bring them back.
    const deleted = await deleteEventsBetween(tx, before.thing_id, from, to);
    // A range without events changed nothing: nothing to correct, nor to audit.
    if (deleted === 0) return 0;
    const template = await findTemplate(tx, [before.organisation_key], before.thing_template_key);
    await correctRollups(tx, before.thing_id, from, to, (template as { metrics: string }).metrics);
    await recordEventsRemoved(tx, before.thing_id, deleted);
    const newestAt = before.last_event_timestamp;
    if (newestAt !== null && newestAt >= from && newestAt <= to) {
      await renewNewestEvent(tx, before.thing_id);
    }
    // The audit trail says what went: the range asked (ms) and how many events.
    await recordThingUpdated(tx, actor, organisationKeys, before, { deleted_events: { from, to, count: deleted } });
    return deleted;
  });
}

/** Sets a thing's last event again from what is stored (after some of its events were deleted): the newest left, or none. */
export async function renewNewestEvent(tx: Tx, thingId: number): Promise<void> {
  await recordNewestEvent(tx, thingId, (await newestEvent(tx, thingId)) ?? null);
}
