/**
 * GET /metrics while the database hangs (docs/operations.md, "Metrics"): the figures read from the
 * store keep their last value, and the page answers 200 promptly instead of failing whole. The
 * database is made to hang by a proxy in front of it that stops forwarding (support/hanging-proxy.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { within } from '../support/fault-load.ts';
import { type HangingProxy, hangingProxy } from '../support/hanging-proxy.ts';
import { call } from '../support/http.ts';
import { startServer, type TestServer } from '../support/server.ts';
import { POSTGRES_URL, STORES } from '../support/stores.ts';

const postgres = STORES.find((s) => s.name === 'postgres');

describe('/metrics while the database hangs [postgres]', { skip: postgres?.skip ?? 'no PostgreSQL case' }, () => {
  const settings = postgres?.fresh() ?? { databaseUrl: POSTGRES_URL };
  let proxy: HangingProxy;
  let api: TestServer;
  before(async () => {
    const target = new URL(POSTGRES_URL);
    proxy = await hangingProxy({ host: target.hostname, port: Number(target.port || 5432) });
    target.host = `127.0.0.1:${proxy.port}`;
    api = await startServer(postgres as NonNullable<typeof postgres>, {
      storeSettings: { ...settings, databaseUrl: target.toString() },
      env: { DATABASE_STATEMENT_TIMEOUT_MS: '5000' },
    });
  });
  after(async () => {
    proxy?.resume();
    await api?.close();
    await proxy?.close();
    await postgres?.dispose(settings);
  });

  it('when the database hangs then /metrics answers 200 within a second or two, the queue depth at its last value', async () => {
    const depth = (text: string) => /^thingbase_delivery_queue_depth (\d+)$/m.exec(text)?.[1];
    const before = await call(api.url, 'GET', '/metrics');
    assert.equal(before.status, 200);
    assert.equal(depth(before.text), '0');

    proxy.pause();
    try {
      for (let scrape = 0; scrape < 3; scrape++) {
        const started = Date.now();
        // Before, the read had no bound but the statement timeout, and its failure failed the page (503).
        const during = await within(4000, 'a scrape while the database hangs', call(api.url, 'GET', '/metrics'));
        assert.equal(during.status, 200, during.text);
        assert.ok(Date.now() - started < 2000, `answered in ${Date.now() - started} ms`);
        assert.equal(depth(during.text), '0', 'the last value read');
        assert.match(during.text, /^thingbase_events_stored_total\{transport="http"\} \d+$/m);
      }
    } finally {
      proxy.resume();
    }
    const afterwards = await within(10_000, 'a scrape once it answers', call(api.url, 'GET', '/metrics'));
    assert.equal(afterwards.status, 200);
  });
});
