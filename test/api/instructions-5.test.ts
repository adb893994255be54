// The instructions suite, unchanged, with MQTT 5 devices.
import '../support/mqtt-5-devices.ts';
import './instructions.test.ts';
