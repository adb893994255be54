import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  connackAccepted,
  connackRefused,
  MAX_CLIENT_ID_LENGTH,
  refusalBeforeLogin,
} from '../../src/mqtt/endpoint/connack.ts';
import { storeFailure } from '../../src/mqtt/endpoint/device-messages.ts';
import { propertiesFault } from '../../src/mqtt/endpoint/packet-checks.ts';
import { TopicAliases } from '../../src/mqtt/endpoint/topic-aliases.ts';
import { mqttPacket, parsePackets, withConnectPropertyBytes } from '../support/mqtt-packet.ts';

/** An MQTT 5 CONNECT's bytes with these property bytes as they are, and a will with `willProperties` when given. */
function connectWithProperties(properties: number[], willProperties?: Record<string, unknown>): Buffer {
  const connect = mqttPacket.generate(
    {
      cmd: 'connect',
      protocolId: 'MQTT',
      protocolVersion: 5,
      clean: true,
      keepalive: 60,
      clientId: 'client',
      username: 'ak',
      password: Buffer.from('p'),
      ...(willProperties === undefined
        ? {}
        : { will: { topic: 't', payload: Buffer.alloc(0), qos: 1, retain: false, properties: willProperties } }),
    },
    { protocolVersion: 5 },
  );
  return withConnectPropertyBytes(connect, properties);
}

/** What refusalBeforeLogin says of a CONNECT, read from its bytes as the endpoint reads them. */
const refusalOf = (bytes: Buffer) => {
  const connect = parsePackets(bytes, 5)[0] as Parameters<typeof refusalBeforeLogin>[0];
  return refusalBeforeLogin({ ...connect, protocolVersion: 5 });
};

function parseOne(bytes: Buffer, protocolVersion: number): Record<string, unknown> {
  const packets = parsePackets(bytes, protocolVersion);
  assert.equal(packets.length, 1);
  return packets[0] as Record<string, unknown>;
}

const limits = { receiveMaximum: 100, maximumPacketSize: 1 << 20, topicAliasMaximum: 16 };

describe('the device endpoint CONNECT answers', () => {
  it('when a CONNECT has no credentials or too long a client id then it is refused before any lookup', () => {
    const password = Buffer.from('p');
    assert.equal(refusalBeforeLogin({ clientId: 'c', username: 'ak', password }), undefined);
    assert.equal(refusalBeforeLogin({ clientId: 'c'.repeat(24), username: 'ak', password }), undefined);
    assert.equal(refusalBeforeLogin({ clientId: 'c', username: undefined, password }), 'credentials');
    assert.equal(refusalBeforeLogin({ clientId: 'c', username: 'ak', password: undefined }), 'credentials');
    assert.equal(
      refusalBeforeLogin({ clientId: 'c'.repeat(MAX_CLIENT_ID_LENGTH + 1), username: 'ak', password }),
      'identifier',
    );
    assert.equal(
      refusalBeforeLogin({ clientId: 'c', username: 'ak', password, properties: { authenticationMethod: 'SCRAM' } }),
      'authentication',
      'no enhanced authentication',
    );
  });

  it('when an MQTT 5 CONNECT gives a property twice, or one it may not hold then it is a protocol error or malformed', () => {
    assert.equal(refusalOf(connectWithProperties([0x21, 0, 10])), undefined, 'a Receive Maximum of 10');
    assert.equal(
      refusalOf(connectWithProperties([0x26, 0, 1, 97, 0, 1, 98, 0x26, 0, 1, 97, 0, 1, 99])),
      undefined,
      'a User Property twice',
    );
    // Maximum Packet Size twice, Session Expiry Interval twice, Receive Maximum twice.
    assert.equal(refusalOf(connectWithProperties([0x27, 0, 0, 3, 232, 0x27, 0, 0, 7, 208])), 'protocolError');
    assert.equal(refusalOf(connectWithProperties([0x11, 0, 0, 0, 10, 0x11, 0, 0, 0, 20])), 'protocolError');
    assert.equal(refusalOf(connectWithProperties([0x21, 0, 10, 0x21, 0, 20])), 'protocolError');
    // Authentication Data without its method.
    assert.equal(refusalOf(connectWithProperties([0x16, 0, 1, 7])), 'protocolError');
    // A Topic Alias in the CONNECT, and in its will's properties.
    assert.equal(refusalOf(connectWithProperties([0x23, 0, 1])), 'malformed');
    assert.equal(refusalOf(connectWithProperties([], { topicAlias: 1 })), 'malformed');
    assert.equal(refusalOf(connectWithProperties([], { willDelayInterval: 5 })), undefined, 'a Will Delay Interval');
  });

  it('when an MQTT 5 packet of a connection holds a property it may not, or one twice, then that is told apart', () => {
    assert.equal(propertiesFault('publish', { topicAlias: 1, userProperties: { a: ['1', '2'] } }), undefined);
    assert.equal(propertiesFault('publish', { sessionExpiryInterval: 10 }), 'malformed');
    assert.equal(propertiesFault('publish', { subscriptionIdentifier: 3 }), 'protocolError', '[MQTT-3.3.4-6]');
    assert.equal(propertiesFault('publish', { topicAlias: [1, 2] }), 'protocolError');
    assert.equal(propertiesFault('puback', { reasonString: 'ok' }), undefined);
    assert.equal(propertiesFault('puback', { topicAlias: 1 }), 'malformed');
    assert.equal(propertiesFault('subscribe', { subscriptionIdentifier: [1, 2] }), 'protocolError');
    assert.equal(propertiesFault('disconnect', { sessionExpiryInterval: 0, reasonString: 'bye' }), undefined);
    assert.equal(propertiesFault('disconnect', { receiveMaximum: 1 }), 'malformed');
    assert.equal(propertiesFault('pingreq', undefined), undefined);
  });

  it('when a CONNECT sets a will of QoS 3 then it is malformed, whatever its protocol', () => {
    const password = Buffer.from('p');
    for (const protocolVersion of [4, 5]) {
      assert.equal(
        refusalBeforeLogin({ clientId: 'c', username: 'ak', password, protocolVersion, will: { qos: 3 } }),
        'malformed',
      );
    }
  });

  it('when a login is refused over MQTT 3.1.1 then the CONNACK carries 5, 3 or 2; over MQTT 5 0x86, 0x89, 0x88 or 0x85 with a reason string', () => {
    const v4 = (refusal: Parameters<typeof connackRefused>[1]) => parseOne(connackRefused(4, refusal), 4).returnCode;
    assert.deepEqual(
      [v4('credentials'), v4('busy'), v4('unavailable'), v4('identifier'), v4('protocol')],
      [5, 3, 3, 2, 1],
    );
    for (const [refusal, code] of [
      ['protocol', 0x84],
      ['authentication', 0x8c],
      ['credentials', 0x86],
      ['busy', 0x89],
      ['unavailable', 0x88],
      ['identifier', 0x85],
    ] as const) {
      const packet = parseOne(connackRefused(5, refusal), 5);
      assert.equal(packet.reasonCode, code, refusal);
      assert.equal(typeof (packet.properties as { reasonString?: string }).reasonString, 'string');
    }
  });

  it('when a device is accepted over MQTT 5 then the CONNACK tells it Receive Maximum, Maximum Packet Size and Topic Alias Maximum', () => {
    assert.equal(parseOne(connackAccepted(4, limits), 4).returnCode, 0);
    const packet = parseOne(connackAccepted(5, limits, { assignedClientId: 'tb1' }), 5);
    assert.equal(packet.reasonCode, 0);
    assert.deepEqual(
      {
        ...(packet.properties as Record<string, unknown>),
      },
      {
        receiveMaximum: 100,
        maximumPacketSize: 1 << 20,
        topicAliasMaximum: 16,
        retainAvailable: false,
        sharedSubscriptionAvailable: false,
        subscriptionIdentifiersAvailable: false,
        assignedClientIdentifier: 'tb1',
      },
    );
  });
});

describe('MQTT 5 topic aliases of a connection', () => {
  it('when a publish sets an alias then a later one with the alias alone is for the same topic', () => {
    const aliases = new TopicAliases(2);
    assert.equal(aliases.resolve('a/b', 1), 'a/b');
    assert.equal(aliases.resolve('', 1), 'a/b');
    assert.equal(aliases.resolve('c/d', 1), 'c/d', 'set again');
    assert.equal(aliases.resolve('', 1), 'c/d');
    assert.equal(aliases.resolve('e/f', undefined), 'e/f');
  });

  it('when an alias is out of range then it is invalid; unset, or a publish with neither topic nor alias, a protocol error', () => {
    const aliases = new TopicAliases(2);
    assert.deepEqual(aliases.resolve('a', 3), { refused: 'invalid' });
    assert.deepEqual(aliases.resolve('a', 0), { refused: 'invalid' });
    assert.deepEqual(aliases.resolve('', 2), { refused: 'protocol' });
    assert.deepEqual(aliases.resolve('', undefined), { refused: 'protocol' });
  });
});

describe('a store failure on the device endpoint', () => {
  it('when the store fails to take a message then it is answered with its own hash and the fault named', () => {
    const full = storeFailure('h1', Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }));
    assert.deepEqual([full.context, full.http_code], ['h1', 503]);
    assert.match(full.http_msg.errors?.[0]?.message ?? '', /storage is full/);
    const pgFull = storeFailure('h2', Object.assign(new Error('could not extend file'), { code: '53100' }));
    assert.match(pgFull.http_msg.errors?.[0]?.message ?? '', /storage is full/);
    const gone = storeFailure('h3', Object.assign(new Error('terminating connection'), { code: '57P01' }));
    assert.deepEqual([gone.context, gone.http_code, gone.http_msg.errors?.[0]?.code], ['h3', 503, 'unavailable']);
    assert.deepEqual(
      [storeFailure('h4', new Error('a defect')).http_code, storeFailure('h4', new Error('x')).context],
      [500, 'h4'],
    );
  });
});
