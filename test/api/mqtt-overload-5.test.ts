// The mqtt-overload suite, unchanged, with MQTT 5 devices.
import '../support/mqtt-5-devices.ts';
import './mqtt-overload.test.ts';
