/**
 * Which embedded MQTT endpoint the suite's servers run (MQTT_ENDPOINT, docs/configuration.md): aedes
 * on its broker thread unless a suite file imports `on-device-endpoint.ts` first, to run the same tests
 * on the device endpoint (src/mqtt/endpoint/).
 */
import type { Worker } from 'node:worker_threads';
import type { Server } from '../../src/app.ts';

export const MQTT_ENDPOINT = process.env.THINGBASE_TEST_MQTT_ENDPOINT === 'thingbase' ? 'thingbase' : 'aedes';

/** The MQTT version the suite's devices speak: 3.1.1 unless a suite file imports `mqtt-5-devices.ts` first. */
export const MQTT_VERSION = process.env.THINGBASE_TEST_MQTT_VERSION === '5' ? 5 : 4;

/** The CONNACK code refusing a login (docs/devices.md): 5, or MQTT 5's 0x86 "bad user name or password". */
export const BAD_LOGIN = MQTT_VERSION === 5 ? 0x86 : 5;
/** The CONNACK code refusing a device past the connection limits: 3, or MQTT 5's 0x89 "server busy". */
export const SERVER_BUSY = MQTT_VERSION === 5 ? 0x89 : 3;

/** Why a test of the broker thread is skipped on the device endpoint, which has none. */
export const BROKER_THREAD_ONLY =
  MQTT_ENDPOINT === 'thingbase' && 'the device endpoint runs on the server thread: there is no broker thread to fail';

/** The broker's thread, with aedes; undefined on the device endpoint. */
export function brokerThread(server: Server): Worker | undefined {
  const broker = server.mqttBroker;
  return broker && 'thread' in broker ? broker.thread() : undefined;
}
