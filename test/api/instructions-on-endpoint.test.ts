// The instructions suite, unchanged, on the device endpoint (MQTT_ENDPOINT=thingbase).
import '../support/on-device-endpoint.ts';
import './instructions.test.ts';
