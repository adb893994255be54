import assert from 'node:assert/strict';
import * as packets from 'mqtt-packet';
import { sign } from './device.ts';

/** mqtt-packet, as the device endpoint uses it: its generator makes packets, its parser reads bytes back into packets. */
export const mqttPacket = packets as unknown as {
  parser(): {
    _list: { length: number };
    parse(buf: Buffer): number;
    on(event: 'packet', listener: (packet: Record<string, unknown>) => void): void;
    on(event: 'error', listener: (error: Error) => void): void;
  };
  generate(packet: Record<string, unknown>, options?: { protocolVersion: number }): Buffer;
};

/** Every packet in `bytes`, read as a server of `protocolVersion` reads them; a malformed one throws. */
export function parsePackets(bytes: Buffer, protocolVersion = 4): Record<string, unknown>[] {
  const parser = mqttPacket.parser();
  (parser as unknown as { settings: { protocolVersion: number } }).settings = { protocolVersion };
  const packets: Record<string, unknown>[] = [];
  parser.on('packet', (packet) => packets.push(packet));
  parser.on('error', (error) => {
    throw error;
  });
  parser.parse(bytes);
  return packets;
}

/**
 * A signed CONNECT of a clean session, as bytes: MQTT 3.1.1 unless told, with a will when given one
 * (the text of a message to the client's own `event` topic), and MQTT 5 properties when given.
 */
export const connectPacket = (
  clientId: string,
  pair: { access_key: string; secret_key: string },
  keepalive = 60,
  options: {
    protocolVersion?: 4 | 5;
    /** false: a session that outlives the connection (MQTT 3.1.1). */
    clean?: boolean;
    will?: string;
    /** The will is to be retained. */
    willRetain?: boolean;
    properties?: {
      receiveMaximum?: number;
      maximumPacketSize?: number;
      authenticationMethod?: string;
      sessionExpiryInterval?: number;
    };
  } = {},
): Buffer =>
  mqttPacket.generate(
    {
      cmd: 'connect',
      protocolId: 'MQTT',
      protocolVersion: options.protocolVersion ?? 4,
      clean: options.clean ?? true,
      keepalive,
      clientId,
      username: pair.access_key,
      password: Buffer.from(sign(pair.secret_key, pair.access_key)),
      ...(options.will === undefined
        ? {}
        : {
            will: {
              topic: `Altizon/Datonis/${clientId}/event`,
              payload: Buffer.from(options.will),
              qos: 1,
              retain: options.willRetain ?? false,
            },
          }),
      ...(options.properties === undefined ? {} : { properties: options.properties }),
    },
    { protocolVersion: options.protocolVersion ?? 4 },
  );

/**
 * An MQTT 5 CONNECT (generated without properties) with these bytes as its properties, as they are: an
 * identifier then its value each (MQTT 5 §2.2.2.2), so that one may be given twice, as mqtt-packet's
 * generator never writes.
 */
export function withConnectPropertyBytes(connect: Buffer, properties: number[]): Buffer {
  let at = 1;
  while ((connect[at] as number) & 0x80) at++;
  const body = connect.subarray(at + 1);
  // The protocol name (2 + 4), level, flags and keep-alive come before the properties' length.
  assert.equal(body[10], 0, 'a CONNECT generated without properties');
  assert.ok(properties.length < 128, 'properties whose length is one byte');
  const rest = Buffer.concat([
    body.subarray(0, 10),
    Buffer.from([properties.length, ...properties]),
    body.subarray(11),
  ]);
  // The remaining length, seven bits a byte, least significant first (MQTT 5 §1.5.5).
  const length: number[] = [];
  for (let left = rest.length; ; ) {
    const byte = left % 128;
    left = Math.floor(left / 128);
    length.push(left > 0 ? byte | 0x80 : byte);
    if (left === 0) break;
  }
  return Buffer.concat([Buffer.from([0x10, ...length]), rest]);
}
