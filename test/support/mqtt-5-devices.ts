/**
 * Imported first by a suite that runs another suite's tests with MQTT 5 devices (mqtt.js
 * `protocolVersion: 5`): the MqttDevice of test/support/mqtt-device.ts connects with it.
 */
process.env.THINGBASE_TEST_MQTT_VERSION = '5';
