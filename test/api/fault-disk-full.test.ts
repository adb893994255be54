/**
 * The SQLite store's disk fills up under a device load, then space comes back (docs/operations.md,
 * "When the database fails"): writes are refused with 503 naming the full disk, each MQTT message
 * answered with its own hash; reads and the process go on; /readyz says so; one log line; writes are
 * taken again without a restart; every acknowledged event is stored once (test/support/disk-full.ts).
 */
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { diskFillsUnderLoad } from '../support/disk-full.ts';
import type { FaultLoad } from '../support/fault-load.ts';
import { sqliteDisk } from '../support/faults.ts';
import { freePort } from '../support/ports.ts';
import { type ServerProcess, serveProcess, stopProcess } from '../support/process.ts';

const ADMIN = { THINGBASE_ADMIN_EMAIL: 'ops@example.com', THINGBASE_ADMIN_PASSWORD: 'disk full password' };

const small = sqliteDisk(48);

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

  it(
    'when the disk is full then writes are refused with 503 naming it, reads go on, and writes are taken again once space comes back',
    {
      timeout: 180_000,
    },
    () =>
      diskFillsUnderLoad({
        server,
        mqttPort,
        admin: ADMIN,
        thingKey: 'disk-1',
        label: 'sqlite',
        disk: small,
        started: (load) => {
          running = load;
        },
      }),
  );
});
