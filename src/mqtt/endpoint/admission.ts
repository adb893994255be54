/**
 * Which device connections the embedded MQTT listeners take (docs/devices.md, "Overload"), counted
 * with the process's HTTP connections within the socket budget (core/sockets.ts).
 */
import type { Socket } from 'node:net';
import { REFUSAL_ROOM } from '../../core/open-files.ts';
import type { SocketCount } from '../../core/sockets.ts';

/**
 * Counts a connection's socket from when it is accepted (over TLS, from before its handshake), and
 * answers whether it is kept. A device past the budget is refused with CONNACK 3 once it has sent
 * CONNECT; until then its socket waits within the room kept for such refusals, and a connection past
 * that room is closed at once (`warn` says so): a flood of connections that never send CONNECT cannot
 * take the descriptors the store needs. One function for all sockets (`socketAdmission`), and one
 * listener for their close, since each socket kept holds what it is given as long as it is open.
 */
export function socketAdmission(sockets: SocketCount, warn: (message: string) => void): (socket: Socket) => boolean {
  const released = () => sockets.release('mqtt');
  return (socket) => {
    sockets.add('mqtt');
    if (sockets.pastRoom(REFUSAL_ROOM)) {
      sockets.release('mqtt');
      socket.destroy();
      warn(
        sockets.pastBudget(
          `${REFUSAL_ROOM} MQTT connections more wait to be refused with CONNACK 3; closing new ones at once`,
        ),
      );
      return false;
    }
    socket.on('close', released);
    return true;
  };
}

/**
 * Whether a device that has sent CONNECT is past the limits (its own kind's, MQTT_MAX_CONNECTIONS, or
 * the budget): then `warn` is told, and the device is refused with CONNACK 3.
 */
export function pastConnectionLimit(
  sockets: SocketCount,
  maxConnections: number,
  warn: (limit: 'connections' | 'budget', message: string) => void,
): boolean {
  const refusal = sockets.past('mqtt', maxConnections);
  if (!refusal) return false;
  warn(
    refusal === 'kind' ? 'connections' : 'budget',
    refusal === 'kind'
      ? `MQTT connections at their limit of ${maxConnections} (MQTT_MAX_CONNECTIONS): refusing new devices with CONNACK 3`
      : sockets.pastBudget('refusing new devices with CONNACK 3'),
  );
  return true;
}
