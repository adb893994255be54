/**
 * When the event writer starts its transactions (events/writer.ts): at once when none started within
 * its spacing, so a lone message is not held back for company that will not come; otherwise once the
 * spacing since the last start has passed, with everything that arrived meanwhile in one transaction.
 * No timing is asserted: a writer that held a lone write for its spacing would hold it for a minute here,
 * past the test's timeout, and the grouping is read from the transactions themselves.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EventWriter, type IngestBatch } from '../../src/events/writer.ts';
import { STORES } from '../support/stores.ts';
import { suiteStore } from '../support/suites.ts';

/** A batch with nothing to store: the writer still runs a transaction for it. */
const emptyBatch = (): IngestBatch => ({ events: [], subject: { organisationKey: 'o', things: new Map() } });

for (const storeCase of STORES) {
  describe(`event writer transactions (${storeCase.name})`, { skip: storeCase.skip }, () => {
    const open = suiteStore(storeCase);

    it('starts a transaction at once for a write to an idle writer', { timeout: 30_000 }, async () => {
      const transactions: number[] = [];
      const writer = new EventWriter(await open(), {
        startSpacingMs: 60_000,
        process: async (_tx, batches) => void transactions.push(batches.length),
      });
      await writer.write(emptyBatch());
      assert.deepEqual(transactions, [1]);
    });

    it('puts the writes that arrive within the delay of the last start into one transaction', async () => {
      const transactions: number[] = [];
      const writer = new EventWriter(await open(), {
        startSpacingMs: 2_000,
        process: async (_tx, batches) => void transactions.push(batches.length),
      });
      await writer.write(emptyBatch());
      await Promise.all([writer.write(emptyBatch()), writer.write(emptyBatch()), writer.write(emptyBatch())]);
      assert.deepEqual(transactions, [1, 3]);
    });
  });
}
