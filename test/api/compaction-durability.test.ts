import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { EventCompactor } from '../../src/events/compactor.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { call } from '../support/http.ts';
import { serveProcess, stopProcess } from '../support/process.ts';
import { STORES, storeEnv } from '../support/stores.ts';

const ADMIN = { THINGBASE_ADMIN_EMAIL: 'compact@example.com', THINGBASE_ADMIN_PASSWORD: 'durable password' };
const HOUR = 3_600_000;
/** Events 10 s apart over 150 hours: 150 blocks of 360 events. */
const EVENTS = 54_000;

async function signIn(url: string) {
  const session = await call(url, 'POST', '/api_sign_in', {
    body: { email: ADMIN.THINGBASE_ADMIN_EMAIL, password: ADMIN.THINGBASE_ADMIN_PASSWORD },
  });
  assert.equal(session.status, 200, session.text);
  return session.body.auth_token as string;
}

/** The events stored as rows and in blocks, and the blocks, read beside the server. */
async function stored(store: Store) {
  const rows = await store.db
    .selectFrom('events')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  const blocks = await store.db
    .selectFrom('event_blocks')
    .select((eb) => [
      eb.fn.countAll().as('blocks'),
      eb.fn.coalesce(eb.fn.sum<number>('event_count'), eb.lit(0)).as('n'),
    ])
    .executeTakeFirstOrThrow();
  return { rows: Number(rows.n), compacted: Number(blocks.n), blocks: Number(blocks.blocks) };
}

for (const storeCase of STORES) {
  describe(`the event compactor survives a crash [${storeCase.name}]`, { skip: storeCase.skip }, () => {
    it('when the server is killed (SIGKILL) while compacting then no event is lost and none is answered twice', async () => {
      const settings = storeCase.fresh();
      const env = { ...ADMIN, ...storeEnv(settings) };
      const start = Math.floor((Date.now() - 200 * HOUR) / HOUR) * HOUR;
      const events = Array.from({ length: EVENTS }, (_, n) => ({
        timestamp: start + n * 10_000,
        data: { n, temperature: 20 + (n % 37) / 10, state: n % 5 === 0 ? 'idle' : 'run' },
      }));
      let thingKey = '';
      const loading = await serveProcess({ ...env, EVENT_COMPACTION_INTERVAL: '0' });
      try {
        const token = await signIn(loading.url);
        const templates = await call(loading.url, 'GET', '/api/v3/thing_templates', { token });
        const thing = await call(loading.url, 'POST', '/api/v3/things', {
          token,
          body: {
            thing: { name: 'compacted', thing_template_key: templates.body.thing_templates[0].thing_template_key },
          },
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
      } finally {
        await stopProcess(loading.child);
      }

      const beside = await openStore({ databaseUrl: settings.databaseUrl, schema: settings.databaseSchema });
      try {
        assert.deepEqual(await stored(beside), { rows: EVENTS, compacted: 0, blocks: 0 });
        // Compacts a second after it starts; killed as soon as the first blocks are seen.
        const compacting = await serveProcess({ ...env, EVENT_COMPACTION_AGE: '1h', EVENT_COMPACTION_INTERVAL: '1' });
        let seen = await stored(beside);
        for (let i = 0; i < 3000 && seen.blocks === 0; i++) {
          await sleep(2);
          seen = await stored(beside);
        }
        await stopProcess(compacting.child, 'SIGKILL');
        const killed = await stored(beside);
        assert.ok(killed.blocks > 0, 'the compaction had begun');
        assert.ok(killed.rows > 0, `killed part way (${killed.rows} rows left)`);
        assert.equal(killed.rows + killed.compacted, EVENTS, 'each event a row or in one block, never both or neither');

        const after = await serveProcess({ ...env, EVENT_COMPACTION_INTERVAL: '0' });
        try {
          const token = await signIn(after.url);
          const data = await call(after.url, 'POST', '/api/v3/query/thing_data', {
            token,
            body: { thing_key: thingKey, per: 1000, page: 3, order: 'asc' },
          });
          assert.equal(data.status, 200, data.text);
          assert.equal(data.body[thingKey].total_event_count, EVENTS);
          assert.deepEqual(
            (data.body[thingKey].event_data as { data: { n: number } }[]).map((e) => e.data.n),
            events.slice(2000, 3000).map((e) => e.data.n),
          );
          const exported = await call(after.url, 'GET', `/api/v3/things/${thingKey}/events/export`, { token });
          const answered = exported.text
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l));
          assert.equal(answered.length, EVENTS, 'every event once');
          assert.deepEqual(
            answered.map((e) => e.data),
            events.map((e) => e.data),
            'in order, as stored',
          );
        } finally {
          await stopProcess(after.child);
        }
        // The next pass goes on from there to the end (here at full speed, beside the server).
        await new EventCompactor(beside, { ageMs: HOUR, share: 1 }).compact();
        assert.deepEqual(await stored(beside), { rows: 0, compacted: EVENTS, blocks: 150 });
      } finally {
        await beside.close();
        await storeCase.dispose(settings);
      }
    });
  });
}
