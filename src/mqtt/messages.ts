/**
 * One device message over MQTT, whichever broker carried it: checked (the `hash` member against the
 * key pair's secret, over the raw text without the envelope members), handled exactly as the same
 * body over HTTP, and answered with the acknowledgement the SDKs wait for on `.../httpAck`:
 * `{"context": <the message's hash>, "http_code": <number>, "http_msg": {...}}`, sent after the data
 * is durable.
 */
import { DeviceAlertBody } from '../alerts/schemas.ts';
import { ApiError, type ErrorItem } from '../core/errors.ts';
import { BULK_BODY_LIMIT } from '../core/http/body.ts';
import { compileParams } from '../core/http/validation.ts';
import type { DeviceCredentials } from '../devices/authentication.ts';
import { decompressLzf } from '../devices/lzf.ts';
import { EventBody, HeartbeatBody, RegisterBody } from '../devices/schemas.ts';
import type { DeviceService } from '../devices/service.ts';
import { signedTextOfMqttPayload, verifySignature } from '../devices/signature.ts';
import type { DeviceTopic } from './topics.ts';

export interface Ack {
  context: string;
  http_code: number;
  http_msg: { errors?: ErrorItem[] };
}

const PARSE_ERROR = 'PARSE_ERROR';

const validators = {
  register: compileParams(RegisterBody),
  heartbeat: compileParams(HeartbeatBody),
  event: compileParams(EventBody),
  alert: compileParams(DeviceAlertBody),
};

const failure = (context: string, status: number, errors: ErrorItem[]): Ack => ({
  context,
  http_code: status,
  http_msg: { errors },
});

export interface MessageContext {
  topic: DeviceTopic;
  payload: Buffer;
  /** The connection's key pair (embedded broker); undefined on an external broker. */
  connection?: DeviceCredentials;
  /** Looks up a key pair by the message's `access_key` member (external broker). */
  lookup: (accessKey: string) => Promise<DeviceCredentials | undefined>;
}

export async function handleDeviceMessage(devices: DeviceService, message: MessageContext): Promise<Ack> {
  let text: string;
  try {
    text = (message.topic.lzf ? decompressLzf(message.payload, BULK_BODY_LIMIT) : message.payload).toString('utf8');
  } catch (error) {
    // C and Java SDKs end their wait on a PARSE_ERROR acknowledgement only with code 500.
    return failure(PARSE_ERROR, 500, [
      { code: 'invalid', message: `the payload cannot be read: ${(error as Error).message}` },
    ]);
  }
  const { signed, hash, accessKey } = signedTextOfMqttPayload(text);
  const context = hash ?? PARSE_ERROR;
  let credentials = message.connection;
  if (credentials) {
    if (accessKey !== undefined && accessKey !== credentials.accessKey) {
      return failure(context, 401, [
        { code: 'unauthorized', message: 'access_key is not the one this connection signed in with' },
      ]);
    }
  } else {
    if (accessKey === undefined || hash === undefined) {
      return failure(context, 401, [{ code: 'unauthorized', message: 'access_key and hash are required' }]);
    }
    credentials = await message.lookup(accessKey);
    if (!credentials)
      return failure(context, 401, [{ code: 'unauthorized', message: 'unknown access key or wrong hash' }]);
  }
  if (hash !== undefined && !verifySignature(credentials.secretKey, signed, hash)) {
    return failure(context, 401, [{ code: 'unauthorized', message: 'unknown access key or wrong hash' }]);
  }
  // The envelope members stay in the body: the schemas are open, and deleting members would turn the
  // object into a slow dictionary for everything that reads it afterwards.
  let body: Record<string, unknown>;
  try {
    const parsed = JSON.parse(text) as unknown;
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not a JSON object');
    body = parsed as Record<string, unknown>;
  } catch (error) {
    return failure(PARSE_ERROR, 500, [
      { code: 'invalid', message: `the payload is not a JSON object: ${(error as Error).message}` },
    ]);
  }
  try {
    const principal = credentials.principal;
    switch (message.topic.kind) {
      case 'register':
        await devices.register(principal, validators.register(body) as typeof RegisterBody.static);
        break;
      case 'heartbeat':
        await devices.heartbeat(principal, validators.heartbeat(body) as typeof HeartbeatBody.static);
        break;
      case 'event':
        await devices.event(principal, validators.event(body) as typeof EventBody.static);
        break;
      case 'alert':
        await devices.alert(principal, (validators.alert(body) as typeof DeviceAlertBody.static).alert);
        break;
    }
    return { context, http_code: 200, http_msg: {} };
  } catch (error) {
    if (error instanceof ApiError) return failure(context, error.status, error.errors);
    throw error;
  }
}
