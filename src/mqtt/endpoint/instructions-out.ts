/**
 * Instructions on their way to devices through the device endpoint (docs/devices.md, "Instructions"):
 * each is sent at the QoS its device subscribed with (the SDKs take 2), under a packet id its session
 * keeps (sessions.ts), and is delivered once the device completes its handshake (PUBCOMP, or PUBACK at
 * QoS 1). One that is not is sent again when the session is resumed, or, when the session has ended,
 * when its device subscribes again (instructions.ts). Answers a session keeps go as the same packets.
 */
import { generate } from 'mqtt-packet';

/** An instruction's PUBLISH packet (or a kept answer's; `dup` when it is sent again). */
export function instructionPacket(
  topic: string,
  payload: string,
  qos: number,
  messageId: number | undefined,
  version: number,
  dup = false,
): Buffer {
  return generate(
    {
      cmd: 'publish',
      topic,
      payload,
      qos: qos >= 2 ? 2 : qos === 1 ? 1 : 0,
      retain: false,
      dup,
      ...(messageId !== undefined ? { messageId } : {}),
    },
    { protocolVersion: version },
  );
}
