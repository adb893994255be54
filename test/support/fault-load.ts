/**
 * A steady device load for the fault tests: HTTP events and MQTT events at QoS 1, each carrying its
 * own number, every answer recorded with its time. Afterwards the stored events are counted by number,
 * so that a test can say how many acknowledged events are stored once, missing or duplicated.
 */
import type { Device } from './device.ts';
import { call } from './http.ts';
import type { MqttDevice } from './mqtt-device.ts';

export interface Answer {
  transport: 'http' | 'mqtt';
  n: number;
  /** HTTP status or httpAck http_code; 0 when the request failed without an answer. */
  status: number;
  /** The answer's error code and message, for refusals. */
  error: string | undefined;
  /** Retry-After, for HTTP refusals. */
  retryAfter: string | undefined;
  /** When it was sent (Date.now()), and how long its answer took (ms). */
  at: number;
  ms: number;
}

const BASE = 1_700_000_000_000;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class FaultLoad {
  readonly answers: Answer[] = [];
  private sent = 0;
  private running = true;
  private readonly loops: Promise<void>[] = [];
  private readonly stops: (() => void)[] = [];

  constructor(readonly thingKey: string) {}

  private event(n: number) {
    return { thing_key: this.thingKey, timestamp: BASE + n, data: { n } };
  }

  /** `concurrency` devices each sending an event, waiting for its answer, resting `restMs`, and again. */
  http(device: Device, concurrency = 4, restMs = 20): void {
    for (let i = 0; i < concurrency; i++) {
      this.loops.push(
        (async () => {
          while (this.running) {
            const n = this.sent++;
            const at = Date.now();
            try {
              const answer = await device.event(this.event(n));
              const error = answer.body?.errors?.[0];
              this.answers.push({
                transport: 'http',
                n,
                status: answer.status,
                error: error ? `${error.code}: ${error.message}` : undefined,
                retryAfter: answer.headers['retry-after'] as string | undefined,
                at,
                ms: Date.now() - at,
              });
            } catch (error) {
              this.answers.push({
                transport: 'http',
                n,
                status: 0,
                error: (error as Error).message,
                retryAfter: undefined,
                at,
                ms: Date.now() - at,
              });
            }
            await pause(restMs);
          }
        })(),
      );
    }
  }

  /**
   * One MQTT device keeping `inFlight` events unanswered, the next sent as each answer arrives (after
   * `restMs`); a message never answered (its connection lost) is not counted.
   */
  mqtt(device: MqttDevice, inFlight = 5, restMs = 20): void {
    const pending = new Map<string, { n: number; at: number }>();
    const publish = () => {
      if (!this.running || !device.client.connected) return;
      const n = this.sent++;
      const text = device.envelope(this.event(n));
      pending.set(/"hash":"([0-9a-f]{64})"/.exec(text)?.[1] as string, { n, at: Date.now() });
      device.client.publish(`Altizon/Datonis/${device.clientId}/event`, text, { qos: 1 });
    };
    const onMessage = (topic: string, payload: Buffer) => {
      if (!topic.endsWith('/httpAck')) return;
      const ack = JSON.parse(payload.toString()) as {
        context: string;
        http_code: number;
        http_msg: { errors?: { code: string; message: string }[] };
      };
      const sent = pending.get(ack.context);
      const error = ack.http_msg.errors?.[0];
      this.answers.push({
        transport: 'mqtt',
        n: sent?.n ?? -1,
        status: ack.http_code,
        error: error
          ? `${ack.context === 'PARSE_ERROR' ? 'PARSE_ERROR ' : ''}${error.code}: ${error.message}`
          : undefined,
        retryAfter: undefined,
        at: sent?.at ?? Date.now(),
        ms: sent ? Date.now() - sent.at : Number.NaN,
      });
      if (sent) pending.delete(ack.context);
      setTimeout(publish, restMs);
    };
    device.client.on('message', onMessage);
    this.stops.push(() => device.client.off('message', onMessage));
    for (let k = 0; k < inFlight; k++) publish();
  }

  /**
   * Stops sending at once, without waiting for answers: for a test that failed midway, so that its
   * loops do not go on sending to a server that is gone and keep the test's process alive.
   */
  halt(): void {
    this.running = false;
    for (const stop of this.stops) stop();
  }

  /** Stops sending; resolves once every HTTP request under way is answered. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    // Answers to MQTT messages still on their way are given a moment.
    await pause(500);
    for (const stop of this.stops) stop();
  }

  /** Answers to what was sent from `from` to `to` (Date.now() times). */
  between(from: number, to = Number.POSITIVE_INFINITY): Answer[] {
    return this.answers.filter((a) => a.at >= from && a.at < to);
  }

  /** The numbers of the events answered 200. */
  acknowledged(): number[] {
    return this.answers.filter((a) => a.status === 200).map((a) => a.n);
  }
}

/** The 99th percentile of the answers' times (ms). */
export function p99(answers: readonly Answer[]): number {
  const times = answers
    .map((a) => a.ms)
    .filter((ms) => !Number.isNaN(ms))
    .sort((a, b) => a - b);
  return times.length === 0 ? 0 : (times[Math.min(times.length - 1, Math.floor(times.length * 0.99))] as number);
}

/** How many answers had each status (and error code), e.g. `{"200": 812, "503 unavailable": 40}`. */
export function statusCounts(answers: readonly Answer[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const a of answers) {
    const key = a.status === 200 ? '200' : `${a.status} ${a.error?.split(':')[0] ?? ''}`.trim();
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

/** How often each event number is stored for the thing, read page by page through the query API. */
export async function storedNumbers(url: string, token: string, thingKey: string): Promise<Map<number, number>> {
  const counts = new Map<number, number>();
  for (let page = 1; ; page++) {
    const data = await call(url, 'POST', '/api/v3/query/thing_data', {
      token,
      body: { thing_key: thingKey, per: 10_000, page },
    });
    if (data.status !== 200) throw new Error(`thing_data answered ${data.status}: ${data.text}`);
    const events = (data.body[thingKey]?.event_data ?? []) as { data: { n: number } }[];
    for (const e of events) counts.set(e.data.n, (counts.get(e.data.n) ?? 0) + 1);
    if (events.length < 10_000) return counts;
  }
}

/** Acknowledged events stored once, missing, or stored more than once. */
export function tally(load: FaultLoad, stored: Map<number, number>) {
  const acknowledged = [...new Set(load.acknowledged())];
  return {
    acknowledged: acknowledged.length,
    stored: [...stored.values()].reduce((sum, count) => sum + count, 0),
    missing: acknowledged.filter((n) => !stored.has(n)).length,
    duplicated: [...stored.values()].filter((count) => count > 1).length,
  };
}

/**
 * `work`, or an error naming `what` once `ms` have passed without its end: a fault test never hangs on
 * a connection the fault left open.
 */
export async function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not end within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Waits until `check` holds (each check itself bounded), at most `withinMs`; answers when it did. */
export async function until(what: string, check: () => Promise<boolean>, withinMs = 20_000): Promise<number> {
  const start = Date.now();
  for (;;) {
    const left = withinMs - (Date.now() - start);
    if (left <= 0) throw new Error(`${what} did not happen within ${withinMs} ms`);
    if (await within(Math.max(left, 1000), `a check whether ${what}`, check())) return Date.now();
    await pause(50);
  }
}
