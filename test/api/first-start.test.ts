import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { call } from '../support/http.ts';
import { serveProcess, stopProcess } from '../support/process.ts';

/** Runs `thingbase serve` and lets the rest of its start-up message arrive. */
async function serve(env: Record<string, string>) {
  const server = await serveProcess(env);
  await new Promise((resolve) => setTimeout(resolve, 200));
  return { child: server.child, url: server.url, output: server.output() };
}

async function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await stopProcess(child);
  return exited;
}

describe('first start of thingbase serve', () => {
  it('when the store is empty then an admin is made and its password printed once, and it can sign in', async () => {
    const databaseUrl = `sqlite:${join(mkdtempSync(join(tmpdir(), 'thingbase-first-')), 'data', 'thingbase.db')}`;
    const first = await serve({ DATABASE_URL: databaseUrl });
    const password = /shown only this once: (\S+)/.exec(first.output)?.[1];
    assert.ok(password, first.output);
    assert.match(first.output, /admin@localhost/);
    const session = await call(first.url, 'POST', '/api_sign_in', { body: { email: 'admin@localhost', password } });
    assert.equal(session.status, 200, session.text);
    assert.equal(session.body.organisation.name, 'Default');
    assert.equal(await stop(first.child), 0, 'SIGTERM shuts down cleanly');

    const second = await serve({ DATABASE_URL: databaseUrl });
    assert.doesNotMatch(second.output, /shown only this once/);
    const again = await call(second.url, 'POST', '/api_sign_in', { body: { email: 'admin@localhost', password } });
    assert.equal(again.status, 200, 'the same admin, kept across restarts');
    await stop(second.child);
  });

  it('when THINGBASE_ADMIN_EMAIL and PASSWORD are set then that admin and organisation name are used', async () => {
    const databaseUrl = `sqlite:${join(mkdtempSync(join(tmpdir(), 'thingbase-first-')), 'thingbase.db')}`;
    const { child, url, output } = await serve({
      DATABASE_URL: databaseUrl,
      THINGBASE_ADMIN_EMAIL: 'ops@example.com',
      THINGBASE_ADMIN_PASSWORD: 'chosen password',
      THINGBASE_ORG_NAME: 'Plant 7',
    });
    try {
      assert.doesNotMatch(output, /shown only this once/);
      assert.doesNotMatch(output, /chosen password/);
      const session = await call(url, 'POST', '/api_sign_in', {
        body: { email: 'ops@example.com', password: 'chosen password' },
      });
      assert.equal(session.status, 200);
      assert.equal(session.body.organisation.name, 'Plant 7');
    } finally {
      await stop(child);
    }
  });

  it('when the configuration is wrong then it exits with a clear message', async () => {
    await assert.rejects(
      serve({ DATABASE_URL: 'mysql://nope' }),
      /DATABASE_URL must start with sqlite: or postgres:\/\//,
    );
    await assert.rejects(serve({ PORT: 'eighty' }), /PORT must be a port number/);
  });
});
