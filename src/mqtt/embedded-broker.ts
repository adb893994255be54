/**
 * The embedded MQTT broker (aedes) devices connect to (DEVICES.md). A device signs in with its access
 * key as user name and HMAC-SHA256(secret key, access key) as password; wrong credentials are refused
 * with CONNACK 5. It may publish only under its own client id and subscribe only to its own
 * acknowledgements and its key pair's instructions. Every message it publishes is answered on its
 * `httpAck` topic, after the PUBACK and after the data is durable.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { Aedes, type Client, type PublishPacket } from 'aedes';
import type { FastifyBaseLogger } from 'fastify';
import type { DeviceAuthenticator, DeviceCredentials } from '../devices/authentication.ts';
import type { DeviceService } from '../devices/service.ts';
import { verifySignature } from '../devices/signature.ts';
import { embeddedInstructionLink, type MqttInstructions } from './instructions.ts';
import { handleDeviceMessage } from './messages.ts';
import { ackTopic, type DeviceTopic, maySubscribe, parseDeviceTopic } from './topics.ts';

export interface EmbeddedBroker {
  port: number;
  close(): Promise<void>;
}

class AuthError extends Error {
  readonly returnCode = 5;
}

export async function startEmbeddedBroker(options: {
  port: number;
  host: string;
  authenticator: DeviceAuthenticator;
  devices: DeviceService;
  log: FastifyBaseLogger;
  /** Instructions reach devices through this broker. */
  instructions?: MqttInstructions;
}): Promise<EmbeddedBroker> {
  const { authenticator, devices, log } = options;
  const connections = new WeakMap<Client, DeviceCredentials>();
  // A device publishes to the same topic message after message: its last one is kept parsed.
  const lastTopics = new WeakMap<Client, { name: string; topic: DeviceTopic | undefined }>();
  const topicOf = (client: Client, name: string): DeviceTopic | undefined => {
    const last = lastTopics.get(client);
    if (last !== undefined && last.name === name) return last.topic;
    const topic = parseDeviceTopic(name);
    lastTopics.set(client, { name, topic });
    return topic;
  };
  const broker = await Aedes.createBroker({
    // The C SDK's client ids are 24 characters, over the usual 23.
    maxClientsIdLength: 256,
    queueLimit: 1000,
    drainTimeout: 30_000,
    maxInflightInbound: 1000,
    authenticate: (client, username, password, done) => {
      const accessKey = username ?? '';
      authenticator.credentials(accessKey).then(
        (credentials) => {
          const given = password ? password.toString('utf8') : '';
          if (!credentials || !verifySignature(credentials.secretKey, accessKey, given)) {
            return done(new AuthError('bad user name or password'), false);
          }
          connections.set(client, credentials);
          done(null, true);
        },
        (error) => {
          log.error(error, 'MQTT authentication failed');
          done(new AuthError('authentication failed'), false);
        },
      );
    },
    authorizePublish: (client, packet, done) => {
      // Devices publish to device topics only; acknowledgements and instructions come from the server.
      if (!client || !topicOf(client, packet.topic))
        return done(new Error(`publishing to ${packet.topic} is not allowed`));
      done(null);
    },
    authorizeSubscribe: (client, subscription, done) => {
      const credentials = client ? connections.get(client) : undefined;
      if (!client || !credentials || !maySubscribe(subscription.topic, client.id, credentials.accessKey)) {
        return done(null, null);
      }
      done(null, subscription);
    },
  });

  // Straight to the device's connection rather than through the broker's topic routing: the ack topic
  // has one subscriber, the device itself, and routing every ack costs more than it is worth (and, with
  // thousands due at once after a commit, the router's queue recursed until the stack overflowed).
  // The acks a commit makes due for one device leave together: one socket write instead of one each.
  const due = new Map<Client, object[]>();
  const sendDue = () => {
    for (const [client, acks] of due) {
      due.delete(client);
      const topic = ackTopic(client.id);
      // aedes keeps a client's subscriptions by topic; its typings leave them out.
      const subscription = (client as Client & { subscriptions: Record<string, { qos?: number }> }).subscriptions[
        topic
      ];
      if (!subscription || client.closed) continue;
      // aedes writes each packet on a later turn of the event loop; the socket stays corked until then.
      const socket = (client as Client & { conn: Socket }).conn;
      socket.cork();
      for (const ack of acks) {
        client.publish(
          {
            cmd: 'publish',
            topic,
            payload: Buffer.from(JSON.stringify(ack)),
            qos: subscription.qos ? 1 : 0,
            retain: false,
            dup: false,
          },
          () => {},
        );
      }
      setImmediate(() => socket.uncork());
    }
  };
  const acknowledge = (client: Client, ack: object) => {
    const acks = due.get(client);
    if (acks) return void acks.push(ack);
    if (due.size === 0) setImmediate(sendDue);
    due.set(client, [ack]);
  };

  // Each message is checked against its key pair as it is now (kept for up to a second by the
  // authenticator): a key pair deleted since the device signed in ends its connection, and a changed
  // role applies to the next message. Messages of one device keep their order while it is read.
  const lookups = new WeakMap<Client, Promise<void>>();
  const failed = (client: Client) => (error: unknown) => {
    log.error(error, 'MQTT message failed');
    acknowledge(client, {
      context: 'PARSE_ERROR',
      http_code: 500,
      http_msg: { errors: [{ code: 'internal', message: 'an unexpected error occurred' }] },
    });
  };
  const handle = (client: Client, topic: DeviceTopic, payload: Buffer, credentials: DeviceCredentials | undefined) => {
    if (!credentials) {
      client.close();
      return;
    }
    connections.set(client, credentials);
    handleDeviceMessage(devices, {
      topic,
      payload,
      connection: credentials,
      lookup: (ak) => authenticator.credentials(ak),
    }).then((ack) => acknowledge(client, ack), failed(client));
  };

  const onDevicePublish = (packet: PublishPacket, client: Client, topic: DeviceTopic) => {
    const signedIn = connections.get(client);
    if (!signedIn) return;
    if (topic.clientId !== client.id) {
      acknowledge(client, {
        context: 'PARSE_ERROR',
        http_code: 403,
        http_msg: { errors: [{ code: 'forbidden', message: 'publish under your own client id only' }] },
      });
      return;
    }
    const payload = Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload);
    const pending = lookups.get(client);
    const recent = pending ? undefined : authenticator.recentCredentials(signedIn.accessKey);
    if (recent) return handle(client, topic, payload, recent);
    const looked = (pending ?? Promise.resolve())
      .then(() => authenticator.credentials(signedIn.accessKey))
      .then((credentials) => handle(client, topic, payload, credentials), failed(client))
      .finally(() => {
        if (lookups.get(client) === looked) lookups.delete(client);
      });
    lookups.set(client, looked);
  };

  // A device's message (acknowledged to it with PUBACK by now) goes to the handler straight, not
  // through the broker's router: no client may subscribe to device topics (maySubscribe), so routing it
  // would look for subscribers and offline sessions only to find none, at about a tenth of what
  // handling the message costs. Every other publish (the broker's own, instructions) is routed.
  const route = broker.publish.bind(broker) as (packet: PublishPacket, client: unknown, done?: unknown) => void;
  const publish = (packet: PublishPacket, client: unknown, done?: unknown) => {
    // aedes also calls publish(packet, done), without a client.
    const device = typeof client === 'object' && client !== null ? (client as Client) : undefined;
    const topic = device !== undefined ? topicOf(device, packet.topic) : undefined;
    if (device === undefined || topic === undefined) return route(packet, client, done);
    onDevicePublish(packet, device, topic);
    if (typeof done === 'function') done(null);
  };
  (broker as unknown as { publish: typeof publish }).publish = publish;

  options.instructions?.connect(
    embeddedInstructionLink(broker, (client) => connections.get(client)?.accessKey, options.instructions),
  );

  const server: Server = createServer(broker.handle);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : options.port,
    close: async () => {
      await new Promise<void>((resolve) => broker.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
