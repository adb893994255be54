/**
 * How the device endpoint answers a CONNECT (docs/devices.md, "MQTT"): which refusal a CONNECT earns
 * before its credentials are looked up, and the CONNACK of each answer, as MQTT 3.1/3.1.1 return codes
 * or MQTT 5 reason codes. The SDKs understand only these: wrong credentials must be 5 (0x86 over MQTT 5),
 * or the Python SDK waits forever.
 */
import { generate, type IConnackPacket } from 'mqtt-packet';
import { clientIdIsUnfit, propertiesFault } from './packet-checks.ts';

/** Why a CONNECT is refused. */
export type ConnectRefusal =
  | 'identifier'
  | 'identifierCharacters'
  | 'credentials'
  | 'unavailable'
  | 'busy'
  | 'protocol'
  | 'protocolError'
  | 'malformed'
  | 'retain'
  | 'authentication';

/**
 * MQTT 3.1 and 3.1.1 return codes: 1 unacceptable protocol version, 2 identifier rejected, 3 server
 * unavailable, 5 not authorised (an authentication method is MQTT 5's only).
 */
const V3_CODES: Record<ConnectRefusal, number> = {
  protocol: 1,
  // Never sent: only MQTT 5's CONNECT has the properties that earn it.
  protocolError: 2,
  // Never sent: over MQTT 3.x a malformed CONNECT closes the connection unanswered (connection.ts).
  malformed: 2,
  retain: 2,
  identifier: 2,
  identifierCharacters: 2,
  unavailable: 3,
  busy: 3,
  credentials: 5,
  authentication: 5,
};
/**
 * MQTT 5 reason codes: unsupported protocol version, protocol error, client identifier not valid, bad
 * user name or password, unavailable, busy, bad authentication method.
 */
const V5_CODES: Record<ConnectRefusal, number> = {
  protocol: 0x84,
  protocolError: 0x82,
  malformed: 0x81,
  retain: 0x9a,
  identifier: 0x85,
  identifierCharacters: 0x85,
  credentials: 0x86,
  unavailable: 0x88,
  busy: 0x89,
  authentication: 0x8c,
};

const REASONS: Record<ConnectRefusal, string> = {
  protocol: 'the server speaks MQTT 3.1, 3.1.1 and 5',
  protocolError:
    'a CONNECT property given twice, a Receive Maximum or Maximum Packet Size of 0, or Authentication Data without its method is a protocol error',
  malformed: 'the CONNECT holds a property it may not, or a will of QoS 3',
  retain: 'the server keeps no retained messages, and a will may not be one',
  identifier: 'the client id is longer than the server takes',
  identifierCharacters: 'a client id names MQTT topics: it may not hold /, +, # or U+0000',
  credentials: 'bad user name or password',
  unavailable: 'the server is stopping',
  busy: 'the server holds as many device connections as it may',
  authentication: 'no enhanced authentication: devices sign in with their key pair',
};

/** Client ids up to this long are served (the C SDK's are 24 characters, over the usual 23). */
export const MAX_CLIENT_ID_LENGTH = 256;

/** What the endpoint tells an MQTT 5 device it may do, in its CONNACK. */
export interface ServerLimits {
  /** QoS 1 and 2 publishes a device may have unanswered at once. */
  receiveMaximum: number;
  /** The longest packet taken, bytes. */
  maximumPacketSize: number;
  /** Topic aliases a device may use. */
  topicAliasMaximum: number;
}

/**
 * The refusal a CONNECT earns before its credentials are looked up, or undefined: a client id too long
 * or holding what its topics may not (`/`, `+`, `#`, U+0000, ill-formed UTF-8), an empty one over
 * MQTT 3.1 (which asks for at least one character) or with a session to keep over MQTT 3.1.1 (whose
 * session could never be resumed), no user name or password (there are no anonymous devices), an MQTT 5 authentication method (there is no
 * enhanced authentication), an MQTT 5 Receive Maximum or Maximum Packet Size of 0 (MQTT 5 §3.1.2.11
 * calls either a protocol error), or an MQTT 5 will to be retained (its CONNACK says retained messages
 * are not available, and MQTT 5 §3.1.2.7 asks such a server to refuse the CONNECT). Before all of
 * those, a malformed CONNECT (a will of QoS 3, or MQTT 5 properties the CONNECT or its will may not hold)
 * and its properties' protocol errors (packet-checks.ts, propertiesFault).
 */
export function refusalBeforeLogin(connect: {
  clientId: string;
  username?: string | undefined;
  password?: Buffer | undefined;
  clean?: boolean | undefined;
  protocolVersion?: number | undefined;
  will?: { retain?: boolean | undefined; qos?: number | undefined; properties?: object | undefined } | undefined;
  properties?:
    | {
        authenticationMethod?: string | undefined;
        receiveMaximum?: number | undefined;
        maximumPacketSize?: number | undefined;
      }
    | undefined;
}): ConnectRefusal | undefined {
  const properties = connect.properties;
  // MQTT 3.1.1 [MQTT-3.1.2-14], MQTT 5 [MQTT-3.1.2-12].
  if (connect.will?.qos === 3) return 'malformed';
  if (connect.protocolVersion === 5) {
    const fault =
      propertiesFault('connect', properties as Record<string, unknown> | undefined) ??
      propertiesFault('will', connect.will?.properties as Record<string, unknown> | undefined);
    if (fault) return fault;
  }
  if (properties?.receiveMaximum === 0 || properties?.maximumPacketSize === 0) return 'protocolError';
  // MQTT 5 asks a server without the method a CONNECT names to close the connection.
  if (properties?.authenticationMethod !== undefined) return 'authentication';
  if (connect.protocolVersion === 5 && connect.will?.retain === true) return 'retain';
  if (connect.clientId.length > MAX_CLIENT_ID_LENGTH) return 'identifier';
  // The device's topics hold its client id (Altizon/Datonis/<cid>/event): a level more, a wildcard or
  // ill-formed text would make them no device topic, or no topic MQTT allows.
  if (clientIdIsUnfit(connect.clientId)) return 'identifierCharacters';
  if (
    connect.clientId === '' &&
    (connect.protocolVersion === 3 || (connect.clean === false && connect.protocolVersion !== 5))
  ) {
    return 'identifier';
  }
  if (!connect.username || !connect.password) return 'credentials';
  return undefined;
}

/** What a CONNACK accepting a device tells it of its session. */
export interface Accepted {
  /** The client id it was given, when it sent none (MQTT 5). */
  assignedClientId?: string | undefined;
  /** Whether it resumed the session its client id left. */
  present?: boolean;
  /** MQTT 5: the session expiry granted, seconds, when it is not the one asked for. */
  expiry?: number | undefined;
}

/** The CONNACK accepting a device (MQTT 5: with the server's limits, and the client id it was given). */
export function connackAccepted(version: number, limits: ServerLimits, accepted: Accepted = {}): Buffer {
  const { assignedClientId, present = false, expiry } = accepted;
  if (version !== 5) return Buffer.from([0x20, 2, present ? 1 : 0, 0]);
  const properties: IConnackPacket['properties'] = {
    receiveMaximum: limits.receiveMaximum,
    maximumPacketSize: limits.maximumPacketSize,
    topicAliasMaximum: limits.topicAliasMaximum,
    // Devices get no retained messages, wildcards only where maySubscribe allows, no shared subscriptions.
    retainAvailable: false,
    sharedSubscriptionAvailable: false,
    // Subscription identifiers would have to come back on the messages sent; none are.
    subscriptionIdentifiersAvailable: false,
    ...(assignedClientId !== undefined ? { assignedClientIdentifier: assignedClientId } : {}),
    ...(expiry !== undefined ? { sessionExpiryInterval: expiry } : {}),
  };
  return generate({ cmd: 'connack', sessionPresent: present, reasonCode: 0, properties }, { protocolVersion: 5 });
}

/**
 * The CONNACK refusing a device: over MQTT 5 with a Reason String, unless that would make it longer
 * than the device's Maximum Packet Size (`clientMaxBytes`), as MQTT 5 §3.2.2.3.9 asks.
 */
export function connackRefused(version: number, refusal: ConnectRefusal, clientMaxBytes?: number): Buffer {
  if (version !== 5) return Buffer.from([0x20, 2, 0, V3_CODES[refusal]]);
  const told = generate(
    {
      cmd: 'connack',
      sessionPresent: false,
      reasonCode: V5_CODES[refusal],
      properties: { reasonString: REASONS[refusal] },
    },
    { protocolVersion: 5 },
  );
  if (clientMaxBytes === undefined || told.length <= clientMaxBytes) return told;
  return generate({ cmd: 'connack', sessionPresent: false, reasonCode: V5_CODES[refusal] }, { protocolVersion: 5 });
}
