/**
 * The first half of handling a device's MQTT message, which needs no store: reading the payload (LZF
 * on the lzf topic), recovering the text the device signed, and checking its `hash` against the key
 * pair's secret. The device endpoint does this as it reads a message (endpoint/device-messages.ts), an
 * external broker's subscriber in the server (messages.ts).
 */
import type { ErrorItem } from '../core/errors.ts';
import { BULK_BODY_LIMIT, DEFAULT_BODY_LIMIT, describeBytes } from '../core/http/body.ts';
import { decompressLzf } from '../devices/lzf.ts';
import { hashAtEnd, signedTextOfMqttPayload, verifySignature } from '../devices/signature.ts';
import type { DeviceTopic } from './topics.ts';

/** What the SDKs wait for on `.../httpAck`. */
export interface Ack {
  context: string;
  http_code: number;
  /** `retry_after`: seconds to wait before sending again, as HTTP's Retry-After (a limit's 429). */
  http_msg: { errors?: ErrorItem[]; retry_after?: number };
}

/** The context of an acknowledgement to a message whose hash cannot be read. */
export const PARSE_ERROR = 'PARSE_ERROR';

export const failure = (context: string, status: number, errors: ErrorItem[]): Ack => ({
  context,
  http_code: status,
  http_msg: { errors },
});

/** A payload as text, with what its envelope says. */
export interface ReadMessage {
  text: string;
  /** The text without the envelope members: what the device signed. */
  signed: string;
  hash: string | undefined;
  accessKey: string | undefined;
  /** A `hash` or `access_key` that is there but cannot be read (devices/signature.ts, SignedText). */
  unreadable: boolean;
  /** The acknowledgement's context: the message's hash, or PARSE_ERROR. */
  context: string;
}

export const isAck = (value: ReadMessage | Ack): value is Ack => 'http_code' in value;

/**
 * The longest text a message of each kind may carry without its envelope: the body limit of the same
 * request over HTTP (docs/devices.md, "MQTT").
 */
const bodyLimit = (topic: DeviceTopic): number => (topic.kind === 'event' ? BULK_BODY_LIMIT : DEFAULT_BODY_LIMIT);
/** Room for the envelope members (hash, access_key, aliot_protocol_version) beside the body. */
const ENVELOPE_ROOM = 4096;

/** The payload as text with its envelope, or the acknowledgement refusing it. */
export function readDeviceMessage(topic: DeviceTopic, payload: Buffer): ReadMessage | Ack {
  const limit = bodyLimit(topic);
  let text: string;
  try {
    text = (topic.lzf ? decompressLzf(payload, limit + ENVELOPE_ROOM) : payload).toString('utf8');
  } catch (error) {
    // C and Java SDKs end their wait on a PARSE_ERROR acknowledgement only with code 500.
    return failure(PARSE_ERROR, 500, [
      { code: 'invalid', message: `the payload cannot be read: ${(error as Error).message}` },
    ]);
  }
  const { signed, hash, accessKey, unreadable } = signedTextOfMqttPayload(text);
  const context = hash ?? PARSE_ERROR;
  // Only a long text is measured in bytes: a UTF-16 unit is at most 3 bytes of UTF-8, and the signed
  // text is part of the text, so a text of at most a third of the limit is within it.
  if (text.length > limit / 3 && Buffer.byteLength(signed) > limit) {
    return failure(context, 413, [
      {
        code: 'too_large',
        param: 'body',
        message: `is larger than the ${describeBytes(limit)} (${limit} bytes) a ${topic.kind} message may be`,
      },
    ]);
  }
  return { text, signed, hash, accessKey, unreadable, context };
}

/**
 * The context for refusing a message unread (the server is overloaded), when it can be told without
 * reading the whole payload (`hashAtEnd`); undefined when the message must be read for it. LZF
 * payloads are always read.
 */
export function contextUnread(topic: DeviceTopic, payload: Buffer): string | undefined {
  if (topic.lzf) return undefined;
  const found = hashAtEnd(payload);
  return found === undefined ? undefined : (found.hash ?? PARSE_ERROR);
}

/**
 * The refusal of a message on a connection signed in with a key pair, or undefined when it may go on:
 * an `access_key` member must name that key pair, and a `hash` member must be the HMAC of the signed
 * text under its secret (the login already proved the device holds it, so a message may leave it out).
 */
export function refusalOnConnection(
  message: ReadMessage,
  connection: { accessKey: string; secretKey: string },
): Ack | undefined {
  // A message may leave its signature out, but one it carries must be checked: a `hash` that is not a
  // string, or named twice, would otherwise pass as no hash at all.
  if (message.unreadable) {
    return failure(message.context, 401, [
      { code: 'unauthorized', message: 'hash and access_key must each be given once, as strings' },
    ]);
  }
  if (message.accessKey !== undefined && message.accessKey !== connection.accessKey) {
    return failure(message.context, 401, [
      { code: 'unauthorized', message: 'access_key is not the one this connection signed in with' },
    ]);
  }
  return refusalOfHash(message, connection.secretKey);
}

/** The refusal of a message whose `hash` is not the HMAC of its signed text under `secretKey`. */
export function refusalOfHash(message: ReadMessage, secretKey: string): Ack | undefined {
  if (message.hash !== undefined && !verifySignature(secretKey, message.signed, message.hash)) {
    return failure(message.context, 401, [{ code: 'unauthorized', message: 'unknown access key or wrong hash' }]);
  }
  return undefined;
}
