/**
 * Prometheus metrics (docs/operations.md, "Metrics"): what the server does, counted where it happens
 * and read at each scrape. Each server has a registry of its own (several servers may run in one
 * process, as the tests run them), with the process metrics of prom-client.
 */
import type { FastifyInstance } from 'fastify';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { CONSOLE_PATH } from '../console/routes.ts';
import { waitAtMost } from '../core/wait.ts';
import type { EventTransport } from '../events/ingest.ts';
import type { ConnectionRefusal } from '../realtime/connection-limits.ts';

/** What the metrics read at each scrape. */
export interface MetricSources {
  writerPendingRows(): number;
  writerRefusals(): number;
  /** Of those, refused because their organisation or source held its share of a busy writer. */
  writerShareRefusals(): number;
  /** Device connections of the embedded broker; undefined without one. */
  mqttConnections(): Promise<number | undefined>;
  /** With an external broker, its messages being handled and whether the next waits for room. */
  externalIntake(): { pending: number; held: boolean } | undefined;
  deliveryQueueDepth(): Promise<number>;
  realtimeSubscribers(): number;
  /** Realtime connections refused since the start, by the bound they would have passed. */
  realtimeRefusals(): Readonly<Record<ConnectionRefusal, number>>;
  /** The write fault the store is in (a full disk, read-only), if any (store/faults.ts). */
  storeWriteFault(): 'full' | 'read_only' | undefined;
}

/**
 * How often the event loop's lag is sampled (`nodejs_eventloop_lag_*`). prom-client's 10 ms woke the
 * server thread 100 times a second, idle or not; at 100 ms a scrape every 15 s still rests on 150
 * samples, and a stall of the loop longer than that is caught whenever it happens.
 */
const EVENT_LOOP_SAMPLE_MS = 100;

/**
 * How long a scrape waits for a figure read from the store (ms). A database that is down or hangs
 * must not take the page with it: the figure keeps the value it had (docs/operations.md, "Metrics").
 */
const STORE_READ_WAIT_MS = 500;

/**
 * A figure read at each scrape, waited for at most `waitMs`: when the read fails or is late, the last
 * value read (undefined before any). One read at a time: a scrape during a read that is late waits for
 * that one, so a database that hangs holds at most one of them.
 */
export function lastValueOf(read: () => Promise<number>, waitMs: number): () => Promise<number | undefined> {
  let last: number | undefined;
  let reading: Promise<void> | undefined;
  return async () => {
    reading ??= read()
      .then(
        (value) => {
          last = value;
        },
        () => undefined,
      )
      .finally(() => {
        reading = undefined;
      });
    await waitAtMost(reading, waitMs);
    return last;
  };
}

/** The buckets of the answer-time histograms, seconds: a millisecond to ten seconds. */
const ANSWER_SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class Metrics {
  readonly registry = new Registry();
  private readonly eventsStored: Counter<'transport'>;
  private readonly eventsRefusedByLimit: Counter<'reason'>;
  private readonly deliveries: Counter<'kind' | 'status'>;
  private readonly ruleFirings: Counter;
  private readonly requests: Counter<'method' | 'route' | 'status'>;
  private readonly durations: Histogram<'method' | 'route'>;
  private readonly mqttAnswers: Histogram;
  /** `sources` are read at each scrape only: they may name parts made after the metrics. */
  constructor(sources: MetricSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
    this.eventsStored = new Counter({
      name: 'thingbase_events_stored_total',
      help: 'Events stored, by how they came (http, mqtt: devices; api: the REST API)',
      labelNames: ['transport'],
      registers,
    });
    for (const transport of ['http', 'mqtt', 'api']) this.eventsStored.inc({ transport }, 0);
    let refusalsSeen = 0;
    new Gauge({
      name: 'thingbase_event_writer_pending_rows',
      help: 'Events waiting for the event writer or being written',
      registers,
      collect() {
        this.set(sources.writerPendingRows());
      },
    });
    new Counter({
      name: 'thingbase_event_writer_refusals_total',
      help: 'Requests refused (503 or http_code 503) because the store was behind',
      registers,
      collect() {
        const now = sources.writerRefusals();
        this.inc(now - refusalsSeen);
        refusalsSeen = now;
      },
    });
    let shareRefusalsSeen = 0;
    new Counter({
      name: 'thingbase_event_share_refusals_total',
      help: 'Of the writer refusals, requests refused (503, server busy) because their organisation or source held its share',
      registers,
      collect() {
        const now = sources.writerShareRefusals();
        this.inc(now - shareRefusalsSeen);
        shareRefusalsSeen = now;
      },
    });
    this.eventsRefusedByLimit = new Counter({
      name: 'thingbase_events_limited_total',
      help: 'Events refused with 429 past an events-a-second limit, by limit (organisation_limit, key_pair_limit)',
      labelNames: ['reason'],
      registers,
    });
    for (const reason of ['organisation_limit', 'key_pair_limit']) this.eventsRefusedByLimit.inc({ reason }, 0);
    new Gauge({
      name: 'thingbase_store_write_fault',
      help: 'The store refuses writes, by why (full: its disk is full; read_only): 1 until a write succeeds again',
      labelNames: ['fault'],
      registers,
      collect() {
        const fault = sources.storeWriteFault();
        for (const kind of ['full', 'read_only']) this.set({ fault: kind }, fault === kind ? 1 : 0);
      },
    });
    this.requests = new Counter({
      name: 'thingbase_http_requests_total',
      help: 'HTTP requests answered, by method, route (its path template) and status',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.durations = new Histogram({
      name: 'thingbase_http_request_duration_seconds',
      help: 'Time from a request to its answer',
      labelNames: ['method', 'route'],
      buckets: ANSWER_SECONDS_BUCKETS,
      registers,
    });
    this.mqttAnswers = new Histogram({
      name: 'thingbase_mqtt_message_answer_seconds',
      help: 'Time from reading an MQTT message taken (not refused at once) to writing its answer, on the device endpoint',
      buckets: ANSWER_SECONDS_BUCKETS,
      registers,
    });
    new Gauge({
      name: 'thingbase_mqtt_connections',
      help: 'Devices connected to the embedded MQTT broker',
      registers,
      async collect() {
        this.set((await sources.mqttConnections()) ?? 0);
      },
    });
    new Gauge({
      name: 'thingbase_mqtt_external_messages',
      help: 'With an external broker (MQTT_URL), messages from it by state (handled: being checked and stored; held: read, waiting for room, while nothing more is read from the broker)',
      labelNames: ['state'],
      registers,
      collect() {
        const intake = sources.externalIntake();
        this.set({ state: 'handled' }, intake?.pending ?? 0);
        this.set({ state: 'held' }, intake?.held ? 1 : 0);
      },
    });
    this.deliveries = new Counter({
      name: 'thingbase_deliveries_total',
      help: 'Attempts of notification deliveries, by action type and outcome (pending: to be retried)',
      labelNames: ['kind', 'status'],
      registers,
    });
    const queueDepth = lastValueOf(sources.deliveryQueueDepth, STORE_READ_WAIT_MS);
    new Gauge({
      name: 'thingbase_delivery_queue_depth',
      help: 'Deliveries waiting to be made, due now or later',
      registers,
      async collect() {
        this.set((await queueDepth()) ?? 0);
      },
    });
    this.ruleFirings = new Counter({ name: 'thingbase_rule_firings_total', help: 'Times rules fired', registers });
    new Gauge({
      name: 'thingbase_realtime_subscribers',
      help: 'Realtime subscriptions held, over every connection',
      registers,
      collect() {
        this.set(sources.realtimeSubscribers());
      },
    });
    const realtimeRefusalsSeen: Record<ConnectionRefusal, number> = { user_limit: 0, organisation_limit: 0 };
    new Counter({
      name: 'thingbase_realtime_connections_refused_total',
      help: 'Realtime connections (WebSockets and streams) refused with 429 or 4429, by limit (user_limit, organisation_limit)',
      labelNames: ['reason'],
      registers,
      collect() {
        const now = sources.realtimeRefusals();
        for (const reason of ['user_limit', 'organisation_limit'] as const) {
          this.inc({ reason }, now[reason] - realtimeRefusalsSeen[reason]);
          realtimeRefusalsSeen[reason] = now[reason];
        }
      },
    });
  }

  eventStored(transport: EventTransport, count: number): void {
    this.eventsStored.inc({ transport }, count);
  }

  eventsRefused(reason: 'organisation_limit' | 'key_pair_limit', count: number): void {
    this.eventsRefusedByLimit.inc({ reason }, count);
  }

  deliveryFinished(kind: string, status: string): void {
    this.deliveries.inc({ kind, status });
  }

  rulesFired(count: number): void {
    this.ruleFirings.inc(count);
  }

  /** An MQTT message taken by the device endpoint answered, `seconds` after it was read. */
  mqttAnswered(seconds: number): void {
    this.mqttAnswers.observe(seconds);
  }

  /** Counts and times every answer of the app, by its route's path template. */
  observe(app: FastifyInstance): void {
    app.addHook('onResponse', (request, reply, done) => {
      // The console's pages are answered by its not-found handler (console/routes.ts): one route.
      const route =
        request.routeOptions.url ??
        (reply.statusCode < 400 && request.url.startsWith(CONSOLE_PATH) ? `${CONSOLE_PATH}*` : 'unmatched');
      const labels = { method: request.method, route };
      this.requests.inc({ ...labels, status: String(reply.statusCode) });
      this.durations.observe(labels, reply.elapsedTime / 1000);
      done();
    });
  }
}
