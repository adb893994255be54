/**
 * The MQTT version the suite's devices speak: 3.1.1 unless a suite file imports `mqtt-5-devices.ts`
 * first, to run the same tests with MQTT 5 devices.
 */
export const MQTT_VERSION = process.env.THINGBASE_TEST_MQTT_VERSION === '5' ? 5 : 4;

/** The CONNACK code refusing a login (docs/devices.md): 5, or MQTT 5's 0x86 "bad user name or password". */
export const BAD_LOGIN = MQTT_VERSION === 5 ? 0x86 : 5;
/** The CONNACK code refusing a device past the connection limits: 3, or MQTT 5's 0x89 "server busy". */
export const SERVER_BUSY = MQTT_VERSION === 5 ? 0x89 : 3;
