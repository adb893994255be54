/**
 * PostgreSQL connections that fail while idle (the database restarted, failed over or ended them; the
 * network cut them): the server goes on, and answers again once the database does
 * (docs/operations.md, "Health and readiness"). Before, the pool's error event ended the process.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { startServer, type TestServer } from '../support/server.ts';
import { POSTGRES_URL, STORES } from '../support/stores.ts';

const postgres = STORES.find((s) => s.name === 'postgres');

describe('database connections ended under a running server', { skip: postgres?.skip ?? 'no PostgreSQL case' }, () => {
  let api: TestServer;
  before(async () => {
    api = await startServer(postgres as NonNullable<typeof postgres>);
  });
  after(async () => {
    await api?.close();
  });

  it('when the database ends the idle connections of the pool then the server keeps answering', async () => {
    const token = await api.adminToken();
    // Every connection the pool holds, each busy at once so that each is asked.
    const pids = new Set<number>();
    const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(api.server.store.db);
    for (const row of rows) pids.add(row.pid);
    const busy = await Promise.all(
      Array.from({ length: 10 }, () =>
        sql<{ pid: number }>`select pg_backend_pid() as pid, pg_sleep(0.05)`.execute(api.server.store.db),
      ),
    );
    for (const result of busy) for (const row of result.rows) pids.add(row.pid);
    assert.ok(pids.size >= 2, `the pool holds ${pids.size} connections`);

    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    try {
      const ended = await admin.query('select pg_terminate_backend(pid) as ended from unnest($1::int[]) as pid', [
        [...pids],
      ]);
      assert.ok(ended.rows.every((r) => r.ended === true));
    } finally {
      await admin.end();
    }
    // The pool's connections learn it when the database's message arrives; the process must live on.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const deadline = Date.now() + 10_000;
    let things = await api.request('GET', '/api/v3/things', { token });
    while (things.status !== 200 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      things = await api.request('GET', '/api/v3/things', { token });
    }
    assert.equal(things.status, 200, things.text);
    assert.equal((await api.request('GET', '/healthz')).status, 200);
  });
});
