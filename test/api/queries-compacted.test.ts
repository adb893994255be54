// The query suite, unchanged, over events compacted into blocks as soon as they are stored.
import '../support/compact-events.ts';
import './queries.test.ts';
