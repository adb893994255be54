// The mqtt suite, unchanged, on the device endpoint (MQTT_ENDPOINT=thingbase).
import '../support/on-device-endpoint.ts';
import './mqtt.test.ts';
