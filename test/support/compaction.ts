/**
 * Whether this run reads events compacted into blocks as soon as they are stored
 * (test/support/compact-events.ts). The checks of a store upgrade (a migration recounting or
 * measuring the events table's rows, which predates blocks) apply only to a store without blocks.
 */
export const overCompactedEvents = (): boolean => process.env.THINGBASE_TEST_COMPACT_EVENTS === 'true';
