/**
 * PostgreSQL's disk fills up under a device load, then space comes back (docs/operations.md, "When the
 * database fails"): a private cluster whose database lives in a tablespace on a small tmpfs (its WAL
 * on the big disk, as a database on a disk of its own has it), filled by a file beside it. Writes are
 * refused with 503 naming the full disk and Retry-After, each MQTT message answered with its own
 * hash; reads and the process go on; /readyz says so; writes are taken again without a restart; every
 * acknowledged event is stored once (test/support/disk-full.ts).
 */
import { after, before, describe, it } from 'node:test';
import { diskFillsUnderLoad } from '../support/disk-full.ts';
import { type FaultLoad, within } from '../support/fault-load.ts';
import { type PrivatePostgres, postgresFaultSkip, postgresOnSmallDisk, type SmallDisk } from '../support/faults.ts';
import { freePort } from '../support/ports.ts';
import { type ServerProcess, serveProcess, stopProcess } from '../support/process.ts';

const ADMIN = { THINGBASE_ADMIN_EMAIL: 'ops@example.com', THINGBASE_ADMIN_PASSWORD: 'pg disk full password' };

describe('the PostgreSQL disk fills up under load [postgres]', { skip: postgresFaultSkip }, () => {
  let cluster: PrivatePostgres | undefined;
  let disk: SmallDisk | undefined;
  let server: ServerProcess;
  /** The load under way, halted after a test that failed midway. */
  let running: FaultLoad | undefined;
  let mqttPort: number;
  before(async () => {
    const staged = await within(60_000, 'starting PostgreSQL', postgresOnSmallDisk(64));
    cluster = staged.cluster;
    disk = staged.disk;
    mqttPort = await freePort();
    server = await within(
      60_000,
      'starting thingbase',
      serveProcess({ ...ADMIN, DATABASE_URL: staged.url, MQTT_PORT: String(mqttPort) }),
    );
  });
  after(async () => {
    running?.halt();
    if (server) await within(10_000, 'stopping thingbase', stopProcess(server.child, 'SIGKILL'));
    cluster?.remove();
    disk?.remove();
  });

  it(
    'when the tablespace is full then writes are refused with 503 naming it, reads go on, and writes are taken again once space comes back',
    {
      timeout: 180_000,
    },
    () =>
      diskFillsUnderLoad({
        server,
        mqttPort,
        admin: ADMIN,
        thingKey: 'pg-disk-1',
        label: 'postgres',
        disk: disk as SmallDisk,
        started: (load) => {
          running = load;
        },
      }),
  );
});
