// The mqtt-stop suite, unchanged, on the device endpoint (MQTT_ENDPOINT=thingbase).
import '../support/on-device-endpoint.ts';
import './mqtt-stop.test.ts';
