import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hashAtEnd } from '../../src/devices/signature.ts';
import { signedMessage } from '../../src/simulator/device-link.ts';
import { MachineReadings } from '../../src/simulator/readings.ts';

describe('simulated readings', () => {
  it('when a machine runs for an hour then its readings stay plausible and its parts never go back', () => {
    const machine = new MachineReadings(4);
    let parts = 0;
    const states = new Set<string>();
    for (let second = 0; second < 3600; second++) {
      const { data, waypoint } = machine.next(Date.UTC(2026, 10, 28) + second * 1000);
      assert.ok(data.temperature > 40 && data.temperature < 95, `temperature ${data.temperature}`);
      assert.ok(data.humidity > 30 && data.humidity < 60, `humidity ${data.humidity}`);
      assert.ok(data.parts >= parts, 'a counter');
      parts = data.parts;
      states.add(data.state);
      assert.ok(Math.abs(waypoint[0] - 48.9) < 0.2 && Math.abs(waypoint[1] - 2.35) < 0.2, 'near its place');
    }
    assert.ok(parts > 1000, 'parts are made while running');
    assert.ok(states.size > 1, 'the state changes now and then');
  });

  it('when two machines read at the same time then their temperatures differ', () => {
    const at = Date.UTC(2026, 10, 28, 12);
    const quiet = () => 0.5;
    assert.notEqual(
      new MachineReadings(1, quiet).next(at).data.temperature,
      new MachineReadings(2, quiet).next(at).data.temperature,
    );
  });

  it('when a message is signed as the edge SDKs sign it then the server finds its hash at the end', () => {
    const { text, hash } = signedMessage(
      { accessKey: 'a'.repeat(40), secretKey: 's'.repeat(40) },
      { thing_key: 'k', data: { t: 1 } },
    );
    assert.equal(hashAtEnd(Buffer.from(text))?.hash, hash);
    assert.ok(text.startsWith('{"thing_key":"k","data":{"t":1},"hash":'));
  });
});
