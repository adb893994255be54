/**
 * The embedded MQTT broker devices connect to (docs/devices.md, "MQTT"). A device signs in with its
 * access key as user name and HMAC-SHA256(secret key, access key) as password; wrong credentials are
 * refused with CONNACK 5. It may publish only under its own client id and subscribe only to its own
 * acknowledgements and its key pair's instructions. Every message it publishes is answered on its
 * `httpAck` topic, after the PUBACK and after the data is durable.
 *
 * The broker itself runs on a worker thread (broker-worker.ts), which reads packets and checks
 * signatures; this side answers its logins from the store, does what each checked message asks and
 * sends back the acknowledgements. Should the thread fail, it is started again on the same port and
 * devices reconnect, as after any broker restart.
 */
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { TlsMaterial } from '../core/tls.ts';
import type { DeviceCredentials } from '../devices/authentication.ts';
import { storeFaultOf } from '../store/faults.ts';
import {
  type AckList,
  addAck,
  addLoginAnswer,
  type BrokerSettings,
  type FromBroker,
  forEachLogin,
  type LoginAnswerList,
  type MessageList,
  type ToBroker,
  TurnList,
  visitMessage,
} from './broker-protocol.ts';
import type { DeviceEndpointOptions } from './endpoint/endpoint.ts';
import { actOnDeviceMessage, failureAck, unexpected } from './messages.ts';
import { type Ack, failure } from './signed-messages.ts';
import type { DeviceMessageKind } from './topics.ts';

export interface EmbeddedBroker {
  /** The plain MQTT listener's port, when there is one. */
  port: number | undefined;
  /** The MQTTS listener's port, when there is one. */
  securePort: number | undefined;
  /** Gives the MQTTS listener a new certificate for its next connections; those open keep theirs. */
  setTls(tls: TlsMaterial): void;
  /** The broker's thread as it is now (it is replaced when it fails): for diagnostics and tests. */
  thread(): Worker;
  /** How loaded the broker thread is now (for diagnostics, metrics and tests). */
  figures(): Promise<BrokerFigures>;
  close(): Promise<void>;
}

/**
 * How loaded a broker thread is: device messages waiting for the server thread, the most that ever
 * waited at once, and the devices connected.
 */
export interface BrokerFigures {
  pending: number;
  highWater: number;
  connections: number;
}

/** The worker's module: compiled JavaScript beside this file, or TypeScript when run from source. */
const fromSource = extname(fileURLToPath(import.meta.url)) === '.ts';
const workerUrl = new URL(`./broker-worker${fromSource ? '.ts' : '.js'}`, import.meta.url);

/**
 * A worker thread of the broker; from source, with the TypeScript loader the tests and `npm run dev` use.
 * Its young generation is its own (MQTT_BROKER_YOUNG_GENERATION_MB, docs/configuration.md): V8's default
 * of 48 MB let a connection storm's passing objects take 32 MB of it at once, on top of the connections.
 */
function newWorker(settings: BrokerSettings, youngGenerationMb: number): Worker {
  const options = { workerData: settings, resourceLimits: { maxYoungGenerationSizeMb: youngGenerationMb } };
  if (!fromSource) return new Worker(workerUrl, options);
  const loader = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  const code = `import(${loader}).then(({ register }) => { register(); return import(${JSON.stringify(workerUrl.href)}); })`;
  return new Worker(code, { eval: true, ...options });
}

const RESTART_DELAY_MS = 1000;
const STOP_TIMEOUT_MS = 5000;
const CONNECTIONS_PER_THREAD = 2 ** 40;
/** Device messages, and characters of their text, begun on one turn of the event loop at most. */
const SLICE_MESSAGES = 200;
const SLICE_BYTES = 64 * 1024;

export async function startEmbeddedBroker(
  options: DeviceEndpointOptions & {
    /** The broker thread's young generation, MB. */
    youngGenerationMb: number;
  },
): Promise<EmbeddedBroker> {
  // Each thread numbers its connections from its own first number.
  let started = 0;
  let secure = options.secure;
  const settings = (port: number | null, securePort: number | null): BrokerSettings => ({
    port,
    secure: secure && securePort !== null ? { port: securePort, tls: secure.tls } : null,
    host: options.host,
    firstConnectionId: started++ * CONNECTIONS_PER_THREAD + 1,
    maxConnections: options.maxConnections,
    sockets: { budget: options.sockets.budget, memory: options.sockets.memory },
    connectTimeoutMs: options.connectTimeoutMs,
    inbound: options.inbound,
    maxPartialBytes: options.maxPartialBytes,
  });
  let current = await startWorker(options, settings(options.port, options.secure?.port ?? null));
  let stopping = false;
  const watch = (worker: BrokerThread) => {
    worker.exited.then((code) => {
      if (stopping || current !== worker) return;
      options.log.error(`the MQTT broker thread stopped (exit code ${code}); starting it again`);
      const restart = () =>
        // On the same ports, and with the certificate the MQTTS listener was given last.
        startWorker(options, settings(worker.port, worker.securePort)).then(
          (next) => {
            if (stopping) return void next.stop();
            current = next;
            watch(next);
          },
          (error) => {
            options.log.error(error, 'the MQTT broker thread cannot start; trying again');
            if (!stopping) setTimeout(restart, RESTART_DELAY_MS);
          },
        );
      setTimeout(restart, RESTART_DELAY_MS);
    });
  };
  watch(current);
  return {
    port: current.port ?? undefined,
    securePort: current.securePort ?? undefined,
    setTls: (tls) => {
      if (!secure) return;
      secure = { ...secure, tls };
      current.post({ t: 'tls', tls });
    },
    thread: () => current.worker,
    figures: () => current.figures(),
    close: async () => {
      stopping = true;
      await current.stop();
    },
  };
}

interface BrokerThread {
  port: number | null;
  securePort: number | null;
  worker: Worker;
  post(message: ToBroker): void;
  /** Resolves with the exit code once the thread has ended. */
  exited: Promise<number>;
  figures(): Promise<BrokerFigures>;
  stop(): Promise<void>;
}

/** Starts a broker thread and serves it until it ends. */
function startWorker(
  options: Parameters<typeof startEmbeddedBroker>[0],
  settings: BrokerSettings,
): Promise<BrokerThread> {
  const { authenticator, devices, log, instructions } = options;
  const worker = newWorker(settings, options.youngGenerationMb);
  const post = (message: ToBroker) => worker.postMessage(message);
  const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
  const publishing = new Map<number, () => void>();
  // Instructions under way through a thread that has ended are not waited for, nor are new ones sent
  // through it: they are sent again when their device subscribes again (to the next thread).
  let ended = false;
  void exited.then(() => {
    ended = true;
    // Its sockets closed with it.
    options.sockets.clear('mqtt');
    for (const done of publishing.values()) done();
    publishing.clear();
  });
  worker.on('error', (error) => log.error(error, 'MQTT broker thread failed'));
  const stopWatching = options.onStoreBehind?.((behind) => post({ t: 'behind', behind }));
  void exited.then(() => stopWatching?.());

  const acks = new TurnList<AckList[number]>((list) => post({ t: 'acks', acks: list }));
  const acknowledge = (connection: number, ack: Ack) => addAck(acks.open(), connection, ack);
  // A message that failed is answered with its own context and why (a full disk, a database that does
  // not answer: 503); only failures that are none of those are logged, each.
  const failed = (connection: number, context: string) => (error: unknown) => {
    if (unexpected(error)) log.error(error, 'MQTT message failed');
    acknowledge(connection, failureAck(context, error));
  };

  // Each message is done in the name of its key pair as it is now (kept for up to a second by the
  // authenticator): a key pair deleted since the device signed in ends its connection, and a changed
  // role applies to the next message. Messages of one connection keep their order while it is read.
  // A lookup that fails for a store fault (the database hangs or is down) refuses the messages that
  // waited behind it with that fault at once: each looking up in turn, every one waiting out its
  // bound, would answer the last of them seconds past it. The chain passes the fault down.
  const lookups = new Map<number, Promise<unknown>>();
  const act = (
    connection: number,
    kind: DeviceMessageKind,
    text: string,
    context: string,
    credentials: DeviceCredentials | undefined,
  ) => {
    if (!credentials) {
      // Answered, then its connection closed once the answer is on its way (after this turn's acks).
      acknowledge(
        connection,
        failure(context, 401, [
          { code: 'unauthorized', message: 'the key pair this connection signed in with is gone' },
        ]),
      );
      setImmediate(() => post({ t: 'close', connection }));
      return;
    }
    actOnDeviceMessage(devices, kind, text, credentials.principal, context, `mqtt:${connection}`).then(
      (ack) => acknowledge(connection, ack),
      failed(connection, context),
    );
  };
  const onMessage = (connection: number, accessKey: string, kind: DeviceMessageKind, text: string, context: string) => {
    const pending = lookups.get(connection);
    const recent = pending ? undefined : authenticator.recentCredentials(accessKey);
    if (recent) return act(connection, kind, text, context, recent);
    const looked: Promise<unknown> = (pending ?? Promise.resolve(undefined))
      .then((fault) => (fault === undefined ? authenticator.credentials(accessKey) : Promise.reject(fault)))
      .then(
        (credentials) => {
          act(connection, kind, text, context, credentials);
          return undefined;
        },
        (error: unknown) => {
          failed(connection, context)(error);
          return storeFaultOf(error) === undefined ? undefined : error;
        },
      )
      .finally(() => {
        if (lookups.get(connection) === looked) lookups.delete(connection);
      });
    lookups.set(connection, looked);
  };

  // Device messages are begun a slice at a time, each slice on its own turn of the event loop, so
  // that HTTP requests are served between them however many messages arrive at once. A slice ends
  // after 200 messages or 64 KiB of their text: a 50-event bulk costs as much as 50 single events.
  const received: MessageList[] = [];
  let offset = 0;
  let sliceMessages = 0;
  let sliceBytes = 0;
  const begin = (connection: number, accessKey: string, kind: DeviceMessageKind, text: string, context: string) => {
    sliceMessages += 1;
    sliceBytes += text.length;
    onMessage(connection, accessKey, kind, text, context);
  };
  const doSlice = () => {
    sliceMessages = 0;
    sliceBytes = 0;
    while (received.length > 0 && sliceMessages < SLICE_MESSAGES && sliceBytes < SLICE_BYTES) {
      const list = received[0] as MessageList;
      offset = visitMessage(list, offset, begin);
      if (offset >= list.length) {
        received.shift();
        offset = 0;
      }
    }
    if (received.length > 0) setImmediate(doSlice);
  };
  const receive = (list: MessageList) => {
    if (received.length === 0) setImmediate(doSlice);
    received.push(list);
  };

  const loginAnswers = new TurnList<LoginAnswerList[number]>((answers) => post({ t: 'logins', answers }));
  const answerLogin = (id: number, secretKey: string | null) => addLoginAnswer(loginAnswers.open(), id, secretKey);

  let lastFiguresId = 0;
  const figuresAnswers = new Map<number, (figures: BrokerFigures) => void>();
  const figures = () =>
    new Promise<BrokerFigures>((resolve) => {
      const id = ++lastFiguresId;
      figuresAnswers.set(id, resolve);
      post({ t: 'figures', id });
    });

  let lastPublishId = 0;
  instructions?.connect({
    publish: (topic, payload, alertKey, connection) =>
      new Promise<void>((resolve) => {
        if (ended) return resolve();
        const id = ++lastPublishId;
        publishing.set(id, resolve);
        post({ t: 'publish', id, topic, payload, alertKey, connection: connection ?? null });
      }),
  });

  return new Promise<BrokerThread>((resolve, reject) => {
    const stop = async () => {
      post({ t: 'stop' });
      const timer = setTimeout(() => void worker.terminate(), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    };
    exited.then((code) => reject(new Error(`the MQTT broker thread ended before listening (exit code ${code})`)));
    worker.on('message', (message: FromBroker) => {
      switch (message.t) {
        case 'messages':
          receive(message.messages);
          break;
        case 'logins':
          forEachLogin(message.logins, (id, accessKey) =>
            authenticator.credentials(accessKey).then(
              (credentials) => answerLogin(id, credentials?.secretKey ?? null),
              (error) => {
                log.error(error, 'MQTT authentication failed');
                answerLogin(id, null);
              },
            ),
          );
          break;
        case 'subscribed':
          setImmediate(() => void instructions?.subscribed(message.accessKey, message.topic, message.connection));
          break;
        case 'published':
          publishing.get(message.id)?.();
          publishing.delete(message.id);
          break;
        case 'delivered':
          instructions?.delivered(message.alertKey);
          break;
        case 'figures':
          figuresAnswers.get(message.id)?.({
            pending: message.pending,
            highWater: message.highWater,
            connections: message.connections,
          });
          figuresAnswers.delete(message.id);
          break;
        case 'log':
          log[message.level](message.error ? { err: message.error } : {}, message.message);
          break;
        case 'listening':
          resolve({ port: message.port, securePort: message.securePort, worker, post, exited, figures, stop });
          break;
        case 'failed': {
          void worker.terminate();
          reject(Object.assign(new Error(message.message), { code: message.code, listener: message.listener }));
          break;
        }
      }
    });
  });
}
