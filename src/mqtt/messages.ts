/**
 * One device message over MQTT, whichever broker carried it: checked (the `hash` member against the
 * key pair's secret, over the raw text without the envelope members; signed-messages.ts), handled
 * exactly as the same body over HTTP, and answered with the acknowledgement the SDKs wait for on
 * `.../httpAck`: `{"context": <the message's hash>, "http_code": <number>, "http_msg": {...}}`, sent
 * after the data is durable.
 */
import { DeviceAlertBody } from '../alerts/schemas.ts';
import { ApiError } from '../core/errors.ts';
import { compileParams } from '../core/http/validation.ts';
import type { Principal } from '../core/principal.ts';
import type { DeviceCredentials } from '../devices/authentication.ts';
import { EventBody, HeartbeatBody, RegisterBody } from '../devices/schemas.ts';
import type { DeviceService } from '../devices/service.ts';
import { refusalOfFault, storeFaultOf } from '../store/faults.ts';
import { type Ack, failure, isAck, PARSE_ERROR, readDeviceMessage, refusalOfHash } from './signed-messages.ts';
import type { DeviceMessageKind, DeviceTopic } from './topics.ts';

const validators = {
  register: compileParams(RegisterBody),
  heartbeat: compileParams(HeartbeatBody),
  event: compileParams(EventBody),
  alert: compileParams(DeviceAlertBody),
};

/**
 * Does what a checked message asks, in the name of its key pair's principal, and answers the
 * acknowledgement (with `context`) once that is durable. Not an async function: every device message
 * comes this way, and the device service's promise is all it waits for.
 */
export function actOnDeviceMessage(
  devices: DeviceService,
  kind: DeviceMessageKind,
  text: string,
  principal: Principal,
  context: string,
  /** Who sent it, for fair shares of a busy writer (events/fair-share.ts): its connection. */
  source?: string,
): Promise<Ack> {
  // The envelope members stay in the body: the schemas are open, and deleting members would turn the
  // object into a slow dictionary for everything that reads it afterwards.
  let body: Record<string, unknown>;
  try {
    const parsed = JSON.parse(text) as unknown;
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not a JSON object');
    body = parsed as Record<string, unknown>;
  } catch (error) {
    return Promise.resolve(
      failure(PARSE_ERROR, 500, [
        { code: 'invalid', message: `the payload is not a JSON object: ${(error as Error).message}` },
      ]),
    );
  }
  let done: Promise<void>;
  try {
    done = doDeviceMessage(devices, kind, body, principal, source);
  } catch (error) {
    done = Promise.reject(error);
  }
  return done.then(
    () => ({ context, http_code: 200, http_msg: {} }),
    (error: unknown) => {
      if (unexpected(error)) throw error;
      return failureAck(context, error);
    },
  );
}

function doDeviceMessage(
  devices: DeviceService,
  kind: DeviceMessageKind,
  body: Record<string, unknown>,
  principal: Principal,
  source: string | undefined,
): Promise<void> {
  switch (kind) {
    case 'register':
      return devices.register(principal, validators.register(body) as typeof RegisterBody.static);
    case 'heartbeat':
      return devices.heartbeat(principal, validators.heartbeat(body) as typeof HeartbeatBody.static);
    case 'event':
      return devices.event(principal, validators.event(body) as typeof EventBody.static, 'mqtt', source);
    case 'alert':
      return devices.alert(principal, (validators.alert(body) as typeof DeviceAlertBody.static).alert);
  }
}

/** Whether a failure is none the message's answer can name (a bug): logged by whoever catches it. */
export const unexpected = (error: unknown): boolean =>
  !(error instanceof ApiError) && storeFaultOf(error) === undefined;

/**
 * The acknowledgement of a message whose handling failed, with the message's own context: a refusal
 * as it is, a store fault as the 503 it is over HTTP (store/faults.ts), anything else a 500. The
 * device learns which message was refused; PARSE_ERROR stays for messages that cannot be read.
 */
export function failureAck(context: string, error: unknown): Ack {
  if (error instanceof ApiError) {
    const ack = failure(context, error.status, error.errors);
    // A limit's 429 says when to send again, as Retry-After does over HTTP.
    const retryAfter = error.status === 429 ? error.headers['retry-after'] : undefined;
    if (retryAfter !== undefined) ack.http_msg.retry_after = Number(retryAfter);
    return ack;
  }
  const fault = storeFaultOf(error);
  if (fault !== undefined) {
    const refusal = refusalOfFault(fault);
    return failure(context, refusal.status, refusal.errors);
  }
  return failure(context, 500, [{ code: 'internal', message: 'an unexpected error occurred' }]);
}

/**
 * A message from a broker that cannot vouch for its sender (an external one): it must name its key
 * pair in `access_key` and carry a `hash` that checks out against it.
 */
export async function handleExternalBrokerMessage(
  devices: DeviceService,
  message: {
    topic: DeviceTopic;
    payload: Buffer;
    /** Looks up a key pair by the message's `access_key` member. */
    lookup: (accessKey: string) => Promise<DeviceCredentials | undefined>;
    /** Told a failure that is no refusal nor store fault (answered 500). */
    onUnexpected: (error: unknown) => void;
  },
): Promise<Ack> {
  const read = readDeviceMessage(message.topic, message.payload);
  if (isAck(read)) return read;
  if (read.accessKey === undefined || read.hash === undefined) {
    return failure(read.context, 401, [{ code: 'unauthorized', message: 'access_key and hash are required' }]);
  }
  try {
    const credentials = await message.lookup(read.accessKey);
    if (!credentials) {
      return failure(read.context, 401, [{ code: 'unauthorized', message: 'unknown access key or wrong hash' }]);
    }
    const refused = refusalOfHash(read, credentials.secretKey);
    if (refused) return refused;
    // An external broker does not say which connection a message came by: its key pair is its source.
    return await actOnDeviceMessage(
      devices,
      message.topic.kind,
      read.text,
      credentials.principal,
      read.context,
      `mqtt:${read.accessKey}`,
    );
  } catch (error) {
    if (unexpected(error)) message.onUnexpected(error);
    return failureAck(read.context, error);
  }
}
