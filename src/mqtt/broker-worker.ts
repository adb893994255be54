/**
 * The embedded MQTT broker (aedes), on a thread of its own: it reads and writes the devices' packets,
 * checks their logins and the `hash` of each message, and hands each checked message to the server
 * thread (embedded-broker.ts), which stores it and sends back the acknowledgement. Reading packets,
 * checking signatures and writing acknowledgements cost about as much as storing the events, so with
 * the broker here the two halves of every message's work run on two cores.
 *
 * The server thread holds everything that needs the store: a login is checked against the secret it
 * answers for the access key; a message's key pair is looked up there again (deleted since login: the
 * message is answered 401 and the connection closed). Instructions are published here on the server's request.
 */
import { createRequire } from 'node:module';
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { parentPort, workerData } from 'node:worker_threads';
import { Aedes, type AuthenticateError, type Client, type PublishPacket, type Subscription } from 'aedes';
import { BULK_BODY_LIMIT } from '../core/http/body.ts';
import { oncePerMinute } from '../core/log-limit.ts';
import { SocketCount } from '../core/sockets.ts';
import { verifySignature } from '../devices/signature.ts';
import { ackPackets, type PacketIds, pubackPackets } from './ack-packets.ts';
import {
  addLogin,
  addMessage,
  type BrokerListener,
  type BrokerSettings,
  type FromBroker,
  forEachAck,
  forEachLoginAnswer,
  type LoginList,
  type MessageList,
  type ToBroker,
  TurnList,
} from './broker-protocol.ts';
import { admitSocket, pastConnectionLimit } from './endpoint/admission.ts';
import { InboundFlow } from './inbound-flow.ts';
import { limitPacketLength, type PacketParser, PartialPackets, useLeanBuffer } from './packet-parser.ts';
import { type Ack, contextUnread, failure, isAck, readDeviceMessage, refusalOnConnection } from './signed-messages.ts';
import { ackTopic, type DeviceTopic, maySubscribe, parseDeviceTopic, thingOfTopic } from './topics.ts';

class AuthError extends Error {
  readonly returnCode = 5;
}

/** CONNACK 3, "server unavailable": the broker holds as many connections as it may. */
class UnavailableError extends Error {
  readonly returnCode = 3;
}

/** A signed-in device's connection. */
interface Connection {
  id: number;
  client: Client;
  accessKey: string;
  secretKey: string;
}

if (!parentPort) throw new Error('broker-worker.ts runs as a worker thread');
const port = parentPort;
const send = (message: FromBroker) => port.postMessage(message);
const log = (level: 'error' | 'warn', message: string, error?: unknown) =>
  send({ t: 'log', level, message, error: error instanceof Error ? (error.stack ?? error.message) : undefined });

const settings = workerData as BrokerSettings;
// aedes keeps each client's socket, and the connected clients by id; its typings leave both out.
const socketOf = (client: Client): Socket => (client as Client & { conn: Socket }).conn;
const brokerClients = (): Client[] => Object.values((broker as unknown as { clients: Record<string, Client> }).clients);
const connections = new WeakMap<Client, Connection>();
const byId = new Map<number, Connection>();
let lastConnectionId = settings.firstConnectionId - 1;

// A device publishes to the same topic message after message: its last one is kept parsed.
const lastTopics = new WeakMap<Client, { name: string; topic: DeviceTopic | undefined }>();
const topicOf = (client: Client, name: string): DeviceTopic | undefined => {
  const last = lastTopics.get(client);
  if (last !== undefined && last.name === name) return last.topic;
  const topic = parseDeviceTopic(name);
  lastTopics.set(client, { name, topic });
  return topic;
};

// Logins wait for the server thread to answer with the key pair's secret.
const logins = new Map<
  number,
  { client: Client; accessKey: string; password: string; done: (error: AuthenticateError | null, ok: boolean) => void }
>();
let lastLoginId = 0;
const loginsAsked = new TurnList<LoginList[number]>((logins) => send({ t: 'logins', logins }));

// Messages handed to the server thread and not yet answered; past the limits, or while the server
// says its store is behind, messages are answered at once with a 503.
const inbound = new InboundFlow(settings.inbound);
let storeBehind = false;
/** Set once the server stops: messages are answered 503, and those under way are let finish. */
let stopping = false;
const busy = (context: string) =>
  failure(context, 503, [{ code: 'unavailable', message: 'the server is busy; send again shortly' }]);

/** Device sockets open now, signed in or not, counted with the server thread's HTTP connections. */
const sockets = new SocketCount(settings.sockets.budget, settings.sockets.memory);

/**
 * The longest packet a device may send (docs/devices.md, "Overload"): a message of the largest body the
 * device interface takes, with room for its topic; before the broker has answered CONNECT, a CONNECT
 * of any sensible client id, credentials and will.
 */
const MAX_PACKET_BYTES = BULK_BODY_LIMIT + 64 * 1024;
const MAX_CONNECT_PACKET_BYTES = 128 * 1024;
const partialPackets = new PartialPackets(settings.maxPartialBytes);
/** A refusal for a limit is logged once a minute, not once per device. */
const logLimit = oncePerMinute<'connections' | 'budget' | 'room' | 'files' | 'packets' | 'partial'>((message) =>
  log('warn', message),
);

// aedes writes packets with mqtt-packet, which by default fills itself a table of all 65,536 two-byte
// numbers (packet ids, lengths) as Buffers on its first packet: 6 MB of this thread's heap, to spare a
// 2-byte allocation per packet id written. The copy configured is the one aedes resolves.
type WriteToStream = (packet: { cmd: string; messageId?: number }, stream: Socket, options?: unknown) => boolean;
const packets = createRequire(import.meta.resolve('aedes'))('mqtt-packet') as {
  writeToStream: WriteToStream & { cacheNumbers?: boolean };
};
packets.writeToStream.cacheNumbers = false;

// A device's QoS 1 message is answered with a PUBACK, one per message. mqtt-packet writes one by corking
// the socket, writing its three parts and uncorking on the next tick. Here the PUBACKs a turn makes
// due on a socket (one per message of what was read from it) leave together on the next tick, as one
// buffer in one write (ack-packets.ts), before the acknowledgements, which leave on a later turn.
// aedes writes MQTT 3.1.1 packets to every client, as the broker serves 3.1 and 3.1.1.
const writeToStream = packets.writeToStream;
const pubacks = new Map<Socket, number[]>();
const writePubacks = () => {
  for (const [socket, ids] of pubacks) if (socket.writable) socket.write(pubackPackets(ids));
  pubacks.clear();
};
packets.writeToStream = (packet, stream, options) => {
  const id = packet.messageId;
  if (packet.cmd !== 'puback' || typeof id !== 'number' || !(id > 0 && id <= 0xffff)) {
    return writeToStream(packet, stream, options);
  }
  if (pubacks.size === 0) process.nextTick(writePubacks);
  const ids = pubacks.get(stream);
  if (ids) ids.push(id);
  else pubacks.set(stream, [id]);
  // What aedes waits on before the next packet: whether the socket takes more now.
  return !stream.writableNeedDrain;
};

const broker = await Aedes.createBroker({
  // The C SDK's client ids are 24 characters, over the usual 23.
  maxClientsIdLength: 256,
  queueLimit: 1000,
  drainTimeout: 30_000,
  maxInflightInbound: 1000,
  // A connection that has not sent CONNECT by then is closed (docs/configuration.md, CONNECT_TIMEOUT).
  connectTimeout: settings.connectTimeoutMs,
  authenticate: (client, username, password, done) => {
    if (pastConnectionLimit(sockets, settings.maxConnections, logLimit)) {
      return done(new UnavailableError('too many connections'), false);
    }
    const id = ++lastLoginId;
    const accessKey = username ?? '';
    logins.set(id, { client, accessKey, password: password ? password.toString('utf8') : '', done });
    addLogin(loginsAsked.open(), id, accessKey);
  },
  authorizePublish: (client, packet, done) => {
    // Devices publish to device topics only; acknowledgements and instructions come from the server. A
    // publish to any other topic is answered 404 on the device's httpAck topic and never routed
    // (`publish` below), as every publish is answered.
    if (!client) return done(new Error(`publishing to ${packet.topic} is not allowed`));
    // While the device does not read what it is sent (its acknowledgements), nothing more is read
    // from it: aedes reads a socket again once every packet of its last read is done.
    const socket = socketOf(client);
    if (!socket.writableNeedDrain) return done(null);
    socket.once('drain', () => done(null));
  },
  authorizeSubscribe: (client, subscription, done) => {
    const connection = client ? connections.get(client) : undefined;
    if (!client || !connection || !maySubscribe(subscription.topic, client.id, connection.accessKey)) {
      return done(null, null);
    }
    done(null, subscription);
  },
});

function answerLogin(id: number, secretKey: string | null): void {
  const login = logins.get(id);
  if (!login) return;
  logins.delete(id);
  if (secretKey === null || !verifySignature(secretKey, login.accessKey, login.password)) {
    login.done(new AuthError('bad user name or password'), false);
    return;
  }
  const connection: Connection = {
    id: ++lastConnectionId,
    client: login.client,
    accessKey: login.accessKey,
    secretKey,
  };
  connections.set(login.client, connection);
  byId.set(connection.id, connection);
  login.done(null, true);
}

broker.on('clientDisconnect', (client: Client) => {
  const connection = connections.get(client);
  if (connection) byId.delete(connection.id);
});

// Straight to the device's connection rather than through the broker's topic routing: the ack topic
// has one subscriber, the device itself, and routing every ack costs more than it is worth (and, with
// thousands due at once after a commit, the router's queue recursed until the stack overflowed).
// The acks a commit makes due for one device leave together, in one socket write.
const due = new Map<Client, Ack[]>();
const writeAcks = (client: Client, acks: readonly Ack[]) => {
  const topic = ackTopic(client.id);
  // aedes keeps a client's subscriptions by topic; its typings leave them out.
  const subscription = (client as Client & { subscriptions: Record<string, { qos?: number }> }).subscriptions[topic];
  if (!subscription || client.closed) return;
  const qos = subscription.qos ? 1 : 0;
  const socket = socketOf(client);
  // A clean session (every SDK's) keeps nothing to send again: aedes would keep no copy of the
  // messages either, and the device's PUBACK of each finds none to clear, as before. So they go as
  // bytes made here (ack-packets.ts), in one write.
  if (client.clean) {
    if (socket.writable) socket.write(ackPackets(client as Client & PacketIds, topic, acks, qos));
    return;
  }
  // A session the broker keeps (not a clean one, which no SDK asks for) keeps its unacknowledged
  // messages through aedes, to send them again when the device comes back.
  socket.cork();
  for (const ack of acks) {
    const payload = Buffer.from(JSON.stringify(ack));
    client.publish({ cmd: 'publish', topic, payload, qos, retain: false, dup: false }, () => {});
  }
  // aedes writes each packet on a later turn of the event loop; the socket stays corked until then.
  setImmediate(() => socket.uncork());
};
const sendDue = () => {
  for (const [client, acks] of due) {
    due.delete(client);
    writeAcks(client, acks);
  }
};
/** Writes the acknowledgements due to a connection now, before it is closed. */
const sendDueTo = (client: Client) => {
  const acks = due.get(client);
  if (!acks) return;
  due.delete(client);
  writeAcks(client, acks);
};

const acknowledge = (client: Client, ack: Ack) => {
  const acks = due.get(client);
  if (acks) return void acks.push(ack);
  if (due.size === 0) setImmediate(sendDue);
  due.set(client, [ack]);
};

const forwarded = new TurnList<MessageList[number]>((messages) => send({ t: 'messages', messages }));

const payloadOf = (packet: PublishPacket): Buffer =>
  Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload);

/** The context of an acknowledgement refusing a message, read from its payload. */
const contextOf = (topic: DeviceTopic, payload: Buffer): string => readDeviceMessage(topic, payload).context;

const unknownTopic = (packet: PublishPacket, client: Client) => {
  if (!connections.has(client)) return;
  // Read as a plain message's text would be, for its hash.
  const context = contextOf({ clientId: client.id, kind: 'event', lzf: false }, payloadOf(packet));
  acknowledge(
    client,
    failure(context, 404, [
      {
        code: 'not_found',
        message: `no device topic ${packet.topic}: devices publish to Altizon/Datonis/<client id>/register, heartbeat, event or alert, or Altizon/Datonis/lzf/<client id>/event`,
      },
    ]),
  );
};

const onDevicePublish = (packet: PublishPacket, client: Client, topic: DeviceTopic) => {
  const connection = connections.get(client);
  if (!connection) return;
  const payload = payloadOf(packet);
  if (topic.clientId !== client.id) {
    return acknowledge(
      client,
      failure(contextOf(topic, payload), 403, [
        { code: 'forbidden', message: 'publish under your own client id only' },
      ]),
    );
  }
  // Refused for overload: a flooding device's messages are answered as fast as they can be read,
  // without decoding or scanning them where the context can be told from the payload's end, so that
  // they do not pile up in its socket's buffers (docs/devices.md, "Overload").
  const behind = storeBehind && inbound.refusedWhileBehind(connection.id);
  if (behind || stopping || !inbound.mayHandOn(connection.id, payload.length)) {
    const context = contextUnread(topic, payload);
    if (context !== undefined) return acknowledge(client, busy(context));
  }
  const read = readDeviceMessage(topic, payload);
  if (isAck(read)) return acknowledge(client, read);
  if (behind || stopping || !inbound.handOn(connection.id, read.text.length)) {
    return acknowledge(client, busy(read.context));
  }
  const refused = refusalOnConnection(read, connection);
  if (refused) {
    inbound.answered(connection.id);
    return acknowledge(client, refused);
  }
  addMessage(forwarded.open(), connection.id, connection.accessKey, topic.kind, read.text, read.context);
};

// A device's message (acknowledged to it with PUBACK by now) goes to the handler straight, not
// through the broker's router: no client may subscribe to device topics (maySubscribe), so routing it
// would look for subscribers and offline sessions only to find none, at about a tenth of what
// handling the message costs. Every other publish (the broker's own, instructions) is routed.
const route = broker.publish.bind(broker) as (packet: PublishPacket, client: unknown, done?: unknown) => void;
const publish = (packet: PublishPacket, client: unknown, done?: unknown) => {
  // aedes also calls publish(packet, done), without a client.
  const device = typeof client === 'object' && client !== null ? (client as Client) : undefined;
  // aedes announces every connection, subscription and disconnection on $SYS topics (as
  // publish(packet, done)), which no device may subscribe to (maySubscribe): routing them finds nobody
  // and costs a share of each connection.
  if (typeof client === 'function' && packet.topic.startsWith('$SYS/')) return void client(null);
  if (device === undefined) return route(packet, client, done);
  const topic = topicOf(device, packet.topic);
  // Nothing a device publishes is routed to other clients: a topic that is no device topic (another
  // device's acknowledgements, instructions, anything else; its will included) is answered 404.
  if (topic === undefined) unknownTopic(packet, device);
  else onDevicePublish(packet, device, topic);
  if (typeof done === 'function') done(null);
};
(broker as unknown as { publish: typeof publish }).publish = publish;

/*
 * Instructions go to each subscribed connection at QoS 2, and the server learns of each completed
 * handshake. With clean sessions aedes keeps no copy of what it sent, so the alert keys of instruction
 * messages in flight are kept per connection: QoS 2 messages to a device are instructions only, and a
 * client completes their handshakes in order.
 */
const inFlight = new WeakMap<Client, string[]>();
const { persistence } = broker as unknown as {
  persistence: {
    outgoingClearMessageId(client: Client, packet: { cmd?: string }): Promise<unknown>;
    createRetainedStreamCombi(patterns: string[]): Readable;
  };
};
// No retained message is ever kept: devices' messages are handled, never routed, and the server's own
// are sent unretained. So a subscription's search for retained messages (an async iterator through a
// stream, about a tenth of the broker's work on a new device) is answered with a stream that has ended.
persistence.createRetainedStreamCombi = () =>
  new Readable({
    objectMode: true,
    read() {
      this.push(null);
    },
  });
const clear = persistence.outgoingClearMessageId.bind(persistence);
// Only a PUBCOMP ends an instruction's handshake; the PUBACK of every acknowledgement a device
// receives passes straight through.
persistence.outgoingClearMessageId = (client, packet) => {
  if (packet?.cmd !== 'pubcomp') return clear(client, packet);
  return clear(client, packet).then((result) => {
    const alertKey = inFlight.get(client)?.shift();
    if (alertKey) send({ t: 'delivered', alertKey });
    return result;
  });
};
broker.on('subscribe', (subscriptions: Subscription[], client: Client) => {
  const connection = connections.get(client);
  if (!connection) return;
  for (const subscription of subscriptions) {
    // Refused subscriptions come back with qos 128.
    if ((subscription.qos as number) !== 128 && thingOfTopic(subscription.topic) !== undefined) {
      send({ t: 'subscribed', accessKey: connection.accessKey, topic: subscription.topic, connection: connection.id });
    }
  }
});

/** Whether a subscription's filter covers a topic (the only wildcard a device may use is a `+` level). */
const covers = (filter: string, topic: string): boolean => {
  const f = filter.split('/');
  const t = topic.split('/');
  return f.length === t.length && f.every((part, i) => part === '+' || part === t[i]);
};

const sendInstruction = (client: Client, topic: string, payload: string, alertKey: string) =>
  new Promise<void>((resolve) => {
    const queue = inFlight.get(client) ?? [];
    queue.push(alertKey);
    inFlight.set(client, queue);
    client.publish({ cmd: 'publish', topic, payload: Buffer.from(payload), qos: 2, retain: false, dup: false }, () =>
      resolve(),
    );
  });

async function publishInstruction(topic: string, payload: string, alertKey: string, to: number | null) {
  const clients = to !== null ? [byId.get(to)?.client].filter((c) => c !== undefined) : brokerClients();
  for (const client of clients) {
    const subscribed = Object.keys(
      (client as unknown as { subscriptions: Record<string, unknown> }).subscriptions ?? {},
    );
    if (subscribed.some((filter) => covers(filter, topic))) await sendInstruction(client, topic, payload, alertKey);
  }
}

/** Counts a connection's socket from when it is accepted, and answers whether it is kept (endpoint/admission.ts). */
const admit = (socket: Socket): boolean => admitSocket(sockets, socket, (message) => logLimit('room', message));

// No Nagle delay: an acknowledgement is a small packet, and waiting for the device's delayed ACK
// before sending it would add about 40 ms to every answer.
const handle = (socket: Socket) => {
  // aedes reads the socket on a later turn: its parser has no bytes yet.
  const client = broker.handle(socket) as unknown as { _parser: PacketParser; connackSent: boolean };
  useLeanBuffer(client._parser);
  limitPacketLength(
    client._parser,
    () => (client.connackSent ? MAX_PACKET_BYTES : MAX_CONNECT_PACKET_BYTES),
    (length, limit) =>
      logLimit(
        'packets',
        `MQTT packet of ${length} bytes refused, over the limit of ${limit}: its connection is closed`,
      ),
  );
  const release = partialPackets.watch(client._parser, (held) =>
    logLimit(
      'partial',
      `MQTT connections hold ${held} bytes of unfinished packets, over MQTT_MAX_PARTIAL_BYTES (${settings.maxPartialBytes}): closing the connection that passed it`,
    ),
  );
  socket.once('close', release);
};
// The plain listener, and the MQTTS one (docs/configuration.md, "TLS"): a device's packets are read
// from its TLS socket once the handshake is done, the same way as from a plain one.
const listeners: [Server, number, BrokerListener][] = [];
if (settings.port !== null) {
  const plain = createServer({ noDelay: true }, (socket) => {
    if (admit(socket)) handle(socket);
  });
  listeners.push([plain, settings.port, 'MQTT_PORT']);
}
let secureServer: TlsServer | undefined;
if (settings.secure) {
  // A connection has CONNECT_TIMEOUT for its handshake, and then as long again to send CONNECT.
  secureServer = createTlsServer(
    { ...settings.secure.tls, noDelay: true, handshakeTimeout: settings.connectTimeoutMs },
    handle,
  );
  secureServer.on('connection', admit);
  listeners.push([secureServer, settings.secure.port, 'MQTTS_PORT']);
}

/** How long a stop waits for the messages handed to the server thread to be answered. */
const STOP_ANSWERS_MS = 3000;
/** How long at least a stop waits for devices to close their connections after the last answers. */
const STOP_END_MS = 500;

/**
 * Stops: no new connections, each message from now on answered 503 (devices send it again, to
 * another instance or after the restart), and those the server thread is storing answered before the
 * connections close, so that no stored message goes unacknowledged (docs/deployment.md, "Stopping").
 */
async function stop(): Promise<void> {
  stopping = true;
  const closed = listeners.map(([server]) => new Promise<void>((resolve) => server.close(() => resolve())));
  const deadline = Date.now() + STOP_ANSWERS_MS;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  while (inbound.pending() > 0 && Date.now() < deadline) await sleep(5);
  sendDue();
  writePubacks();
  // Each connection is ended once what was written to it has gone (a FIN after the acknowledgements),
  // and closed by its device, or at the deadline. Closed at once with bytes from the device unread, it
  // would be reset, and the device's system would drop the acknowledgements it had not yet read.
  // Messages read meanwhile get no answer (the socket takes no more writes), not even a PUBACK: the
  // device sends them again.
  const ending = brokerClients()
    .map(socketOf)
    .filter((socket) => !socket.destroyed)
    .map((socket) => {
      const closed = new Promise((resolve) => socket.once('close', resolve));
      socket.end();
      return closed;
    });
  await Promise.race([Promise.all(ending), sleep(Math.max(STOP_END_MS, deadline - Date.now()))]);
  await new Promise<void>((resolve) => broker.close(() => resolve()));
  await Promise.all(closed);
  port.close();
}

port.on('message', (message: ToBroker) => {
  switch (message.t) {
    case 'acks':
      forEachAck(message.acks, (id, ack) => {
        inbound.answered(id);
        const connection = byId.get(id);
        if (connection) acknowledge(connection.client, ack);
      });
      break;
    case 'logins':
      forEachLoginAnswer(message.answers, answerLogin);
      break;
    case 'close': {
      const connection = byId.get(message.connection);
      if (!connection) break;
      // Its last acknowledgement (why it is closed) leaves first.
      sendDueTo(connection.client);
      connection.client.close();
      break;
    }
    case 'behind':
      storeBehind = message.behind;
      break;
    case 'figures':
      send({
        t: 'figures',
        id: message.id,
        pending: inbound.pending(),
        highWater: inbound.highWater,
        connections: broker.connectedClients,
      });
      break;
    case 'publish': {
      const { id } = message;
      publishInstruction(message.topic, message.payload, message.alertKey, message.connection).then(
        () => send({ t: 'published', id }),
        (error) => {
          log('warn', 'instruction not published', error);
          send({ t: 'published', id });
        },
      );
      break;
    }
    case 'tls':
      secureServer?.setSecureContext(message.tls);
      break;
    case 'stop':
      stop().catch((error) => log('error', 'the MQTT broker did not stop cleanly', error));
      break;
  }
});

/** Listens on a listener's port; answers the port (the one the system chose for port 0). */
function listen(server: Server, at: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    // A connection storm must not overflow the kernel's queue of connections not yet accepted: a device
    // whose connection is dropped there retries only after a second or more.
    server.listen({ port: at, host: settings.host, backlog: 4096 }, () => {
      server.on('error', (error: NodeJS.ErrnoException) => {
        // Out of file descriptors: the kernel's pending connection was closed unanswered.
        if (error.code === 'EMFILE' || error.code === 'ENFILE') {
          return logLimit(
            'files',
            `MQTT connection refused: the process has no file descriptor left (its open-file limit; see MQTT_MAX_CONNECTIONS)`,
          );
        }
        log('error', 'MQTT listener failed', error);
      });
      resolve((server.address() as AddressInfo).port);
    });
  });
}

const ports = new Map<BrokerListener, number>();
for (const [server, at, listener] of listeners) {
  try {
    ports.set(listener, await listen(server, at));
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    send({ t: 'failed', listener, code, message });
    port.close();
    break;
  }
}
if (ports.size === listeners.length) {
  send({ t: 'listening', port: ports.get('MQTT_PORT') ?? null, securePort: ports.get('MQTTS_PORT') ?? null });
}
