/**
 * The disk-full scenario both stores' fault tests run (docs/operations.md, "When the database fails"):
 * a device load over HTTP and MQTT, the disk filled, then freed. While full: writes refused with 503
 * naming the full disk (with Retry-After; each MQTT refusal naming its message), the process up,
 * /readyz not ready and why, reads and sign-in going on. Once freed: ready again and writes taken again
 * on both transports without a restart; one log line; every acknowledged event stored once.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Device, type KeyPair } from './device.ts';
import { FaultLoad, p99, statusCounts, storedNumbers, tally, until, within } from './fault-load.ts';
import { call } from './http.ts';
import { MqttDevice } from './mqtt-device.ts';
import type { ServerProcess } from './process.ts';

export interface DiskFullRun {
  server: ServerProcess;
  mqttPort: number;
  admin: { THINGBASE_ADMIN_EMAIL: string; THINGBASE_ADMIN_PASSWORD: string };
  thingKey: string;
  /** What the printed figures are labelled with, such as `sqlite`. */
  label: string;
  disk: { fill(): void; free(): void };
  /** Called with the load as it starts, so that a test that fails midway can halt it. */
  started(load: FaultLoad): void;
}

export async function diskFillsUnderLoad(run: DiskFullRun): Promise<void> {
  const { server, admin, thingKey, disk } = run;
  const signIn = () =>
    within(
      10_000,
      'sign-in',
      call(server.url, 'POST', '/api_sign_in', {
        body: { email: admin.THINGBASE_ADMIN_EMAIL, password: admin.THINGBASE_ADMIN_PASSWORD },
      }),
    );
  const token = (await signIn()).body.auth_token as string;
  const pair = await call(server.url, 'POST', '/api/v3/key_pairs', { token, body: { key_pair: { name: 'disk' } } });
  const keyPair = pair.body.key_pair as KeyPair;
  const device = new Device(server.url, keyPair);
  assert.equal((await device.register({ thing_key: thingKey })).status, 200);
  const mqttDevice = await within(
    10_000,
    'an MQTT device connecting',
    MqttDevice.connect(`mqtt://127.0.0.1:${run.mqttPort}`, keyPair, { connectTimeout: 2000 }),
  );
  const ready = () => within(5000, 'GET /readyz', call(server.url, 'GET', '/readyz'));

  const load = new FaultLoad(thingKey);
  run.started(load);
  load.http(device);
  load.mqtt(mqttDevice);
  await sleep(1500);

  disk.fill();
  const filledAt = Date.now();
  // The load fills what pages had room left; then a table must grow, and cannot.
  const refusedAt = await until(
    'a refusal',
    async () => load.between(filledAt).some((a) => a.transport === 'http' && a.status !== 200),
    60_000,
  );
  await sleep(2000);
  // While full: the process answers, says it is not ready and why, reads go on, sign-in is no 500.
  assert.equal((await within(5000, 'GET /healthz', call(server.url, 'GET', '/healthz'))).status, 200);
  const readyStart = Date.now();
  const notReady = await ready();
  assert.ok(Date.now() - readyStart < 1000, '/readyz answers within a second');
  assert.equal(notReady.status, 503, notReady.text);
  assert.match(notReady.body.reasons.join(' '), /storage is full/);
  assert.equal((await within(5000, 'a read', call(server.url, 'GET', '/api/v3/things', { token }))).status, 200);
  const signInWhileFull = await signIn();
  assert.ok([200, 503].includes(signInWhileFull.status), `sign-in answered ${signInWhileFull.status}`);

  disk.free();
  const freedAt = Date.now();
  const readyAgainAt = await until('ready again', async () => (await ready()).status === 200);
  const writingAgainAt = await until('a write taken again', async () =>
    load.between(freedAt).some((a) => a.transport === 'http' && a.status === 200),
  );
  await until('an MQTT write taken again', async () =>
    load.between(freedAt).some((a) => a.transport === 'mqtt' && a.status === 200),
  );
  await sleep(1000);
  await within(15_000, 'the load stopping', load.stop());
  await within(5000, 'the MQTT device closing', mqttDevice.close());

  assert.equal(server.child.exitCode, null, 'the process is up');
  const full = load.between(refusedAt, freedAt);
  assert.ok(
    full.some((a) => a.status !== 200),
    'writes were refused while full',
  );
  for (const a of load.answers.filter((x) => x.status !== 200)) {
    assert.equal(a.status, 503, `${a.transport} answer ${a.status} ${a.error}`);
    assert.match(a.error ?? '', /^unavailable: storage is full/, `${a.transport} answer names the full disk`);
    assert.notEqual(a.n, -1, 'an MQTT refusal names its message by its hash');
    if (a.transport === 'http') assert.ok(Number(a.retryAfter) >= 1, 'with Retry-After');
  }
  assert.ok(
    full.some((a) => a.transport === 'mqtt' && a.status === 503),
    `MQTT messages were refused too: ${JSON.stringify(statusCounts(full.filter((a) => a.transport === 'mqtt')))}`,
  );
  const log = server.output();
  assert.equal(log.match(/disk of the database is full/g)?.length, 1, log);
  assert.doesNotMatch(log, /cannot rollback/);

  const stored = await within(30_000, 'reading the stored events', storedNumbers(server.url, token, thingKey));
  const counts = tally(load, stored);
  assert.equal(counts.missing, 0, 'every acknowledged event is stored');
  assert.equal(counts.duplicated, 0, 'none twice');
  process.stdout.write(
    `# disk full [${run.label}]: ${JSON.stringify({
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
}
