/**
 * The device endpoint (docs/devices.md, "MQTT"): the embedded MQTT listener
 * as a transport of the device service, like the HTTP device routes. A device signs in with its access
 * key and the HMAC of it, publishes to its own device topics, subscribes to its own `httpAck` and its key
 * pair's instructions; nothing is routed between clients, so there is no broker: each connection
 * (connection.ts) reads its packets with mqtt-packet, each message goes to the device service
 * (device-messages.ts), and each answer is written back with the PUBACK it waited for (outbox.ts).
 *
 * It runs on the server thread, where the event writer's commits land, so no message or answer is
 * handed between threads.
 */
import { type AddressInfo, createServer, type Server } from 'node:net';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import type { FastifyBaseLogger } from 'fastify';
import { writeToStream } from 'mqtt-packet';
import { BULK_BODY_LIMIT } from '../../core/http/body.ts';
import { oncePerMinute } from '../../core/log-limit.ts';
import type { SocketCount } from '../../core/sockets.ts';
import type { TlsMaterial } from '../../core/tls.ts';
import type { DeviceAuthenticator } from '../../devices/authentication.ts';
import type { DeviceService } from '../../devices/service.ts';
import { verifySignature } from '../../devices/signature.ts';
import { InboundFlow, type InboundLimits } from '../inbound-flow.ts';
import type { MqttInstructions } from '../instructions.ts';
import { failure, readDeviceMessage } from '../signed-messages.ts';
import { pastConnectionLimit, socketAdmission } from './admission.ts';
import type { ConnectRefusal } from './connack.ts';
import { type ConnectionHost, DeviceConnection, type DeviceSocket, ReasonCode } from './connection.ts';
import { DeviceMessages } from './device-messages.ts';
import { type PacketBounds, PartialPackets } from './packet-parser.ts';
import { ClientTable, type SessionLimits, SessionStore } from './sessions.ts';

// mqtt-packet fills itself a table of all 65,536 two-byte numbers as Buffers on its first packet
// unless told not to: 6 MB of heap to spare a 2-byte allocation per packet id written.
writeToStream.cacheNumbers = false;

/** The setting of a listener of the endpoint, named in the errors of its start. */
export type EndpointListener = 'MQTT_PORT' | 'MQTTS_PORT';

/** The embedded listeners of devices, as the server sees them. */
export interface DeviceEndpoint {
  /** The plain MQTT listener's port, when there is one. */
  port: number | undefined;
  /** The MQTTS listener's port, when there is one. */
  securePort: number | undefined;
  /** Gives the MQTTS listener a new certificate for its next connections; those open keep theirs. */
  setTls(tls: TlsMaterial): void;
  /** Messages waiting for their answer, the most that ever waited at once, and the devices connected. */
  figures(): Promise<{ pending: number; highWater: number; connections: number; sessions?: number }>;
  /** Serves a device connected another way: MQTT over WebSocket (websocket.ts). */
  accept(socket: DeviceSocket): void;
  close(): Promise<void>;
}

export interface DeviceEndpointOptions {
  /** The plain MQTT listener's port (0: any free one), or null for none. */
  port: number | null;
  /** The MQTTS listener's port (0: any free one) and its certificate, or null for none. */
  secure: { port: number; tls: TlsMaterial } | null;
  host: string;
  authenticator: DeviceAuthenticator;
  devices: DeviceService;
  log: FastifyBaseLogger;
  instructions?: MqttInstructions;
  /** Device connections beyond this are refused with CONNACK 3. */
  maxConnections: number;
  /** The clients' sockets of the process, HTTP and MQTT, within their budget (core/sockets.ts). */
  sockets: SocketCount;
  /** How long a new connection has to send CONNECT, ms. */
  connectTimeoutMs: number;
  inbound: InboundLimits;
  /** Bytes of unfinished packets held, all connections together. */
  maxPartialBytes: number;
  /**
   * Why the event writer would refuse an event message of an organisation's connection now
   * (EventWriter.refusal): asked before the message is decoded and checked.
   */
  eventRefusal?: (organisationKey: string, source: string) => string | undefined;
  /** Told the time from reading each message taken to writing its answer, in seconds (for /metrics). */
  onAnswered?: (seconds: number) => void;
  /** Tells of each time the store falls behind or catches up (events/writer.ts, onBehindChange). */
  onStoreBehind?: (listener: (behind: boolean) => void) => () => void;
  /** The sessions kept for devices between connections (sessions.ts); the defaults when left out. */
  sessions?: SessionLimits;
}

/** Sessions kept between connections, by default (docs/devices.md, "The device endpoint"). */
export const DEFAULT_SESSION_LIMITS: SessionLimits = {
  maxKept: 10_000,
  maxMessages: 100,
  maxExpiryMs: 2 * 3600 * 1000,
};

/**
 * The longest packet a device may send (docs/devices.md, "Overload"): a message of the largest body the
 * device interface takes, with room for its topic; before CONNECT is answered, a CONNECT of any sensible
 * client id, credentials and will.
 */
const MAX_PACKET_BYTES = BULK_BODY_LIMIT + 64 * 1024;
const MAX_CONNECT_PACKET_BYTES = 128 * 1024;
/** Topic aliases an MQTT 5 device may set. */
const TOPIC_ALIAS_MAXIMUM = 16;
/** How long a stop waits for the messages being stored to be answered, ms. */
const STOP_ANSWERS_MS = 3000;
/** How long at least a stop waits for devices to close their connections after the last answers, ms. */
const STOP_END_MS = 500;

export async function startDeviceEndpoint(options: DeviceEndpointOptions): Promise<DeviceEndpoint> {
  const { log, sockets } = options;
  const inbound = new InboundFlow(options.inbound);
  const messages = new DeviceMessages(
    options.devices,
    options.authenticator,
    inbound,
    log,
    options.eventRefusal,
    options.onAnswered,
  );
  const stopWatching = options.onStoreBehind?.((behind) => {
    messages.storeBehind = behind;
  });
  const sessions = new SessionStore(options.sessions ?? DEFAULT_SESSION_LIMITS);
  /** Every connection until it closes; `open` those signed in. */
  const connections = new Set<DeviceConnection>();
  const open = new Set<DeviceConnection>();
  const byClient = new ClientTable<DeviceConnection>();
  let lastId = 0;
  let stopping = false;
  const logLimit = oncePerMinute<'connections' | 'budget' | 'room' | 'files' | 'packets' | 'partial'>((message) =>
    log.warn(message),
  );
  // One object of bounds for all the connections' parsers (packet-parser.ts).
  const packetBounds: PacketBounds = {
    maxPacketBytes: MAX_PACKET_BYTES,
    maxConnectPacketBytes: MAX_CONNECT_PACKET_BYTES,
    partial: new PartialPackets(options.maxPartialBytes),
    refusedLength: (length, limit) =>
      logLimit(
        'packets',
        `MQTT packet of ${length} bytes refused, over the limit of ${limit}: its connection is closed`,
      ),
    refusedHeld: (held) =>
      logLimit(
        'partial',
        `MQTT connections hold ${held} bytes of unfinished packets, over MQTT_MAX_PARTIAL_BYTES (${options.maxPartialBytes}): closing the connection that passed it`,
      ),
  };

  const host: ConnectionHost = {
    limits: {
      connectTimeoutMs: options.connectTimeoutMs,
      receiveMaximum: options.inbound.perConnection,
      maximumPacketSize: MAX_PACKET_BYTES,
      topicAliasMaximum: TOPIC_ALIAS_MAXIMUM,
    },
    admission: (): ConnectRefusal | undefined => {
      if (stopping) return 'unavailable';
      return pastConnectionLimit(sockets, options.maxConnections, logLimit) ? 'busy' : undefined;
    },
    keyPairOf: async (accessKey) =>
      options.authenticator.recentCredentials(accessKey) ?? (await options.authenticator.credentials(accessKey)),
    passwordMatches: (secretKey, accessKey, password) => verifySignature(secretKey, accessKey, password),
    openSession: (connection, cleanStart, expirySeconds) => sessions.openFor(connection, cleanStart, expirySeconds),
    sessionExpiryMs: (seconds) => sessions.expiryFor(seconds),
    signedIn: (connection) => {
      // A client id of a key pair signs in once: the connection it had before is closed (MQTT's session
      // take-over). One of another key pair with the same client id is another device (ClientTable).
      const before = byClient.get(connection.accessKey, connection.clientId);
      if (before && before !== connection) before.close(ReasonCode.takenOver);
      byClient.set(connection.accessKey, connection.clientId, connection);
      open.add(connection);
    },
    received: (connection, topic, payload) => messages.receive(connection, topic, payload),
    refused: (connection, topic, payload) => {
      // Read as a plain message's text would be, for its hash.
      const context = readContext(connection.clientId, payload);
      connection.answer(
        failure(context, 404, [
          {
            code: 'not_found',
            message: `no device topic ${topic}: devices publish to Altizon/Datonis/<client id>/register, heartbeat, event or alert, or Altizon/Datonis/lzf/<client id>/event`,
          },
        ]),
      );
    },
    subscribed: (connection, topic) =>
      setImmediate(() => void options.instructions?.subscribed(connection.accessKey, topic, connection.id)),
    delivered: (alertKey) => options.instructions?.delivered(alertKey),
    closed: (connection) => {
      connections.delete(connection);
      open.delete(connection);
      if (connection.session) sessions.detach(connection.session, connection);
      byClient.delete(connection.accessKey, connection.clientId, connection);
    },
    packetBounds,
  };

  const admit = socketAdmission(sockets, (message) => logLimit('room', message));
  const handle = (socket: DeviceSocket) => {
    lastId += 1;
    connections.add(new DeviceConnection(lastId, socket, host));
  };

  const listeners: [Server, number, EndpointListener][] = [];
  if (options.port !== null) {
    // No Nagle delay: an answer is a small packet, which would otherwise wait ~40 ms for the device's ACK.
    const plain = createServer({ noDelay: true }, (socket) => {
      if (admit(socket)) handle(socket);
    });
    listeners.push([plain, options.port, 'MQTT_PORT']);
  }
  let secureServer: TlsServer | undefined;
  if (options.secure) {
    // A connection has CONNECT_TIMEOUT for its handshake, and then as long again to send CONNECT.
    secureServer = createTlsServer(
      { ...options.secure.tls, noDelay: true, handshakeTimeout: options.connectTimeoutMs },
      handle,
    );
    secureServer.on('connection', admit);
    listeners.push([secureServer, options.secure.port, 'MQTTS_PORT']);
  }

  const ports = new Map<EndpointListener, number>();
  try {
    for (const [server, at, listener] of listeners) {
      ports.set(listener, await listen(server, at, options.host, listener, logLimit, log));
    }
  } catch (error) {
    stopWatching?.();
    for (const [server] of listeners) server.close();
    throw error;
  }

  options.instructions?.connect({
    publish: async (topic, payload, alertKey, connection) => {
      for (const device of open) {
        if (connection !== undefined && device.id !== connection) continue;
        const qos = device.instructionQos(topic);
        if (qos >= 0) device.sendInstruction(topic, payload, alertKey, qos);
      }
      if (connection !== undefined) return;
      // A device away with a session kept gets it when it comes back (at QoS 0, nothing is kept).
      for (const session of sessions.offline()) {
        const qos = session.instructionQos(topic);
        if (qos > 0 && !session.holds(alertKey)) session.queue({ topic, payload, qos: qos >= 2 ? 2 : 1, alertKey });
      }
    },
  });

  /**
   * Stops: no new connections, each message from now on answered 503 (devices send it again, to
   * another instance or after the restart), and those being stored answered before the connections
   * close, so that no stored message goes unacknowledged (docs/deployment.md, "Stopping").
   */
  const close = async () => {
    stopping = true;
    messages.stopping = true;
    stopWatching?.();
    const closed = listeners.map(([server]) => new Promise<void>((resolve) => server.close(() => resolve())));
    // A connection that has not sent CONNECT has nothing to be answered: the listeners' close would
    // otherwise wait for it until CONNECT_TIMEOUT. One whose login is being checked is refused (CONNACK
    // 3 or 0x88) once it has been.
    for (const connection of connections) if (connection.state === 'new') connection.socket.destroy();
    const deadline = Date.now() + STOP_ANSWERS_MS;
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    while (inbound.pending() > 0 && Date.now() < deadline) await sleep(5);
    // Each connection is ended once its last answers are written (a FIN after them), and closed by its
    // device, or at the deadline: closed at once with bytes from the device unread, it would be reset,
    // and the device's system would drop the answers it had not yet read.
    const ending = [...open].map((device) => {
      const gone = new Promise<void>((resolve) => device.socket.once('close', () => resolve()));
      device.close(ReasonCode.shuttingDown);
      return gone;
    });
    await Promise.race([Promise.all(ending), sleep(Math.max(STOP_END_MS, deadline - Date.now()))]);
    for (const connection of connections) connection.socket.destroy();
    await Promise.all(closed);
  };

  return {
    port: ports.get('MQTT_PORT'),
    securePort: ports.get('MQTTS_PORT'),
    setTls: (tls) => secureServer?.setSecureContext(tls),
    figures: async () => ({
      pending: inbound.pending(),
      highWater: inbound.highWater,
      connections: open.size,
      sessions: sessions.keptCount,
    }),
    accept: (socket) => {
      if (stopping) return void socket.destroy();
      handle(socket);
    },
    close,
  };
}

/** The context of a refusal, read from a payload as a plain event's would be. */
function readContext(clientId: string, payload: Buffer): string {
  return readDeviceMessage({ clientId, kind: 'event', lzf: false }, payload).context;
}

/** Listens on a listener's port; answers the port (the one the system chose for port 0). */
function listen(
  server: Server,
  at: number,
  host: string,
  listener: EndpointListener,
  logLimit: (kind: 'files', message: string) => void,
  log: FastifyBaseLogger,
): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(Object.assign(new Error(error.message), { code: error.code, listener })),
    );
    // A connection storm must not overflow the kernel's queue of connections not yet accepted: a device
    // whose connection is dropped there retries only after a second or more.
    server.listen({ port: at, host, backlog: 4096 }, () => {
      server.on('error', (error: NodeJS.ErrnoException) => {
        // Out of file descriptors: the kernel's pending connection was closed unanswered.
        if (error.code === 'EMFILE' || error.code === 'ENFILE') {
          return logLimit(
            'files',
            'MQTT connection refused: the process has no file descriptor left (its open-file limit; see MQTT_MAX_CONNECTIONS)',
          );
        }
        log.error(error, 'MQTT listener failed');
      });
      resolve((server.address() as AddressInfo).port);
    });
  });
}
