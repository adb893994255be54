/**
 * A device over MQTT written from docs/devices.md: it logs in with its access key and the HMAC of it,
 * signs each message as the Python edge SDK does (compact JSON, then hash, access_key and
 * aliot_protocol_version appended), and waits for the server's answer on its httpAck topic.
 */
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { sign } from './device.ts';
import { MQTT_VERSION } from './mqtt-version.ts';

export interface Ack {
  context: string;
  http_code: number;
  http_msg: { errors?: { code: string; message: string }[] };
}

/** The text the SDK sends: the signed compact JSON of `payload` with the envelope appended. */
export function signedEnvelope(pair: { access_key: string; secret_key: string }, payload: object): string {
  const signed = JSON.stringify(payload);
  const hash = sign(pair.secret_key, signed);
  return `${signed.slice(0, -1)},"hash":"${hash}","access_key":"${pair.access_key}","aliot_protocol_version":2.0}`;
}

export class MqttDevice {
  private readonly acks: Ack[] = [];
  private readonly waiters: ((ack: Ack) => void)[] = [];

  private constructor(
    readonly client: MqttClient,
    readonly clientId: string,
    readonly accessKey: string,
    readonly secretKey: string,
  ) {
    client.on('message', (topic, payload) => {
      if (!topic.endsWith('/httpAck')) return;
      const ack = JSON.parse(payload.toString()) as Ack;
      const waiter = this.waiters.shift();
      if (waiter) waiter(ack);
      else this.acks.push(ack);
    });
  }

  /** Connects once the broker accepts connections again (after a restart), trying for up to 5 s. */
  static async connectWhenUp(
    url: string,
    keyPair: { access_key: string; secret_key: string },
    options: Partial<IClientOptions> & { password?: string } = {},
  ): Promise<MqttDevice> {
    for (let tries = 0; ; tries++) {
      try {
        return await MqttDevice.connect(url, keyPair, options);
      } catch (error) {
        if (tries >= 50) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  }

  static async connect(
    url: string,
    keyPair: { access_key: string; secret_key: string },
    options: Partial<IClientOptions> & { password?: string } = {},
  ): Promise<MqttDevice> {
    const clientId = options.clientId ?? `dev${Math.random().toString(36).slice(2, 12)}`;
    const client = await mqtt.connectAsync(url, {
      clientId,
      username: keyPair.access_key,
      password: options.password ?? sign(keyPair.secret_key, keyPair.access_key),
      clean: true,
      reconnectPeriod: 0,
      protocolVersion: MQTT_VERSION,
      ...options,
    });
    const device = new MqttDevice(client, clientId, keyPair.access_key, keyPair.secret_key);
    await client.subscribeAsync(`Altizon/Datonis/${clientId}/httpAck`, { qos: 1 });
    return device;
  }

  /** The text the SDK sends: the signed compact JSON with the envelope appended. */
  envelope(payload: object): string {
    return signedEnvelope({ access_key: this.accessKey, secret_key: this.secretKey }, payload);
  }

  /**
   * The next httpAck. The default wait is long because it only matters when none comes: a 10 MiB
   * message took over 5 s to be read and answered in a loaded full run. Tests that expect no answer
   * pass a short wait of their own.
   */
  nextAck(timeoutMs = 20_000): Promise<Ack> {
    const queued = this.acks.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const waiter = (ack: Ack) => {
        clearTimeout(timer);
        resolve(ack);
      };
      // A wait that timed out takes no later acknowledgement from the next one.
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(new Error('no httpAck arrived'));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /**
   * Publishes raw text to a topic under this device and waits for its acknowledgement (at most 5 s,
   * also when the broker closes the connection instead of answering).
   */
  publishRaw(kind: string, text: string | Buffer, topic = `Altizon/Datonis/${this.clientId}/${kind}`): Promise<Ack> {
    const ack = this.nextAck();
    this.client.publish(topic, text, { qos: 1 });
    return ack;
  }

  send(kind: 'register' | 'heartbeat' | 'event' | 'alert', payload: object): Promise<Ack> {
    return this.publishRaw(kind, this.envelope(payload));
  }

  close(): Promise<void> {
    return this.client.endAsync();
  }
}
