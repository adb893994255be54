/**
 * When the event writer starts its transactions (events/writer.ts): at once when none started within
 * its spacing, so a lone message is not held back for company that will not come; otherwise once the
 * spacing since the last start has passed, with everything that arrived meanwhile in one transaction.
 * No timing is asserted: a writer that held a lone write for its spacing would hold it for a minute here,
 * past the test's timeout, and the grouping is read from the transactions themselves.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { EventWriter, type IngestBatch, STORE_SLOW } from '../../src/events/writer.ts';
import { STORES } from '../support/stores.ts';
import { suiteStore } from '../support/suites.ts';

/** A batch with nothing to store: the writer still runs a transaction for it. */
const emptyBatch = (organisationKey = 'o'): IngestBatch => ({
  events: [],
  subject: { organisationKey, things: new Map() },
});

/** A batch of `rows` heartbeats of things that do not exist: rows to the writer, nothing to store. */
const heartbeatBatch = (organisationKey: string, rows: number): IngestBatch => ({
  events: [],
  heartbeats: new Map(Array.from({ length: rows }, (_, i) => [1e9 + i, Date.now()])),
  subject: { organisationKey, things: new Map() },
});

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

    it('when another organisation handed it a batch within the last second then one organisation alone gets transactions of the shared size', {
      timeout: 30_000,
    }, async () => {
      const transactions: number[] = [];
      const writer = new EventWriter(await open(), {
        batchRows: 40,
        sharedBatchRows: 10,
        // Within the second after the other organisation's batch, which waits this long.
        startSpacingMs: 200,
        process: async (_tx, batches) =>
          void transactions.push(batches.reduce((rows, b) => rows + (b.heartbeats?.size ?? 0), 0)),
      });
      const eight = () => Promise.all(Array.from({ length: 8 }, () => writer.write(heartbeatBatch('a', 5))));
      // Alone: the first at once, then eight batches of 5 rows in one transaction of 40.
      await writer.write(heartbeatBatch('a', 5));
      await eight();
      // Another organisation's batch, then the first one's alone again: transactions of 10.
      await writer.write(heartbeatBatch('b', 1));
      await eight();
      assert.deepEqual(transactions, [5, 40, 1, 10, 10, 10, 10]);
    });

    it('when a batch has waited two thirds of its time then it is refused, and does not cut short the transaction of a batch that came later', {
      timeout: 30_000,
    }, async () => {
      let transaction = 0;
      const writer = new EventWriter(await open(), {
        writeTimeoutMs: 3000,
        // One transaction at a time on both stores, so that the old batch waits for the first.
        concurrency: 1,
        process: async (tx) => {
          transaction++;
          // The first transaction outlasts two thirds of the old batch's time; the second runs a
          // statement after a second, within the new batch's time but past the old one's.
          await sleep(transaction === 1 ? 2200 : 1000);
          await sql`select 1`.execute(tx);
        },
      });
      const first = writer.write(emptyBatch('flood'));
      // Once the first transaction has begun.
      await sleep(50);
      const old = writer.write(emptyBatch('flood'));
      await sleep(1750);
      const later = writer.write(emptyBatch('modest'));
      await first;
      await assert.rejects(old, (error: Error) => error.message.includes(STORE_SLOW));
      assert.equal(await later, 0, 'the later batch is committed');
      assert.equal(transaction, 2);
    });
  });
}
