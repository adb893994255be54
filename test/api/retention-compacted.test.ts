// The retention suite, unchanged, over events compacted into blocks as soon as they are stored.
import '../support/compact-events.ts';
import './retention.test.ts';
