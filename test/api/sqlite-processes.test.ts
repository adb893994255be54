/**
 * A SQLite store written by two processes at once (docs/architecture.md, "The change feed": other
 * processes on a SQLite file): the command line while the server runs, or a second server on the same
 * file. SQLite lets one of them write at a time; a transaction that read before taking its turn to
 * write found the file changed under it (SQLITE_BUSY_SNAPSHOT) and was refused, as a 503 or, for that
 * code, a 500.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import BetterSqlite3 from 'better-sqlite3';
import { sqlitePath } from '../../src/store/dialect.ts';
import { type ServerProcess, serveProcess, stopProcess } from '../support/process.ts';
import { startServer, type TestServer } from '../support/server.ts';
import { STORES, storeEnv } from '../support/stores.ts';

const sqlite = STORES.find((store) => store.name === 'sqlite');

describe('a SQLite store written by two processes', { skip: sqlite === undefined }, () => {
  let api: TestServer;
  let second: ServerProcess;
  before(async () => {
    api = await startServer(sqlite!);
    second = await serveProcess(storeEnv(api.storeSettings));
  });
  after(async () => {
    if (second) await stopProcess(second.child);
    await api?.close();
  });

  it('when both create things at the same time then every creation is answered 200 and stored', async () => {
    const token = await api.adminToken();
    const templates = await api.request('GET', '/api/v3/thing_templates', { token });
    const template = templates.body.thing_templates[0].thing_template_key as string;
    const answers = new Map<number, number>();
    const create = async (url: string, key: string) => {
      const answered = await fetch(`${url}/api/v3/things`, {
        method: 'POST',
        headers: { 'x-auth-token': token, 'content-type': 'application/json' },
        body: JSON.stringify({ thing: { name: key, thing_key: key, thing_template_key: template } }),
      });
      await answered.text();
      answers.set(answered.status, (answers.get(answered.status) ?? 0) + 1);
    };
    for (let round = 0; round < 10; round++) {
      await Promise.all(
        Array.from({ length: 10 }, (_, i) => [
          create(api.url, `first-${round}-${i}`),
          create(second.url, `second-${round}-${i}`),
        ]).flat(),
      );
    }
    assert.deepEqual(Object.fromEntries(answers), { 200: 200 });
    const listed = await api.request('GET', '/api/v3/things', { token, query: { per: 1 } });
    assert.equal(listed.body.total_count, 200);
  });

  it('when another process holds the write lock then the server keeps answering while its write waits, and the write is stored once the lock is free', async () => {
    const token = await api.adminToken();
    const templates = await api.request('GET', '/api/v3/thing_templates', { token });
    const template = templates.body.thing_templates[0].thing_template_key as string;
    const holder = new BetterSqlite3(sqlitePath(api.storeSettings.databaseUrl));
    try {
      holder.exec('begin immediate');
      const created = fetch(`${second.url}/api/v3/things`, {
        method: 'POST',
        headers: { 'x-auth-token': token, 'content-type': 'application/json' },
        body: JSON.stringify({ thing: { name: 'waited', thing_key: 'waited-for-lock', thing_template_key: template } }),
      });
      // Time for the creation to reach its transaction's begin, where it waits for the lock.
      await sleep(500);
      // A server whose event loop waited in the begin would answer this only once the lock is free.
      const health = await fetch(`${second.url}/healthz`, { signal: AbortSignal.timeout(3000) });
      assert.equal(health.status, 200, 'the server answers while its write waits');
      holder.exec('commit');
      const answer = await created;
      assert.equal(answer.status, 200, await answer.text());
    } finally {
      if (holder.inTransaction) holder.exec('rollback');
      holder.close();
    }
    const thing = await api.request('GET', '/api/v3/things/waited-for-lock', { token });
    assert.equal(thing.status, 200);
  });

  it('when another process holds the write lock longer than a write may wait then the write is refused 503 and nothing of it is stored', async () => {
    const token = await api.adminToken();
    const templates = await api.request('GET', '/api/v3/thing_templates', { token });
    const template = templates.body.thing_templates[0].thing_template_key as string;
    const holder = new BetterSqlite3(sqlitePath(api.storeSettings.databaseUrl));
    let answer: Response;
    try {
      holder.exec('begin immediate');
      answer = await fetch(`${second.url}/api/v3/things`, {
        method: 'POST',
        headers: { 'x-auth-token': token, 'content-type': 'application/json' },
        body: JSON.stringify({
          thing: { name: 'refused', thing_key: 'refused-for-lock', thing_template_key: template },
        }),
      });
    } finally {
      holder.exec('rollback');
      holder.close();
    }
    const body = (await answer.json()) as { errors: { code: string }[] };
    assert.equal(answer.status, 503, JSON.stringify(body));
    assert.ok(answer.headers.get('retry-after'), 'a busy store says when to try again');
    assert.equal(body.errors[0]?.code, 'unavailable');
    const thing = await api.request('GET', '/api/v3/things/refused-for-lock', { token });
    assert.equal(thing.status, 404);
  });
});
