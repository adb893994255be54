/**
 * Instructions on their way to devices through the device endpoint (docs/devices.md, "Instructions"):
 * each is sent at the QoS its device subscribed with (the SDKs take 2), under a packet id of the
 * connection, and is delivered once the device completes its handshake (PUBCOMP, or PUBACK at QoS 1).
 * One that is not is sent again when its device subscribes again (instructions.ts), as every SDK
 * connects with a clean session.
 */
import { generate } from 'mqtt-packet';

export class InstructionsInFlight {
  /** By connection, the alert key of each instruction in flight by its packet id. */
  private readonly byConnection = new WeakMap<object, Map<number, string>>();

  add(connection: object, messageId: number, alertKey: string): void {
    let flight = this.byConnection.get(connection);
    if (!flight) {
      flight = new Map();
      this.byConnection.set(connection, flight);
    }
    flight.set(messageId, alertKey);
  }

  has(connection: object, messageId: number): boolean {
    return this.byConnection.get(connection)?.has(messageId) ?? false;
  }

  /** The handshake of `messageId` is done: the alert key of the instruction it carried, if it carried one. */
  done(connection: object, messageId: number): string | undefined {
    const flight = this.byConnection.get(connection);
    const alertKey = flight?.get(messageId);
    flight?.delete(messageId);
    return alertKey;
  }

  /** The connection has closed: what it had in flight is sent again on its device's next subscription. */
  forget(connection: object): void {
    this.byConnection.delete(connection);
  }
}

/** An instruction's PUBLISH packet. */
export function instructionPacket(
  topic: string,
  payload: string,
  qos: number,
  messageId: number | undefined,
  version: number,
): Buffer {
  return generate(
    {
      cmd: 'publish',
      topic,
      payload,
      qos: qos >= 2 ? 2 : qos === 1 ? 1 : 0,
      retain: false,
      dup: false,
      ...(messageId !== undefined ? { messageId } : {}),
    },
    { protocolVersion: version },
  );
}
