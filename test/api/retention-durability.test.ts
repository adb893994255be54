import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
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

/** The events stored and the thing's own count of them, read beside the server. */
async function storedCounts(store: Store) {
  const events = await store.db
    .selectFrom('events')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  const thing = await store.db.selectFrom('things').select('event_count').executeTakeFirstOrThrow();
  return { events: Number(events.n), counted: Number(thing.event_count) };
}

for (const storeCase of STORES) {
  describe(`the retention sweeper survives a crash [${storeCase.name}]`, { skip: storeCase.skip }, () => {
    it('when the server is killed (SIGKILL) while sweeping then no kept event is lost and none is answered twice', async () => {
      const settings = storeCase.fresh();
      const env = { ...ADMIN, ...storeEnv(settings) };
      const now = Date.now();
      // Expired: a minute apart, 60 to 100 days ago. Kept: a second apart, over the last hours.
      const events = [
        ...Array.from({ length: EXPIRED }, (_, n) => ({ timestamp: now - 100 * DAY + n * 60_000, data: { n } })),
        ...Array.from({ length: KEPT }, (_, i) => ({
          timestamp: now - 3 * 3_600_000 + i * 1000,
          data: { n: EXPIRED + i },
        })),
      ];
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
