// The mqtt-overload suite, unchanged, with MQTT 5 devices on the device endpoint.
import '../support/on-device-endpoint.ts';
import '../support/mqtt-5-devices.ts';
import './mqtt-overload.test.ts';
