/**
 * A delivery's result is recorded while ingestion is busy (docs/rules.md, "Deliveries"): between two
 * of the event writer's transactions, a peer's answer that arrived meanwhile is read and its result
 * committed, rather than after the writer's queue has emptied. On SQLite a writer transaction gives no
 * way to anything else, so this is where the answer waits.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { EventWriter, type IngestBatch } from '../../src/events/writer.ts';
import { createThing } from '../support/fixtures.ts';
import { eventually } from '../support/peers.ts';
import { startServer } from '../support/server.ts';
import { STORES } from '../support/stores.ts';

/** An HTTP peer that holds each call's answer until told to give it. */
async function startHoldingPeer() {
  const held: ServerResponse[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => held.push(res));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    held,
    answerAll() {
      for (const res of held.splice(0)) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Transactions the busy writer may run before the test gives up waiting for the result. */
const MAX_TRANSACTIONS = 300;

const sqlite = STORES.find((s) => s.name === 'sqlite');
if (sqlite) {
  describe('delivery results while ingestion is busy [sqlite]', () => {
    it('when a peer answers while the event writer always has another transaction queued then the result is recorded between its transactions', async () => {
      const peer = await startHoldingPeer();
      const api = await startServer(sqlite, { env: { ALLOW_PRIVATE_WEBHOOKS: 'true' } });
      try {
        const token = await api.adminToken();
        const hook = await createThing(api, token, {});
        const busy = await createThing(api, token, {});
        const rule = await api.request('POST', '/api/v3/rules', {
          token,
          body: { rule: { name: 'hook', condition: 'n >= 0', trigger: 'every_event', thing_keys: [hook.thing_key] } },
        });
        assert.equal(rule.status, 200, rule.text);
        const action = await api.request('POST', '/api/v3/notification_actions', {
          token,
          body: {
            notification_action: {
              type: 'CallHttpUrlAction',
              rule_key: rule.body.rule.rule_key,
              method: 'POST',
              url: `${peer.url}/hook`,
            },
          },
        });
        assert.equal(action.status, 200, action.text);
        const sent = await api.request('POST', `/api/v3/things/${hook.thing_key}/events`, {
          token,
          body: { events: [{ timestamp: Date.now(), data: { n: 1 } }] },
        });
        assert.equal(sent.status, 200, sent.text);
        await eventually(() => peer.held.length === 1, 'the delivery reaching the peer');

        // A writer on the server's store whose queue is never empty: each transaction queues the next
        // one, answers the held call in the first, and looks in the store for the delivery's result.
        const store = api.server.store;
        const thing = await store.db
          .selectFrom('things as t')
          .innerJoin('thing_templates as tt', 'tt.thing_template_key', 't.thing_template_key')
          .select(['t.thing_id', 't.thing_key', 't.thing_template_key', 'tt.metrics'])
          .where('t.thing_key', '=', busy.thing_key)
          .executeTakeFirstOrThrow();
        const batch = (): IngestBatch => ({
          events: Array.from({ length: 200 }, (_, i) => ({
            thingId: Number(thing.thing_id),
            timestamp: Date.now() - i,
            data: { n: i },
            waypoint: null,
          })),
          subject: {
            organisationKey: '',
            things: new Map([[Number(thing.thing_id), thing]]),
          },
        });
        let transactions = 0;
        let recordedAt: number | undefined;
        const writes: Promise<number>[] = [];
        const writer = new EventWriter(store, {
          process: async (tx) => {
            transactions += 1;
            if (transactions === 1) peer.answerAll();
            const delivery = await tx
              .selectFrom('deliveries')
              .select('status')
              .where('rule_key', '=', rule.body.rule.rule_key)
              .executeTakeFirstOrThrow();
            if (delivery.status === 'delivered') recordedAt ??= transactions;
            if (recordedAt === undefined && transactions < MAX_TRANSACTIONS) writes.push(writer.write(batch()));
          },
        });
        writes.push(writer.write(batch()));
        await eventually(() => recordedAt !== undefined || transactions >= MAX_TRANSACTIONS, 'the writer to stop');
        await writer.drain();
        await Promise.all(writes);
        assert.ok(
          recordedAt !== undefined,
          `the delivery's result was not recorded during ${transactions} transactions of the writer`,
        );
      } finally {
        await api.close();
        await peer.close();
      }
    });
  });
}
