import assert from 'node:assert/strict';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { STORED_TIME } from '../../src/core/time.ts';
import { eventChunks } from '../../src/events/repository.ts';
import { EXPORT_PAGE_EVENTS, type ExportFormat, exportEvents, exportProgress } from '../../src/queries/export.ts';
import { childOrganisation, createThing, userWithAbilities } from '../support/fixtures.ts';
import { type PausedGet, pausedGet } from '../support/paused-get.ts';
import { fetchedByIndexes } from '../support/postgres-statistics.ts';
import { startServer } from '../support/server.ts';
import { describeOnStores } from '../support/suites.ts';

const T0 = Date.UTC(2025, 0, 1);
const SECOND = 1000;
/** About 2 KB of text an event: a few thousand make an answer of megabytes. */
const FILLER = 'x'.repeat(2000);
const largeEvents = (count: number) =>
  Array.from({ length: count }, (_, i) => ({ timestamp: T0 + i * SECOND, data: { i, filler: FILLER } }));

describeOnStores('event export', (ctx) => {
  async function thingWithEvents(events: { timestamp: number; data: object }[], token?: string, api = ctx.api) {
    const auth = token ?? (await api.adminToken());
    const thing = await createThing(api, auth, {});
    for (let i = 0; i < events.length; i += 1000) {
      const posted = await api.request('POST', `/api/v3/things/${thing.thing_key}/events`, {
        token: auth,
        body: { events: events.slice(i, i + 1000) },
      });
      assert.equal(posted.status, 200, posted.text);
    }
    return thing.thing_key;
  }

  const exportOf = async (key: string, query: Record<string, string | string[]> = {}, token?: string) =>
    ctx.api.request('GET', `/api/v3/things/${key}/events/export`, {
      token: token ?? (await ctx.api.adminToken()),
      query,
    });

  it('when events are exported as ndjson then every event comes once, oldest first, as an attachment', async () => {
    // Posted out of order: the export is in time order.
    const key = await thingWithEvents([
      { timestamp: T0 + 2 * SECOND, data: { t: 2, machine: { status: 'on' } } },
      { timestamp: T0, data: { t: 0, note: 'line\nbreak "quoted"' } },
      { timestamp: T0 + SECOND, data: { t: 1, list: [1, 2] } },
    ]);
    const response = await exportOf(key);
    assert.equal(response.status, 200, response.text);
    assert.equal(response.headers['content-type'], 'application/x-ndjson');
    assert.match(String(response.headers['content-disposition']), /^attachment; filename=".+-events\.ndjson"$/);
    const lines = response.text.split('\n');
    assert.equal(lines.pop(), '', 'the last line ends with a line break');
    assert.deepEqual(
      lines.map((l) => JSON.parse(l)),
      [
        { timestamp: T0 / 1000, data: { t: 0, note: 'line\nbreak "quoted"' } },
        { timestamp: T0 / 1000 + 1, data: { t: 1, list: [1, 2] } },
        { timestamp: T0 / 1000 + 2, data: { t: 2, machine: { status: 'on' } } },
      ],
    );
    const ranged = await exportOf(key, {
      from: '2025/01/01 00:00:01',
      to: '2025-01-01 00:00:02',
      timestamp_format: 'str',
      time_zone: 'UTC',
    });
    assert.deepEqual(
      ranged.text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).timestamp),
      ['2025/01/01 00:00:01', '2025/01/01 00:00:02'],
    );
  });

  it('when events are exported as csv then the header names every dotted metric by name and fields are quoted', async () => {
    const key = await thingWithEvents([
      { timestamp: T0, data: { b: 1, a: 'x,y', machine: { status: 'say "hi"', rpm: 5 } } },
      { timestamp: T0 + SECOND, data: { b: 2.5, flag: true, list: [1, 'two'], gone: null } },
    ]);
    const all = await exportOf(key, { format: 'csv' });
    assert.equal(all.status, 200, all.text);
    assert.equal(all.headers['content-type'], 'text/csv; charset=utf-8');
    assert.match(String(all.headers['content-disposition']), /^attachment; filename=".+-events\.csv"$/);
    assert.equal(
      all.text,
      'timestamp,a,b,flag,gone,list,machine.rpm,machine.status\r\n' +
        `${T0 / 1000},"x,y",1,,,,5,"say ""hi"""\r\n` +
        `${T0 / 1000 + 1},,2.5,true,,"[1,""two""]",,\r\n`,
    );
    const picked = await exportOf(key, { format: 'csv', metrics: 'machine.rpm,b,missing' });
    assert.equal(picked.text, `timestamp,machine.rpm,b,missing\r\n${T0 / 1000},5,1,\r\n${T0 / 1000 + 1},,2.5,\r\n`);
    const repeated = await exportOf(key, { format: 'csv', metrics: ['b', 'a'] });
    assert.equal(repeated.text.split('\r\n')[0], 'timestamp,b,a');
  });

  it('when event data has members whose names hold dots then csv writes their values under those names, nested ones first', async () => {
    const key = await thingWithEvents([
      { timestamp: T0, data: { 'p.q': 1, n: 1 } },
      { timestamp: T0 + SECOND, data: { p: { q: 2 } } },
      { timestamp: T0 + 2 * SECOND, data: { 'x.y': { z: 3 }, x: { w: 4 } } },
      // Both spellings in one event: the nested one, as queries read `p.q`.
      { timestamp: T0 + 3 * SECOND, data: { 'p.q': 5, p: { q: 6 } } },
    ]);
    const all = await exportOf(key, { format: 'csv' });
    assert.equal(all.status, 200, all.text);
    const t = T0 / 1000;
    assert.equal(
      all.text,
      `timestamp,n,p.q,x.w,x.y.z\r\n${t},1,1,,\r\n${t + 1},,2,,\r\n${t + 2},,,4,3\r\n${t + 3},,6,,\r\n`,
    );
    const picked = await exportOf(key, { format: 'csv', metrics: 'x.y.z,p.q' });
    assert.equal(picked.text, `timestamp,x.y.z,p.q\r\n${t},,1\r\n${t + 1},,2\r\n${t + 2},3,\r\n${t + 3},,6\r\n`);
  });

  it('when metrics are given then both formats keep only those metrics of each event, and leave out events with none of them', async () => {
    const key = await thingWithEvents([
      { timestamp: T0, data: { temperature: 20, humidity: 50, machine: { rpm: 5, status: 'on' } } },
      { timestamp: T0 + SECOND, data: { humidity: 51, machine: { status: 'idle' } } },
      { timestamp: T0 + 2 * SECOND, data: { machine: { status: 'off' }, 'p.q': 7 } },
      { timestamp: T0 + 3 * SECOND, data: { temperature: null } },
    ]);
    const t = T0 / 1000;
    const metrics = 'temperature,machine.rpm,p.q';
    const ndjson = await exportOf(key, { format: 'ndjson', metrics });
    assert.equal(ndjson.status, 200, ndjson.text);
    assert.deepEqual(
      ndjson.text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
      [
        { timestamp: t, data: { temperature: 20, machine: { rpm: 5 } } },
        { timestamp: t + 2, data: { 'p.q': 7 } },
        { timestamp: t + 3, data: { temperature: null } },
      ],
    );
    const csv = await exportOf(key, { format: 'csv', metrics });
    assert.equal(csv.status, 200, csv.text);
    assert.equal(csv.text, `timestamp,temperature,machine.rpm,p.q\r\n${t},20,5,\r\n${t + 2},,,7\r\n${t + 3},,,\r\n`);
    const none = await exportOf(key, { format: 'ndjson', metrics: 'missing' });
    assert.equal(none.status, 200, none.text);
    assert.equal(none.text, '', 'no event has the metric');
  });

  it('when text that a spreadsheet runs as a formula is exported as csv then it is written as text, numbers as they are', async () => {
    const key = await thingWithEvents([
      { timestamp: T0, data: { f: '=HYPERLINK("http://x","y")', n: -5, p: '+1', m: '-2', at: '@SUM(A1)' } },
      {
        timestamp: T0 + SECOND,
        data: { f: '\tcmd', n: 3, p: 'plain', m: 'a-b', at: 'x@y', '=name': 1, s: "x;=cmd|' /C calc'!A0" },
      },
    ]);
    const csv = await exportOf(key, { format: 'csv' });
    assert.equal(csv.status, 200, csv.text);
    // A semicolon or a tab is quoted too: spreadsheets in many locales separate fields with it.
    assert.equal(
      csv.text,
      "timestamp,'=name,at,f,m,n,p,s\r\n" +
        `${T0 / 1000},,'@SUM(A1),"'=HYPERLINK(""http://x"",""y"")",'-2,-5,'+1,\r\n` +
        `${T0 / 1000 + 1},1,x@y,"'\tcmd",a-b,3,plain,"x;=cmd|' /C calc'!A0"\r\n`,
    );
    const ndjson = await exportOf(key);
    assert.equal(JSON.parse(ndjson.text.split('\n')[0] as string).data.f, '=HYPERLINK("http://x","y")');
  });

  it('when more events than a page are exported then each comes exactly once in order, in csv and ndjson', async () => {
    const count = EXPORT_PAGE_EVENTS * 2 + 7;
    // Several events share a timestamp across page boundaries: the order is time, then arrival.
    const events = Array.from({ length: count }, (_, i) => ({
      timestamp: T0 + Math.floor(i / 3) * SECOND,
      data: { i },
    }));
    const key = await thingWithEvents(events);
    const ndjson = await exportOf(key);
    const seen = ndjson.text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).data.i as number);
    assert.deepEqual(
      seen,
      events.map((e) => e.data.i),
    );
    const csv = await exportOf(key, { format: 'csv' });
    const rows = csv.text.trim().split('\r\n');
    assert.equal(rows[0], 'timestamp,i');
    assert.equal(rows.length, count + 1);
    assert.equal(rows.at(-1), `${(T0 + Math.floor((count - 1) / 3) * SECOND) / 1000},${count - 1}`);
  });

  it('when an export has no events in its range then ndjson is empty and csv is the header alone', async () => {
    const key = await thingWithEvents([{ timestamp: T0, data: { t: 1 } }]);
    const empty = await exportOf(key, { from: String(T0 / 1000 + 10) });
    assert.equal(empty.status, 200);
    assert.equal(empty.text, '');
    const csv = await exportOf(key, { format: 'csv', from: String(T0 / 1000 + 10) });
    assert.equal(csv.text, 'timestamp\r\n');
  });

  it('when an export is asked badly or by someone who may not then it is refused before anything is sent', async () => {
    const admin = await ctx.api.adminToken();
    const key = await thingWithEvents([{ timestamp: T0, data: { t: 1 } }]);
    const backwards = await exportOf(key, { from: String(T0 / 1000 + 10), to: String(T0 / 1000) });
    assert.equal(backwards.status, 400);
    assert.equal(backwards.body.success, false);
    assert.equal(backwards.body.errors[0].param, 'from');
    const unreadable = await exportOf(key, { to: 'yesterday' });
    assert.equal(unreadable.status, 400);
    assert.equal(unreadable.body.errors[0].param, 'to');
    const format = await exportOf(key, { format: 'xml' });
    assert.equal(format.status, 400);
    const missing = await exportOf('no-such-thing');
    assert.equal(missing.status, 404);
    const noRead = await userWithAbilities(ctx.api, admin, [11]);
    assert.equal((await exportOf(key, {}, noRead.token)).status, 403);
    const reader = await userWithAbilities(ctx.api, admin, [121]);
    assert.equal((await exportOf(key, {}, reader.token)).status, 200);
    // Another organisation's thing does not exist for its neighbour.
    const child = await childOrganisation(ctx.api, admin);
    assert.equal((await exportOf(key, {}, child.token)).status, 404);
    assert.equal((await ctx.api.request('GET', `/api/v3/things/${key}/events/export`)).status, 401);
  });

  it('when the store cannot read the first page of an export then the answer is an error, not a broken stream', async () => {
    const key = await thingWithEvents([{ timestamp: T0, data: { t: 1 } }]);
    const db = ctx.api.server.store.db;
    // The events' table out of the way: the thing is found, its first page cannot be read.
    await sql`alter table events rename to events_away`.execute(db);
    try {
      for (const format of ['ndjson', 'csv']) {
        const response = await exportOf(key, { format });
        assert.equal(response.status, 500, `${format}: ${response.text}`);
        assert.match(String(response.headers['content-type']), /^application\/json/);
        assert.equal(response.body.success, false);
        assert.equal(response.body.errors[0].code, 'internal');
      }
    } finally {
      await sql`alter table events_away rename to events`.execute(db);
    }
    assert.equal((await exportOf(key)).status, 200);
  });

  /**
   * Waits until the export reads no more pages (its client does not read): the same count for half a
   * second, which a loaded machine's pause between two pages does not reach.
   */
  async function settled(): Promise<void> {
    let previous = -1;
    let still = 0;
    for (let i = 0; i < 100 && still < 5; i++) {
      still = exportProgress.pagesRead === previous ? still + 1 : 0;
      previous = exportProgress.pagesRead;
      await sleep(100);
    }
  }

  it('when an event with a new metric is stored during a csv export then the export leaves it out rather than half-written', async () => {
    // About 10 MB of answer: the unread client holds the export in its second pass.
    const events = largeEvents(5000);
    const key = await thingWithEvents(events);
    const token = await ctx.api.adminToken();
    const pagesBefore = exportProgress.pagesRead;
    const client = await pausedGet(ctx.api.url, `/api/v3/things/${key}/events/export?format=csv`, {
      'x-auth-token': token,
    });
    try {
      const firstPass = events.length / EXPORT_PAGE_EVENTS;
      // Past its first pass (a pause of a loaded machine is not the end of it), then held by the client.
      for (let i = 0; i < 300 && exportProgress.pagesRead - pagesBefore <= firstPass; i++) await sleep(50);
      await settled();
      assert.equal(exportProgress.active, 1, 'the export is under way');
      assert.ok(exportProgress.pagesRead - pagesBefore < 2 * firstPass, 'the second pass waits for the client');
      const late = T0 + events.length * SECOND;
      const posted = await ctx.api.request('POST', `/api/v3/things/${key}/events`, {
        token,
        body: { events: [{ timestamp: late, data: { i: events.length, late: 'new metric' } }] },
      });
      assert.equal(posted.status, 200, posted.text);
      const { status, body } = await client.read();
      assert.equal(status, 200);
      const rows = body.trim().split('\r\n');
      assert.equal(rows[0], 'timestamp,filler,i');
      assert.equal(rows.length, events.length + 1, 'the header and the events there were when the export began');
      assert.equal(rows.at(-1), `${(late - SECOND) / 1000},${FILLER},${events.length - 1}`);
      assert.ok(!rows.some((r) => r.startsWith(`${late / 1000},`)), 'the event stored meanwhile is not written');
    } finally {
      client.socket.destroy();
    }
  });

  it('when the client reads slowly the export waits for it, and when it disconnects the export stops', async () => {
    // About 16 MB of answer: four times what the socket buffers between the two ends hold while unread.
    const events = largeEvents(8000);
    const key = await thingWithEvents(events);
    const token = await ctx.api.adminToken();
    const pagesBefore = exportProgress.pagesRead;
    const client = await pausedGet(ctx.api.url, `/api/v3/things/${key}/events/export`, { 'x-auth-token': token });
    try {
      // Not read: the server stops reading pages once the socket is full.
      for (let i = 0; i < 300 && exportProgress.pagesRead === pagesBefore; i++) await sleep(50);
      await settled();
      const pagesWhilePaused = exportProgress.pagesRead - pagesBefore;
      assert.ok(pagesWhilePaused > 0, 'the export began');
      assert.ok(pagesWhilePaused < events.length / EXPORT_PAGE_EVENTS, `read ${pagesWhilePaused} pages unasked`);
      assert.equal(exportProgress.active, 1);
      client.socket.destroy();
      for (let i = 0; i < 100 && exportProgress.active > 0; i++) await sleep(20);
      assert.equal(exportProgress.active, 0, 'the export ended when its client left');
      assert.equal(exportProgress.pagesRead - pagesBefore, pagesWhilePaused, 'no page was read after the client left');
    } finally {
      client.socket.destroy();
    }
  });

  /** A thing with `pages` pages of small events, and the range of every one of them. */
  async function thingOfPages(pages: number) {
    const events = Array.from({ length: pages * EXPORT_PAGE_EVENTS }, (_, i) => ({
      timestamp: T0 + i * SECOND,
      data: { i },
    }));
    const key = await thingWithEvents(events);
    const thing = await ctx.api.server.store.db
      .selectFrom('things')
      .select(['thing_id', 'organisation_key'])
      .where('thing_key', '=', key)
      .executeTakeFirstOrThrow();
    const range = { thingId: Number(thing.thing_id), from: undefined, to: undefined, byCreatedAt: false };
    return { key, organisationKey: thing.organisation_key, range };
  }

  /** An export as the module answers it, for a reader that takes every byte at once. */
  const exported = (thing: { key: string; organisationKey: string }, format: ExportFormat) =>
    exportEvents(
      ctx.api.server.store.db,
      { organisationKeys: [thing.organisationKey], thingKey: thing.key, format },
      STORED_TIME,
    );

  it('when an export is read as fast as it comes then other work is done between its pages', async () => {
    const pages = 6;
    const answer = await exported(await thingOfPages(pages), 'ndjson');
    const pagesBefore = exportProgress.pagesRead;
    // Other work, queued as the export begins: it must not wait for the whole export.
    let pagesWhenServed: number | undefined;
    setImmediate(() => {
      pagesWhenServed = exportProgress.pagesRead - pagesBefore;
    });
    let lines = 0;
    for await (const part of answer.body) lines += String(part).split('\n').length - 1;
    assert.equal(lines, pages * EXPORT_PAGE_EVENTS, 'every event was exported');
    assert.ok(
      pagesWhenServed !== undefined && pagesWhenServed < pages,
      `other work waited for ${pagesWhenServed} pages`,
    );
  });

  it('when events are read in chunks for aggregation then other work is done between the chunks', async () => {
    const chunks = 6;
    const { range } = await thingOfPages(chunks);
    const db = ctx.api.server.store.db;
    let read = 0;
    let chunksWhenServed: number | undefined;
    setImmediate(() => {
      chunksWhenServed = read;
    });
    for await (const chunk of eventChunks(db, range, EXPORT_PAGE_EVENTS)) read += chunk.length > 0 ? 1 : 0;
    assert.equal(read, chunks);
    assert.ok(
      chunksWhenServed !== undefined && chunksWhenServed < chunks,
      `other work waited for ${chunksWhenServed} chunks`,
    );
  });

  it('when events are read in chunks from PostgreSQL then each chunk starts where the last ended in the index', {
    skip: ctx.store.name !== 'postgres' && 'reads the statistics of PostgreSQL',
  }, async () => {
    const chunks = 8;
    const { range } = await thingOfPages(chunks);
    const db = ctx.api.server.store.db;
    // With the statistics autovacuum keeps (of a few rows, the planner reads them all and sorts them).
    await sql`analyze events`.execute(db);
    // The rows the transaction fetched through indexes: a chunk that scans from the thing's first event
    // fetches every event before it again.
    const fetched = await ctx.api.server.store.transaction(async (tx) => {
      // Index scans only: a bitmap scan of the thing's events would fetch them all whatever the bound,
      // and which one the planner picks varies with the table's statistics.
      await sql`set local enable_bitmapscan = off`.execute(tx);
      await sql`set local enable_seqscan = off`.execute(tx);
      const before = await fetchedByIndexes(tx);
      let events = 0;
      for await (const chunk of eventChunks(tx, range, EXPORT_PAGE_EVENTS)) events += chunk.length;
      assert.equal(events, chunks * EXPORT_PAGE_EVENTS);
      return (await fetchedByIndexes(tx)) - before;
    });
    // Read from the start each time, the chunks would fetch 1 + 2 + ... + 8 chunks' worth (4.5 times the events).
    assert.ok(fetched < 3 * chunks * EXPORT_PAGE_EVENTS, `${fetched} rows fetched for ${chunks} chunks`);
  });

  it('when a csv export without metrics is dropped while it looks for its columns then it reads no further', async () => {
    const pages = 10;
    const answer = await exported(await thingOfPages(pages), 'csv');
    const pagesBefore = exportProgress.pagesRead;
    const closed = new Promise((resolve) => answer.body.once('close', resolve));
    answer.body.resume();
    // Dropped at the first turn of other work, as a client's disconnection would be.
    setImmediate(() => answer.body.destroy());
    await closed;
    const read = exportProgress.pagesRead - pagesBefore;
    assert.ok(read < pages, `the first pass read ${read} of ${pages} pages after the export was dropped`);
    assert.equal(exportProgress.active, 0, 'the export ended');
  });

  it('when a csv export without metrics is asked then its status and headers come before the first pass ends', async () => {
    const pages = 10;
    const { key } = await thingOfPages(pages);
    const pagesBefore = exportProgress.pagesRead;
    const response = await fetch(`${ctx.api.url}/api/v3/things/${key}/events/export?format=csv`, {
      headers: { 'x-auth-token': await ctx.api.adminToken() },
    });
    const pagesAtHeaders = exportProgress.pagesRead - pagesBefore;
    await response.body?.cancel();
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'text/csv; charset=utf-8');
    assert.ok(pagesAtHeaders < pages, `the headers came after ${pagesAtHeaders} of the first pass's ${pages} pages`);
    for (let i = 0; i < 100 && exportProgress.active > 0; i++) await sleep(20);
    assert.equal(exportProgress.active, 0, 'the export ended when its client left');
    assert.ok(exportProgress.pagesRead - pagesBefore < 2 * pages, 'the export stopped before its second pass ended');
  });

  it('when the server stops while a client does not read its export then the stop cuts that connection and ends', {
    timeout: 60_000,
  }, async () => {
    const server = await startServer(ctx.store);
    let client: PausedGet | undefined;
    try {
      const token = await server.adminToken();
      const thingKey = await thingWithEvents(largeEvents(5000), token, server);
      client = await pausedGet(server.url, `/api/v3/things/${thingKey}/events/export`, {
        'x-auth-token': token,
      });
      await settled();
      assert.equal(exportProgress.active, 1, 'the export waits for its client');
      await server.close();
      for (let i = 0; i < 100 && exportProgress.active > 0; i++) await sleep(20);
      assert.equal(exportProgress.active, 0, 'the export ended with its connection');
    } finally {
      client?.socket.destroy();
    }
  });
});
