import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Device, type KeyPair } from '../support/device.ts';
import { call } from '../support/http.ts';
import { serveProcess, stopProcess } from '../support/process.ts';
import { STORES } from '../support/stores.ts';

const ADMIN = { THINGBASE_ADMIN_EMAIL: 'ops@example.com', THINGBASE_ADMIN_PASSWORD: 'durable password' };

for (const store of STORES) {
  describe(`acknowledged events survive a crash [${store.name}]`, { skip: store.skip }, () => {
    it('when the server is killed (SIGKILL) right after acknowledging events then every acknowledged event is there after restart', async () => {
      const settings =
        store.name === 'sqlite'
          ? { databaseUrl: `sqlite:${join(mkdtempSync(join(tmpdir(), 'thingbase-kill-')), 'db.sqlite')}` }
          : store.fresh();
      const env = {
        ...ADMIN,
        DATABASE_URL: settings.databaseUrl,
        ...(settings.databaseSchema ? { DATABASE_SCHEMA: settings.databaseSchema } : {}),
      };
      const first = await serveProcess(env);
      try {
        const session = await call(first.url, 'POST', '/api_sign_in', {
          body: { email: ADMIN.THINGBASE_ADMIN_EMAIL, password: ADMIN.THINGBASE_ADMIN_PASSWORD },
        });
        const token = session.body.auth_token as string;
        const pair = await call(first.url, 'POST', '/api/v3/key_pairs', {
          token,
          body: { key_pair: { name: 'crash test' } },
        });
        const device = new Device(first.url, pair.body.key_pair as KeyPair);
        assert.equal((await device.register({ thing_key: 'crash-1' })).status, 200);

        // Many devices' requests in flight at once; the process dies as soon as enough are acknowledged.
        const acknowledged: number[] = [];
        let sent = 0;
        let killed = false;
        const sender = async () => {
          while (!killed) {
            const n = sent++;
            try {
              const response = await device.event({
                thing_key: 'crash-1',
                timestamp: 1_700_000_000_000 + n,
                data: { n },
              });
              if (response.status === 200) acknowledged.push(n);
            } catch {
              return; // the connection died with the process
            }
            if (acknowledged.length >= 300 && !killed) {
              killed = true;
              first.child.kill('SIGKILL');
            }
          }
        };
        await Promise.all(Array.from({ length: 20 }, sender));
        await stopProcess(first.child, 'SIGKILL');
        assert.ok(acknowledged.length >= 300, `only ${acknowledged.length} acknowledged`);

        const second = await serveProcess(env);
        try {
          const again = await call(second.url, 'POST', '/api_sign_in', {
            body: { email: ADMIN.THINGBASE_ADMIN_EMAIL, password: ADMIN.THINGBASE_ADMIN_PASSWORD },
          });
          const data = await call(second.url, 'POST', '/api/v3/query/thing_data', {
            token: again.body.auth_token,
            body: { thing_key: 'crash-1', per: 10_000 },
          });
          assert.equal(data.status, 200, data.text);
          const stored = new Set((data.body['crash-1'].event_data as { data: { n: number } }[]).map((e) => e.data.n));
          const lost = acknowledged.filter((n) => !stored.has(n));
          assert.deepEqual(lost, [], `${lost.length} acknowledged events were lost`);
        } finally {
          await stopProcess(second.child);
        }
      } finally {
        await stopProcess(first.child, 'SIGKILL');
        await store.dispose(settings);
      }
    });
  });
}
