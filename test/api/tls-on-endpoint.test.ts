// The tls suite, unchanged, on the device endpoint (MQTT_ENDPOINT=thingbase).
import '../support/on-device-endpoint.ts';
import './tls.test.ts';
