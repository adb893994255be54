/**
 * The SQLite store's disk fills up under a device load, then space comes back (docs/operations.md,
 * "When the database fails"): writes are refused with 503 naming the full disk, each MQTT message
 * answered with its own hash; reads and the process go on; /readyz says so; one log line; writes are
 * taken again without a restart; every acknowledged event is stored once.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Device, type KeyPair } from '../support/device.ts';
import { FaultLoad, p99, statusCounts, storedNumbers, tally } from '../support/fault-load.ts';
import { sqliteDisk } from '../support/faults.ts';
import { call } from '../support/http.ts';
import { MqttDevice } from '../support/mqtt-device.ts';
import { freePort } from '../support/ports.ts';
import { type ServerProcess, serveProcess, stopProcess } from '../support/process.ts';

const ADMIN = { THINGBASE_ADMIN_EMAIL: 'ops@example.com', THINGBASE_ADMIN_PASSWORD: 'disk full password' };
const THING = 'disk-1';

const small = sqliteDisk(48);

async function until(what: string, check: () => Promise<boolean>, withinMs = 15_000): Promise<number> {
  const start = Date.now();
  while (!(await check())) {
    if (Date.now() - start > withinMs) throw new Error(`${what} did not happen within ${withinMs} ms`);
    await sleep(50);
  }
  return Date.now();
}

describe(`the SQLite disk fills up under load (${small.kind}) [sqlite]`, () => {
  let server: ServerProcess;
  let mqttPort: number;
  /** The load under way, halted after a test that failed midway. */
  let running: FaultLoad | undefined;
  before(async () => {
    mqttPort = await freePort();
    server = await serveProcess({
      ...ADMIN,
      DATABASE_URL: `sqlite:${join(small.dir, 'thingbase.db')}`,
      MQTT_PORT: String(mqttPort),
      ...small.env,
    });
  });
  after(async () => {
    running?.halt();
    if (server) await stopProcess(server.child);
    small.remove();
  });

  it('when the disk is full then writes are refused with 503 naming it, reads go on, and writes are taken again once space comes back', async () => {
    const signIn = () =>
      call(server.url, 'POST', '/api_sign_in', {
        body: { email: ADMIN.THINGBASE_ADMIN_EMAIL, password: ADMIN.THINGBASE_ADMIN_PASSWORD },
      });
    const token = (await signIn()).body.auth_token as string;
    const pair = await call(server.url, 'POST', '/api/v3/key_pairs', { token, body: { key_pair: { name: 'disk' } } });
    const keyPair = pair.body.key_pair as KeyPair;
    const device = new Device(server.url, keyPair);
    assert.equal((await device.register({ thing_key: THING })).status, 200);
    const mqttDevice = await MqttDevice.connect(`mqtt://127.0.0.1:${mqttPort}`, keyPair);

    const load = new FaultLoad(THING);
    running = load;
    load.http(device);
    load.mqtt(mqttDevice);
    await sleep(1500);

    small.fill();
    const filledAt = Date.now();
    const refusedAt = await until('a refusal', async () =>
      load.between(filledAt).some((a) => a.transport === 'http' && a.status !== 200),
    );
    await sleep(2000);
    // While full: the process answers, says it is not ready and why, reads go on, sign-in is no 500.
    assert.equal((await call(server.url, 'GET', '/healthz')).status, 200);
    const readyStart = Date.now();
    const ready = await call(server.url, 'GET', '/readyz');
    assert.ok(Date.now() - readyStart < 1000, '/readyz answers within a second');
    assert.equal(ready.status, 503, ready.text);
    assert.match(ready.body.reasons.join(' '), /storage is full/);
    assert.equal((await call(server.url, 'GET', '/api/v3/things', { token })).status, 200);
    const signInWhileFull = await signIn();
    assert.ok([200, 503].includes(signInWhileFull.status), `sign-in answered ${signInWhileFull.status}`);

    small.free();
    const freedAt = Date.now();
    const readyAgainAt = await until(
      'ready again',
      async () => (await call(server.url, 'GET', '/readyz')).status === 200,
    );
    const writingAgainAt = await until('a write taken again', async () =>
      load.between(freedAt).some((a) => a.transport === 'http' && a.status === 200),
    );
    await sleep(1000);
    await load.stop();
    await mqttDevice.close();

    assert.equal(server.child.exitCode, null, 'the process is up');
    const full = load.between(refusedAt, freedAt);
    const refusals = full.filter((a) => a.status !== 200);
    assert.ok(refusals.length > 0);
    for (const a of load.answers.filter((x) => x.status !== 200)) {
      assert.equal(a.status, 503, `${a.transport} answer ${a.status} ${a.error}`);
      assert.match(a.error ?? '', /^unavailable: storage is full/, `${a.transport} answer names the full disk`);
      assert.notEqual(a.n, -1, 'an MQTT refusal names its message by its hash');
      if (a.transport === 'http') assert.ok(Number(a.retryAfter) >= 1, 'with Retry-After');
    }
    assert.ok(
      load.between(refusedAt, freedAt).some((a) => a.transport === 'mqtt' && a.status === 503),
      'MQTT messages were refused too',
    );
    const log = server.output();
    assert.equal(log.match(/disk of the database is full/g)?.length, 1, log);
    assert.doesNotMatch(log, /cannot rollback/);

    const counts = tally(load, await storedNumbers(server.url, token, THING));
    assert.equal(counts.missing, 0, 'every acknowledged event is stored');
    assert.equal(counts.duplicated, 0, 'none twice');
    process.stdout.write(
      `# disk full [sqlite]: ${JSON.stringify({
        refusals: statusCounts(full),
        p99Ms: {
          http: p99(full.filter((a) => a.transport === 'http')),
          mqtt: p99(full.filter((a) => a.transport === 'mqtt')),
        },
        readyAgainMs: readyAgainAt - freedAt,
        writingAgainMs: writingAgainAt - freedAt,
        ...counts,
      })}\n`,
    );
  });
});
