import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { partitionOf, partitions } from '../../src/events/partitions.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { call } from '../support/http.ts';
import { serveProcess, stopProcess } from '../support/process.ts';
import { STORES, storeEnv } from '../support/stores.ts';

const ADMIN = { THINGBASE_ADMIN_EMAIL: 'sweep@example.com', THINGBASE_ADMIN_PASSWORD: 'durable password' };
const DAY = 86_400_000;
const EXPIRED = 60_000;
const KEPT = 5_000;

async function signIn(url: string) {
  const session = await call(url, 'POST', '/api_sign_in', {
    body: { email: ADMIN.THINGBASE_ADMIN_EMAIL, password: ADMIN.THINGBASE_ADMIN_PASSWORD },
  });
  assert.equal(session.status, 200, session.text);
  return { token: session.body.auth_token as string, organisationKey: session.body.organisation.organisation_key };
}

/**
 * The events stored (as rows and in blocks) and the thing's own count of them, read beside the server
 * in one statement, so both are of the same moment.
 */
async function storedCounts(store: Store) {
  const { rows } = await sql<{ event_count: number; stored: number }>`
    select t.event_count,
      (select count(*) from events e where e.thing_id = t.thing_id)
        + (select coalesce(sum(b.event_count), 0) from event_blocks b where b.thing_id = t.thing_id) as stored
    from things t`.execute(store.db);
  const thing = rows[0] as { event_count: number; stored: number };
  return { events: Number(thing.stored), counted: Number(thing.event_count) };
}

/**
 * Expired events, then kept ones a second apart over the last hours, and the server's settings for
 * storing them. Over rows: a minute apart, 60 to 100 days ago, swept in chunked deletes. Over blocks
 * (PostgreSQL): half an hour of them at the start of each of 24 months before the last, each month a
 * partition the sweep drops whole (docs/storage.md, "Partitions").
 */
function sweptEvents(partitioned: boolean) {
  const now = Date.now();
  const month = (ago: number) => Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth() - ago, 1);
  const expired = partitioned
    ? Array.from({ length: EXPIRED }, (_, n) => ({
        timestamp: month(2 + (n % 24)) + Math.floor(n / 24) * 1000,
        data: {},
      }))
        .sort((a, b) => a.timestamp - b.timestamp)
        .map((e, n) => ({ ...e, data: { n } }))
    : Array.from({ length: EXPIRED }, (_, n) => ({ timestamp: now - 100 * DAY + n * 60_000, data: { n } }));
  const kept = Array.from({ length: KEPT }, (_, i) => ({
    timestamp: now - 3 * 3_600_000 + i * 1000,
    data: { n: EXPIRED + i },
  }));
  const env: Record<string, string> = partitioned ? { EVENT_COMPACTION_AGE: '0' } : {};
  return { events: [...expired, ...kept], env };
}

const CASES = STORES.flatMap((storeCase) => [
  { storeCase, partitioned: false, name: storeCase.name },
  ...(storeCase.name === 'postgres' ? [{ storeCase, partitioned: true, name: 'postgres, partitions dropped' }] : []),
]);

for (const { storeCase, partitioned, name } of CASES) {
  describe(`the retention sweeper survives a crash [${name}]`, { skip: storeCase.skip }, () => {
    it('when the server is killed (SIGKILL) while sweeping then no kept event is lost and none is answered twice', async () => {
      const settings = storeCase.fresh();
      const swept = sweptEvents(partitioned);
      const env = { ...ADMIN, ...storeEnv(settings), ...swept.env };
      const events = swept.events;
      let thingKey = '';
      const loading = await serveProcess({ ...env, RETENTION_SWEEP_INTERVAL: '0' });
      try {
        const { token, organisationKey } = await signIn(loading.url);
        const templates = await call(loading.url, 'GET', '/api/v3/thing_templates', { token });
        const thing = await call(loading.url, 'POST', '/api/v3/things', {
          token,
          body: { thing: { name: 'swept', thing_template_key: templates.body.thing_templates[0].thing_template_key } },
        });
        assert.equal(thing.status, 200, thing.text);
        thingKey = thing.body.thing.thing_key;
        for (let i = 0; i < events.length; i += 10_000) {
          const posted = await call(loading.url, 'POST', `/api/v3/things/${thingKey}/events`, {
            token,
            body: { events: events.slice(i, i + 10_000) },
          });
          assert.equal(posted.status, 200, posted.text);
        }
        const retention = await call(loading.url, 'PUT', `/api/v3/organisations/${organisationKey}`, {
          token,
          body: { organisation: { retention_days: 30 } },
        });
        assert.equal(retention.status, 200, retention.text);
      } finally {
        await stopProcess(loading.child);
      }

      const beside = await openStore({ databaseUrl: settings.databaseUrl, schema: settings.databaseSchema });
      try {
        assert.deepEqual(await storedCounts(beside), { events: EXPIRED + KEPT, counted: EXPIRED + KEPT });
        // Sweeps a second after it starts; killed as soon as the first deletes are seen.
        const sweeping = await serveProcess({ ...env, RETENTION_SWEEP_INTERVAL: '1' });
        let seen = EXPIRED + KEPT;
        for (let i = 0; i < 3000 && seen === EXPIRED + KEPT; i++) {
          seen = (await storedCounts(beside)).events;
          if (seen === EXPIRED + KEPT) await sleep(2);
        }
        await stopProcess(sweeping.child, 'SIGKILL');
        const killed = await storedCounts(beside);
        assert.ok(killed.events < EXPIRED + KEPT, 'the sweep had begun');
        assert.ok(killed.events > KEPT, `killed part way (${killed.events} events left)`);
        assert.equal(
          killed.counted,
          killed.events,
          'the count went down with every committed delete, and only with them',
        );

        const after = await serveProcess({ ...env, RETENTION_SWEEP_INTERVAL: '0' });
        try {
          const { token } = await signIn(after.url);
          const data = await call(after.url, 'POST', '/api/v3/query/thing_data', {
            token,
            body: { thing_key: thingKey, per: 10_000, order: 'asc' },
          });
          assert.equal(data.status, 200, data.text);
          assert.equal(data.body[thingKey].total_event_count, KEPT);
          const answered = (data.body[thingKey].event_data as { data: { n: number } }[]).map((e) => e.data.n);
          assert.deepEqual(
            answered,
            events.slice(EXPIRED).map((e) => e.data.n),
            'every kept event once, in order',
          );
          const exported = await call(after.url, 'GET', `/api/v3/things/${thingKey}/events/export`, { token });
          assert.deepEqual(
            exported.text
              .trim()
              .split('\n')
              .map((l) => JSON.parse(l).data.n),
            answered,
          );
        } finally {
          await stopProcess(after.child);
        }
        // A sweep that runs to its end leaves exactly the kept events.
        const finishing = await serveProcess({ ...env, RETENTION_SWEEP_INTERVAL: '1' });
        try {
          let left = await storedCounts(beside);
          for (let i = 0; i < 600 && left.events > KEPT; i++) {
            await sleep(50);
            left = await storedCounts(beside);
          }
          assert.deepEqual(left, { events: KEPT, counted: KEPT });
          if (partitioned) {
            // Dropped whole, not emptied: only the partitions of the kept events' times are left.
            const months = (await partitions(beside.db)).map((p) => p.name);
            assert.deepEqual(months, [...new Set(events.slice(EXPIRED).map((e) => partitionOf(e.timestamp).name))]);
          }
        } finally {
          await stopProcess(finishing.child);
        }
      } finally {
        await beside.close();
        await storeCase.dispose(settings);
      }
    });
  });
}
