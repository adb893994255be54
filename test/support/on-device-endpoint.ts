/**
 * Imported first by a suite that runs another suite's tests on the device endpoint: every server it
 * starts, in this process or as a process of its own, serves MQTT with MQTT_ENDPOINT=thingbase.
 */
process.env.THINGBASE_TEST_MQTT_ENDPOINT = 'thingbase';
