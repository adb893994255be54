/**
 * PostgreSQL's disk fills up under a device load, then space comes back (docs/operations.md, "When the
 * database fails"): a private cluster whose database lives in a tablespace on a small tmpfs (its WAL
 * on the big disk, as a database on a disk of its own has it), filled by a file beside it. Writes are
 * refused with 503 naming the full disk and Retry-After, each MQTT message answered with its own
 * hash; reads and the process go on; /readyz says so; writes are taken again without a restart; every
 * acknowledged event is stored once.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chownSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { Device, type KeyPair } from '../support/device.ts';
import { FaultLoad, p99, statusCounts, storedNumbers, tally, until, within } from '../support/fault-load.ts';
import {
  type PrivatePostgres,
  postgresFaultSkip,
  privatePostgres,
  type SmallDisk,
  smallDisk,
} from '../support/faults.ts';
import { call } from '../support/http.ts';
import { MqttDevice } from '../support/mqtt-device.ts';
import { freePort } from '../support/ports.ts';
import { type ServerProcess, serveProcess, stopProcess } from '../support/process.ts';

const ADMIN = { THINGBASE_ADMIN_EMAIL: 'ops@example.com', THINGBASE_ADMIN_PASSWORD: 'pg disk full password' };
const THING = 'pg-disk-1';

describe('the PostgreSQL disk fills up under load [postgres]', { skip: postgresFaultSkip }, () => {
  let cluster: PrivatePostgres;
  let disk: SmallDisk | undefined;
  let server: ServerProcess;
  /** The load under way, halted after a test that failed midway. */
  let running: FaultLoad | undefined;
  let mqttPort: number;
  before(async () => {
    cluster = await within(60_000, 'starting PostgreSQL', privatePostgres());
    const small = smallDisk(64);
    if (typeof small === 'string') throw new Error(`PostgreSQL runs here, but ${small}`);
    disk = small;
    // A tablespace's directory is the cluster's user's, and empty.
    const location = join(small.dir, 'tablespace');
    mkdirSync(location);
    const postgres = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(location, postgres('-u'), postgres('-g'));
    const admin = new pg.Client({ connectionString: cluster.url });
    await admin.connect();
    try {
      await admin.query(`CREATE TABLESPACE small LOCATION '${location}'`);
      await admin.query('CREATE DATABASE thingbase TABLESPACE small');
    } finally {
      await admin.end();
    }
    mqttPort = await freePort();
    server = await within(
      60_000,
      'starting thingbase',
      serveProcess({
        ...ADMIN,
        DATABASE_URL: cluster.url.replace(/\/postgres$/, '/thingbase'),
        MQTT_PORT: String(mqttPort),
      }),
    );
  });
  after(async () => {
    running?.halt();
    if (server) await within(10_000, 'stopping thingbase', stopProcess(server.child, 'SIGKILL'));
    cluster?.remove();
    disk?.remove();
  });

  it('when the tablespace is full then writes are refused with 503 naming it, reads go on, and writes are taken again once space comes back', {
    timeout: 180_000,
  }, async () => {
    const small = disk as SmallDisk;
    const signIn = () =>
      within(
        10_000,
        'sign-in',
        call(server.url, 'POST', '/api_sign_in', {
          body: { email: ADMIN.THINGBASE_ADMIN_EMAIL, password: ADMIN.THINGBASE_ADMIN_PASSWORD },
        }),
      );
    const token = (await signIn()).body.auth_token as string;
    const pair = await call(server.url, 'POST', '/api/v3/key_pairs', { token, body: { key_pair: { name: 'disk' } } });
    const keyPair = pair.body.key_pair as KeyPair;
    const device = new Device(server.url, keyPair);
    assert.equal((await device.register({ thing_key: THING })).status, 200);
    const mqttDevice = await within(
      10_000,
      'an MQTT device connecting',
      MqttDevice.connect(`mqtt://127.0.0.1:${mqttPort}`, keyPair, { connectTimeout: 2000 }),
    );
    const ready = () => within(5000, 'GET /readyz', call(server.url, 'GET', '/readyz'));

    const load = new FaultLoad(THING);
    running = load;
    load.http(device);
    load.mqtt(mqttDevice);
    await sleep(1500);

    small.fill();
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

    small.free();
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

    const stored = await within(30_000, 'reading the stored events', storedNumbers(server.url, token, THING));
    const counts = tally(load, stored);
    assert.equal(counts.missing, 0, 'every acknowledged event is stored');
    assert.equal(counts.duplicated, 0, 'none twice');
    process.stdout.write(
      `# disk full [postgres]: ${JSON.stringify({
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
