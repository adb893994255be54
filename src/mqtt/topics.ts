/** The device topics (docs/devices.md, "MQTT"). `<cid>` is the MQTT client id, `<ak>` the access key. */
export const TOPIC_ROOT = 'Altizon/Datonis';

export type DeviceMessageKind = 'register' | 'heartbeat' | 'event' | 'alert';

export interface DeviceTopic {
  clientId: string;
  kind: DeviceMessageKind;
  /** `Altizon/Datonis/lzf/<cid>/event`: the payload is LZF-compressed. */
  lzf: boolean;
}

const KINDS = new Set<string>(['register', 'heartbeat', 'event', 'alert']);

/** A topic devices publish to, or undefined for any other topic. */
export function parseDeviceTopic(topic: string): DeviceTopic | undefined {
  const parts = topic.split('/');
  if (parts[0] !== 'Altizon' || parts[1] !== 'Datonis') return undefined;
  if (parts.length === 5 && parts[2] === 'lzf' && parts[4] === 'event' && parts[3]) {
    return { clientId: parts[3], kind: 'event', lzf: true };
  }
  if (parts.length === 4 && parts[2] && KINDS.has(parts[3] as string)) {
    return { clientId: parts[2], kind: parts[3] as DeviceMessageKind, lzf: false };
  }
  return undefined;
}

export const ackTopic = (clientId: string) => `${TOPIC_ROOT}/${clientId}/httpAck`;
export const instructionTopic = (accessKey: string, thingKey: string) =>
  `${TOPIC_ROOT}/${accessKey}/thing/${thingKey}/executeInstruction`;

/** The thing key of an instruction topic (`+` for all of them), or undefined for any other topic. */
export function thingOfTopic(topic: string): string | undefined {
  const parts = topic.split('/');
  if (parts.length !== 6 || `${parts[0]}/${parts[1]}` !== TOPIC_ROOT || parts[3] !== 'thing') return undefined;
  if (parts[5] !== 'executeInstruction') return undefined;
  return parts[4];
}

/** Topics a device may subscribe to: its own acknowledgements and its key pair's instructions. */
export function maySubscribe(topic: string, clientId: string, accessKey: string): boolean {
  if (topic === ackTopic(clientId)) return true;
  const parts = topic.split('/');
  return (
    parts.length === 6 &&
    parts[0] === 'Altizon' &&
    parts[1] === 'Datonis' &&
    parts[2] === accessKey &&
    parts[3] === 'thing' &&
    parts[4] !== '' &&
    parts[4] !== '#' &&
    parts[5] === 'executeInstruction'
  );
}

/** Subscriptions of the server on an external broker: shared, so each message reaches one instance of the group. */
export const serverSubscriptions = (group: string) => [
  `$share/${group}/${TOPIC_ROOT}/+/register`,
  `$share/${group}/${TOPIC_ROOT}/+/heartbeat`,
  `$share/${group}/${TOPIC_ROOT}/+/event`,
  `$share/${group}/${TOPIC_ROOT}/+/alert`,
  `$share/${group}/${TOPIC_ROOT}/lzf/+/event`,
];
