/**
 * Builds the server: the store, the HTTP app with its shared plumbing, and every capability's routes.
 */
import { AsyncResource } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { Server as HttpsServer } from 'node:https';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import websocket from '@fastify/websocket';
import Fastify, { type FastifyInstance, type FastifyRequest, LogController } from 'fastify';
import { actionRoutes } from './actions/routes.ts';
import { alertRoutes } from './alerts/routes.ts';
import { apiKeyRoutes } from './apikeys/routes.ts';
import { auditRoutes } from './audit/routes.ts';
import { type BootstrapResult, bootstrapFirstAdmin } from './bootstrap.ts';
import { registerConsole } from './console/routes.ts';
import { type Config, ConfigError } from './core/config.ts';
import { sendAgainLater } from './core/errors.ts';
import { limitHeapGrowth } from './core/heap.ts';
import {
  BULK_BODY_LIMIT,
  DEFAULT_BODY_LIMIT,
  MAX_WEBSOCKET_MESSAGE_BYTES,
  registerRawBodyParser,
} from './core/http/body.ts';
import { limitBodiesUnderWay } from './core/http/body-budget.ts';
import { limitConnections } from './core/http/connections.ts';
import { answerClientError, answerFrameworkError, registerErrorHandling } from './core/http/error-handler.ts';
import { type RouteServices, registerRoutes } from './core/http/route.ts';
import { onWebSocketError } from './core/http/websocket-errors.ts';
import { checkWebSocketHandshakes } from './core/http/websocket-handshake.ts';
import { chooseLogFormat, readableLogStream } from './core/log-format.ts';
import { oncePerMinute } from './core/log-limit.ts';
import type { SecretBox } from './core/secret-box.ts';
import { SocketCount } from './core/sockets.ts';
import { StopSteps } from './core/stop-steps.ts';
import { readTlsFiles, type TlsCertificate, type TlsMaterial } from './core/tls.ts';
import { redactSecretParams } from './core/urls.ts';
import { dashboardRoutes } from './dashboards/routes.ts';
import { Senders } from './deliveries/senders.ts';
import { deliveryQueueDepth } from './deliveries/service.ts';
import { DeliveryWorker } from './deliveries/worker.ts';
import { demoRoutes } from './demo/routes.ts';
import { DemoService } from './demo/service.ts';
import { DeviceAuthenticator } from './devices/authentication.ts';
import { deviceRoutes } from './devices/routes.ts';
import { DeviceService } from './devices/service.ts';
import { EventAdmission } from './events/admission.ts';
import { EventCompactor } from './events/compactor.ts';
import { EventLimits } from './events/event-limits.ts';
import { EventIngest } from './events/ingest.ts';
import { eventRoutes } from './events/routes.ts';
import { RetentionSweeper } from './events/sweeper.ts';
import { EventWriter, type IngestBatch } from './events/writer.ts';
import { expressionRoutes } from './expressions/routes.ts';
import { gatewayRoutes } from './gateways/routes.ts';
import { groupRoutes } from './groups/routes.ts';
import { instructionRoutes } from './instructions/routes.ts';
import type { InstructionCarrier } from './instructions/service.ts';
import { type DeviceSettingsValue, keyPairRoutes } from './keypairs/routes.ts';
import { openSecretBox } from './keypairs/secret-key.ts';
import { type DeviceEndpoint, type EndpointListener, startDeviceEndpoint } from './mqtt/endpoint/endpoint.ts';
import { registerMqttWebSocketRoute } from './mqtt/endpoint/websocket.ts';
import { connectExternalBroker, type ExternalBroker } from './mqtt/external-broker.ts';
import type { InboundLimits } from './mqtt/inbound-flow.ts';
import { MqttInstructions } from './mqtt/instructions.ts';
import { finishDocument } from './openapi/document.ts';
import { Metrics } from './operations/metrics.ts';
import { type Readiness, registerOperationsRoutes } from './operations/routes.ts';
import { organisationRoutes } from './organisations/routes.ts';
import { childOrganisationKeys, OrganisationEventLimits } from './organisations/service.ts';
import { queryRoutes } from './queries/routes.ts';
import { ConnectionLimits } from './realtime/connection-limits.ts';
import { RealtimeHub } from './realtime/hub.ts';
import { registerRealtimeRoutes } from './realtime/routes.ts';
import { roleRoutes } from './roles/routes.ts';
import { RuleEngine } from './rules/engine.ts';
import { ruleRoutes } from './rules/routes.ts';
import { SilenceWatcher } from './rules/silences.ts';
import { loadIdentityProviders } from './sessions/identity-providers.ts';
import { sessionRoutes } from './sessions/routes.ts';
import { SessionService } from './sessions/service.ts';
import { type DeviceRequest, HttpDeviceLink } from './simulator/device-link.ts';
import { explainListenError, openConfiguredStore } from './startup.ts';
import {
  currentStoreBounds,
  endStoreBounds,
  refusalOfFault,
  runWithStoreDeadline,
  withStatementTimeout,
  withStoreDeadline,
} from './store/faults.ts';
import type { Store } from './store/store.ts';
import { templateRoutes } from './templates/routes.ts';
import { thingRoutes } from './things/routes.ts';
import { usageRoutes } from './usage/routes.ts';
import { ApiRateLimiter, countStoredEvents, LimitedEventCounter, limitRequest } from './usage/service.ts';
import { userRoutes } from './users/routes.ts';
import { VERSION } from './version.ts';

export interface Server {
  app: FastifyInstance;
  store: Store;
  config: Config;
  /** Set when `listen` created the first organisation and admin. */
  bootstrap: BootstrapResult | undefined;
  /** The device endpoint's MQTT port, when it runs. */
  mqttPort: number | undefined;
  /** The device endpoint's MQTTS port, when it runs with TLS. */
  mqttsPort: number | undefined;
  /** The device endpoint (the embedded MQTT listeners), when it runs. */
  deviceEndpoint: DeviceEndpoint | undefined;
  /** The connection to the external broker devices are served through (MQTT_URL), when there is one. */
  externalBroker: ExternalBroker | undefined;
  /** Deletes expired events and rollups (docs/storage.md), every RETENTION_SWEEP_INTERVAL. */
  sweeper: RetentionSweeper;
  /** Compacts older events into blocks (docs/storage.md), every EVENT_COMPACTION_INTERVAL. */
  compactor: EventCompactor;
  /**
   * Opens the HTTP port (PORT and HOST unless given) and then, the server being ready to serve, makes
   * the first organisation and admin on a store with no users: a start that fails earlier (a port
   * taken) leaves the store without an admin whose password nobody saw. Answers the address.
   */
  listen(at?: { port: number; host: string }): Promise<string>;
  /**
   * Reads TLS_CERT_FILE and TLS_KEY_FILE again (on SIGHUP) and gives HTTPS and MQTTS the new certificate
   * for their next connections; connections open keep theirs. When the files are wrong, it logs why and
   * the old certificate stays. Answers the certificate now served (undefined without TLS).
   */
  reloadTls(): Promise<TlsCertificate | undefined>;
  /** Stops the server (docs/deployment.md, "Stopping"): each step waited for at most its bound. */
  close(): Promise<void>;
  /** The steps of a stop under way not finished yet, for a stop that overruns its deadline (cli.ts). */
  stopPending(): string[];
}

const PRUNE_INTERVAL_MS = 60 * 60 * 1000;
/**
 * How long a stop waits for requests under way to finish before their connections are cut: an export
 * to a client that stopped reading, or a long download, would otherwise hold the stop for ever
 * (docs/deployment.md, "Stopping").
 */
const STOP_GRACE_MS = 10_000;
/**
 * How long a stop waits for each of its other steps (ms): flushing counts, draining the event writer,
 * background work, closing the store. A database or broker that hangs holds each at most this long.
 */
const STOP_STEP_MS = 5000;
/** A request id a client may choose: short, and nothing a log line could be confused by. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Closes the HTTP server: no new connections, idle ones closed at once, and requests under way given
 * `graceMs` to finish before their connections are cut.
 */
/**
 * Once a stop has begun, a request read on a connection still open (pipelined, or kept alive) is
 * answered 503 with Retry-After, and its connection closed (Fastify says `Connection: close`), so that
 * the client sends it again, to another instance or after the restart.
 */
function answerStopping(app: FastifyInstance): void {
  let stopping = false;
  app.addHook('preClose', (done) => {
    stopping = true;
    done();
  });
  // A callback, not an async function: it runs for every request, and a promise each costs.
  app.addHook('onRequest', (_request, _reply, done) => {
    done(stopping ? sendAgainLater('the server is stopping: send it again') : undefined);
  });
}

async function closeWithin(app: FastifyInstance, graceMs: number): Promise<void> {
  const timer = setTimeout(() => app.server.closeAllConnections(), graceMs);
  try {
    await app.close();
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Node's own request timeouts, within REQUEST_TIMEOUT: its headers' timeout may not exceed it, and it
 * checks them every 30 s, or more often for a shorter timeout.
 */
const requestTimeouts = (ms: number) => ({
  requestTimeout: ms,
  headersTimeout: Math.min(60_000, ms),
  connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(ms / 4))),
});

/** What `work` answers, or undefined when it takes longer than `ms`. */
function withTimeout<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), ms);
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      () => {
        clearTimeout(timer);
        resolve(undefined);
      },
    );
  });
}

/** A device request answered by the app's own routes, without the network (the demo's machines). */
const injectedDeviceRequest =
  (app: () => FastifyInstance): DeviceRequest =>
  async (path, headers, body) => {
    const answer = await app().inject({ method: 'POST', url: path, headers, payload: body });
    return { status: answer.statusCode, text: answer.body };
  };

/** How long /readyz waits for the store's answer (ms): a database that hangs is then not ready. */
const READY_WAIT_MS = 800;

/**
 * Why the store should not be sent traffic now: it does not answer within READY_WAIT_MS, or it refused
 * a write (a full disk, read-only) and a write tried now is refused too (docs/operations.md, "When the
 * database fails").
 */
async function storeReadiness(store: Store): Promise<string[]> {
  const answered = await withTimeout(
    withStoreDeadline(READY_WAIT_MS, () => store.ping()).then(() => true),
    READY_WAIT_MS,
  );
  if (!answered) return ['store: the database does not answer'];
  if (store.faults.current === undefined) return [];
  const wrote = await withTimeout(
    withStoreDeadline(READY_WAIT_MS, () => store.probeWrite()).then(() => true),
    READY_WAIT_MS,
  );
  if (wrote) return [];
  return [
    store.faults.current === 'full'
      ? 'store: storage is full, writes are refused'
      : 'store: the database refuses writes (read-only)',
  ];
}

/**
 * Every request's statements on PostgreSQL are bounded (store/faults.ts): each by
 * DATABASE_STATEMENT_TIMEOUT_MS, and a device's request as a whole by EVENT_WRITE_TIMEOUT_MS. The
 * bound is entered when the request arrives, and entered again once its body is read (the body's
 * events run outside it), so that hooks and handler run under it.
 */
function boundStatements(app: FastifyInstance, statementMs: number, deviceMs: number): void {
  const scopes = new WeakMap<object, { resource: AsyncResource; bounds: ReturnType<typeof currentStoreBounds> }>();
  const enter = (request: FastifyRequest, done: () => void) => () => {
    scopes.set(request, { resource: new AsyncResource('thingbase-request'), bounds: currentStoreBounds() });
    done();
  };
  app.addHook('onRequest', (request, _reply, done) => {
    const rest = enter(request, done);
    if (request.routeOptions.config?.access === 'device') runWithStoreDeadline(deviceMs, rest);
    else withStatementTimeout(statementMs, rest);
  });
  app.addHook('preValidation', (request, _reply, done) => {
    const scope = scopes.get(request);
    if (scope) scope.resource.runInAsyncScope(done);
    else done();
  });
  // Answered: what the request set going (a worker it woke, a timer) runs on unbounded by it.
  app.addHook('onResponse', (request, _reply, done) => {
    endStoreBounds(scopes.get(request)?.bounds);
    done();
  });
}

/** The device endpoint, when devices are served by it rather than through MQTT_URL. */
const embeddedOf = (mqtt: DeviceEndpoint | ExternalBroker | undefined): DeviceEndpoint | undefined =>
  mqtt && 'port' in mqtt ? mqtt : undefined;
const externalOf = (mqtt: DeviceEndpoint | ExternalBroker | undefined): ExternalBroker | undefined =>
  mqtt && !('port' in mqtt) ? mqtt : undefined;

export async function createServer(config: Config): Promise<Server> {
  limitHeapGrowth(config.heapGrowingPercent);
  let tls = config.tls ? await readTlsFiles(config.tls) : undefined;
  // A failed idle database connection is said once a minute (the store opens another on its next query);
  // the log is the HTTP app's, made once the store is open.
  let warn: (message: string) => void = (message) => process.stderr.write(`${message}\n`);
  const connectionLost = oncePerMinute<'database'>((message) => warn(message));
  const store = await openConfiguredStore(
    config,
    undefined,
    (error) =>
      connectionLost(
        'database',
        `a database connection failed (${error.message}); queries open a new one, and fail until the database answers`,
      ),
    (message) => warn(message),
  );
  const timers: NodeJS.Timeout[] = [];
  /** What a start that fails must undo before the store closes: listeners of recorded changes. */
  const closeOnFailure: (() => void)[] = [];
  try {
    const sessions = new SessionService(store, config, loadIdentityProviders(config.idpConfigPath));
    closeOnFailure.push(() => sessions.close());
    const box = await openSecretBox(store, config.secretKey);
    const senders = new Senders(store, config);
    let worker: DeliveryWorker | undefined;
    const metrics = new Metrics({
      writerPendingRows: () => writer.pending,
      writerRefusals: () => writer.refusals,
      writerShareRefusals: () => writer.shareRefusals,
      mqttConnections: async () =>
        embedded ? withTimeout(embedded.figures(), 1000).then((i) => i?.connections) : undefined,
      externalIntake: () => externalOf(mqtt)?.figures(),
      deliveryQueueDepth: () => deliveryQueueDepth(store.db),
      realtimeSubscribers: () => hub.subscriptionCount,
      realtimeRefusals: () => realtimeLimits.refusals,
      storeWriteFault: () => store.faults.current,
    });
    const rules = new RuleEngine({ onQueued: () => worker?.wake(), onFired: (count) => metrics.rulesFired(count) });
    const compactor = new EventCompactor(store, {
      ageMs: config.eventCompactionAgeMs,
      statementTimeoutMs: config.databaseStatementTimeoutMs,
    });
    const writer = new EventWriter(store, {
      process: async (tx, batches) => {
        await rules.evaluate(tx, batches);
        await countStoredEvents(tx, batches);
      },
      // An age of 0 compacts each transaction's events as soon as it commits.
      ...(config.eventCompactionAgeMs === 0
        ? {
            committed: async (batches: readonly IngestBatch[]) => {
              await compactor.compactThings(new Set(batches.flatMap((b) => b.events.map((e) => e.thingId))));
            },
            onCommittedError: (error: unknown) => app.log.warn({ err: error }, 'event compaction failed'),
          }
        : {}),
      maxPendingRows: config.eventMaxPending,
      fairShare: config.eventFairShare,
      startSpacingMs: config.eventWriteSpacingMs,
      writeTimeoutMs: config.eventWriteTimeoutMs,
    });
    const authenticator = new DeviceAuthenticator(store.db, box, store.changes, config.eventWriteTimeoutMs);
    closeOnFailure.push(() => authenticator.close());
    // A store fault (the database down, a full disk) is logged once a minute by the store's faults.
    const countFailed = (what: string) => (error: unknown) => {
      if (store.faults.note(error) === undefined) warn(`${what}: ${(error as Error).message}`);
    };
    const limitedEvents = new LimitedEventCounter(
      store.db,
      countFailed('refused events could not be counted'),
      Date.now,
      config.databaseStatementTimeoutMs,
    );
    const organisationLimits = new OrganisationEventLimits(store);
    closeOnFailure.push(() => organisationLimits.close());
    // Each limit says so once a minute: a flood past it refused by the thousand writes one line.
    const limitReached = oncePerMinute<string>((message) => warn(message));
    const eventLimits = new EventLimits(
      { perOrganisation: config.eventsPerSecondPerOrganisation, perKeyPair: config.eventsPerSecondPerKeyPair },
      (organisationKey) => organisationLimits.read(organisationKey),
      (organisationKey, limit, events) => {
        metrics.eventsRefused(limit === 'organisation' ? 'organisation_limit' : 'key_pair_limit', events);
        limitedEvents.add(organisationKey, events);
        limitReached(
          `${limit}:${organisationKey}`,
          `events of organisation ${organisationKey} refused with 429 past ${limit === 'organisation' ? 'its' : 'a key pair’s'} events-a-second limit (said once a minute)`,
        );
      },
    );
    const ingest = new EventIngest(
      store,
      writer,
      (transport, count) => metrics.eventStored(transport, count),
      eventLimits,
    );
    const devices = new DeviceService(store, ingest, config.eventWriteTimeoutMs);
    let instructions: MqttInstructions | undefined;
    const hub = new RealtimeHub(store, {
      authenticate: (token) => sessions.authenticate(token),
      childOrganisations: (organisationKey) => childOrganisationKeys(store.db, organisationKey),
    });
    closeOnFailure.push(() => hub.close());
    const realtimeLimits = new ConnectionLimits({
      perUser: config.realtimeMaxConnectionsPerUser,
      perOrganisation: config.realtimeMaxConnectionsPerOrganisation,
    });
    let mqtt: DeviceEndpoint | ExternalBroker | undefined;
    // Until listen has made the first admin (or found users), a client that signs in may get a 401.
    let bootstrapped = false;
    const readiness: Readiness = {
      reasons: async () => {
        const reasons: string[] = [];
        if (!bootstrapped) reasons.push('bootstrap: the first organisation and admin are not made yet');
        reasons.push(...(await storeReadiness(store)));
        if (mqtt && 'connected' in mqtt && !mqtt.connected())
          reasons.push('mqtt: the external broker is not connected');
        if (writer.refusing()) reasons.push('events: the event writer is behind and refusing events');
        return reasons;
      },
    };
    const limiter = new ApiRateLimiter(
      store.db,
      config.apiRateLimit,
      countFailed('API request counts could not be stored'),
      Date.now,
      config.databaseStatementTimeoutMs,
    );
    closeOnFailure.push(() => void limiter.close());
    const sockets = new SocketCount(config.socketBudget);
    // The demo's simulated machines send through this server's own device routes (docs/simulator.md).
    const demos = new DemoService(
      store,
      box,
      (keys) =>
        new HttpDeviceLink(
          injectedDeviceRequest(() => app),
          keys,
        ),
    );
    const app = await buildHttpApp(config, tls, store, sessions, box, {
      demos,
      sockets,
      limiter,
      limitedEvents,
      metrics,
      readiness,
      hub,
      realtimeLimits,
      ingest,
      eventAdmission: new EventAdmission(
        () => writer.refusing(),
        BULK_BODY_LIMIT,
        (organisationKey, source) => writer.refusal(organisationKey, source, 1),
      ),
      authenticator,
      devices,
      instructions: () => instructions,
      // The broker starts after the HTTP app is made; its ports (chosen by the system for port 0) are read when asked.
      deviceSettings: () => {
        const embedded = embeddedOf(mqtt);
        return {
          http_url: config.publicBaseUrl,
          mqtt_port: embedded?.port ?? null,
          mqtts_port: embedded?.securePort ?? null,
          external_broker: config.mqttUrl !== undefined,
        };
      },
      mqttOverWebSocket: () => {
        const embedded = embeddedOf(mqtt);
        return embedded && 'accept' in embedded ? embedded : undefined;
      },
    });
    warn = (message) => app.log.warn(message);
    instructions = new MqttInstructions(store, authenticator, app.log);
    mqtt = await startMqtt(config, tls, app, authenticator, devices, instructions, writer, sockets, metrics).catch(
      async (error) => {
        await app.close();
        throw error;
      },
    );
    const embedded = embeddedOf(mqtt);
    timers.push(setInterval(() => void sessions.prune().catch((e) => app.log.warn(e)), PRUNE_INTERVAL_MS).unref());
    worker = new DeliveryWorker(store, box, senders, config, app.log, (kind, status) =>
      metrics.deliveryFinished(kind, status),
    );
    await worker.start();
    const deliveries = worker;
    // Its deletes take turns with the event writer's transactions (docs/storage.md, "The sweeper").
    const sweeper = new RetentionSweeper(store, {
      turn: (work) => writer.turn(work),
      statementTimeoutMs: config.databaseStatementTimeoutMs,
    });
    // Background work retries on its own; the store's faults (the database down, a full disk) are
    // logged once a minute by the store, anything else as it happens.
    const backgroundFailed = (what: string) => (error: unknown) => {
      if (store.faults.note(error) === undefined) app.log.warn({ err: error }, what);
    };
    if (config.retentionSweepMs > 0) sweeper.start(config.retentionSweepMs, backgroundFailed('retention sweep failed'));
    if (config.eventCompactionMs > 0) {
      compactor.start(config.eventCompactionMs, backgroundFailed('event compaction failed'));
    }
    const silences = new SilenceWatcher(store, {
      intervalMs: config.noDataCheckMs,
      onQueued: () => deliveries.wake(),
      onFired: (count) => metrics.rulesFired(count),
      onError: backgroundFailed('the no-data check failed'),
      statementTimeoutMs: config.databaseStatementTimeoutMs,
    });
    silences.start();
    const stop = new StopSteps((message) => app.log.warn(message));
    const server: Server = {
      app,
      store,
      config,
      bootstrap: undefined,
      mqttPort: embedded?.port,
      mqttsPort: embedded?.securePort,
      deviceEndpoint: embedded,
      externalBroker: externalOf(mqtt),
      sweeper,
      compactor,
      listen: async (at = { port: config.port, host: config.host }) => {
        const address = await app.listen(at).catch((error) => {
          throw explainListenError(error, at);
        });
        server.bootstrap = await bootstrapFirstAdmin(store, config);
        bootstrapped = true;
        return address;
      },
      reloadTls: async () => {
        if (!config.tls) return undefined;
        try {
          tls = await readTlsFiles(config.tls);
        } catch (error) {
          app.log.error(`TLS certificate not reloaded, the one loaded before stays: ${(error as Error).message}`);
          return tls;
        }
        (app.server as unknown as HttpsServer).setSecureContext(tls);
        embedded?.setTls(tls);
        app.log.info(`TLS certificate reloaded: SHA-256 fingerprint ${tls.fingerprint}, valid until ${tls.validTo}`);
        return tls;
      },
      close: async () => {
        for (const timer of timers) clearInterval(timer);
        // In this order: what is acknowledged is stored before the store closes (the event writer
        // drains first); steps in one call do not depend on each other.
        await stop.step('the demo machines', () => demos.close(), STOP_STEP_MS);
        await stop.step('the MQTT broker', () => mqtt?.close(), STOP_STEP_MS);
        hub.close();
        await stop.step('the HTTP server', () => closeWithin(app, STOP_GRACE_MS), STOP_GRACE_MS + STOP_STEP_MS);
        await stop.steps(
          {
            'the API request counts': () => limiter.close(),
            'the event writer': () => writer.drain(),
            'the refused event counts': () => limitedEvents.close(),
          },
          STOP_STEP_MS,
        );
        organisationLimits.close();
        await stop.steps(
          {
            'the retention sweeper': () => sweeper.stop(),
            'the event compactor': () => compactor.stop(),
            'the no-data watcher': () => silences.stop(),
            'the delivery worker': () => deliveries.stop(),
          },
          STOP_STEP_MS,
        );
        await stop.step('the delivery senders', () => senders.close(), STOP_STEP_MS);
        sessions.close();
        authenticator.close();
        ingest.close();
        await stop.step('the store', () => store.close(), STOP_STEP_MS);
      },
      stopPending: () => stop.pending,
    };
    return server;
  } catch (error) {
    for (const close of closeOnFailure) close();
    await store.close();
    throw error;
  }
}

async function buildHttpApp(
  config: Config,
  tls: TlsMaterial | undefined,
  store: Store,
  sessions: SessionService,
  box: SecretBox,
  parts: {
    sockets: SocketCount;
    limiter: ApiRateLimiter;
    limitedEvents: LimitedEventCounter;
    metrics: Metrics;
    readiness: Readiness;
    hub: RealtimeHub;
    realtimeLimits: ConnectionLimits;
    ingest: EventIngest;
    eventAdmission: EventAdmission;
    authenticator: DeviceAuthenticator;
    devices: DeviceService;
    instructions: () => InstructionCarrier | undefined;
    deviceSettings: () => DeviceSettingsValue;
    demos: DemoService;
    /** MQTT over WebSocket's device endpoint, once it runs. */
    mqttOverWebSocket: () => DeviceEndpoint | undefined;
  },
): Promise<FastifyInstance> {
  const app = Fastify({
    // With TLS_CERT_FILE and TLS_KEY_FILE, HTTPS on the HTTP port (docs/configuration.md, "TLS").
    https: tls
      ? {
          cert: tls.cert,
          key: tls.key,
          handshakeTimeout: config.connectTimeoutMs,
          ...requestTimeouts(config.requestTimeoutMs),
        }
      : null,
    logger: {
      level: config.logLevel,
      redact: ['req.headers["x-auth-token"]', 'req.headers["x-dtn-signature"]'],
      // Readable lines on a terminal, JSON elsewhere (docs/configuration.md, LOG_FORMAT).
      ...(chooseLogFormat(config.logFormat, process.stdout.isTTY === true) === 'pretty'
        ? { stream: readableLogStream(process.stdout) }
        : {}),
    },
    // Per-request logging costs about two thirds of a small route's throughput; errors are still logged.
    logController: new LogController({ disableRequestLogging: true }),
    // One logger for all requests: a child logger per request costs ~15 us; errors log method and URL.
    childLoggerFactory: (logger) => logger,
    bodyLimit: DEFAULT_BODY_LIMIT,
    // A request, its body included, must arrive within REQUEST_TIMEOUT: Fastify's default is no limit,
    // and a body that never ends held its connection and the bytes read so far for ever.
    requestTimeout: config.requestTimeoutMs,
    // Node's options of a plain HTTP server (Fastify passes `http` on when there is no `https`, which
    // its types, made for one or the other, do not say).
    ...({ http: requestTimeouts(config.requestTimeoutMs) } as object),
    trustProxy: config.trustProxy,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    // Each request has an id: the client's X-Request-Id when it sends one, else a new UUID; every
    // answer carries it back, and log lines about the request name it (docs/operations.md, "Logs").
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // Refusals before any route runs answer the error body too (core/http/error-handler.ts).
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
    // Requests that arrive during a stop are answered below, in the error body with Retry-After.
    return503OnClosing: false,
  });
  answerStopping(app);
  limitBodiesUnderWay(app);
  const closeAwaiting = limitConnections(app.server, {
    maxConnections: config.httpMaxConnections,
    sockets: parts.sockets,
    connectTimeoutMs: config.connectTimeoutMs,
    secure: tls !== undefined,
    warn: (message) => app.log.warn(message),
  });
  // A stop closes at once the connections that have sent no request yet (after Fastify stops
  // listening, before it waits for requests under way).
  app.addHook('preClose', (done) => {
    setImmediate(closeAwaiting);
    done();
  });
  // Clients send parameters of GET requests in a JSON body (docs/api.md, "Requests").
  app.addHttpMethod('GET', { hasBody: true, overrideExisting: true });
  // Route schemas document the API; parameters are validated by the route wrapper (core/http/validation.ts).
  app.setValidatorCompiler(() => () => true);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  registerRawBodyParser(app);
  registerErrorHandling(app, (error) => {
    const fault = store.faults.note(error);
    return fault === undefined ? undefined : refusalOfFault(fault);
  });
  // SQLite's statements are never abandoned: its requests need no bounds, nor their hooks' cost.
  if (store.engine === 'postgres') boundStatements(app, config.databaseStatementTimeoutMs, config.eventWriteTimeoutMs);
  parts.metrics.observe(app);
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id);
    reply.header('x-content-type-options', 'nosniff');
    // Browsers that reached the server over TLS keep to it (180 days; docs/configuration.md, "TLS").
    if (tls) reply.header('strict-transport-security', 'max-age=15552000');
    done(null, payload);
  });
  if (config.logRequests) {
    app.addHook('onResponse', (request, reply, done) => {
      request.log.info(
        {
          reqId: request.id,
          method: request.method,
          url: redactSecretParams(request.url),
          status: reply.statusCode,
          ms: Math.round(reply.elapsedTime * 10) / 10,
        },
        'request',
      );
      done();
    });
  }

  await app.register(swagger, {
    // Operation ids, examples, error answers and component schemas, for every route at once.
    transformObject: (document) =>
      finishDocument((document as Extract<typeof document, { openapiObject: unknown }>).openapiObject),
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Thingbase API',
        version: VERSION,
        description: 'Things, telemetry, rules and alerts. Sign in at /api_sign_in and send the token as X-Auth-Token.',
      },
      components: {
        securitySchemes: {
          authToken: { type: 'apiKey', in: 'header', name: 'X-Auth-Token' },
          accessKey: { type: 'apiKey', in: 'header', name: 'X-Access-Key' },
          signature: {
            type: 'apiKey',
            in: 'header',
            name: 'X-Dtn-Signature',
            description: 'lowercase hex HMAC-SHA256 of the raw body under the key pair secret key',
          },
        },
      },
    },
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // Its own scripts and styles only, by their hashes; never framed. It shares the console's origin.
    staticCSP: true,
    // Without upgrade-insecure-requests, which would send the page's own files to https on a server
    // without TLS; with the styles its scripts add as they draw (styles cannot add a script).
    transformStaticCSP: (policy: string) =>
      policy
        .replace(/ ?upgrade-insecure-requests;?/, '')
        .replace("frame-ancestors 'self'", "frame-ancestors 'none'")
        .replace(/style-src [^;]*;/, "style-src 'self' 'unsafe-inline';"),
    // No call to the public validator for a badge: the page works on a server without Internet access.
    uiConfig: { validatorUrl: null },
  });
  // A client's bad frame or dropped connection is logged at debug, not as the server's error.
  await app.register(websocket, {
    options: { maxPayload: MAX_WEBSOCKET_MESSAGE_BYTES },
    errorHandler: onWebSocketError,
  });
  checkWebSocketHandshakes(app);

  // The process is alive and serving: answered at once, whatever the store does (its state is /readyz's).
  app.get('/healthz', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('application/json').send('{"status":"ok"}'),
  );
  await registerConsole(app, config.consoleDir, config.mapTiles);
  registerOperationsRoutes(app, parts.metrics, parts.readiness, config.metricsToken);
  app.get('/openapi.json', { schema: { hide: true } }, async (_request, reply) => reply.send(app.swagger()));

  const services: RouteServices = {
    authenticate: (request) => {
      const token = request.headers['x-auth-token'];
      return sessions.authenticate(typeof token === 'string' ? token : undefined);
    },
    limitRequest: (principal) => limitRequest(parts.limiter, principal.organisationKey),
    authenticateDevice: (request) => parts.authenticator.authenticate(request),
    checkDeviceKey: async (request) => (await parts.authenticator.checkKey(request)).principal,
    childOrganisations: (organisationKey) => childOrganisationKeys(store.db, organisationKey),
    changes: store.changes,
    checkAnswers: config.checkAnswers,
    publicBodyTimeoutMs: config.connectTimeoutMs,
  };
  registerRoutes(app, services, [
    ...sessionRoutes(sessions),
    ...userRoutes(store, config.passwordHashCost),
    ...organisationRoutes(store),
    ...roleRoutes(store),
    ...auditRoutes(store),
    ...templateRoutes(store),
    ...thingRoutes(store),
    ...groupRoutes(store),
    ...expressionRoutes(),
    ...gatewayRoutes(store),
    ...keyPairRoutes(store, box, parts.deviceSettings),
    ...apiKeyRoutes(store),
    ...eventRoutes(store, parts.ingest, parts.eventAdmission),
    ...deviceRoutes(parts.devices, parts.eventAdmission),
    ...queryRoutes(store),
    ...alertRoutes(store, parts.devices),
    ...ruleRoutes(store),
    ...actionRoutes(store, box, config.publicBaseUrl, config.allowPrivateWebhooks),
    ...instructionRoutes(store, parts.instructions),
    ...usageRoutes(store, parts.limiter, parts.limitedEvents, {
      perOrganisation: config.eventsPerSecondPerOrganisation,
      perKeyPair: config.eventsPerSecondPerKeyPair,
    }),
    ...demoRoutes(parts.demos),
    ...dashboardRoutes(store),
  ]);
  if (!config.mqttUrl) {
    registerMqttWebSocketRoute(app, () => parts.mqttOverWebSocket()?.accept);
  }
  registerRealtimeRoutes(app, {
    hub: parts.hub,
    authenticate: (token) => sessions.authenticate(token),
    limits: parts.realtimeLimits,
  });
  await app.ready();
  return app;
}

/** Bytes of the text of device messages taken and not yet answered, at most. */
const INBOUND_BYTES = 4 * 1024 * 1024;

/**
 * Of all messages that may wait, one connection may hold at most 1,000, and their text at most 4 MiB,
 * less while the server cannot keep up: what it answers in `maxWaitMs` (mqtt/inbound-flow.ts). Nor
 * more than half of them: past half, a connection holding its share is refused even when alone, and
 * MQTT 5 devices are told this number as their Receive Maximum, all of which they may send at once.
 */
const inboundLimits = (messages: number, maxWaitMs: number, fairWhileBehind: boolean): InboundLimits => ({
  messages,
  perConnection: Math.max(1, Math.min(1000, Math.floor(messages / 2))),
  bytes: INBOUND_BYTES,
  maxWaitMs,
  fairWhileBehind,
});

/**
 * MQTT for devices (docs/configuration.md, "MQTT"): an external broker with MQTT_URL; else the embedded
 * device endpoint, on MQTT_PORT (0 = off) and MQTTS_PORT, and over WebSocket at /mqtt on the HTTP
 * port. When MQTT_PORT was not set and its default port is taken (another broker runs there), the
 * server runs without that listener and says so; when it was set, that is an error.
 */
async function startMqtt(
  config: Config,
  tls: TlsMaterial | undefined,
  app: FastifyInstance,
  authenticator: DeviceAuthenticator,
  devices: DeviceService,
  instructions: MqttInstructions,
  writer: EventWriter,
  sockets: SocketCount,
  metrics: Metrics,
): Promise<DeviceEndpoint | ExternalBroker | undefined> {
  if (config.mqttUrl) {
    return connectExternalBroker({
      url: config.mqttUrl,
      shareGroup: config.mqttShareGroup,
      keepaliveSeconds: config.mqttKeepaliveSeconds,
      authenticator,
      devices,
      log: app.log,
      instructions,
      // The one connection carries every device's messages: all of MQTT_MAX_PENDING is its own.
      intake: { messages: config.mqttMaxPending, bytes: INBOUND_BYTES },
    });
  }
  // Each listener (MQTT_PORT's, and MQTTS_PORT's with TLS) is off at 0, and left off when its
  // default port is taken; the endpoint runs all the same, for MQTT over WebSocket at /mqtt.
  const ports = {
    MQTT_PORT: config.mqttPort === 0 ? null : config.mqttPort,
    MQTTS_PORT: tls && config.mqttsPort !== 0 ? config.mqttsPort : null,
  };
  const explicit = { MQTT_PORT: config.mqttPortExplicit, MQTTS_PORT: config.mqttsPortExplicit };
  for (;;) {
    try {
      return await startDeviceEndpoint({
        port: ports.MQTT_PORT,
        secure: tls && ports.MQTTS_PORT !== null ? { port: ports.MQTTS_PORT, tls } : null,
        host: config.host,
        authenticator,
        devices,
        log: app.log,
        instructions,
        maxConnections: config.mqttMaxConnections,
        sockets,
        connectTimeoutMs: config.connectTimeoutMs,
        inbound: inboundLimits(config.mqttMaxPending, config.mqttMaxWaitMs, config.eventFairShare),
        maxPartialBytes: config.mqttMaxPartialBytes,
        onStoreBehind: (listener: (behind: boolean) => void) => writer.onBehindChange(listener),
        eventRefusal: (organisationKey, source) => writer.refusal(organisationKey, source, 1),
        onAnswered: (seconds) => metrics.mqttAnswered(seconds),
        sessions: {
          maxKept: config.mqttMaxSessions,
          maxMessages: config.mqttSessionMaxMessages,
          maxExpiryMs: config.mqttSessionExpiryMs,
        },
      });
    } catch (error) {
      const { code, message, listener } = error as NodeJS.ErrnoException & { listener?: EndpointListener };
      // Without a listener, the error is not one of opening a port.
      if (!listener) throw error;
      const port = ports[listener];
      if (code !== 'EADDRINUSE') throw new Error(`cannot start the MQTT broker on ${listener} ${port}: ${message}`);
      if (explicit[listener]) {
        throw new ConfigError(
          `${listener} ${port} is taken: set ${listener} to a free port, or to 0 to run without that listener of the embedded MQTT broker`,
        );
      }
      app.log.warn(
        `${listener} ${port} is taken (another broker?): running without that listener of the embedded MQTT broker; set ${listener} or MQTT_URL to choose.`,
      );
      ports[listener] = null;
    }
  }
}
