// The event-range-delete suite, unchanged, over events compacted into blocks as soon as they are stored.
import '../support/compact-events.ts';
import './event-range-delete.test.ts';
