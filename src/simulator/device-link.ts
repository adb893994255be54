/**
 * How a simulated device talks to the server: the device interface of docs/devices.md, over HTTP
 * (signed requests) or MQTT (a connection per device, messages signed with `hash`, answers on its
 * `httpAck` topic, instructions acknowledged with an alert).
 */
import type { MqttClient } from 'mqtt';
import { request } from 'undici';
import { hmacHex } from '../devices/signature.ts';

export interface KeyPair {
  accessKey: string;
  secretKey: string;
}

/** The server's answer to one device message: its HTTP status (or `http_code` over MQTT). */
export interface DeviceAnswer {
  status: number;
  message?: string;
}

export interface Instruction {
  thingKey: string;
  alertKey: string;
  instruction: unknown;
}

export interface DeviceLink {
  register(body: Record<string, unknown>): Promise<DeviceAnswer>;
  event(body: Record<string, unknown>): Promise<DeviceAnswer>;
  alert(body: Record<string, unknown>): Promise<DeviceAnswer>;
  close(): Promise<void>;
}

const messageOf = (text: string): string | undefined => {
  try {
    return (JSON.parse(text) as { errors?: { message: string }[] }).errors?.[0]?.message;
  } catch {
    return undefined;
  }
};

/** Sends one signed device request: its path, headers and body; answers its status and text. */
export type DeviceRequest = (
  path: string,
  headers: Record<string, string>,
  body: string,
) => Promise<{ status: number; text: string }>;

/** Device requests over the network to the server at `baseUrl`. */
export const requestOverHttp =
  (baseUrl: string): DeviceRequest =>
  async (path, headers, body) => {
    const answer = await request(`${baseUrl}${path}`, { method: 'POST', headers, body });
    return { status: answer.statusCode, text: await answer.body.text() };
  };

export class HttpDeviceLink implements DeviceLink {
  constructor(
    private readonly send: DeviceRequest,
    private readonly keys: KeyPair,
  ) {}

  private async post(path: string, body: Record<string, unknown>): Promise<DeviceAnswer> {
    const text = JSON.stringify(body);
    const answer = await this.send(
      path,
      {
        'content-type': 'application/json',
        'x-access-key': this.keys.accessKey,
        'x-dtn-signature': hmacHex(this.keys.secretKey, text),
      },
      text,
    );
    return answer.status === 200
      ? { status: 200 }
      : { status: answer.status, message: messageOf(answer.text) ?? answer.text.slice(0, 200) };
  }

  register = (body: Record<string, unknown>) => this.post('/api/v3/things/register.json', body);
  event = (body: Record<string, unknown>) => this.post('/api/v3/things/event.json', body);
  alert = (body: Record<string, unknown>) => this.post('/api/v3/alerts.json', body);
  close = async () => {};
}

/** The message as an edge SDK sends it: the JSON, then its hash, access key and protocol version. */
export function signedMessage(keys: KeyPair, body: Record<string, unknown>): { text: string; hash: string } {
  const json = JSON.stringify(body);
  const hash = hmacHex(keys.secretKey, json);
  const text = `${json.slice(0, -1)},"hash":"${hash}","access_key":"${keys.accessKey}","aliot_protocol_version":2.0}`;
  return { text, hash };
}

export class MqttDeviceLink implements DeviceLink {
  private readonly waiting = new Map<string, (answer: DeviceAnswer) => void>();

  private constructor(
    private readonly client: MqttClient,
    private readonly clientId: string,
    private readonly keys: KeyPair,
    onInstruction: (instruction: Instruction) => void,
  ) {
    client.on('message', (topic, payload) => {
      if (topic.endsWith('/httpAck')) return this.answered(payload.toString());
      if (topic.endsWith('/executeInstruction')) {
        try {
          const sent = JSON.parse(payload.toString()) as {
            thing_key: string;
            alert_key: string;
            instruction_wrapper?: { instruction?: unknown };
          };
          onInstruction({
            thingKey: sent.thing_key,
            alertKey: sent.alert_key,
            instruction: sent.instruction_wrapper?.instruction,
          });
        } catch {
          // Not an instruction this simulator can read: nothing to acknowledge.
        }
      }
    });
  }

  static async connect(
    url: string,
    clientId: string,
    keys: KeyPair,
    onInstruction: (instruction: Instruction) => void,
  ): Promise<MqttDeviceLink> {
    // Loaded by the first simulated device over MQTT: the server imports this module for its HTTP links.
    const { default: mqtt } = await import('mqtt');
    const client = await mqtt.connectAsync(url, {
      clientId,
      username: keys.accessKey,
      password: hmacHex(keys.secretKey, keys.accessKey),
      clean: true,
      reconnectPeriod: 1000,
      connectTimeout: 10_000,
    });
    const link = new MqttDeviceLink(client, clientId, keys, onInstruction);
    await client.subscribeAsync(
      [`Altizon/Datonis/${clientId}/httpAck`, `Altizon/Datonis/${keys.accessKey}/thing/+/executeInstruction`],
      { qos: 1 },
    );
    return link;
  }

  private answered(text: string): void {
    let ack: { context?: string; http_code?: number; http_msg?: { errors?: { message: string }[] } };
    try {
      ack = JSON.parse(text);
    } catch {
      return;
    }
    const waiter = ack.context === undefined ? undefined : this.waiting.get(ack.context);
    if (!waiter || ack.context === undefined) return;
    this.waiting.delete(ack.context);
    const status = ack.http_code ?? 0;
    waiter(status === 200 ? { status } : { status, message: ack.http_msg?.errors?.[0]?.message ?? '' });
  }

  private async publish(kind: string, body: Record<string, unknown>): Promise<DeviceAnswer> {
    const { text, hash } = signedMessage(this.keys, body);
    const answered = new Promise<DeviceAnswer>((resolve) => {
      this.waiting.set(hash, resolve);
      // An answer lost with a dropped connection must not hold the simulator: counted as unanswered.
      setTimeout(() => {
        if (this.waiting.delete(hash)) resolve({ status: 0, message: 'no answer within 10 s' });
      }, 10_000).unref();
    });
    await this.client.publishAsync(`Altizon/Datonis/${this.clientId}/${kind}`, text, { qos: 1 });
    return answered;
  }

  register = (body: Record<string, unknown>) => this.publish('register', body);
  event = (body: Record<string, unknown>) => this.publish('event', body);
  alert = (body: Record<string, unknown>) => this.publish('alert', body);
  close = () => this.client.endAsync();
}
