/**
 * Serving devices through an external broker (MQTT_URL: Mosquitto, EMQX, ...). Thingbase subscribes
 * to the device topics there with shared subscriptions, so with several instances each message is
 * handled by exactly one. It cannot see a device's login, so it accepts only messages whose `hash`
 * checks out against the key pair named by their `access_key` member.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { MqttClient } from 'mqtt';
import { ConfigError } from '../core/config.ts';
import { newKey } from '../core/keys.ts';
import { oncePerMinute } from '../core/log-limit.ts';
import { redactUrl } from '../core/urls.ts';
import { waitAtMost } from '../core/wait.ts';
import type { DeviceAuthenticator } from '../devices/authentication.ts';
import type { DeviceService } from '../devices/service.ts';
import { ExternalIntake, type IntakeLimits } from './external-intake.ts';
import { InstructionOutbox, type OutboxLimits } from './instruction-outbox.ts';
import type { MqttInstructions } from './instructions.ts';
import { handleExternalBrokerMessage } from './messages.ts';
import { ackTopic, parseDeviceTopic, serverSubscriptions } from './topics.ts';

export interface ExternalBroker {
  /** Whether the connection to the broker is up now, its subscriptions made. */
  connected(): boolean;
  /** Messages being handled, whether one waits for room, and the most ever handled at once (external-intake.ts). */
  figures(): { pending: number; held: boolean; highWater: number };
  close(): Promise<void>;
}

/** How long a start waits for the external broker before it fails (docs/configuration.md, "MQTT"). */
export const FIRST_CONNECT_MS = 30_000;

/**
 * Answers published while the broker is away that mqtt.js may keep to send once it is back (those of
 * messages being handled when the connection was lost); past it they are dropped, and their devices,
 * unanswered, send again.
 */
const MAX_OFFLINE_ANSWERS = 1000;

/**
 * How long a stop lets the broker take what is in flight (answers, instructions) before the connection
 * is closed anyway (ms): a broker that is away takes nothing, and the stop must end.
 */
export const CLOSE_WAIT_MS = 2000;

/** The least time between two sendings again of pending instructions (connectExternalBroker), ms. */
const RESEND_SPACING_MS = 10_000;

/**
 * The first connection: tried every second until `withinMs` has passed, then the start fails with a
 * message naming MQTT_URL (a broker started along with the server gets the time to come up; a wrong
 * address does not leave the server waiting forever). Once connected, a lost connection is made again
 * every second for as long as the server runs.
 */
async function connectFirst(
  url: string,
  keepaliveSeconds: number,
  withinMs: number,
  log: FastifyBaseLogger,
): Promise<MqttClient> {
  // Loaded here: a server on its own device endpoint never needs the MQTT client library. The wait
  // counts from its first try, however long loading it took on a busy machine.
  const { default: mqtt } = await import('mqtt');
  const deadline = Date.now() + withinMs;
  for (;;) {
    try {
      return await mqtt.connectAsync(
        url,
        {
          clientId: `thingbase-${newKey()}`,
          clean: true,
          protocolVersion: 4,
          keepalive: keepaliveSeconds,
          reconnectPeriod: 1000,
          connectTimeout: 5000,
        },
        false,
      );
    } catch (error) {
      const reason = (error as Error).message || String((error as NodeJS.ErrnoException).code ?? error);
      if (Date.now() + 1000 > deadline) {
        throw new ConfigError(
          `cannot reach the MQTT broker at ${redactUrl(url)} (${reason}): check MQTT_URL (mqtt://user:password@host:port) and that the broker runs, or unset MQTT_URL to use the embedded broker`,
        );
      }
      log.warn(`MQTT broker ${redactUrl(url)} not reachable yet (${reason}); trying again`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

export async function connectExternalBroker(options: {
  url: string;
  /** Instances of one deployment share this group, so each message is handled once. */
  shareGroup: string;
  /** The connection's keep-alive interval, seconds (MQTT_KEEPALIVE; 60 when not given). */
  keepaliveSeconds?: number;
  authenticator: DeviceAuthenticator;
  devices: DeviceService;
  log: FastifyBaseLogger;
  /** Instructions reach devices through this broker. */
  instructions?: MqttInstructions;
  /** How long the first connection is tried for before the start fails (ms). */
  firstConnectMs?: number;
  /** Bounds of the instructions on their way to the broker (instruction-outbox.ts). */
  outboxLimits?: OutboxLimits;
  /** Bounds of the messages handled at once (external-intake.ts). */
  intake: IntakeLimits;
}): Promise<ExternalBroker> {
  const { authenticator, devices, log } = options;
  const client = await connectFirst(
    options.url,
    options.keepaliveSeconds ?? 60,
    options.firstConnectMs ?? FIRST_CONNECT_MS,
    log,
  );
  const sayOnce = oncePerMinute<'answers' | 'instructions'>((message) => log.warn(message));
  let offlineAnswers = 0;
  const intake = new ExternalIntake(options.intake);
  // mqtt.js's keep-alive (KeepaliveManager.js) sends PINGREQ one keep-alive after the last PINGRESP or
  // acknowledgement it handled, and half a keep-alive later, none handled since, takes the broker for
  // gone and connects again. Only packets it handles count, not bytes received, and while a message is
  // held it handles none: the broker's PINGRESP waits in the socket behind it. A ping unanswered then
  // says nothing of the broker, and connecting again would lose what the broker held for the old
  // connection (its session is clean) and the back-pressure with it. So while a message is held, or
  // was at some moment of the last one and a half keep-alives (had none been, a PINGRESP would have
  // been handled as it came), the check is put off: a ping goes now, so that the broker keeps hearing
  // from the server, and the next check comes as after a PINGRESP. A broker that goes away meanwhile is
  // noticed when writing to it fails, else at the first check after the store moves again
  // (docs/configuration.md, "MQTT").
  const keepaliveTimeout = client.onKeepaliveTimeout.bind(client);
  client.onKeepaliveTimeout = () => {
    if (!intake.heldWithin(client.keepalive * 1500)) return keepaliveTimeout();
    client.sendPing();
    client.reschedulePing(true);
  };
  // Messages are taken here rather than on 'message': mqtt.js reads the next packet (and acknowledges
  // this one to the broker) only once this calls back, so a message waiting for room slows the broker
  // instead of piling up (docs/configuration.md, "MQTT").
  client.handleMessage = (packet, callback) => {
    const topic = parseDeviceTopic(packet.topic);
    if (!topic) return callback();
    const payload = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload;
    intake.offer(payload.length, () => {
      // Every message is answered, a failed one with its own hash and why (messages.ts, failureAck).
      const handled = handleExternalBrokerMessage(devices, {
        topic,
        payload,
        lookup: (ak) => authenticator.credentials(ak),
        onUnexpected: (error) => log.error(error, 'MQTT message failed'),
      }).then((ack) => {
        if (!client.connected && ++offlineAnswers > MAX_OFFLINE_ANSWERS) {
          sayOnce(
            'answers',
            `MQTT broker ${redactUrl(options.url)} is away: answers past ${MAX_OFFLINE_ANSWERS} dropped (their devices send again)`,
          );
          return;
        }
        client.publish(ackTopic(topic.clientId), JSON.stringify(ack), { qos: 1 });
      });
      callback();
      return handled;
    });
  };
  client.on('error', (error) => log.warn(`MQTT broker ${redactUrl(options.url)}: ${error.message}`));
  const subscriptions = serverSubscriptions(options.shareGroup);
  await client.subscribeAsync(subscriptions, { qos: 1 });
  // Connected counts (for /readyz) once the subscriptions are made again too: until then the broker
  // drops devices' messages, which nobody would answer.
  let subscribed = true;
  client.on('close', () => {
    subscribed = false;
    intake.dropHeld();
  });
  // Instructions: the broker cannot tell which devices subscribe, nor when one completes a handshake;
  // a message counts as delivered once the broker has it (docs/devices.md). While it is away they are
  // held (bounded), and published once it is connected again.
  // Whether instructions may be pending that no message carries: at the start (a server stopped while
  // the broker was away, or one without MQTT, left them), and once one was dropped or refused. The next
  // connection sends them again (instructions.ts, sendPending).
  let maybeUnsent = true;
  let closing = false;
  const outbox = new InstructionOutbox(
    client,
    {
      delivered: (alertKey) => options.instructions?.delivered(alertKey),
      dropped: (count) => {
        maybeUnsent = true;
        sayOnce(
          'instructions',
          `MQTT broker ${redactUrl(options.url)} is away: ${count} instruction message(s) dropped past the bound of those held; their instructions stay pending, and are sent again once it is back`,
        );
      },
      failed: (error) => {
        maybeUnsent = true;
        log.warn(`MQTT broker ${redactUrl(options.url)}: an instruction was not published: ${error.message}`);
      },
      // Dropped while connected (too many in flight to a broker slow to take them): sent again once
      // the outbox is empty, without waiting for a connection made again.
      idle: () => sendUnsent(),
    },
    options.outboxLimits,
  );
  // At most once every RESEND_SPACING_MS: a broker that refuses every publish would otherwise have them
  // read and sent again as fast as it refuses them.
  let lastResend = Number.NEGATIVE_INFINITY;
  let resendTimer: NodeJS.Timeout | undefined;
  const sendUnsent = (): void => {
    const instructions = options.instructions;
    if (!maybeUnsent || !instructions || !client.connected || resendTimer || closing) return;
    const waitMs = lastResend + RESEND_SPACING_MS - Date.now();
    if (waitMs > 0) {
      resendTimer = setTimeout(() => {
        resendTimer = undefined;
        sendUnsent();
      }, waitMs).unref();
      return;
    }
    maybeUnsent = false;
    lastResend = Date.now();
    instructions
      .sendPending((alertKey) => outbox.carries(alertKey))
      .catch((error: Error) => {
        maybeUnsent = true;
        log.warn(`MQTT broker ${redactUrl(options.url)}: pending instructions not sent again: ${error.message}`);
      });
  };
  // A broker that restarted has forgotten the subscriptions (the session is clean). mqtt.js subscribes
  // again only after sending what it queued meanwhile, and was seen not to at all; so each connection
  // made again subscribes here (the same subscriptions twice are one).
  client.on('connect', () => {
    offlineAnswers = 0;
    outbox.flush();
    sendUnsent();
    client.subscribeAsync(subscriptions, { qos: 1 }).then(
      () => {
        subscribed = client.connected;
      },
      (error: Error) => log.warn(`MQTT broker ${redactUrl(options.url)}: subscribing again failed: ${error.message}`),
    );
  });
  options.instructions?.connect({ publish: (topic, payload, alertKey) => outbox.send(topic, payload, alertKey) });
  sendUnsent();
  return {
    connected: () => client.connected && subscribed,
    figures: () => intake.figures(),
    close: async () => {
      closing = true;
      clearTimeout(resendTimer);
      const deadline = Date.now() + CLOSE_WAIT_MS;
      const left = () => Math.max(1, deadline - Date.now());
      if (client.connected) {
        // No more messages for this instance: the broker gives the group's to the other instances
        // (its UNSUBACK is not waited for: while a message is held nothing is read from the broker).
        client.unsubscribe(subscriptions, (error) => {
          if (error) log.warn(`MQTT broker ${redactUrl(options.url)}: unsubscribing failed: ${error.message}`);
        });
        // Messages being handled are stored, then answered: a stop that closed the connection first
        // left them stored and unanswered, and their devices sent them again (stored twice).
        await waitAtMost(intake.idle(), left());
      }
      // What is in flight is given the rest of the while to be taken; then the connection is closed
      // whatever the broker does (mqtt.js's own end waits for it for ever).
      // While a message is held back nothing is read from the broker, its acknowledgements neither.
      if (client.connected && Object.keys(client.outgoing).length > 0 && !intake.figures().held) {
        await waitAtMost(new Promise((resolve) => client.once('outgoingEmpty', () => resolve(undefined))), left());
      }
      // A message still waiting for room is not handled: the broker forgets it with the connection.
      intake.close();
      await waitAtMost(client.endAsync(true), CLOSE_WAIT_MS);
    },
  };
}
