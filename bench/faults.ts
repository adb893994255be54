/**
 * `npm run bench -- faults [--only <name>] [--baseline-seconds 5] [--fault-seconds 5]`
 * Each fault of docs/operations.md ("When the database fails") under a steady device load: HTTP
 * devices (4, each sending an event, waiting for its answer, resting 20 ms) and an MQTT device at QoS 1
 * (5 messages in flight). For each fault: the same load with no fault first (the baseline, same
 * server, same run), then the fault for `fault-seconds`, then its end. Printed per fault: the answers
 * while it lasted by status and code, the answer-time p99 of HTTP and MQTT beside the baseline's (as a
 * ratio), the time from the fault's end to /readyz ready and to the first write taken over HTTP and
 * over MQTT, and the events acknowledged, stored, missing and stored twice. Needs root (a private
 * PostgreSQL cluster, a tmpfs) and Mosquitto; a fault whose infrastructure is missing is left out
 * with the reason. The server runs from source (through tsx), as the fault tests start it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Device, type KeyPair } from '../test/support/device.ts';
import {
  type Answer,
  FaultLoad,
  p99,
  statusCounts,
  storedNumbers,
  tally,
  until,
  within,
} from '../test/support/fault-load.ts';
import {
  mosquittoFaultSkip,
  type PrivatePostgres,
  postgresFaultSkip,
  postgresOnSmallDisk,
  privateMosquitto,
  privatePostgres,
  sqliteDisk,
} from '../test/support/faults.ts';
import { call } from '../test/support/http.ts';
import { MqttDevice } from '../test/support/mqtt-device.ts';
import { freePort } from '../test/support/ports.ts';
import { serveProcess, stopProcess } from '../test/support/process.ts';
import { describeMachine, option, table } from './support.ts';

const ADMIN = { THINGBASE_ADMIN_EMAIL: 'bench@example.com', THINGBASE_ADMIN_PASSWORD: 'fault bench password' };

/** What a fault needs: the server's environment, how to make the fault and end it, and what to clean. */
interface Staged {
  env: Record<string, string>;
  /** The external broker devices use; the embedded one on a free port otherwise. */
  mqttUrl?: string;
  begin(): void | Promise<void>;
  end(): void | Promise<void>;
  remove(): void | Promise<void>;
}

interface Fault {
  name: string;
  skip: string | false;
  stage(): Promise<Staged>;
}

const postgresFault = (
  name: string,
  begin: (cluster: PrivatePostgres) => void,
  end: (cluster: PrivatePostgres) => void | Promise<void>,
): Fault => ({
  name,
  skip: postgresFaultSkip,
  stage: async () => {
    const cluster = await privatePostgres();
    return {
      env: { DATABASE_URL: cluster.url },
      begin: () => begin(cluster),
      end: () => end(cluster),
      remove: () => cluster.remove(),
    };
  },
});

const FAULTS: Fault[] = [
  {
    name: 'sqlite-disk-full',
    skip: false,
    stage: async () => {
      const disk = sqliteDisk(48);
      return {
        env: { DATABASE_URL: `sqlite:${join(disk.dir, 'thingbase.db')}`, ...disk.env },
        begin: () => disk.fill(),
        end: () => disk.free(),
        remove: () => disk.remove(),
      };
    },
  },
  postgresFault(
    'postgres-crash',
    (cluster) => cluster.crash(),
    (cluster) => cluster.start(),
  ),
  postgresFault(
    'postgres-hang',
    (cluster) => cluster.pause(),
    (cluster) => cluster.resume(),
  ),
  {
    name: 'postgres-disk-full',
    skip: postgresFaultSkip,
    stage: async () => {
      const { cluster, disk, url } = await postgresOnSmallDisk(64);
      return {
        env: { DATABASE_URL: url },
        begin: () => disk.fill(),
        end: () => disk.free(),
        remove: () => {
          cluster.remove();
          disk.remove();
        },
      };
    },
  },
  {
    name: 'mosquitto-kill',
    skip: mosquittoFaultSkip,
    stage: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'thingbase-bench-broker-'));
      const broker = await privateMosquitto();
      return {
        env: { DATABASE_URL: `sqlite:${join(dir, 'thingbase.db')}`, MQTT_URL: broker.url },
        mqttUrl: broker.url,
        begin: () => broker.kill(),
        end: () => broker.start(),
        remove: async () => {
          await broker.remove();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
];

interface Figures {
  name: string;
  baseline: Answer[];
  during: Answer[];
  readyAgainMs: number;
  /** From the fault's end to the first write taken, of those sent after it, per transport. */
  writingAgainMs: { http: number; mqtt: number };
  counts: ReturnType<typeof tally>;
}

async function measure(fault: Fault, baselineMs: number, faultMs: number): Promise<Figures> {
  const staged = await within(120_000, `staging ${fault.name}`, fault.stage());
  const mqttPort = await freePort();
  const server = await within(
    120_000,
    'starting thingbase',
    serveProcess({ ...ADMIN, ...staged.env, ...(staged.mqttUrl ? {} : { MQTT_PORT: String(mqttPort) }) }),
  );
  const mqttUrl = staged.mqttUrl ?? `mqtt://127.0.0.1:${mqttPort}`;
  const load = new FaultLoad(fault.name);
  const devices: MqttDevice[] = [];
  try {
    const token = (
      await call(server.url, 'POST', '/api_sign_in', {
        body: { email: ADMIN.THINGBASE_ADMIN_EMAIL, password: ADMIN.THINGBASE_ADMIN_PASSWORD },
      })
    ).body.auth_token as string;
    const pair = await call(server.url, 'POST', '/api/v3/key_pairs', { token, body: { key_pair: { name: 'bench' } } });
    const keyPair = pair.body.key_pair as KeyPair;
    const device = new Device(server.url, keyPair);
    await device.register({ thing_key: fault.name });
    const connectDevice = async () => {
      const connected = await within(
        10_000,
        'an MQTT device connecting',
        MqttDevice.connectWhenUp(mqttUrl, keyPair, { connectTimeout: 2000 }),
      );
      devices.push(connected);
      load.mqtt(connected);
    };
    load.http(device);
    await connectDevice();
    const baselineAt = Date.now();
    await sleep(baselineMs);

    const faultAt = Date.now();
    await staged.begin();
    await sleep(faultMs);
    await staged.end();
    const endedAt = Date.now();
    const readyAgainAt = await until(
      'ready again',
      async () => (await within(5000, 'GET /readyz', call(server.url, 'GET', '/readyz'))).status === 200,
      60_000,
    );
    if (!devices.some((d) => d.client.connected)) await connectDevice();
    const takenAgain = (transport: Answer['transport']) =>
      until(
        `a write taken again over ${transport}`,
        async () => load.between(endedAt).some((a) => a.transport === transport && a.status === 200),
        60_000,
      );
    const [httpAgainAt, mqttAgainAt] = await Promise.all([takenAgain('http'), takenAgain('mqtt')]);
    await sleep(1000);
    await within(15_000, 'the load stopping', load.stop());
    const counts = tally(load, await within(60_000, 'reading', storedNumbers(server.url, token, fault.name)));
    return {
      name: fault.name,
      baseline: load.between(baselineAt, faultAt),
      during: load.between(faultAt, endedAt),
      readyAgainMs: readyAgainAt - endedAt,
      writingAgainMs: { http: httpAgainAt - endedAt, mqtt: mqttAgainAt - endedAt },
      counts,
    };
  } finally {
    load.halt();
    for (const d of devices) d.client.end(true);
    await stopProcess(server.child, 'SIGKILL');
    await staged.remove();
  }
}

const codes = (answers: Answer[]) =>
  Object.entries(statusCounts(answers))
    .map(([code, count]) => `${code}: ${count}`)
    .join(', ');

const ratio = (value: number, base: number) => (base > 0 ? `${(value / base).toFixed(1)}x` : '-');

/** A p99 beside its baseline's, or a dash where nothing was answered during the fault. */
const p99Beside = (during: Answer[], baseline: Answer[]) => {
  if (during.length === 0) return `- (${p99(baseline)})`;
  const [value, base] = [p99(during), p99(baseline)];
  return `${value} (${base}, ${ratio(value, base)})`;
};

export async function run(args: string[]): Promise<void> {
  const only = option(args, 'only', '');
  const baselineMs = Number(option(args, 'baseline-seconds', '5')) * 1000;
  const faultMs = Number(option(args, 'fault-seconds', '5')) * 1000;
  console.log(`# faults: ${describeMachine()}; baseline ${baselineMs / 1000} s, each fault ${faultMs / 1000} s`);
  const rows: (string | number)[][] = [
    [
      'fault',
      'answers during the fault',
      'HTTP p99 ms (baseline, ratio)',
      'MQTT p99 ms (baseline, ratio)',
      'ready again ms',
      'writes again ms (HTTP / MQTT)',
      'acked',
      'stored',
      'missing',
      'twice',
    ],
  ];
  for (const fault of FAULTS) {
    if (only && fault.name !== only) continue;
    if (fault.skip) {
      console.log(`# ${fault.name}: left out (${fault.skip})`);
      continue;
    }
    try {
      const f = await measure(fault, baselineMs, faultMs);
      const of = (answers: Answer[], t: Answer['transport']) => answers.filter((a) => a.transport === t);
      const row = [
        f.name,
        codes(f.during),
        p99Beside(of(f.during, 'http'), of(f.baseline, 'http')),
        p99Beside(of(f.during, 'mqtt'), of(f.baseline, 'mqtt')),
        f.readyAgainMs,
        `${f.writingAgainMs.http} / ${f.writingAgainMs.mqtt}`,
        f.counts.acknowledged,
        f.counts.stored,
        f.counts.missing,
        f.counts.duplicated,
      ];
      rows.push(row);
      console.log(`# ${f.name}: baseline answers ${codes(f.baseline)}; ${JSON.stringify(row)}`);
    } catch (error) {
      console.log(`# ${fault.name}: failed: ${(error as Error).message}`);
    }
  }
  console.log(table(rows));
}
