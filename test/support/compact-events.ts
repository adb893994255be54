/**
 * Imported first by a suite that runs another suite's tests over compacted events: every server it
 * starts compacts each event into a block as soon as it is stored (EVENT_COMPACTION_AGE=0, see
 * docs/storage.md), so every read of those tests goes through the blocks.
 */
process.env.THINGBASE_TEST_COMPACT_EVENTS = 'true';
