/**
 * A connection whose login is being checked (the key pair looked up in the store, which may be slow)
 * reads no more from its device until the check is done, and holds few packets meanwhile.
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import { type ConnectionHost, DeviceConnection, type DeviceSocket } from '../../src/mqtt/endpoint/connection.ts';
import { DEFAULT_SESSION_LIMITS } from '../../src/mqtt/endpoint/endpoint.ts';
import { PartialPackets } from '../../src/mqtt/endpoint/packet-parser.ts';
import { SessionStore } from '../../src/mqtt/endpoint/sessions.ts';
import { connectPacket, mqttPacket } from '../support/mqtt-packet.ts';

/** A socket that records what the connection does with it. */
class RecordingSocket extends EventEmitter implements DeviceSocket {
  writable = true;
  paused = false;
  pauses = 0;
  destroyed = false;
  readonly written: Buffer[] = [];
  write(bytes: Buffer): boolean {
    this.written.push(bytes);
    return true;
  }
  end(bytes?: Buffer): void {
    if (bytes) this.write(bytes);
  }
  destroy(): void {
    this.destroyed = true;
    this.writable = false;
    this.emit('close');
  }
  pause(): void {
    this.paused = true;
    this.pauses++;
  }
  resume(): void {
    this.paused = false;
  }
  setTimeout(): void {}
}

const pair = { access_key: 'ak-login', secret_key: 'sk-login' };

/** An endpoint whose key-pair lookups answer when the test says so. */
function slowLogin() {
  let answer: (keyPair: { accessKey: string; secretKey: string }) => void = () => {};
  const sessions = new SessionStore(DEFAULT_SESSION_LIMITS);
  const host = {
    admission: () => undefined,
    keyPairOf: () =>
      new Promise<{ accessKey: string; secretKey: string }>((resolve) => {
        answer = resolve;
      }),
    passwordMatches: () => true,
    openSession: (connection: DeviceConnection, cleanStart: boolean) =>
      sessions.open(connection, connection.clientId, connection.accessKey, cleanStart, 0),
    sessionExpiryMs: () => 0,
    signedIn: () => {},
    received: () => {},
    refused: () => {},
    subscribed: () => {},
    delivered: () => {},
    closed: () => {},
    packetBounds: {
      maxPacketBytes: 1 << 20,
      maxConnectPacketBytes: 128 * 1024,
      partial: new PartialPackets(64 << 20),
      refusedLength: () => {},
      refusedHeld: () => {},
    },
    limits: { connectTimeoutMs: 10_000, receiveMaximum: 100, maximumPacketSize: 1 << 20, topicAliasMaximum: 16 },
  } satisfies ConnectionHost;
  return { host, signIn: () => answer({ accessKey: pair.access_key, secretKey: pair.secret_key }) };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));
const pings = (count: number) =>
  Buffer.concat(Array.from({ length: count }, () => mqttPacket.generate({ cmd: 'pingreq' })));

describe('a connection signing in', () => {
  it('when its login is being checked then its socket is paused, and read again once the device is signed in', async () => {
    const { host, signIn } = slowLogin();
    const socket = new RecordingSocket();
    const connection = new DeviceConnection(1, socket, host);
    socket.emit('data', Buffer.concat([connectPacket('c-login', pair), pings(3)]));
    assert.equal(connection.state, 'login');
    assert.equal(socket.paused, true, 'nothing more is read while the key pair is looked up');
    signIn();
    await tick();
    assert.equal(connection.state, 'open');
    assert.equal(socket.paused, false, 'reading goes on once signed in');
    // The CONNACK, then the answers of the packets that waited for the login.
    const answers = mqttPacket.generate({ cmd: 'pingresp' });
    await tick();
    const written = Buffer.concat(socket.written);
    assert.equal(written[0], 0x20, 'the CONNACK first');
    assert.equal(written.subarray(4).toString('hex'), Buffer.concat([answers, answers, answers]).toString('hex'));
  });

  it('when a device sends many packets with its CONNECT then its connection is closed before it holds them all', () => {
    const { host } = slowLogin();
    const socket = new RecordingSocket();
    const connection = new DeviceConnection(1, socket, host);
    socket.emit('data', Buffer.concat([connectPacket('c-many', pair), pings(5000)]));
    assert.equal(socket.destroyed, true);
    assert.equal(connection.state, 'closed');
  });
});
