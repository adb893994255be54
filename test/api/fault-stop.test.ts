/**
 * A stop (SIGTERM) while PostgreSQL hangs (docs/deployment.md, "Stopping"): every step of the stop is
 * bounded, so the process exits within seconds, its log naming the steps that did not finish; a
 * second signal ends it at once. The database is made to hang by a proxy in front of it that stops
 * forwarding (support/hanging-proxy.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { within } from '../support/fault-load.ts';
import { type HangingProxy, hangingProxy } from '../support/hanging-proxy.ts';
import { call } from '../support/http.ts';
import { type ServerProcess, serveProcess, stopProcess } from '../support/process.ts';
import { POSTGRES_URL, STORES, storeEnv } from '../support/stores.ts';

const postgres = STORES.find((s) => s.name === 'postgres');
const ADMIN = { THINGBASE_ADMIN_EMAIL: 'ops@example.com', THINGBASE_ADMIN_PASSWORD: 'stop fault password' };

describe('a stop while the database hangs [postgres]', { skip: postgres?.skip ?? 'no PostgreSQL case' }, () => {
  let proxy: HangingProxy;
  const made: { databaseUrl: string; databaseSchema?: string }[] = [];
  before(async () => {
    const target = new URL(POSTGRES_URL);
    proxy = await hangingProxy({ host: target.hostname, port: Number(target.port || 5432) });
  });
  after(async () => {
    proxy?.resume();
    await proxy?.close();
    for (const settings of made) await postgres?.dispose(settings);
  });

  /**
   * A server on a fresh schema through the proxy, which made a request of each kind (so that it has
   * counts to flush); a statement waits at most `statementTimeoutMs` for the database.
   */
  async function busyServer(statementTimeoutMs = 1000): Promise<ServerProcess> {
    proxy.resume();
    const settings = (postgres as NonNullable<typeof postgres>).fresh();
    made.push(settings);
    const url = new URL(settings.databaseUrl);
    url.host = `127.0.0.1:${proxy.port}`;
    const server = await within(
      60_000,
      'starting thingbase',
      serveProcess({
        ...ADMIN,
        ...storeEnv({ ...settings, databaseUrl: url.toString() }),
        DATABASE_STATEMENT_TIMEOUT_MS: String(statementTimeoutMs),
      }),
    );
    const signIn = await call(server.url, 'POST', '/api_sign_in', {
      body: { email: ADMIN.THINGBASE_ADMIN_EMAIL, password: ADMIN.THINGBASE_ADMIN_PASSWORD },
    });
    assert.equal(signIn.status, 200, signIn.text);
    const things = await call(server.url, 'GET', '/api/v3/things', { token: signIn.body.auth_token });
    assert.equal(things.status, 200, things.text);
    // The background work (no-data checks every second, deliveries) is under way when the database stops.
    await sleep(1500);
    return server;
  }

  const exitOf = (server: ServerProcess) =>
    new Promise<number | null>((resolve) => server.child.once('exit', (code) => resolve(code)));

  it('when the server is sent SIGTERM while the database hangs then it exits within seconds, naming any step that did not finish', {
    timeout: 120_000,
  }, async () => {
    const server = await busyServer();
    try {
      proxy.pause();
      await sleep(1500);
      const exited = exitOf(server);
      const stoppedAt = Date.now();
      server.child.kill('SIGTERM');
      // Before, it waited for ever (the background work's statements, the store's connections).
      const code = await within(25_000, 'the stop', exited);
      const ms = Date.now() - stoppedAt;
      assert.equal(code, 0, server.output());
      assert.ok(ms < 20_000, `stopped in ${ms} ms`);
      // Background work bounds its own statements, so most steps end in time; any that does not is named.
      const overran = server.output().match(/stopping: .+? did not finish/g) ?? [];
      for (const line of overran) assert.match(line, /^stopping: (the [a-z -]+|[a-z -]+) did not finish/);
      process.stdout.write(`# stop while the database hangs: ${ms} ms; ${overran.join('; ')}\n`);
    } finally {
      await stopProcess(server.child, 'SIGKILL');
    }
  });

  it('when a second SIGTERM comes during a stop that waits for the database then the process exits at once', {
    timeout: 120_000,
  }, async () => {
    // Statements that wait 20 s: the stop is still waiting when the second signal comes (with 1 s, as
    // above, the stop may end on its own by then).
    const server = await busyServer(20_000);
    try {
      proxy.pause();
      await sleep(1500);
      const exited = exitOf(server);
      server.child.kill('SIGTERM');
      await sleep(1000);
      assert.equal(server.child.exitCode, null, 'still stopping: the database holds a step');
      const againAt = Date.now();
      server.child.kill('SIGTERM');
      const code = await within(5000, 'the exit after the second signal', exited);
      assert.equal(code, 1);
      assert.ok(Date.now() - againAt < 2000, `exited ${Date.now() - againAt} ms after the second signal`);
      assert.match(server.output(), /SIGTERM received again: exiting without finishing the stop \(waiting for /);
    } finally {
      await stopProcess(server.child, 'SIGKILL');
    }
  });
});
