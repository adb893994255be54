/**
 * What other capabilities may use of the events capability's stored events: reads for data queries
 * (docs/api.md, "Data queries") and realtime push. Events are written only by the event writer.
 */
export {
  countEvents,
  type EventRange,
  type EventTriple,
  eventChunks,
  eventDataAt,
  pageOfEvents,
  type StoredEvent,
} from './repository.ts';
export { DAY_MS, firstKeptSlot, type RetentionCuts, retentionCuts } from './retention.ts';
