// The mqtt-bad-input suite, unchanged, on the device endpoint (MQTT_ENDPOINT=thingbase).
import '../support/on-device-endpoint.ts';
import './mqtt-bad-input.test.ts';
